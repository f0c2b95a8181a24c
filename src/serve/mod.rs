//! `agent-fold serve`: the fleet board — every session a source brings, ranked by how close it
//! is to compacting, with each session's meter, panel and chart a click away, live.
//!
//! The source (a followed agent log or a directory of them run through the module, pressure
//! records on stdin, or a Fluvio topic of them) feeds the [`board::Board`]; pages get the whole
//! board and then coalesced deltas over Server-Sent Events (`/events`), scripts the same rows
//! from `/api/sessions`. Laid out by role: [`sources`] (where records come from), the [`board`] (what
//! is kept), [`notifiers`] (where alerts go) and [`http`] (what is served: [`http::router`]).

pub(crate) mod board;
#[cfg(any(test, feature = "test-doubles"))]
pub mod fuzz;
pub(crate) mod http;
pub(crate) mod notifiers;
pub(crate) mod sources;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::http::Uri;

use crate::flags;
use crate::module;
use crate::params::Format;
use crate::params::Told;
use crate::service::hosts::Hosts;
use crate::service::{self as svc, Limits};
use agent_fold_core::Input;
use board::Board;
use board::alerts::{MAX_RULES, Rule};
use http::App;
use notifiers::{alertmanager, outbox, webhook};
use sources::feed::{self as source, Feed};
use sources::fold::ViewPair;
use sources::follow;

/// The server's command line.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Where to listen: loopback by default, port 0 picks a free one (the URL is printed)
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Read pressure records from this Fluvio topic (e.g. agent-events-pressure), with the
    /// current profile, instead of SOURCE
    #[arg(long, value_name = "TOPIC", conflicts_with = "log")]
    pub topic: Option<String>,
    /// With --topic: start each partition this many records before its end (default 100000;
    /// `all`: from its start — a whole topic, however long). Records read up to the end each
    /// partition had at the start rebuild the board and its alert state and page no one
    #[arg(long, value_name = "N|all", value_parser = look_back)]
    pub look_back: Option<LookBackRecords>,
    /// With --topic: pass over records stamped longer ago than this (90s, 30m, 2h, 1d)
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    pub since: Option<Duration>,
    /// The followed log's format: claude-code, claude-stream, codex, gemini-cli, opencode,
    /// agent-fold, or auto to tell it from its first lines (the default); the module adapts it
    /// (its input param)
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
    #[arg(long, value_name = "SECS", value_parser = flags::secs, default_value = "1800")]
    pub idle: Duration,
    /// Sessions the board keeps, live and idle; past it the one idle longest goes
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = crate::flags::within(1..=1_000_000))]
    pub max_sessions: u64,
    /// History points the board keeps over all sessions (32 bytes each; a session keeps at most
    /// 512); past it the session idle longest goes
    #[arg(long, value_name = "N", default_value_t = 4_194_304, value_parser = crate::flags::within(1_000..=100_000_000))]
    pub history_points: u64,
    /// Alert when a session crosses a rule, once per crossing: until<20000, occupancy>0.9,
    /// used>150k, pressure>=180000; compaction going wrong: past>5% (past its compaction point
    /// with no compaction), after>0.6 (a compaction left over 60% of the window), reclaimed<10%
    /// (one took off under 10%), thrash>=3 (compactions within --thrash-window). Repeatable; a
    /// tracing event, the webhook, Alertmanager, /metrics
    #[arg(long = "alert", value_name = "RULE", value_parser = alert_rule)]
    pub alerts: Vec<Rule>,
    /// How far back a session's compactions count for a `thrash` rule (90s, 30m, 2h)
    #[arg(long, value_name = "DURATION", value_parser = flags::duration, default_value = "15m")]
    pub thrash_window: Duration,
    /// POST each alert as JSON to this http:// URL (bounded queue, retries and timeouts; never
    /// holds the board up)
    #[arg(long, value_name = "URL", value_parser = webhook::url, requires = "alerts")]
    pub alert_webhook: Option<Uri>,
    /// Post alerts to this Prometheus Alertmanager (http://HOST:PORT[/PREFIX]; its v2 API),
    /// firing ones sent again every minute while they fire, resolved ones with endsAt
    #[arg(long, value_name = "URL", value_parser = alertmanager::url, requires = "alerts")]
    pub alertmanager: Option<Uri>,
    /// With --alertmanager: how often firing alerts are sent again (default 60), each with
    /// endsAt four intervals ahead (so the alerts of a board that stopped end on their own)
    #[arg(long, value_name = "SECS", value_parser = flags::secs, requires = "alertmanager")]
    pub resend: Option<Duration>,
    /// The board's URL as people reach it (behind a proxy), for the links alerts carry
    /// (default: the address it listens on)
    #[arg(long, value_name = "URL")]
    pub external_url: Option<String>,
    /// A host name the page may be reached under besides localhost and IP literals (a proxy's
    /// name): repeatable. Other names are refused (403), against DNS rebinding
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// Connections served at once (pages, /events streams, scrapes); more are closed at once.
    /// Never more than half the open-file limit
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = crate::flags::within(1..=100_000))]
    pub max_connections: u64,
    /// A request's head must arrive within SECS of the connection (or of the last response)
    #[arg(long, value_name = "SECS", value_parser = flags::secs, default_value = "10")]
    pub header_timeout: Duration,
    /// Receive agents' OpenTelemetry log events (OTLP/HTTP) on this address too (loopback by
    /// default: 127.0.0.1:4318), read with input=otel: no cluster, no collector
    #[arg(long, value_name = "IP:PORT", num_args = 0..=1,
          default_missing_value = "127.0.0.1:4318")]
    pub otlp: Option<SocketAddr>,
    /// With --otlp: a file holding the bearer token every OTLP request must carry (required
    /// when --otlp listens beyond loopback)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The agent log to follow: a JSONL file, a JSON document rewritten whole (a Gemini CLI
    /// chat), a Claude Code session directory, a directory of logs (~/.claude/projects,
    /// ~/.codex/sessions, ~/.gemini/tmp), OpenCode's database (opencode.db, or the directory
    /// holding it), or - for pressure records on stdin (e.g. piped from `fluvio consume
    /// agent-events-pressure`). None (and no --topic or --otlp): every agent's home this
    /// machine has — Claude Code's projects ($CLAUDE_CONFIG_DIR, else ~/.claude), Codex's
    /// sessions ($CODEX_HOME, else ~/.codex), Gemini CLI's chats (~/.gemini/tmp), OpenCode's
    /// database ($XDG_DATA_HOME, else ~/.local/share)
    #[arg(value_name = "SOURCE")]
    pub log: Option<PathBuf>,
}

