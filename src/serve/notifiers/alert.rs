//! An alert notice: a session crossed into a board rule, or back out of one it fired
//! (`board::alerts`), as each receiver's outbox holds it and sends it (docs/serve.md). Its own
//! module, so that the board that makes notices and the outbox that keeps them both depend on
//! it and not on each other.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

/// What an alert notice says of its alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AlertStatus {
    /// A session crossed into the rule.
    Firing,
    /// It crossed back out of one it fired: the alert is over.
    Resolved,
}

/// One alert notice: a session crossed into a rule, or back out of one it fired (see
/// `board::alerts`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Alert {
    pub status: AlertStatus,
    pub rule: String,
    pub session: Arc<str>,
    pub agent: Option<Arc<str>>,
    pub model: Option<Arc<str>>,
    pub value: f64,
    pub threshold: f64,
    pub seq: Option<u64>,
    /// The record that crossed (or crossed back).
    pub record: Arc<RawValue>,
    /// When the board saw it, milliseconds since 1970.
    pub at: i64,
    /// When the alert began: the stamp of the record that crossed into the rule (ms since
    /// 1970; the record's own time, never ahead of the clock).
    pub since: i64,
    /// Earlier notices of this session folded into this one, unsent, past the receiver's bound
    /// (`outbox`); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub merged: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
impl Alert {
    /// A firing notice of `until<20000` for `session` at `seq`, carrying `record`: the
    /// receivers' tests.
    pub(crate) fn firing(session: &str, seq: u64, record: String) -> Alert {
        Alert {
            status: AlertStatus::Firing,
            rule: "until<20000".into(),
            session: session.into(),
            agent: None,
            model: None,
            value: 1.0,
            threshold: 20_000.0,
            seq: Some(seq),
            record: RawValue::from_string(record).expect("a JSON record").into(),
            at: 0,
            since: 0,
            merged: 0,
        }
    }
}
