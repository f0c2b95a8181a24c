//! What the board reads of a record: a pressure record's figures (contract §3.6) and a folded
//! frame's shown fields (contract §2), parsed in the source's own thread, before the board's
//! lock, each kept as its JSON text for the page.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use agent_fold_core::NAME_BYTES;

use super::history::HistorySample;

/// The most bytes of one pressure record: a real one is under a kilobyte.
pub(crate) const RECORD_BYTES: usize = 16 << 10;
/// The most bytes of what a folded frame keeps (the fields the page shows).
const FRAME_BYTES: usize = 2 << 10;

/// The figures of a session's latest `context/pressure` record that the board ranks, filters
/// and alerts on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Latest {
    pub seq: Option<u64>,
    pub pressure: Option<u64>,
    pub projected: Option<u64>,
    pub capacity: Option<u64>,
    pub occupancy: Option<f64>,
    pub until: Option<u64>,
    pub compact_at: Option<u64>,
    pub message: Option<u64>,
    /// `compactions`, and the last one's trigger and size before and after (contract §3.6).
    pub compactions: Option<u64>,
    pub last_trigger: Option<agent_fold_core::Trigger>,
    pub last_before: Option<u64>,
    pub last_after: Option<u64>,
    /// The session's compactions within the board's thrash window: the board counts them (no
    /// record carries it).
    pub recent_compactions: Option<u64>,
}

impl Latest {
    /// What the history keeps of it.
    pub(crate) fn figures(&self, seq: u64) -> HistorySample {
        HistorySample {
            seq,
            projected: self.projected,
            pressure: self.pressure,
            capacity: self.capacity,
            compact_at: self.compact_at,
            message: self.message,
        }
    }

    /// What the meter shows: the projection, else the last reading.
    pub(crate) fn used(&self) -> Option<u64> {
        self.projected.or(self.pressure)
    }
}

/// A record's members, each as its JSON text, read when asked for; a member of another type
/// than asked reads as absent (the record is still shown as it came).
struct Members<'a>(HashMap<Key<'a>, &'a RawValue>);

/// A member's name, borrowed from the record unless it has an escape: no allocation per member
/// of every record read.
#[derive(Deserialize, PartialEq, Eq, Hash)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl std::borrow::Borrow<str> for Key<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Members<'_> {
    fn get<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        serde_json::from_str(self.0.get(name)?.get()).ok()
    }

    /// An agent or model name: a string of 1 to [`NAME_BYTES`] bytes.
    fn name(&self, name: &str) -> Option<Arc<str>> {
        self.get::<String>(name)
            .filter(|s| !s.is_empty() && s.len() <= NAME_BYTES)
            .map(Arc::from)
    }
}

/// A pressure record read off a source.
#[derive(Debug, Clone)]
pub(crate) struct PressureRecord {
    pub id: Arc<str>,
    pub seq: Option<u64>,
    pub is_error: bool,
    /// Milliseconds since 1970 of its `timestamp`, when it has one that reads.
    pub stamp_ms: Option<i64>,
    pub agent: Option<Arc<str>>,
    pub model: Option<Arc<str>>,
    pub latest: Latest,
    /// The record as the page gets it.
    pub text: Arc<RawValue>,
}

/// Why a record is none the board takes: counted, and said as the source's `lastSkipped`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotARecord {
    /// A line its reader could not take whole (over its limit), in the reader's words.
    #[error("{0}")]
    Line(String),
    #[error("a pressure record of {0} bytes, over the limit of {RECORD_BYTES}")]
    TooLong(usize),
    #[error("not a pressure record: not UTF-8")]
    NotUtf8,
    #[error("not a pressure record: not JSON")]
    NotJson,
    #[error("not a pressure record: not a JSON object")]
    NotObject,
    #[error("not a pressure record: type {0:?}")]
    OtherType(String),
    #[error("not a pressure record: no type")]
    NoType,
    /// The module's own error about a record it keeps no state for (an over-long key).
    #[error("the module said: {0}")]
    ModuleSaid(String),
    #[error("a pressure record without a session string")]
    NoSession,
    #[error("a session id of {0} bytes, over the limit of {max}", max = agent_fold_core::MAX_KEY_LEN)]
    LongSession(usize),
}