impl Args {
    /// The feeds, their params, files and modules checked: a bad one fails here, before the
    /// server starts.
    pub(crate) fn feeds(&self) -> Result<Feeds> {
        let log = match (&self.topic, &self.log) {
            (Some(t), _) => Some(Err(Feed::Topic {
                topic: t.clone(),
                look_back: source::LookBack {
                    records: self.look_back.map_or(Some(LOOK_BACK), |l| l.0),
                    since: self.since,
                },
            })),
            (None, Some(p)) if p.as_os_str() == "-" => Some(Err(Feed::Stdin)),
            (None, Some(p)) => Some(Ok(vec![(None, p.clone())])),
            (None, None) if self.otlp.is_some() => None,
            (None, None) => Some(Ok(found_homes(&crate::homes::here())?)),
        };
        if self.topic.is_none() && (self.look_back.is_some() || self.since.is_some()) {
            bail!("--look-back and --since say where --topic starts: they go with --topic");
        }
        let shapes = self.format.is_some()
            || !self.params.params.is_empty()
            || self.wasm.is_some()
            || self.native;
        if let Some(Err(feed)) = &log
            && shapes
            && self.otlp.is_none()
        {
            bail!(
                "--input, -e, --wasm and --native shape the module over a followed log or --otlp; \
                 {} carries pressure records already",
                feed.describe()
            );
        }
        let params = self.params.settle()?;
        params.refuse(
            "emit",
            "serve runs one instance of each view (pressure and frames)",
        )?;
        let told = Told::settle(self.format, &params)?;
        let source = module::choose(self.wasm.as_deref(), self.native);
        let otlp = match self.otlp {
            Some(addr) => {
                params.refuse("input", "--otlp's events are read with input=otel")?;
                let token = crate::otlp::token_for(addr, self.token_file.as_deref())?;
                let views = ViewPair::new(source.clone(), params.clone(), Told::Flag(Input::Otel))?;
                Some(source::OtlpFeed {
                    addr,
                    token,
                    views: Box::new(views),
                })
            }
            None if self.token_file.is_some() => bail!("--token-file goes with --otlp"),
            None => None,
        };
        let feed = match log {
            None => None,
            Some(Err(feed)) => Some(feed),
            Some(Ok(paths)) => {
                let mut logs = Vec::new();
                for (agent, path) in paths {
                    follow::followable(&path)?;
                    let views = ViewPair::new(source.clone(), params.clone(), told)?;
                    logs.push(source::LogFeed {
                        path,
                        agent,
                        views: Box::new(views),
                    });
                }
                Some(Feed::Logs(logs))
            }
        };
        Ok(Feeds { feed, otlp })
    }
}

