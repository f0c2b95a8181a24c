//! What a frame asks of a session's projection (contract §3, §3.7), read and checked before
//! anything changes: the part of a frame the pressure view reads, priced, so that
//! [`super::session::Session::apply`] validates, then commits.

use super::surface::{Corrupt, Node, Replaces};
use crate::estimate::estimate;
use crate::frame::Trigger;
use crate::frame::kind::{ASSISTANT_MESSAGE, COMPACT_START, REQUEST_HEADER};
use crate::frame::{Field, Frame, object_uints, prompt_sum, usage_tokens};
use crate::json;

/// What a `compact/start` says of its compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pending {
    pub trigger: Option<Trigger>,
    /// `preTokens`.
    pub before: Option<u64>,
}

/// The agent and model the latest header to name each said (contract §1, §3.6): carried by the
/// records, for a board to show; `None` until a header names one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Names {
    pub agent: Option<std::sync::Arc<str>>,
    pub model: Option<std::sync::Arc<str>>,
}

/// Why a frame could not be applied: a `context/error` record says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The frame would change a figure but has no valid `seq`.
    #[error(
        "the frame carries context (a message, header or usage) but no valid seq: it cannot be placed on the surface"
    )]
    NoSeq,
    /// `replaces` is not `{"from_seq": int, "to_seq": int}`.
    #[error(
        "replacement span is malformed: `replaces` must be {{\"from_seq\": integer ≥ 0, \"to_seq\": integer ≥ 0}}"
    )]
    BadSpan,
    #[error(transparent)]
    Corrupt(Corrupt),
    /// The session key is over the limit: no state is kept for it.
    #[error(
        "the session key is {0} bytes, over the limit of {max}: no state is kept for it",
        max = crate::record::MAX_KEY_LEN
    )]
    LongKey(usize),
}

/// What a frame asks of the projection, read and checked before anything changes.
#[derive(Default, PartialEq)]
pub(crate) struct Change {
    pub seq: u64,
    /// On a header: `Some(None)` when it names the part `null` (not in this log).
    pub(super) system: Option<Option<u64>>,
    pub(super) tools: Option<Option<u64>>,
    pub(super) capacity: Option<u64>,
    pub(super) sample: Option<u64>,
    /// The node the frame adds, with the span it replaces, when it has a message or a span.
    pub(super) node: Option<(Node, Option<Replaces>)>,
    /// The span is the agent's request list rewritten, not a compaction (`rewrite`).
    pub(super) rewrite: bool,
    /// An automatic compaction's level (`compact/start`).
    pub(super) auto_compact: Option<u64>,
    /// On a `compact/start`: whether it says the log writes what comes back, and what it says
    /// the agent's rule puts back unseen.
    pub(super) restore_shown: Option<bool>,
    pub(super) restore_tokens: Option<u64>,
    /// On a `compact/start`: whether the prior may add what comes back beyond it.
    pub(super) restore_beyond: Option<bool>,
    /// A `compact/start`: what set it off and the size it began at, for the count (§3.6).
    pub(super) compaction: Option<Pending>,
    /// The agent's own threshold (`request/header`).
    pub(super) agent_compact: Option<u64>,
    /// The agent and model a `request/header` names.
    pub(super) agent: Option<std::sync::Arc<str>>,
    pub(super) model: Option<std::sync::Arc<str>>,
    /// How far below its window the agent compacts (`request/header`).
    pub(super) reserve: Option<u64>,
    /// What the agent puts back unseen at a compaction, its prior (`request/header`).
    pub(super) restore_prior: Option<u64>,
    /// The seq of the last frame the sampled request carried (`anchor_seq`), when below this
    /// frame's.
    pub(super) anchor_seq: Option<u64>,
}

