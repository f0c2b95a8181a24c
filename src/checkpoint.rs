//! The runner's checkpoint: the documents of its instances side by side,
//! `{"main": …, "pressure": …, "adapter": …, "offset": N}`, each the core's own codec, read in
//! place; `offset` is where the log goes on (its next line's), so that a resumed run's lines
//! are new lines to an adapter, not re-deliveries.

use anyhow::{Context, Result};
use serde_json::value::RawValue;

/// The parts of a runner checkpoint, borrowed from its text.
pub struct Runner<'a> {
    pub main: &'a str,
    pub pressure: Option<&'a str>,
    pub adapter: Option<&'a str>,
    pub offset: i64,
}

impl<'a> Runner<'a> {
    /// Reads a runner checkpoint without building its parts: each stays text for its restorer.
    pub fn read(text: &'a str) -> Result<Runner<'a>> {
        #[derive(serde::Deserialize)]
        struct Doc<'a> {
            #[serde(borrow)]
            main: &'a RawValue,
            #[serde(borrow, default)]
            pressure: Option<&'a RawValue>,
            #[serde(borrow, default)]
            adapter: Option<&'a RawValue>,
            #[serde(default)]
            offset: i64,
        }
        let doc: Doc = serde_json::from_str(text).context("reading the checkpoint")?;
        Ok(Runner {
            main: doc.main.get(),
            pressure: doc.pressure.map(RawValue::get),
            adapter: doc.adapter.map(RawValue::get),
            offset: doc.offset,
        })
    }

    pub fn write(&self) -> String {
        let mut out = format!("{{\"main\":{}", self.main);
        if let Some(p) = self.pressure {
            out.push_str(",\"pressure\":");
            out.push_str(p);
        }
        if let Some(a) = self.adapter {
            out.push_str(",\"adapter\":");
            out.push_str(a);
        }
        out.push_str(&format!(",\"offset\":{}}}", self.offset));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Runner;

    #[test]
    fn parts_round_trip_as_text() {
        let text = r#"{"main":{"stateVersion":4,"view":"frames","sessions":[]},"adapter":{"input":"codex"},"offset":7}"#;
        let r = Runner::read(text).unwrap();
        assert_eq!(
            r.main,
            r#"{"stateVersion":4,"view":"frames","sessions":[]}"#
        );
        assert!(r.pressure.is_none());
        assert_eq!(r.offset, 7);
        assert_eq!(r.write(), text);
        assert!(Runner::read("{}").is_err());
    }
}
