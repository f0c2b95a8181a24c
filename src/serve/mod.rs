//! `agent-fold serve`: a local web page with one `<context-meter>` per session, live.
//!
//! The source (a followed agent log run through the module, pressure records on stdin, or a
//! Fluvio topic of them) feeds the [`events::Hub`]; the page gets each session's latest state
//! and every change after it over Server-Sent Events (`/events`). Routes: [`router`].

pub mod events;
pub mod fold;
pub mod follow;
pub mod page;
pub mod source;
pub mod sse;
mod telemetry;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::flags::{self, Format};
use crate::module;
use crate::service::hosts::{self, Hosts};
use crate::service::{self as svc, Connections, Limits};
use events::Hub;
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
    /// Events kept for pages that reconnect (Last-Event-ID); an older page gets a snapshot
    #[arg(long, value_name = "EVENTS", default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub buffer: u64,
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
    /// The agent log to follow (a JSONL file, or a Claude Code session directory), or - for
    /// pressure records on stdin (e.g. piped from `fluvio consume agent-events-pressure`)
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

/// What the routes share: the hub, and the listener's and the Host check's figures.
#[derive(Clone)]
pub struct App {
    pub hub: Arc<Hub>,
    pub connections: Arc<Connections>,
    pub hosts: Arc<Hosts>,
}

/// The routes: `/` the page, `/context-meter.js` the element, `/serve/…` the page's script,
/// chart and style, `/events` the SSE stream, `/state` the snapshot as JSON, `/metrics` for
/// Prometheus, `/healthz`; every one behind the Host / Origin check.
pub fn router(app: App) -> Router {
    let hosts = Arc::clone(&app.hosts);
    Router::new()
        .route("/", get(page::page))
        .route("/context-meter.js", get(page::script))
        .route("/serve/{file}", get(page::file))
        .route("/events", get(events_route))
        .route("/state", get(state_route))
        .route("/metrics", get(telemetry::metrics))
        .route("/healthz", get(telemetry::healthz))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(hosts, hosts::guard))
}

/// `GET /events`: resumes after `Last-Event-ID` (or `?last_event_id=`, for clients that cannot
/// set headers), else starts with a snapshot. A comment every 15 s keeps idle proxies open.
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
    sse::response(app.hub, last.as_deref(), Duration::from_secs(15))
}

/// `GET /state`: what a snapshot event carries, and the id it is as of.
async fn state_route(State(app): State<App>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        app.hub.state(),
    )
        .into_response()
}

/// `agent-fold serve`.
pub fn main(args: &Args) -> Result<i32> {
    let feed = args.feed()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(args, feed))
}

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
    let hub = Hub::new(args.buffer as usize, &feed.describe(), feed.module());
    let app = App {
        hub: Arc::clone(&hub),
        connections: Arc::default(),
        hosts: Arc::new(Hosts::new(addr.port(), &args.allow_hosts)),
    };
    let limits = Limits::new(args.max_connections as usize, args.header_timeout);
    feed.start(hub);
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
