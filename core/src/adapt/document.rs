//! What the adapters of agents that write a session as messages (Gemini CLI's chats, OpenCode's
//! sessions) share: a document written again applies only the messages after the last one
//! applied, each message once and in order (contract §1); the header that names the agent, its
//! model, window and compaction point when they change (contract §3.1, §3.5); a reading's
//! `usage` in the provider's names (contract §3.2).

use super::build::{Adapting, Announced, Id, fingerprint};
use super::state::AdaptState;
use crate::frame::NAME_BYTES;
use crate::frame::kind::REQUEST_HEADER;

/// Where a document's messages (their ids' fingerprints, in order) pick up: after the last one
/// applied. Found at its place, or anywhere (messages removed before it); a document that no
/// longer holds it (another document under the session) goes on after as many as were applied.
pub(crate) fn resume(st: &AdaptState, prints: &[u64]) -> usize {
    let Some((n, last)) = st.applied else {
        return 0;
    };
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n >= 1 && prints.get(n - 1) == Some(&last) {
        return n;
    }
    match prints.iter().rposition(|p| *p == last) {
        Some(i) => i + 1,
        None => n.min(prints.len()),
    }
}

/// Message `index` of the session (its id's fingerprint `print`) is applied.
pub(crate) fn applied(st: &mut AdaptState, index: usize, print: u64) {
    st.applied = Some((index as u64 + 1, print));
}

/// Whether a message written on its own (a line of a recording, a storage file) is the last one
/// applied written again: an update, not a new message.
pub(crate) fn is_last_applied(st: &AdaptState, id: &str) -> bool {
    st.applied.is_some_and(|(_, p)| p == fingerprint(id))
}

/// A message written on its own is applied: the next after the last.
pub(crate) fn applied_next(st: &mut AdaptState, id: &str) {
    let n = st.applied.map_or(0, |(n, _)| n);
    st.applied = Some((n + 1, fingerprint(id)));
}

/// What a message says of its request.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Said<'a> {
    pub agent: &'a str,
    pub model: Option<&'a str>,
    pub window: Option<u64>,
    /// The agent's automatic compaction point (contract §3.5).
    pub threshold: Option<u64>,
}

/// A `request/header` on the session's first frame and whenever the model, the window or the
/// threshold changed; the system prompt and the tool list unknown (these logs carry neither).
pub(crate) fn announce(cx: &mut Adapting, stamp: Option<&str>, said: Said, source_type: &str) {
    let opening = cx.st.next_seq == 0;
    let model = said
        .model
        .filter(|m| !m.is_empty() && m.len() <= NAME_BYTES)
        .map(|m| (m, fingerprint(m)))
        .filter(|(_, p)| cx.st.model != Some(*p));
    let window = said
        .window
        .filter(|w| *w >= 1 && !cx.window_known && cx.st.window != Some(*w));
    let threshold = said
        .threshold
        .filter(|t| *t >= 1 && cx.st.compact_limit != Some(*t));
    if !opening && model.is_none() && window.is_none() && threshold.is_none() {
        return;
    }
    let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
    if opening {
        h.json("system", "null").json("tools", "null");
        h.string("agent", said.agent);
    }
    let levels = Announced {
        window,
        auto_compact: threshold,
        ..Announced::default()
    };
    cx.announce(&mut h, levels);
    if let Some((m, p)) = model {
        cx.st.model = Some(p);
        h.string("model", m);
    }
    h.extra_str("source_type", source_type);
    cx.emit(h);
}

/// A prompt's parts as contract §3.2 names them: input not cached, read from the cache,
/// written to it; and the output.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Usage {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output: Option<u64>,
}

impl Usage {
    /// The prompt's size.
    pub(crate) fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    pub(crate) fn json(&self) -> String {
        let mut s = format!(
            "{{\"input_tokens\":{},\"cache_read_input_tokens\":{},\"cache_creation_input_tokens\":{}",
            self.input, self.cache_read, self.cache_write
        );
        if let Some(o) = self.output {
            s += &format!(",\"output_tokens\":{o}");
        }
        s.push('}');
        s
    }
}

/// A reading below this share of the one before is a compaction the log does not mark: the
/// prompt of an agent that keeps its whole history only falls when the history is replaced
/// (Gemini CLI keeps the last 30% and a summary; OpenCode a summary).
pub(crate) const FALLEN: f64 = 0.7;

/// Whether `prompt` fell from the last reading past [`FALLEN`].
pub(crate) fn fell(st: &AdaptState, prompt: u64) -> Option<u64> {
    st.total
        .filter(|before| (prompt as f64) < *before as f64 * FALLEN)
}

/// Test support: a document's first turn opens as every agent's does — a header, the prompt,
/// the answer, a tool call and its result.
#[cfg(test)]
pub(crate) fn assert_first_turn(frames: &[serde_json::Value]) {
    let kinds: Vec<&str> = frames
        .iter()
        .take(5)
        .map(|f| f["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "request/header",
            "user/message",
            "assistant/message",
            "tool/call",
            "tool/result"
        ]
    );
}

/// Test support: a compaction the adapter made of a document — its `compact/start` with the
/// level before, the replacement right after it — found in `frames`; its index.
#[cfg(test)]
pub(crate) fn assert_compaction(frames: &[serde_json::Value], pre_tokens: u64) -> usize {
    let start = frames
        .iter()
        .position(|f| f["type"] == "compact/start")
        .expect("a compaction");
    assert_eq!(frames[start]["preTokens"], pre_tokens);
    assert!(frames[start + 1]["replaces"].is_object());
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_written_again_picks_up_after_the_last_message_applied() {
        let mut st = AdaptState::default();
        assert_eq!(resume(&st, &[1, 2, 3]), 0);
        applied(&mut st, 2, 3);
        assert_eq!(resume(&st, &[1, 2, 3, 4, 5]), 3, "in its place");
        assert_eq!(resume(&st, &[2, 3, 4]), 2, "an earlier message gone");
        assert_eq!(
            resume(&st, &[7, 8, 9, 10]),
            3,
            "another document: after as many"
        );
        assert_eq!(resume(&st, &[7]), 1);
        applied_next(&mut st, "x");
        assert!(is_last_applied(&st, "x"));
        assert_eq!(st.applied.unwrap().0, 4);
    }
}