impl PressureRecord {
    /// A `context/pressure` or `context/error` record with a session; anything else is
    /// refused, for the caller to count and say.
    pub(crate) fn parse(bytes: &[u8]) -> Result<PressureRecord, NotARecord> {
        if bytes.len() > RECORD_BYTES {
            return Err(NotARecord::TooLong(bytes.len()));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|_| NotARecord::NotUtf8)?
            .trim();
        // A raw line break can stand only between a JSON text's tokens (a string escapes its
        // own): kept, it would cut the SSE line the record is sent in (an event stream breaks
        // lines at CR and LF alike), so it is sent as a space.
        let text: Cow<'_, str> = match text.contains(['\r', '\n']) {
            true => Cow::Owned(text.replace(['\r', '\n'], " ")),
            false => Cow::Borrowed(text),
        };
        let text = &*text;
        let raw = RawValue::from_string(text.to_owned()).map_err(|_| NotARecord::NotJson)?;
        if !text.starts_with('{') {
            return Err(NotARecord::NotObject);
        }
        let m = Members(serde_json::from_str(text).map_err(|_| NotARecord::NotObject)?);
        let is_error = match m.get::<String>("type").as_deref() {
            Some("context/pressure") => false,
            Some("context/error") => true,
            Some(t) => return Err(NotARecord::OtherType(t.to_owned())),
            None => return Err(NotARecord::NoType),
        };
        let Some(id) = m.get::<String>("session") else {
            // The module's own error about a record it keeps no state for (an over-long key).
            if is_error && let Some(e) = m.get::<String>("error") {
                return Err(NotARecord::ModuleSaid(e));
            }
            return Err(NotARecord::NoSession);
        };
        if id.len() > agent_fold_core::MAX_KEY_LEN {
            return Err(NotARecord::LongSession(id.len()));
        }
        let stamp_ms = m
            .get::<String>("timestamp")
            .and_then(|t| agent_fold_core::time::parse_secs(&t))
            .filter(|s| s.is_finite())
            .map(|s| (s * 1000.0) as i64);
        let seq = m.get("seq");
        Ok(PressureRecord {
            id: Arc::from(id),
            seq,
            is_error,
            stamp_ms,
            agent: m.name("agent"),
            model: m.name("model"),
            latest: Latest {
                seq,
                pressure: m.get("pressureTokens"),
                projected: m.get("projectedTokens"),
                capacity: m.get("capacity"),
                occupancy: m.get("contextOccupancy"),
                until: m.get("untilCompactTokens"),
                compact_at: m.get("compactAtTokens"),
                message: m.get("messageTokens"),
                compactions: m.get("compactions"),
                last_trigger: m
                    .get::<String>("lastCompactTrigger")
                    .and_then(|t| agent_fold_core::Trigger::named(&t)),
                last_before: m.get("lastCompactBeforeTokens"),
                last_after: m.get("lastCompactAfterTokens"),
                recent_compactions: None,
            },
            text: Arc::from(raw),
        })
    }
}

/// A folded frame of the frames view (`folded_frames` ≥ 2), as the page shows it, parsed
/// before the lock; other frames are no news.
#[derive(Debug, Clone)]
pub(crate) struct Folded {
    pub id: Arc<str>,
    /// The fields the page shows.
    pub shown: Arc<RawValue>,
}

/// The fields of a folded frame that the page shows: the rest is not kept.
#[derive(Deserialize, serde::Serialize)]
struct ShownFrame {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    folded_from: Option<serde_json::Value>,
    folded_frames: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimated_tokens_delta: Option<serde_json::Value>,
    #[serde(skip_serializing)]
    session_id: Option<serde_json::Value>,
}