/// [`usage_tokens`] of a `usage` object read as part of its frame. The compact shape every
/// writer gives it, `{"name":digits,…}` (no whitespace, no escape in a key, each value an
/// integer written as digits), is read here, in one pass with each name compared a word at a
/// time; any other shape goes to [`usage_tokens`]. On that shape the two agree: a key without
/// an escape is its name as it stands, a value of digits is the text [`json::uint`] reads
/// either way (too long a one is invalid, counting 0), and the last of a repeated name wins.
pub(super) fn prompt_tokens(usage: &str) -> u64 {
    compact_usage(usage.as_bytes()).unwrap_or_else(|| usage_tokens(usage))
}

/// [`prompt_tokens`] of the compact shape; `None` for any other.
#[inline]
pub(super) fn compact_usage(b: &[u8]) -> Option<u64> {
    const NAMES: [&[u8]; 3] = [
        b"input_tokens\":",
        b"cache_read_input_tokens\":",
        b"cache_creation_input_tokens\":",
    ];
    let mut fields = [Field::Absent; 3];
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    loop {
        // A key, then its colon.
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let rest = &b[i + 1..];
        let (slot, value) = match NAMES.iter().position(|n| json::starts_with(rest, n)) {
            Some(k) => (Some(k), i + 1 + NAMES[k].len()),
            None => {
                let end = i + 1 + rest.iter().position(|&c| c == b'"' || c == b'\\')?;
                if b[end] != b'"' || b.get(end + 1) != Some(&b':') {
                    return None;
                }
                (None, end + 2)
            }
        };
        // Its value: digits, then `,` or the closing `}` that ends the text.
        let mut j = value;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j == value {
            return None;
        }
        if let Some(k) = slot {
            // SAFETY: ASCII digits.
            let digits = unsafe { std::str::from_utf8_unchecked(&b[value..j]) };
            fields[k] = json::uint(digits).map_or(Field::Invalid, Field::Valid);
        }
        match b.get(j) {
            Some(b',') => i = j + 1,
            Some(b'}') if j + 1 == b.len() => break,
            _ => return None,
        }
    }
    Some(prompt_sum(&fields))
}

fn replaces(raw: &str) -> Option<Replaces> {
    match object_uints(raw, ["from_seq", "to_seq"])? {
        [Field::Valid(from_seq), Field::Valid(to_seq)] => Some(Replaces { from_seq, to_seq }),
        _ => None,
    }
}

impl Change {
    /// Reads what a main frame would change. `Ok(None)`: nothing (it only moves the cursor);
    /// `Some` may still be [`Change::inert`] (a header that names nothing the view reads).
    pub(crate) fn read(v: &Frame) -> Result<Option<Change>, Refusal> {
        let is = |kind: &str| {
            v.kind()
                .is_some_and(|k| crate::json::same(k.as_bytes(), kind.as_bytes()))
        };
        let header = is(REQUEST_HEADER);
        let compact_start = is(COMPACT_START);
        let sample = match v.usage() {
            Some(usage) if is(ASSISTANT_MESSAGE) => Some(prompt_tokens(usage)),
            _ => None,
        };
        // Content the log measured but does not carry joins the surface like a message
        // (contract §3.1): ⌈n/4⌉ tokens, the estimate's own rate.
        let measured = v.message_chars();
        let content = v.message().is_some() || measured.is_some();
        let touches = header || sample.is_some() || content || v.replaces().is_some();
        // Neither touching the projection nor a `compact/start` (a counter, a tool call): the
        // frame only moves the cursor (contract §3.7), with a `seq` or without.
        if !touches && !compact_start {
            return Ok(None);
        }
        let Some(seq) = v.seq() else {
            return if touches {
                Err(Refusal::NoSeq)
            } else {
                Ok(None)
            };
        };
        let span = match v.replaces() {
            Some(raw) => Some(replaces(raw).ok_or(Refusal::BadSpan)?),
            None => None,
        };
        let node = (content || span.is_some()).then(|| {
            let tokens = v
                .message()
                .map_or(0, |m| estimate(m.as_bytes()))
                .saturating_add(measured.map_or(0, |n| n.div_ceil(4)));
            (Node { seq, tokens }, span)
        });
        let priced = |raw: Option<&str>| {
            header
                .then(|| raw.map(|s| (s != "null").then(|| estimate(s.as_bytes()))))
                .flatten()
        };
        Ok(Some(Change {
            seq,
            system: priced(v.system()),
            tools: priced(v.tools()),
            capacity: header.then_some(v.context_window()).flatten(),
            sample,
            node,
            rewrite: span.is_some() && v.rewrite(),
            auto_compact: compact_start.then(|| v.auto_compaction()).flatten(),
            restore_shown: compact_start.then(|| v.restore_shown()),
            restore_tokens: compact_start.then(|| v.restore_tokens()).flatten(),
            restore_beyond: compact_start.then(|| v.restore_beyond()),
            compaction: compact_start.then(|| Pending {
                trigger: v.trigger(),
                before: v.pre_tokens(),
            }),
            agent_compact: header.then(|| v.auto_compact_tokens()).flatten(),
            agent: header
                .then(|| v.agent().map(std::sync::Arc::from))
                .flatten(),
            model: header
                .then(|| v.model().map(std::sync::Arc::from))
                .flatten(),
            reserve: header.then(|| v.compact_reserve()).flatten(),
            restore_prior: header.then(|| v.compact_restore()).flatten(),
            anchor_seq: sample.and(v.anchor_seq()).filter(|a| *a < seq),
        }))
    }
}

