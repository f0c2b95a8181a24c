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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::flags::{self, Format};
use crate::module;
use events::Hub;
use fold::Fold;
use source::Plan;

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
    /// A module param for the followed log (capacity, input, projection, ...; emit is the
    /// server's own); repeatable
    #[arg(short = 'e', long = "param", value_name = "KEY=VALUE", value_parser = flags::param)]
    pub params: Vec<(String, String)>,
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
    /// The agent log to follow (a JSONL file, or a Claude Code session directory), or - for
    /// pressure records on stdin (e.g. piped from `fluvio consume agent-events-pressure`)
    #[arg(value_name = "SOURCE", required_unless_present = "topic")]
    pub log: Option<PathBuf>,
}

impl Args {
    /// The source, its params checked (a bad one fails here, before the server starts).
    pub fn plan(&self) -> Result<Plan> {
        let log = match (&self.topic, &self.log) {
            (Some(t), _) => Err(Plan::Topic(t.clone())),
            (None, Some(p)) if p.as_os_str() == "-" => Err(Plan::Stdin),
            (None, Some(p)) => Ok(p.clone()),
            (None, None) => bail!("give a SOURCE (a log, or - for stdin) or --topic"),
        };
        let path = match log {
            Ok(path) => path,
            Err(plan) => {
                if self.format.is_some()
                    || !self.params.is_empty()
                    || self.wasm.is_some()
                    || self.native
                {
                    bail!(
                        "--input, -e, --wasm and --native shape the module over a followed log; \
                         {} carries pressure records already",
                        plan.describe()
                    );
                }
                return Ok(plan);
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
        let source = module::choose(self.wasm.as_deref(), self.native);
        let fold = Fold::new(source, self.params.clone(), format)?;
        Ok(Plan::Log {
            path,
            fold: Box::new(fold),
        })
    }
}

/// The routes: `/` the page, `/context-meter.js` the element, `/serve/…` the page's script,
/// chart and style, `/events` the SSE stream, `/state` the snapshot as JSON.
pub fn router(hub: Arc<Hub>) -> Router {
    Router::new()
        .route("/", get(page::page))
        .route("/context-meter.js", get(page::script))
        .route("/serve/{file}", get(page::file))
        .route("/events", get(events_route))
        .route("/state", get(state_route))
        .with_state(hub)
}

/// `GET /events`: resumes after `Last-Event-ID` (or `?last_event_id=`, for clients that cannot
/// set headers), else starts with a snapshot. A comment every 15 s keeps idle proxies open.
async fn events_route(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query.get("last_event_id").cloned());
    let stream = hub.stream(last.as_deref());
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// `GET /state`: what a snapshot event carries, and the id it is as of.
async fn state_route(State(hub): State<Arc<Hub>>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        hub.state().to_string(),
    )
        .into_response()
}

/// `agent-fold serve`.
pub fn main(args: &Args) -> Result<i32> {
    let plan = args.plan()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(args, plan))
}

async fn serve(args: &Args, plan: Plan) -> Result<i32> {
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listening on {}", args.addr))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "agent-fold serve: {addr} is not a loopback address: anyone who can reach it sees \
             your sessions' context figures"
        );
    }
    let hub = Hub::new(args.buffer as usize, &plan.describe(), plan.module());
    plan.start(Arc::clone(&hub));
    // The one line on stdout: scripts and tests read the URL from it.
    println!("http://{addr}/");
    // axum: maintained by the tokio team, with SSE (and its keep-alive) built in.
    let server = axum::serve(listener, router(hub));
    tokio::select! {
        r = server => r.context("serving")?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(0)
}
