//! `GET /metrics` (Prometheus text) and `GET /healthz` of the server.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use std::sync::atomic::AtomicU64;

use super::App;
use crate::serve::board::{Bands, LogEvent, SourceState};
use crate::serve::notifiers::outbox::Outcomes;
use crate::service::metrics::{CONTENT_TYPE, Kind, Text};

/// What a scrape reads: the source's counts and state, the board's holdings, sessions by band
/// (live ones; no per-session labels), alerts by rule, the clients and connections, the
/// refusals.
pub(crate) fn render(app: &App) -> String {
    let held = app.board.held();
    let f = &app.board.counters;
    let c = &app.connections;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    let mut t = Text::default();
    let (counter, gauge) = (Kind::Counter, Kind::Gauge);
    #[rustfmt::skip]
    let singles = [
        ("records_read_total", counter, "Records read from the source (log lines, OTLP events, or pressure records); a log read again from its start counts its lines again.", held.status.records as f64),
        ("records_skipped_total", counter, "Records read that were skipped (not what the source should carry).", held.status.skipped as f64),
        ("messages_total", counter, "Messages sent to pages on /events (the whole board or a coalesced delta).", load(&f.messages)),
        ("boards_total", counter, "Whole boards encoded for /events: once per change at most, however many pages ask.", load(&f.boards)),
        ("sessions_evicted_total", counter, "Sessions dropped to keep within --max-sessions and --history-points, the idlest first.", load(&f.evicted)),
        ("sessions", gauge, "Sessions the board keeps, live and idle.", held.sessions as f64),
        ("live_sessions", gauge, "Sessions active within --idle.", held.live as f64),
        ("history_points", gauge, "History points the board keeps over all sessions.", held.points as f64),
        ("board_bytes", gauge, "Bytes the board holds: each session's latest records, history, folded frames and encoded row; the encoded board and delta pages share; the change log; the alert state of evicted sessions.", held.bytes as f64),
        ("sse_clients", gauge, "/events streams open.", load(&f.clients)),
        ("connections", gauge, "HTTP connections open.", load(&c.open)),
        ("connections_accepted_total", counter, "HTTP connections accepted.", load(&c.accepted)),
        ("alerts_caught_up_total", counter, "Crossings in a topic's recent history read again at the start (--look-back): the alert state follows them, no notice is sent.", load(&f.alerts_caught_up)),
        ("alerts_old_total", counter, "Crossings in records older than --idle (history read again): the alert state follows them, no alert is sent.", load(&f.alerts_old)),
        ("alerts_reread_total", counter, "Crossings in a followed log read again from its start (truncated, replaced, back): the alert state follows them; at the re-read's end only what differs from before is sent.", load(&f.alerts_reread)),
    ];
    t.ones("agent_fold_serve", &singles);
    let state = "agent_fold_serve_source_state";
    t.family(
        state,
        gauge,
        "1 for the source's state (starting, live, error, ended), 0 for the others.",
    );
    for s in SourceState::ALL {
        let v = f64::from(u8::from(s == held.status.state));
        t.sample(state, &[("state", s.name())], v);
    }
    t.labelled(
        ("agent_fold_serve_log_events_total", counter),
        "What happened to a followed log's files: truncated, replaced, rewritten or came_back (read again from their start, their own sessions only), vanished, unreadable, readable (again).",
        "event",
        LogEvent::ALL
            .iter()
            .map(|e| e.name())
            .zip(f.log_events.iter().map(load))
            .collect::<Vec<_>>(),
    );
    let bands = |names: &'static [&'static str], counts: &[u64]| {
        let counts: Vec<f64> = counts.iter().map(|&n| n as f64).collect();
        names.iter().copied().zip(counts)
    };
    t.labelled(
        ("agent_fold_serve_live_sessions_by_occupancy", gauge),
        "Live sessions by contextOccupancy: under 0.5, 0.5 to 0.75, 0.75 to 0.9, 0.9 and over, unknown.",
        "band",
        bands(&Bands::OCCUPANCY, &held.bands.occupancy),
    );
    t.labelled(
        ("agent_fold_serve_live_sessions_by_until_compact", gauge),
        "Live sessions by untilCompactTokens: under 10,000, 10,000 to 50,000, 50,000 and over, unknown.",
        "band",
        bands(&Bands::UNTIL, &held.bands.until),
    );
    let compactions = app
        .board
        .counters
        .compactions
        .lock()
        .map(|m| m.clone())
        .unwrap_or_default();
    let family = "agent_fold_serve_compactions_total";
    t.family(
        family,
        counter,
        "Compactions seen happening (a session's compactions grew), by agent and what set the last one off (auto, manual, unknown).",
    );
    for ((agent, trigger), n) in &compactions {
        t.sample(family, &[("agent", agent), ("trigger", trigger)], *n as f64);
    }
    let rules = &app.board.policy().rules;
    if !rules.is_empty() {
        let by_rule = |values: Vec<f64>| rules.iter().map(|r| r.text.as_str()).zip(values);
        t.labelled(
            ("agent_fold_serve_alerts_total", counter),
            "Alerts fired (a session crossing into the rule), by rule.",
            "rule",
            by_rule(f.alerts.iter().map(load).collect()),
        );
        t.labelled(
            ("agent_fold_serve_sessions_alerting", gauge),
            "Sessions in an alert's state now (crossed and not yet back past the hysteresis), by rule.",
            "rule",
            by_rule(held.firing.iter().map(|&n| n as f64).collect()),
        );
    }
    if !app.receivers.is_empty() {
        let per = |f: fn(&Outcomes) -> &AtomicU64| -> Vec<(&str, f64)> {
            app.receivers
                .iter()
                .map(|o| (o.name, load(f(&o.outcomes))))
                .collect()
        };
        type Read = fn(&Outcomes) -> &AtomicU64;
        let outcomes: [(&str, Read); 4] = [
            ("delivered", |o| &o.delivered),
            ("failed", |o| &o.failed),
            ("merged", |o| &o.merged),
            ("dropped", |o| &o.dropped),
        ];
        let name = "agent_fold_serve_alert_notices_total";
        t.family(name, counter, "Alert notices by receiver and outcome: delivered (a 2xx), failed (after the attempts, or a final refusal), merged (past the receiver's bound, folded into a later notice of the same session), dropped (past the bound with nothing to merge).");
        for (outcome, f) in outcomes {
            for (receiver, v) in per(f) {
                t.sample(name, &[("receiver", receiver), ("outcome", outcome)], v);
            }
        }
        t.labelled(
            ("agent_fold_serve_alert_retries_total", counter),
            "Requests to an alert receiver tried again (a 429, a 5xx, a timeout, a refused connection).",
            "receiver",
            per(|o| &o.retried),
        );
        t.labelled(
            ("agent_fold_serve_alert_notices_waiting", gauge),
            "Alert notices waiting for their receiver now.",
            "receiver",
            app.receivers
                .iter()
                .map(|o| (o.name, o.waiting() as f64))
                .collect::<Vec<_>>(),
        );
    }
    if let Some(counters) = app.otlp.get() {
        crate::otlp::metrics_text(&mut t, "agent_fold_serve", counters);
    }
    let refused = [
        ("connection_cap", load(&c.refused)),
        ("host", load(&app.hosts.refused_host)),
        ("origin", load(&app.hosts.refused_origin)),
    ];
    let help = "Connections and requests refused, by reason.";
    t.labelled(
        ("agent_fold_serve_refusals_total", counter),
        help,
        "reason",
        refused,
    );
    t.finish()
}

pub(super) async fn metrics(State(app): State<App>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&app)).into_response()
}

/// 200 while the source is starting, live or ended; 503 while it is in error (the page says
/// why); the body names the state and the message.
pub(super) async fn healthz(State(app): State<App>) -> Response {
    let status = app.board.status();
    let code = match status.state {
        SourceState::Error => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    };
    let body = serde_json::json!({"state": status.state, "message": status.message});
    (
        code,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}