impl Folded {
    pub(crate) fn parse(key: Option<&[u8]>, bytes: &[u8]) -> Option<Folded> {
        // Most frames fold nothing: those are not parsed at all.
        if !bytes.windows(15).any(|w| w == b"\"folded_frames\"") {
            return None;
        }
        let frame: ShownFrame = serde_json::from_slice(bytes).ok()?;
        if frame.folded_frames < 2 {
            return None;
        }
        let id = match key {
            Some(k) => String::from_utf8_lossy(k).into_owned(),
            None => frame
                .session_id
                .as_ref()
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        let text = serde_json::to_string(&frame).ok()?;
        if text.len() > FRAME_BYTES || id.len() > agent_fold_core::MAX_KEY_LEN {
            return None;
        }
        Some(Folded {
            id: Arc::from(id),
            shown: Arc::from(RawValue::from_string(text).ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pressure_record_reads_and_what_is_not_one_says_why() {
        let r = PressureRecord::parse(
            br#" {"type":"context/pressure","session":"s","seq":4,"timestamp":"1970-01-01T00:00:01Z","pressureTokens":10,"projectedTokens":12,"capacity":100,"contextOccupancy":0.12,"untilCompactTokens":55,"agent":"codex","model":"gpt-5"} "#,
        )
        .unwrap();
        assert_eq!(&*r.id, "s");
        assert_eq!((r.seq, r.stamp_ms), (Some(4), Some(1000)));
        assert_eq!(r.latest.used(), Some(12));
        assert_eq!(
            (r.agent.as_deref(), r.model.as_deref()),
            (Some("codex"), Some("gpt-5"))
        );
        assert!(r.text.get().starts_with('{'), "kept trimmed");
        // A name with an escape is the name it spells.
        let escaped = PressureRecord::parse(
            br#"{"type":"context/pressure","session":"s","pressure\u0054okens":7}"#,
        )
        .unwrap();
        assert_eq!(escaped.latest.pressure, Some(7));
        // Line breaks between tokens (a topic's record may hold them) would cut an SSE line.
        let broken = PressureRecord::parse(
            b"{\"type\":\"context/pressure\",\r\"session\":\"s\",\n\"seq\":1}",
        )
        .unwrap();
        assert_eq!(
            broken.text.get(),
            r#"{"type":"context/pressure", "session":"s", "seq":1}"#
        );
        for (bad, why) in [
            (&b"nope"[..], "not JSON"),
            (b"[1]", "not a JSON object"),
            (br#"{"type":"user/message","session":"s"}"#, "type"),
            (br#"{"type":"context/pressure"}"#, "without a session"),
            (
                br#"{"type":"context/error","session":null,"error":"key too long"}"#,
                "the module said: key too long",
            ),
        ] {
            let e = PressureRecord::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        let big = format!(
            r#"{{"type":"context/pressure","session":"s","x":"{}"}}"#,
            "a".repeat(RECORD_BYTES)
        );
        assert!(
            PressureRecord::parse(big.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("over the limit")
        );
    }

    #[test]
    fn a_folded_frame_keeps_the_shown_fields_only() {
        let f = Folded::parse(
            None,
            br#"{"type":"thinking/tokens","session_id":"s","id":"x","timestamp":"t2","estimated_tokens_delta":12,"folded_from":"t1","folded_frames":3,"big":"zzz"}"#,
        )
        .unwrap();
        assert_eq!(&*f.id, "s");
        assert_eq!(
            f.shown.get(),
            r#"{"type":"thinking/tokens","timestamp":"t2","folded_from":"t1","folded_frames":3,"estimated_tokens_delta":12}"#
        );
        assert!(Folded::parse(None, br#"{"folded_frames":1}"#).is_none());
        assert!(Folded::parse(None, br#"{"type":"x"}"#).is_none());
    }
}
