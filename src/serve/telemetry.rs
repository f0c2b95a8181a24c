//! `GET /metrics` (Prometheus text) and `GET /healthz` of the server.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::App;
use super::events::SourceState;
use crate::service::metrics::{CONTENT_TYPE, Kind, Text};

/// What a scrape reads: the source's counts and state, the hub's holdings, the clients and
/// connections, the refusals.
pub fn render(app: &App) -> String {
    let held = app.hub.held();
    let f = &app.hub.figures;
    let c = &app.connections;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    let mut t = Text::default();
    let (counter, gauge) = (Kind::Counter, Kind::Gauge);
    let singles = [
        (
            "records_read_total",
            counter,
            "Records read from the source (log lines, or pressure records), since the last reset.",
            held.status.records as f64,
        ),
        (
            "records_skipped_total",
            counter,
            "Records read that were skipped (not what the source should carry), since the last reset.",
            held.status.skipped as f64,
        ),
        (
            "events_total",
            counter,
            "Events published to the pages.",
            load(&f.events),
        ),
        (
            "snapshots_total",
            counter,
            "Snapshots written for /events and /state: once per change at most, however many clients ask.",
            load(&f.snapshots),
        ),
        (
            "sessions_evicted_total",
            counter,
            "Sessions forgotten to keep the newest 1000.",
            load(&f.evicted),
        ),
        (
            "sessions",
            gauge,
            "Sessions the page shows.",
            held.sessions as f64,
        ),
        (
            "buffered_events",
            gauge,
            "Events buffered for pages that reconnect.",
            held.events as f64,
        ),
        (
            "sse_clients",
            gauge,
            "/events streams open.",
            load(&f.clients),
        ),
        (
            "connections",
            gauge,
            "HTTP connections open.",
            load(&c.open),
        ),
        (
            "connections_accepted_total",
            counter,
            "HTTP connections accepted.",
            load(&c.accepted),
        ),
    ];
    for (name, kind, help, value) in singles {
        t.one(&format!("agent_fold_serve_{name}"), kind, help, value);
    }
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
    let bytes = [
        ("events", held.event_bytes as f64),
        ("sessions", held.session_bytes as f64),
    ];
    labelled(
        &mut t,
        ("agent_fold_serve_buffered_bytes", gauge),
        "Bytes the hub holds: the event buffer, and the sessions' latest records and frames.",
        "what",
        &bytes,
    );
    let refused = [
        ("connection_cap", load(&c.refused)),
        ("host", load(&app.hosts.refused_host)),
        ("origin", load(&app.hosts.refused_origin)),
    ];
    let help = "Connections and requests refused, by reason.";
    labelled(
        &mut t,
        ("agent_fold_serve_refusals_total", counter),
        help,
        "reason",
        &refused,
    );
    t.finish()
}

/// A family with one sample per value of its `label`.
fn labelled(
    t: &mut Text,
    (name, kind): (&str, Kind),
    help: &str,
    label: &str,
    values: &[(&str, f64)],
) {
    t.family(name, kind, help);
    for (v, x) in values {
        t.sample(name, &[(label, v)], *x);
    }
}

pub async fn metrics(State(app): State<App>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&app)).into_response()
}

/// 200 while the source is starting, live or ended; 503 while it is in error (the page says
/// why); the body names the state and the message.
pub async fn healthz(State(app): State<App>) -> Response {
    let status = app.hub.status();
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