/// `serve` with no source: the agents' homes this machine has, each said on stderr, found or
/// not; none found is refused, naming where each was looked for.
fn found_homes(homes: &[crate::homes::Home]) -> Result<Vec<(Option<&'static str>, PathBuf)>> {
    let mut found = Vec::new();
    for h in homes {
        if h.found {
            tracing::info!(
                agent = h.agent,
                "following {}'s sessions: {}",
                h.agent,
                h.path.display()
            );
            found.push((Some(h.agent), h.path.clone()));
        } else {
            tracing::info!(
                agent = h.agent,
                "no {} sessions here: {} is not there",
                h.agent,
                h.path.display()
            );
        }
    }
    if found.is_empty() {
        let looked: Vec<String> = homes
            .iter()
            .map(|h| format!("{} ({})", h.agent, h.path.display()))
            .collect();
        bail!(
            "no agent's sessions on this machine: looked for {}; give a SOURCE (a log, or - for \
             stdin), --topic or --otlp",
            if looked.is_empty() {
                "none (no HOME)".to_owned()
            } else {
                looked.join(", ")
            }
        );
    }
    Ok(found)
}

/// What the board is fed from: a source, OTLP events, or both.
pub(crate) struct Feeds {
    pub feed: Option<Feed>,
    pub otlp: Option<source::OtlpFeed>,
}

impl Feeds {
    /// The sources as the status line names them.
    pub(crate) fn describe(&self) -> String {
        let otlp = self
            .otlp
            .as_ref()
            .map(|o| format!("OTLP on http://{}/v1/logs", o.addr));
        match (&self.feed, otlp) {
            (Some(f), Some(o)) => format!("{} and {o}", f.describe()),
            (Some(f), None) => f.describe(),
            (None, Some(o)) => o,
            (None, None) => String::new(),
        }
    }

    /// The module that folds, when there is one.
    pub(crate) fn module(&self) -> Option<String> {
        self.feed
            .as_ref()
            .and_then(Feed::module)
            .or_else(|| self.otlp.as_ref().map(|o| o.views.module()))
    }
}

/// `--look-back`'s default: records per partition read again at the start (docs/serve.md,
/// "Where --topic starts": a restart's catch-up in seconds within the board's bounds).
pub(crate) const LOOK_BACK: u32 = 100_000;

/// `--look-back`: records per partition, or none for `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LookBackRecords(pub Option<u32>);

/// `--look-back`: a count of records, or `all`.
fn look_back(s: &str) -> Result<LookBackRecords, String> {
    if s == "all" {
        return Ok(LookBackRecords(None));
    }
    s.parse::<u32>()
        .map(|n| LookBackRecords(Some(n)))
        .map_err(|_| format!("{s:?}: give a number of records per partition, or all"))
}

