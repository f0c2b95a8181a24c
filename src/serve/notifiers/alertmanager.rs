//! `--alertmanager URL`: the board's alerts as Prometheus Alertmanager's v2 API takes them,
//! `POST URL/api/v2/alerts` with a JSON array of `{labels, annotations, startsAt, endsAt,
//! generatorURL}` (docs/serve.md, "Alertmanager").
//!
//! What holds:
//! - An alert is known to Alertmanager by its labels: `alertname` (the rule's kind), `rule`,
//!   `session`, `agent` and `model` where known. The same crossing sent again — a re-send, a
//!   restarted board re-reading its topic — is the same alert, not a new page.
//! - A firing alert is sent when it fires and again every `--resend` (60 s) while the board
//!   holds it firing, each time with `endsAt` four intervals ahead (4 min: inside
//!   Alertmanager's default `resolve_timeout` of 5 min), so a board that stops lets its alerts
//!   end on their own and one lost re-send changes nothing.
//! - A crossing back sends the alert with `endsAt` at the record that crossed back: resolved.
//! - Notices and re-sends go by one task, in order: a re-send's snapshot is taken under the
//!   board's lock, so a resolution queued before it is posted after it, never overtaken.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::Uri;
use serde::Serialize;

use super::alert::{Alert, AlertStatus};
use super::outbox::{NOTICES_PER_POST, Outbox};
use super::webhook;
use crate::serve::board::{Board, now_ms};
use agent_fold_core::time;

/// How often firing alerts are sent again unless `--resend` says.
pub(crate) const RESEND: Duration = Duration::from_secs(60);
/// How far ahead a firing alert's `endsAt` is put, in re-send intervals.
pub(crate) const EXPIRES: u32 = 4;

/// Where the alerts go and how they read.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `…/api/v2/alerts`.
    pub url: Uri,
    /// The board's URL: a session's is `link#session=ID`.
    pub link: String,
    /// How often firing alerts are sent again.
    pub resend: Duration,
}
/// The v2 API's path under the given URL.
const PATH: &str = "/api/v2/alerts";

/// `--alertmanager`: an `http://HOST:PORT[/PREFIX]` URL; the alerts go to its `/api/v2/alerts`.
pub(crate) fn url(s: &str) -> Result<Uri, String> {
    let base = webhook::url(s)?;
    let prefix = base.path().trim_end_matches('/');
    let prefix = prefix.strip_suffix(PATH).unwrap_or(prefix);
    let authority = base.authority().expect("checked: an http URL has a host");
    format!("http://{authority}{prefix}{PATH}")
        .parse()
        .map_err(|e| format!("{s:?}: {e}"))
}

/// One alert in the v2 API's `postableAlert` shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Postable<'a> {
    labels: Labels<'a>,
    annotations: Annotations,
    starts_at: String,
    ends_at: String,
    #[serde(rename = "generatorURL")]
    generator_url: String,
}

#[derive(Debug, Serialize)]
struct Labels<'a> {
    alertname: &'static str,
    rule: &'a str,
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct Annotations {
    summary: String,
    description: String,
}

/// Milliseconds since 1970 as RFC 3339.
fn stamp(ms: i64) -> String {
    time::format(u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000))
}

/// The rule's kind as Alertmanager groups it: its field and side.
fn alertname(rule: &str) -> &'static str {
    let below = rule.contains('<');
    match (rule.split(['<', '>']).next().unwrap_or(""), below) {
        ("until", true) => "ContextCompactionNear",
        ("until", false) => "ContextCompactionFar",
        ("occupancy", false) => "ContextOccupancyHigh",
        ("occupancy", true) => "ContextOccupancyLow",
        ("used", false) => "ContextUsedHigh",
        ("used", true) => "ContextUsedLow",
        ("pressure", false) => "ContextPressureHigh",
        ("pressure", true) => "ContextPressureLow",
        ("past", false) => "ContextCompactionOverdue",
        ("past", true) => "ContextCompactionNotOverdue",
        ("after", false) => "CompactionLeftTooMuch",
        ("after", true) => "CompactionLeftLittle",
        ("reclaimed", true) => "CompactionReclaimedLittle",
        ("reclaimed", false) => "CompactionReclaimedMuch",
        ("thrash", false) => "CompactionThrash",
        _ => "CompactionRare",
    }
}

/// A figure in words.
fn figure(rule: &str, v: f64) -> String {
    let field = rule.split(['<', '>']).next().unwrap_or("");
    let tokens = v.round() as i64;
    match field {
        "occupancy" => format!("{:.1}% of the window", v * 100.0),
        "until" => format!("{tokens} tokens before the next automatic compaction"),
        "past" if rule.ends_with('%') => format!(
            "{:.1}% past the point it compacts at, not compacted",
            v * 100.0
        ),
        "past" => format!("{tokens} tokens past the point it compacts at, not compacted"),
        "after" => format!("the last compaction left {:.1}% of the window", v * 100.0),
        "reclaimed" => format!(
            "the last compaction took off {:.1}% of the context",
            v * 100.0
        ),
        "thrash" => format!("{tokens} compactions within the thrash window"),
        _ => format!("{tokens} tokens in context"),
    }
}

