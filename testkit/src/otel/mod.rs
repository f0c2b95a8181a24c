//! OpenTelemetry log streams derived from real agent logs, for `input=otel`'s tests: no captured
//! OTel streams exist, so the events an agent would have exported for a session are derived from
//! its own log, per the events its documentation lists (`docs/adapters.md`, "OpenTelemetry").
//!
//! Its files, one job each: [`claude_code_events`] (`claude_code.rs`) and [`codex_events`]
//! (`codex.rs`) derive the events from each agent's log, their docs listing which; `export.rs`
//! batches them into OTLP request bodies and gives their collector records; `parse.rs` reads
//! the bodies back. `json.rs` (reading the logs), `time.rs` (stamps) and `record.rs` (an
//! attribute list as a record's map) are leaves the others share. This file holds the event's
//! types and [`derive`], which tells the agent by the log.
//!
//! What goes out: [`export_requests`] batches the events as an SDK's batch processor exports them
//! — a request every 5 s of event time, at most 512 records each — into OTLP/JSON
//! `ExportLogsServiceRequest` bodies; [`collector_records`] gives the records `agent-fold collect`
//! writes for them (the `otel/log` shape, `docs/adapters.md`), so that core-level tests run
//! without the receiver; [`records_from_request`] is a plain receiver of those bodies, to hold
//! the two to each other.

mod claude_code;
mod codex;
mod export;
mod flat;
mod json;
mod parse;
#[cfg(test)]
mod tests;
mod time;

pub use claude_code::claude_code_events;
pub use codex::codex_events;
pub use export::{EXPORT_INTERVAL_NS, MAX_EXPORT_BATCH, collector_records, export_requests};
pub use flat::MAX_STRING_BYTES;
pub use json::read_jsonl;
pub use parse::records_from_request;
pub use time::{format_time, parse_time};

/// An attribute's value, as OTLP types it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Attr {
        Attr::Str(s.to_owned())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Attr {
        Attr::Str(s)
    }
}

impl From<u64> for Attr {
    fn from(n: u64) -> Attr {
        Attr::Int(n.min(i64::MAX as u64) as i64)
    }
}

/// Which agent exported an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtelAgent {
    ClaudeCode,
    Codex,
}

impl OtelAgent {
    /// The agent as a collector record names it.
    pub fn name(self) -> &'static str {
        match self {
            OtelAgent::ClaudeCode => "claude-code",
            OtelAgent::Codex => "codex",
        }
    }
}

/// One event an agent would have exported.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelEvent {
    pub agent: OtelAgent,
    pub session: String,
    /// The full dotted event name (`claude_code.api_request`).
    pub name: String,
    pub time_ns: u64,
    /// Claude Code's `event.sequence`.
    pub sequence: Option<u64>,
    pub attributes: Vec<(String, Attr)>,
    pub resource: Vec<(String, Attr)>,
    pub scope: (String, String),
    /// The index of the log line it was derived from (for tests that score it).
    pub line: usize,
}

impl OtelEvent {
    /// The attribute named `key`, if the event has it.
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes
            .iter()
            .find(|(n, _)| n == key)
            .map(|(_, v)| v)
    }
}

/// The events of a log: a Claude Code transcript or a Codex rollout, told by its lines.
pub fn derive(text: &str) -> Vec<OtelEvent> {
    let lines = read_jsonl(text);
    let codex = lines
        .iter()
        .any(|(_, l)| l.get("payload").is_some() && l.get("timestamp").is_some());
    if codex {
        codex_events(&lines)
    } else {
        claude_code_events(&lines)
    }
}

/// The characters of a string (Unicode scalars).
fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}