/// `--alert RULE`.
fn alert_rule(s: &str) -> Result<Rule, String> {
    Rule::parse(s).map_err(|e| e.to_string())
}

/// The OTLP receiver's counters join `/metrics`.
fn app_otlp(app: &App, otlp: Option<&source::OtlpServer>) {
    if let Some((_, _, _, receiver)) = otlp {
        let _ = app.otlp.set(Arc::clone(&receiver.counters));
    }
}

/// `agent-fold serve`.
pub(crate) fn main(args: &Args) -> Result<i32> {
    let feeds = args.feeds()?;
    if args.alerts.len() > MAX_RULES {
        bail!("at most {MAX_RULES} --alert rules");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(args, feeds))
}

/// How often idle sessions are looked for.
const SWEEP: Duration = Duration::from_secs(1);

async fn serve(args: &Args, feeds: Feeds) -> Result<i32> {
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
    let hook = args.alert_webhook.clone().map(webhook::start);
    let manager = args
        .alertmanager
        .as_ref()
        .map(|_| outbox::Outbox::new("alertmanager", 1));
    let receivers: Vec<_> = hook.iter().chain(manager.iter()).cloned().collect();
    let policy = board::Policy {
        idle: args.idle,
        max_sessions: args.max_sessions as usize,
        history_points: args.history_points as usize,
        rules: args.alerts.clone(),
        thrash_window: args.thrash_window,
    };
    let board = Board::new(policy, &feeds.describe(), feeds.module(), receivers.clone());
    if let (Some(url), Some(outbox)) = (&args.alertmanager, &manager) {
        let link = args
            .external_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}/"));
        let to = alertmanager::Target {
            url: url.clone(),
            link,
            resend: args.resend.unwrap_or(alertmanager::RESEND),
        };
        alertmanager::start(to, Arc::clone(&board), Arc::clone(outbox));
    }
    let app = App {
        board: Arc::clone(&board),
        connections: Arc::default(),
        hosts: Arc::new(Hosts::new(addr.port(), &args.allow_hosts)),
        receivers,
        otlp: Arc::default(),
    };
    svc::raise_open_files();
    let limits = Limits::new(args.max_connections as usize, args.header_timeout);
    let otlp = match feeds.otlp {
        Some(o) => Some(o.start(Arc::clone(&board), feeds.feed.is_none()).await?),
        None => None,
    };
    app_otlp(&app, otlp.as_ref());
    if let Some(feed) = feeds.feed {
        feed.start(Arc::clone(&board));
    }
    let sweeper = Arc::clone(&board);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP);
        loop {
            every.tick().await;
            sweeper.sweep();
        }
    });
    // On stdout: the page's URL first (scripts and tests read it), then with --otlp the
    // endpoint exporters are given.
    println!("http://{addr}/");
    if let Some((listener, ..)) = &otlp {
        println!("http://{}/v1/logs", listener.local_addr()?);
    }
    tracing::info!(
        max_connections = limits.connections,
        header_timeout_s = limits.header_timeout.as_secs_f64(),
        "serving on http://{addr}/"
    );
    let connections = Arc::clone(&app.connections);
    let receiver = otlp.as_ref().map(|(.., r)| Arc::clone(r));
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("listening for SIGHUP")?;
    let otlp_server = async move {
        match otlp {
            Some((listener, router, connections, _)) => {
                svc::serve(listener, router, limits, connections).await
            }
            None => std::future::pending().await,
        }
    };
    let page = svc::serve(listener, http::router(app), limits, connections);
    tokio::pin!(page, otlp_server);
    loop {
        tokio::select! {
            () = &mut page => break,
            () = &mut otlp_server => break,
            () = signals.recv() => break,
            // With --otlp --token-file: a rotated token, read again.
            _ = hangup.recv() => if let Some(r) = &receiver {
                r.reload_token();
            },
        }
    }
    // The OTLP requests in flight are finished before the process goes: none is cut after
    // its events reached the board, none answered 500.
    if let Some(r) = &receiver {
        r.drain().await;
    }
    Ok(0)
}
