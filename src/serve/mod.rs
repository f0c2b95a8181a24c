//! `agent-fold serve`: the fleet board — every session a source brings, ranked by how close it
//! is to compacting, with each session's meter, panel and chart a click away, live.
//!
//! The source (a followed agent log or a directory of them run through the module, pressure
//! records on stdin, or a Fluvio topic of them) feeds the [`board::Board`]; pages get the whole
//! board and then coalesced deltas over Server-Sent Events (`/events`), scripts the same rows
//! from `/api/sessions`. Routes: [`router`].

pub mod board;
pub mod fold;
pub mod follow;
pub mod page;
pub mod source;
pub mod sse;
mod telemetry;
pub mod webhook;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::flags::{self, Format};
use crate::module;
use crate::service::hosts::{self, Hosts};
use crate::service::{self as svc, Connections, Limits};
use board::Board;
use board::alerts::{MAX_RULES, Rule};
use fold::ViewPair;
use source::Feed;

/// `--header-timeout SECS`: a positive number of seconds.
pub fn secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 86_400.0 => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!(
            "takes a positive number of seconds (a day at most), got {s:?}"
        )),
    }
}

/// `--idle SECS`: a positive number of seconds, a year at most.
fn idle_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 366.0 * 86_400.0 => {
            Ok(Duration::from_secs_f64(v))
        }
        _ => Err(format!(
            "takes a positive number of seconds (a year at most), got {s:?}"
        )),
    }
}

/// The server's command line.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Where to listen: loopback by default, port 0 picks a free one (the URL is printed)
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Read pressure records from this Fluvio topic (e.g. agent-events-pressure), with the
    /// current profile, instead of SOURCE
    #[arg(long, value_name = "TOPIC", conflicts_with = "log")]
    pub topic: Option<String>,
    /// The followed log's format: claude-code, claude-stream, codex, agent-fold, or auto to
    /// tell it from its first lines (the default); the module adapts it (its input param)
    #[arg(long = "input", value_name = "FORMAT", value_parser = flags::format)]
    pub format: Option<Format>,
    #[command(flatten)]
    pub params: crate::flags::Params,
    /// The SmartModule to run in fluvio-smartengine (default: the project's build, else the
    /// native library, with a note on stderr)
    #[arg(long, value_name = "FILE", conflicts_with = "native")]
    pub wasm: Option<PathBuf>,
    /// Run the core library instead of the .wasm (same output, no engine)
    #[arg(long)]
    pub native: bool,
    /// A session whose last activity (its latest record's timestamp, else when it was read) is
    /// older than SECS leaves the live board; it keeps its history until room is needed
    #[arg(long, value_name = "SECS", value_parser = idle_secs, default_value = "1800")]
    pub idle: Duration,
    /// Sessions the board keeps, live and idle; past it the one idle longest goes
    #[arg(long, value_name = "N", default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_sessions: u64,
    /// History points the board keeps over all sessions (32 bytes each; a session keeps at most
    /// 512); past it the session idle longest goes
    #[arg(long, value_name = "N", default_value_t = 4_194_304,
          value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
    pub history_points: u64,
    /// Alert when a session crosses a rule, once per crossing: until<20000, occupancy>0.9,
    /// used>150k, pressure>=180000 (repeatable; a tracing event, the webhook, /metrics)
    #[arg(long = "alert", value_name = "RULE", value_parser = alert_rule)]
    pub alerts: Vec<Rule>,
    /// POST each alert as JSON to this http:// URL (bounded queue, retries and timeouts; never
    /// holds the board up)
    #[arg(long, value_name = "URL", value_parser = webhook::url, requires = "alerts")]
    pub alert_webhook: Option<Uri>,
    /// A host name the page may be reached under besides localhost and IP literals (a proxy's
    /// name): repeatable. Other names are refused (403), against DNS rebinding
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// Connections served at once (pages, /events streams, scrapes); more are closed at once.
    /// Never more than half the open-file limit
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_connections: u64,
    /// A request's head must arrive within SECS of the connection (or of the last response)
    #[arg(long, value_name = "SECS", value_parser = secs, default_value = "10")]
    pub header_timeout: Duration,
    /// The agent log to follow: a JSONL file, a Claude Code session directory, or a directory of
    /// logs (~/.claude/projects, ~/.codex/sessions), or - for pressure records on stdin (e.g.
    /// piped from `fluvio consume agent-events-pressure`)
    #[arg(value_name = "SOURCE", required_unless_present = "topic")]
    pub log: Option<PathBuf>,
}

