//! `relay --metrics ADDR`: `GET /metrics` (Prometheus text) and `GET /healthz`, served from
//! the moment the relay starts, before it contacts the cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::pump::RelayFigures;
use crate::service::hosts::{self, Hosts};
use crate::service::metrics::{CONTENT_TYPE, Kind, Text};

/// Where the relay is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Reaching the cluster, reading the topic and the module.
    Connecting = 0,
    /// The pumps run (each partition rebuilding or live).
    Relaying = 1,
    /// Asked to stop, or done: finishing the round in hand.
    Stopping = 2,
}

impl Phase {
    const ALL: [Phase; 3] = [Phase::Connecting, Phase::Relaying, Phase::Stopping];

    fn name(self) -> &'static str {
        match self {
            Phase::Connecting => "connecting",
            Phase::Relaying => "relaying",
            Phase::Stopping => "stopping",
        }
    }
}

/// What `/metrics` and `/healthz` read: the pumps' figures and the relay's own.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    pub figures: Arc<RelayFigures>,
    phase: AtomicU8,
    /// Failed attempts to reach the cluster before relaying.
    pub connect_retries: AtomicU64,
}

impl Watch {
    pub(crate) fn set(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    pub(crate) fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Connecting,
            1 => Phase::Relaying,
            _ => Phase::Stopping,
        }
    }
}

/// A scrape: per partition the records in and out, lag, offsets, settles, restarts,
/// re-fetches, refusals, liveness; the relay's phase and its connect retries.
pub(crate) fn render(w: &Watch) -> String {
    let stats = w.figures.stats();
    let mut t = Text::default();
    let per = |t: &mut Text,
               name: &str,
               kind: Kind,
               help: &str,
               f: &dyn Fn(&super::pump::Stats) -> Option<f64>| {
        t.family(name, kind, help);
        for (p, s) in &stats {
            if let Some(v) = f(s) {
                t.sample(name, &[("partition", &p.to_string())], v);
            }
        }
    };
    per(
        &mut t,
        "agent_fold_relay_records_in_total",
        Kind::Counter,
        "Event records run through the module.",
        &|s| Some(s.records_in as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_records_out_total",
        Kind::Counter,
        "Pressure records produced to the sibling topic.",
        &|s| Some(s.records_out as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_lag_records",
        Kind::Gauge,
        "Records of the partition not yet relayed (its end, as last read, less the next offset).",
        &|s| Some((s.end - s.next).max(0) as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_next_offset",
        Kind::Gauge,
        "The next offset to relay.",
        &|s| Some(s.next as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_committed_offset",
        Kind::Gauge,
        "The consumer's committed offset: every record below it is relayed and acknowledged.",
        &|s| s.committed.map(|c| c as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_settles_total",
        Kind::Counter,
        "Settlings: the producer flushed and acknowledged, then the offset committed.",
        &|s| Some(s.settles as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_restarts_total",
        Kind::Counter,
        "Times the partition's pump reopened after a cluster failure.",
        &|s| Some(f64::from(s.restarts)),
    );
    per(
        &mut t,
        "agent_fold_relay_refetches_total",
        Kind::Counter,
        "Gaps in the stream re-fetched from the expected offset.",
        &|s| Some(f64::from(s.refetches)),
    );
    per(
        &mut t,
        "agent_fold_relay_refusals_total",
        Kind::Counter,
        "Invocations the module refused (malformed=fail).",
        &|s| Some(s.refusals as f64),
    );
    per(
        &mut t,
        "agent_fold_relay_busy_seconds_total",
        Kind::Counter,
        "Time spent relaying (invocations, produce, settling).",
        &|s| Some(s.busy.as_secs_f64()),
    );
    per(
        &mut t,
        "agent_fold_relay_live",
        Kind::Gauge,
        "1 when the partition's state is rebuilt and it reads the live stream.",
        &|s| Some(f64::from(u8::from(s.live))),
    );
    t.one(
        "agent_fold_relay_connect_retries_total",
        Kind::Counter,
        "Failed attempts to reach the cluster at the start.",
        w.connect_retries.load(Ordering::Relaxed) as f64,
    );
    t.family(
        "agent_fold_relay_phase",
        Kind::Gauge,
        "1 for the relay's phase (connecting, relaying, stopping), 0 for the others.",
    );
    let now = w.phase();
    for p in Phase::ALL {
        t.sample(
            "agent_fold_relay_phase",
            &[("phase", p.name())],
            f64::from(u8::from(p == now)),
        );
    }
    t.finish()
}

async fn metrics(State(w): State<Arc<Watch>>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&w)).into_response()
}

/// 200 when relaying with every partition live; 503, saying why, while connecting,
/// rebuilding a partition's state, or stopping.
async fn healthz(State(w): State<Arc<Watch>>) -> Response {
    let stats = w.figures.stats();
    let waiting: Vec<u32> = stats
        .iter()
        .filter(|(_, s)| !s.live)
        .map(|(p, _)| *p)
        .collect();
    let (code, message) = match w.phase() {
        Phase::Connecting => (
            StatusCode::SERVICE_UNAVAILABLE,
            "connecting to the cluster".to_owned(),
        ),
        Phase::Stopping => (StatusCode::SERVICE_UNAVAILABLE, "stopping".to_owned()),
        Phase::Relaying if waiting.is_empty() => (StatusCode::OK, "relaying".to_owned()),
        Phase::Relaying => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("partitions {waiting:?} are rebuilding their state or reconnecting"),
        ),
    };
    let body = serde_json::json!({"phase": w.phase().name(), "message": message});
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The routes, behind the Host / Origin check.
pub(crate) fn router(w: Arc<Watch>, hosts: Arc<Hosts>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(w)
        .layer(axum::middleware::from_fn_with_state(hosts, hosts::guard))
}
