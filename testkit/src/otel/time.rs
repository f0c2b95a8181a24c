//! Time stamps: RFC 3339 read and written, and a log's clock.

use serde_json::Value;

/// An RFC 3339 stamp as nanoseconds since the epoch (`agent_fold_core::time`, the one reader).
pub fn parse_time(s: &str) -> Option<u64> {
    agent_fold_core::time::parse(s).and_then(|n| u64::try_from(n).ok())
}

/// Nanoseconds since the epoch as an RFC 3339 UTC stamp with nine decimals.
pub fn format_time(ns: u64) -> String {
    agent_fold_core::time::format(ns)
}

/// The same, to the millisecond (JavaScript's `toISOString`, as `event.timestamp` carries it).
pub(super) fn format_time_ms(ns: u64) -> String {
    let full = format_time(ns);
    format!("{}Z", &full[..full.len() - 7])
}

/// A log's clock: each line's stamp, or the last one's when it has none (events never go back
/// before the log's first stamp).
#[derive(Default)]
pub(super) struct Clock {
    now: u64,
}

impl Clock {
    pub(super) fn at(&mut self, line: &Value) -> u64 {
        if let Some(t) = line
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time)
        {
            self.now = t;
        }
        self.now
    }
}