impl Args {
    /// The feed, its params, its file and its module checked: a bad one fails here, before
    /// the server starts.
    pub fn feed(&self) -> Result<Feed> {
        let log = match (&self.topic, &self.log) {
            (Some(t), _) => Err(Feed::Topic(t.clone())),
            (None, Some(p)) if p.as_os_str() == "-" => Err(Feed::Stdin),
            (None, Some(p)) => Ok(p.clone()),
            (None, None) => bail!("give a SOURCE (a log, or - for stdin) or --topic"),
        };
        let path = match log {
            Ok(path) => path,
            Err(feed) => {
                if self.format.is_some()
                    || !self.params.is_empty()
                    || self.wasm.is_some()
                    || self.native
                {
                    bail!(
                        "--input, -e, --wasm and --native shape the module over a followed log; \
                         {} carries pressure records already",
                        feed.describe()
                    );
                }
                return Ok(feed);
            }
        };
        if self.params.iter().any(|(k, _)| k == "emit") {
            bail!("-e emit=…: serve runs one instance of each view (pressure and frames)");
        }
        let has_input = self.params.iter().any(|(k, _)| k == "input");
        if has_input && self.format.is_some() {
            bail!("--input and -e input=… both name the log's format: choose one");
        }
        let format = match (self.format, has_input) {
            (Some(f), _) => Some(f),
            (None, true) => None,
            (None, false) => Some(Format::Auto),
        };
        follow::followable(&path)?;
        let source = module::choose(self.wasm.as_deref(), self.native);
        let views = ViewPair::new(source, self.params.to_vec(), format)?;
        Ok(Feed::Log {
            path,
            views: Box::new(views),
        })
    }
}

/// `--alert RULE`.
fn alert_rule(s: &str) -> Result<Rule, String> {
    Rule::parse(s).map_err(|e| e.to_string())
}

/// What the routes share: the board, and the listener's and the Host check's figures.
#[derive(Clone)]
pub struct App {
    pub board: Arc<Board>,
    pub connections: Arc<Connections>,
    pub hosts: Arc<Hosts>,
    /// The alert webhook's outcomes, when there is one.
    pub webhook: Option<Arc<webhook::Outcomes>>,
}

/// The routes: `/` the page, `/context-meter.js` the element, `/serve/…` the page's scripts
/// and style, `/events` the board's SSE stream, `/api/sessions` its rows for scripts,
/// `/api/sessions/{id}` one session's row and history, `/state` the whole board as JSON,
/// `/metrics` for Prometheus, `/healthz`; every one behind the Host / Origin check.
pub fn router(app: App) -> Router {
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
    let body = serde_json::to_vec(&serde_json::json!({ "error": why })).expect("a string");
    json(status, body)
}

/// The URL's query as `(name, value)` pairs, percent-decoded.
fn pairs(raw: Option<&str>) -> Result<Vec<(String, String)>, Response> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw.unwrap_or("")).map_err(|e| {
        refused(
            StatusCode::BAD_REQUEST,
            &format!("the query does not read: {e}"),
        )
    })
}