impl Change {
    /// Whether applying the change names an agent or model other than `names` does: a change
    /// of what a record says (contract §3.6) that no figure shows.
    pub(crate) fn renames(&self, names: &Names) -> bool {
        (self.agent.is_some() && self.agent != names.agent)
            || (self.model.is_some() && self.model != names.model)
    }

    /// Whether the change holds nothing but its seq: applied, it only moves the cursor, and
    /// what the session shows cannot change (a counter, a tool call).
    pub(crate) fn inert(&self) -> bool {
        // Every field but the seq at its default (the anchor comes only with a sample): a field
        // added later counts without being listed here.
        *self
            == Change {
                seq: self.seq,
                anchor_seq: self.anchor_seq,
                ..Change::default()
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact `usage` reader answers as `usage_tokens` on every JSON object: compact
    /// ones (which it reads) and any other (which it hands on).
    #[test]
    fn compact_usage_reads_as_usage_tokens() {
        let keys = [
            r#""input_tokens""#,
            r#""cache_read_input_tokens""#,
            r#""cache_creation_input_tokens""#,
            r#""output_tokens""#,
            r#""input_tokens_x""#,
            r#""input\u005ftokens""#,
            r#""""#,
        ];
        let values = [
            "0",
            "7",
            "189",
            "12345678",
            "123456789",
            "9999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901",
            "-1",
            "1.5",
            "1e3",
            r#""12""#,
            "null",
            "{}",
            r#"{"input_tokens":5}"#,
            "[1]",
        ];
        let mut rng = crate::rng::Rng::new(11);
        let mut compact = 0;
        for _ in 0..50_000 {
            let n = rng.next_u64() % 6;
            let spaced = rng.next_u64().is_multiple_of(8);
            let mut text = String::from("{");
            for k in 0..n {
                if k > 0 {
                    text.push(',');
                }
                if spaced {
                    text.push(' ');
                }
                text.push_str(keys[(rng.next_u64() % keys.len() as u64) as usize]);
                text.push(':');
                text.push_str(values[(rng.next_u64() % values.len() as u64) as usize]);
            }
            text.push('}');
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "{text}"
            );
            compact += usize::from(compact_usage(text.as_bytes()).is_some());
            assert_eq!(prompt_tokens(&text), usage_tokens(&text), "{text}");
        }
        assert!(compact > 5_000, "{compact} read by the compact reader");
    }
}