fn postable<'a>(a: &'a Alert, to: &Target, now: i64) -> Postable<'a> {
    let link = &to.link;
    let (ends, summary) = match a.status {
        AlertStatus::Firing => (
            now + (to.resend * EXPIRES).as_millis() as i64,
            format!(
                "session {}: {} ({})",
                a.session,
                figure(&a.rule, a.value),
                a.rule
            ),
        ),
        AlertStatus::Resolved => (
            a.at.max(a.since),
            format!(
                "session {}: back past {} at {}",
                a.session,
                a.rule,
                figure(&a.rule, a.value)
            ),
        ),
    };
    let mut description = format!(
        "Rule {} (threshold {}) for session {}",
        a.rule, a.threshold, a.session
    );
    if let Some(agent) = &a.agent {
        description += &format!(" of {agent}");
    }
    if let Some(model) = &a.model {
        description += &format!(" on {model}");
    }
    if let Some(seq) = a.seq {
        description += &format!("; record seq {seq}");
    }
    if a.merged > 0 {
        description += &format!("; {} earlier notices merged into this one", a.merged);
    }
    Postable {
        labels: Labels {
            alertname: alertname(&a.rule),
            rule: &a.rule,
            session: &a.session,
            agent: a.agent.as_deref(),
            model: a.model.as_deref(),
        },
        annotations: Annotations {
            summary,
            description,
        },
        starts_at: stamp(a.since),
        ends_at: stamp(ends),
        generator_url: format!("{link}#session={}", percent(&a.session)),
    }
}

/// A session id as a URL fragment: what is not unreserved, percent-encoded.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

/// The v2 API's body for `alerts`: a JSON array of `postableAlert`s.
pub(crate) fn body(alerts: &[Alert], to: &Target, now: i64) -> serde_json::Result<Vec<u8>> {
    let body: Vec<Postable> = alerts.iter().map(|a| postable(a, to, now)).collect();
    serde_json::to_vec(&body)
}

/// Starts the sender on the current runtime, taking the notices of `outbox` (which the board
/// pushes to) and the board's firing alerts every re-send.
pub(crate) fn start(to: Target, board: Arc<Board>, outbox: Arc<Outbox>) {
    tokio::spawn(async move {
        let client = webhook::client();
        let mut every = tokio::time::interval(to.resend);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            let batch = tokio::select! {
                batch = outbox.next(0) => batch,
                _ = every.tick() => board.firing_alerts(),
            };
            let now = now_ms();
            for chunk in batch.chunks(NOTICES_PER_POST) {
                let out = &outbox.outcomes;
                let n = chunk.len() as u64;
                // Typed alerts: encoding cannot fail; were it to, they count as failed.
                let sent = match body(chunk, &to, now) {
                    Ok(body) => webhook::post(&client, &to.url, body, out)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("the alerts did not encode: {e}")),
                };
                match sent {
                    Ok(()) => out.delivered.fetch_add(n, Ordering::Relaxed),
                    Err(e) => {
                        tracing::warn!(alerts = n, "Alertmanager at {} failed: {e:#}", to.url);
                        out.failed.fetch_add(n, Ordering::Relaxed)
                    }
                };
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_the_v2_endpoint_under_any_prefix() {
        for (given, want) in [
            ("http://am:9093", "http://am:9093/api/v2/alerts"),
            ("http://am:9093/", "http://am:9093/api/v2/alerts"),
            (
                "http://h/alertmanager/",
                "http://h/alertmanager/api/v2/alerts",
            ),
            (
                "http://am:9093/api/v2/alerts",
                "http://am:9093/api/v2/alerts",
            ),
        ] {
            assert_eq!(url(given).unwrap().to_string(), want, "{given}");
        }
        assert!(url("https://am").unwrap_err().contains("https"));
    }

    #[test]
    fn names_and_words_read_for_people() {
        assert_eq!(alertname("until<20000"), "ContextCompactionNear");
        assert_eq!(alertname("occupancy>0.9"), "ContextOccupancyHigh");
        assert_eq!(alertname("pressure>=180000"), "ContextPressureHigh");
        assert_eq!(figure("occupancy>0.9", 0.934), "93.4% of the window");
        assert_eq!(alertname("past>5%"), "ContextCompactionOverdue");
        assert_eq!(alertname("after>0.6"), "CompactionLeftTooMuch");
        assert_eq!(alertname("reclaimed<0.1"), "CompactionReclaimedLittle");
        assert_eq!(alertname("thrash>=3"), "CompactionThrash");
        assert_eq!(
            figure("past>5%", 0.0712),
            "7.1% past the point it compacts at, not compacted"
        );
        assert_eq!(
            figure("past>20000", 31_000.0),
            "31000 tokens past the point it compacts at, not compacted"
        );
        assert_eq!(
            figure("after>0.6", 0.655),
            "the last compaction left 65.5% of the window"
        );
        assert_eq!(
            figure("reclaimed<0.1", 0.02),
            "the last compaction took off 2.0% of the context"
        );
        assert_eq!(
            figure("thrash>=3", 3.0),
            "3 compactions within the thrash window"
        );
        assert_eq!(percent("a b/é"), "a%20b%2F%C3%A9");
    }
}