/// `GET /api/sessions?sort=&order=&q=&limit=&offset=&all=`: 400 with the reason for a
/// parameter that does not read.
async fn sessions_route(State(app): State<App>, RawQuery(raw): RawQuery) -> Response {
    let pairs = match pairs(raw.as_deref()) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match board::query::Query::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(q) => json(
            StatusCode::OK,
            serde_json::to_vec(&app.board.query(&q)).expect("rows serialise"),
        ),
        Err(why) => refused(StatusCode::BAD_REQUEST, &why),
    }
}

/// `GET /api/sessions/{id}`: the row and the whole history; 404 for a session not kept.
async fn session_route(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.board.session(&id, None) {
        Some(d) => json(StatusCode::OK, serde_json::to_vec(&d).expect("serialises")),
        None => refused(StatusCode::NOT_FOUND, "no such session on the board"),
    }
}

/// `GET /api/sessions/{id}/history?after=SEQ`: the points after SEQ.
async fn history_route(
    State(app): State<App>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs = match pairs(raw.as_deref()) {
        Ok(p) => p,
        Err(r) => return r,
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
        Some(d) => json(
            StatusCode::OK,
            serde_json::to_vec(&d.history).expect("serialises"),
        ),
        None => refused(StatusCode::NOT_FOUND, "no such session on the board"),
    }
}

/// `GET /state`: the whole board, every session live or idle, as JSON (for scripts and tests).
async fn state_route(State(app): State<App>) -> Response {
    let q = board::query::Query {
        all: true,
        limit: usize::MAX,
        ..board::query::Query::default()
    };
    let answer = app.board.query(&q);
    let body = serde_json::json!({
        "v": answer.v,
        "id": app.board.event_id(answer.v),
        "status": app.board.status(),
        "sessions": answer.sessions,
    });
    json(
        StatusCode::OK,
        serde_json::to_vec(&body).expect("serialises"),
    )
}

/// `agent-fold serve`.
pub fn main(args: &Args) -> Result<i32> {
    let feed = args.feed()?;
    if args.alerts.len() > MAX_RULES {
        bail!("at most {MAX_RULES} --alert rules");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(args, feed))
}

/// How often idle sessions are looked for.
const SWEEP: Duration = Duration::from_secs(1);

async fn serve(args: &Args, feed: Feed) -> Result<i32> {
    // SIGINT and SIGTERM end the server from the first instant, before anything can take time.
    let mut signals = svc::Signals::new().context("listening for signals")?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listening on {}", args.addr))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        tracing::warn!(
            "{addr} is not a loopback address: anyone who can reach it sees your sessions' \
             context figures"
        );
    }
    let (hook, outcomes) = match &args.alert_webhook {
        Some(url) => {
            let (tx, out) = webhook::start(url.clone());
            (Some(tx), Some(out))
        }
        None => (None, None),
    };
    let config = board::Config {
        idle: args.idle,
        max_sessions: args.max_sessions as usize,
        history_points: args.history_points as usize,
        rules: args.alerts.clone(),
    };
    let board = Board::new(config, &feed.describe(), feed.module(), hook);
    let app = App {
        board: Arc::clone(&board),
        connections: Arc::default(),
        hosts: Arc::new(Hosts::new(addr.port(), &args.allow_hosts)),
        webhook: outcomes,
    };
    let limits = Limits::new(args.max_connections as usize, args.header_timeout);
    feed.start(Arc::clone(&board));
    let sweeper = Arc::clone(&board);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP);
        loop {
            every.tick().await;
            sweeper.sweep();
        }
    });
    // The one line on stdout: scripts and tests read the URL from it.
    println!("http://{addr}/");
    tracing::info!(
        max_connections = limits.connections,
        header_timeout_s = limits.header_timeout.as_secs_f64(),
        "serving on http://{addr}/"
    );
    let connections = Arc::clone(&app.connections);
    tokio::select! {
        () = svc::serve(listener, router(app), limits, connections) => {}
        () = signals.recv() => {}
    }
    Ok(0)
}
