//! What `serve` serves: the page and its scripts ([`page`]), the board's Server-Sent Events
//! ([`sse`]), its rows and sessions as JSON for scripts, `/state`, and `/metrics` with
//! `/healthz` ([`telemetry`]); every route behind the Host / Origin check (docs/serve.md).

pub(crate) mod page;
pub(crate) mod sse;
pub(crate) mod telemetry;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::board::{self, Board};
use super::notifiers::outbox;
use crate::service::Connections;
use crate::service::hosts::{self, Hosts};

/// What the routes share: the board, and the listener's and the Host check's figures.
#[derive(Clone)]
pub(crate) struct App {
    pub board: Arc<Board>,
    pub connections: Arc<Connections>,
    pub hosts: Arc<Hosts>,
    /// Where alert notices go, for their outcomes in `/metrics`.
    pub receivers: Vec<Arc<outbox::Outbox>>,
    /// The OTLP receiver's counters, with `--otlp`.
    pub otlp: Arc<std::sync::OnceLock<Arc<crate::otlp::Counters>>>,
}

/// The routes: `/` the page, `/context-meter.js` the element, `/serve/…` the page's scripts
/// and style, `/events` the board's SSE stream, `/api/sessions` its rows for scripts,
/// `/api/sessions/{id}` one session's row and history, `/state` the whole board as JSON,
/// `/metrics` for Prometheus, `/healthz`; every one behind the Host / Origin check.
pub(crate) fn router(app: App) -> Router {
    let hosts = Arc::clone(&app.hosts);
    Router::new()
        .route("/", get(page::page))
        .route("/context-meter.js", get(page::script))
        .route("/serve/{file}", get(page::file))
        .route("/events", get(events_route))
        .route("/state", get(state_route))
        .route("/api/sessions", get(sessions_route))
        .route("/api/sessions/{id}", get(session_route))
        .route("/api/sessions/{id}/history", get(history_route))
        .route("/metrics", get(telemetry::metrics))
        .route("/healthz", get(telemetry::healthz))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(hosts, hosts::guard))
}

/// `GET /events`: resumes after `Last-Event-ID` (or `?last_event_id=`, for clients that cannot
/// set headers), else starts with the whole board. A comment every 15 s keeps idle proxies open.
async fn events_route(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query.get("last_event_id").cloned());
    sse::response(app.board, last.as_deref(), Duration::from_secs(15))
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

fn refused(status: StatusCode, why: &str) -> Response {
    #[derive(serde::Serialize)]
    struct Refusal<'a> {
        error: &'a str,
    }
    // A struct of one string: encoding it cannot fail.
    let body = serde_json::to_vec(&Refusal { error: why }).unwrap_or_default();
    json(status, body)
}

/// The URL's query as `(name, value)` pairs, percent-decoded; why not, in words.
/// `GET /api/sessions?sort=&order=&q=&limit=&offset=&all=`: 400 with the reason for a
/// parameter that does not read.
async fn sessions_route(State(app): State<App>, RawQuery(raw): RawQuery) -> Response {
    match board::query::Query::from_query_string(raw.unwrap_or_default().as_bytes()) {
        Ok(q) => encoded(encode(&app.board.query(&q))),
        Err(why) => refused(StatusCode::BAD_REQUEST, &why),
    }
}

/// `GET /api/sessions/{id}`: the row and the whole history; 404 for a session not kept.
async fn session_route(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.board.session(&id, None) {
        Some(d) => encoded(encode(&d)),
        None => refused(StatusCode::NOT_FOUND, "no such session on the board"),
    }
}

/// `GET /api/sessions/{id}/history?after=SEQ`: the points after SEQ.
async fn history_route(
    State(app): State<App>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs = match board::query::decode(raw.unwrap_or_default().as_bytes()) {
        Ok(p) => p,
        Err(why) => return refused(StatusCode::BAD_REQUEST, &why),
    };
    let mut after = None;
    for (k, v) in &pairs {
        match (k.as_str(), v.parse::<u64>()) {
            ("after", Ok(n)) => after = Some(n),
            ("after", Err(_)) => {
                return refused(StatusCode::BAD_REQUEST, "after: a seq, a whole number ≥ 0");
            }
            _ => {
                return refused(
                    StatusCode::BAD_REQUEST,
                    &format!("{k:?} is not a parameter (after)"),
                );
            }
        }
    }
    match app.board.session(&id, after) {
        Some(d) => encoded(encode(&d.history)),
        None => refused(StatusCode::NOT_FOUND, "no such session on the board"),
    }
}

/// `GET /state`'s body: the rows go as the JSON text the board keeps of them
/// ([`board::row`]), never read back into values — a record's numbers are kept as they came
/// (contract §5: huge numbers pass unchanged), and `1e999`, valid JSON, is no `f64`.
#[derive(serde::Serialize)]
struct StateOut<'a> {
    v: u64,
    id: String,
    status: &'a board::Status,
    sessions: &'a [Arc<serde_json::value::RawValue>],
}

/// The whole board, every session live or idle, as `GET /state` answers it.
pub(crate) fn state_json(board: &Board) -> serde_json::Result<Vec<u8>> {
    let q = board::query::Query {
        all: true,
        limit: usize::MAX,
        ..board::query::Query::default()
    };
    // The status first: the sessions that follow are as of it or later, never earlier (a
    // client that waits for a count of records then finds every one of them applied).
    let status = board.status();
    let answer = board.query(&q);
    encode(&StateOut {
        v: answer.v,
        id: board.event_id(answer.v),
        status: &status,
        sessions: &answer.sessions,
    })
}

/// `GET /state`: the whole board, every session live or idle, as JSON (for scripts and tests).
async fn state_route(State(app): State<App>) -> Response {
    encoded(state_json(&app.board))
}

/// What a route answers, as JSON. It is typed, its records raw JSON text kept as written:
/// encoding cannot fail (`serde_json` fails only on a map with keys that are not strings, or a
/// type whose own `Serialize` refuses, neither of which is here).
pub(crate) fn encode(body: &impl serde::Serialize) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(body)
}

/// A 200 of an encoded body; were the encoding to fail, a 500 saying so, never a panic.
fn encoded(body: serde_json::Result<Vec<u8>>) -> Response {
    match body {
        Ok(bytes) => json(StatusCode::OK, bytes),
        Err(e) => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the answer did not encode: {e}"),
        ),
    }
}
