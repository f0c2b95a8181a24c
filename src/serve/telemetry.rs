//! `GET /metrics` (Prometheus text) and `GET /healthz` of the server.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::App;
use super::events::State as SourceState;
use crate::service::metrics::{CONTENT_TYPE, Kind, Text};

/// What a scrape reads: the source's counts and state, the hub's holdings, the clients and
/// connections, the refusals.
pub fn render(app: &App) -> String {
    let held = app.hub.held();
    let f = &app.hub.figures;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    let mut t = Text::default();
    t.one(
        "agent_fold_serve_records_read_total",
        Kind::Counter,
        "Records read from the source (log lines, or pressure records), since the last reset.",
        held.status.records as f64,
    );
    t.one(
        "agent_fold_serve_records_skipped_total",
        Kind::Counter,
        "Records read that were skipped (not what the source should carry), since the last reset.",
        held.status.skipped as f64,
    );
    t.one(
        "agent_fold_serve_events_total",
        Kind::Counter,
        "Events published to the pages.",
        load(&f.events),
    );
    t.one(
        "agent_fold_serve_sessions_evicted_total",
        Kind::Counter,
        "Sessions forgotten to keep the newest 1000.",
        load(&f.evicted),
    );
    t.family(
        "agent_fold_serve_source_state",
        Kind::Gauge,
        "1 for the source's state (starting, live, error, ended), 0 for the others.",
    );
    for s in SourceState::ALL {
        let v = f64::from(u8::from(s == held.status.state));
        t.sample("agent_fold_serve_source_state", &[("state", s.name())], v);
    }
    t.one(
        "agent_fold_serve_sessions",
        Kind::Gauge,
        "Sessions the page shows.",
        held.sessions as f64,
    );
    t.one(
        "agent_fold_serve_buffered_events",
        Kind::Gauge,
        "Events buffered for pages that reconnect.",
        held.events as f64,
    );
    t.family(
        "agent_fold_serve_buffered_bytes",
        Kind::Gauge,
        "Bytes the hub holds: the event buffer, and the sessions' latest records and frames.",
    )
    .sample(
        "agent_fold_serve_buffered_bytes",
        &[("what", "events")],
        held.event_bytes as f64,
    )
    .sample(
        "agent_fold_serve_buffered_bytes",
        &[("what", "sessions")],
        held.session_bytes as f64,
    );
    t.one(
        "agent_fold_serve_sse_clients",
        Kind::Gauge,
        "/events streams open.",
        load(&f.clients),
    );
    let c = &app.connections;
    t.one(
        "agent_fold_serve_connections",
        Kind::Gauge,
        "HTTP connections open.",
        load(&c.open),
    );
    t.one(
        "agent_fold_serve_connections_accepted_total",
        Kind::Counter,
        "HTTP connections accepted.",
        load(&c.accepted),
    );
    t.family(
        "agent_fold_serve_refusals_total",
        Kind::Counter,
        "Connections and requests refused, by reason.",
    )
    .sample(
        "agent_fold_serve_refusals_total",
        &[("reason", "connection_cap")],
        load(&c.refused),
    )
    .sample(
        "agent_fold_serve_refusals_total",
        &[("reason", "host")],
        load(&app.hosts.refused_host),
    )
    .sample(
        "agent_fold_serve_refusals_total",
        &[("reason", "origin")],
        load(&app.hosts.refused_origin),
    );
    t.finish()
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
