//! The runner's checkpoint: the documents of its instances side by side,
//! `{"main": …, "pressure": …, "adapter": …, "offset": N}`, each the core's own codec, read in
//! place; `offset` is where the log goes on (its next line's), so that a resumed run's lines
//! are new lines to an adapter, not re-deliveries.

use anyhow::{Context, Result};
use serde_json::value::RawValue;

/// The parts of a runner checkpoint, borrowed from its text.
pub(crate) struct Checkpoint<'a> {
    pub main: &'a str,
    pub pressure: Option<&'a str>,
    pub adapter: Option<&'a str>,
    pub offset: i64,
}

/// The document as text: each part a raw JSON value, read and written by one serde shape.
#[derive(serde::Deserialize, serde::Serialize)]
struct Doc<'a> {
    #[serde(borrow)]
    main: &'a RawValue,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pressure: Option<&'a RawValue>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    adapter: Option<&'a RawValue>,
    #[serde(default)]
    offset: i64,
}

impl<'a> Checkpoint<'a> {
    /// Reads a runner checkpoint without building its parts: each stays text for its restorer.
    pub(crate) fn read(text: &'a str) -> Result<Checkpoint<'a>> {
        let doc: Doc = serde_json::from_str(text).context("reading the checkpoint")?;
        Ok(Checkpoint {
            main: doc.main.get(),
            pressure: doc.pressure.map(RawValue::get),
            adapter: doc.adapter.map(RawValue::get),
            offset: doc.offset,
        })
    }

    /// The document, its parts as their codecs wrote them (each checked to be one JSON value).
    pub(crate) fn write(&self) -> Result<String> {
        let raw = |part: &'a str| -> Result<&'a RawValue> {
            serde_json::from_str(part).context("a checkpoint part that is no JSON value")
        };
        let doc = Doc {
            main: raw(self.main)?,
            pressure: self.pressure.map(raw).transpose()?,
            adapter: self.adapter.map(raw).transpose()?,
            offset: self.offset,
        };
        Ok(serde_json::to_string(&doc)?)
    }
}

#[cfg(test)]
mod tests {
    use super::Checkpoint;

    #[test]
    fn parts_round_trip_as_text() {
        let text = r#"{"main":{"stateVersion":4,"view":"frames","sessions":[]},"adapter":{"input":"codex"},"offset":7}"#;
        let r = Checkpoint::read(text).unwrap();
        assert_eq!(
            r.main,
            r#"{"stateVersion":4,"view":"frames","sessions":[]}"#
        );
        assert!(r.pressure.is_none());
        assert_eq!(r.offset, 7);
        assert_eq!(r.write().unwrap(), text);
        assert!(Checkpoint::read("{}").is_err());
    }
}
