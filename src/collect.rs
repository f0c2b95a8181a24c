//! `agent-fold collect`: an OTLP/HTTP logs receiver for coding agents' telemetry. Claude Code,
//! Codex and Gemini CLI export their events over OTLP when told an endpoint; each event
//! becomes one JSON record keyed by its session (`input=otel` reads them), written to a Fluvio
//! topic (acknowledged before OTLP success is answered: at least once) or to a JSONL file.
//! Routes: `POST /v1/logs`, `GET /metrics`, `GET /healthz`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use fluvio::{Fluvio, RecordKey, TopicProducerPool};

use crate::otlp::NotStored;
use crate::otlp::decode::Limits;
use crate::otlp::{self, EventSink, Receiver};
use crate::record::Rec;
use crate::service::metrics::{CONTENT_TYPE, Kind, Text};
use crate::service::{self as svc, Connections};

/// The command line.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Where to listen (OTLP/HTTP's port by default, on loopback); beyond loopback a
    /// --token-file is required
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:4318")]
    pub listen: SocketAddr,
    /// Produce each event to this Fluvio topic (current profile), keyed by its session; made
    /// with one partition when missing
    #[arg(long, value_name = "TOPIC", conflicts_with = "out", required_unless_present = "out",
          value_parser = crate::topics::topic_name)]
    pub topic: Option<String>,
    /// Write each event as a line of JSON to FILE (appended), or - for stdout; no cluster
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A file holding the bearer token every request must carry (Authorization: Bearer …)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The largest request body, as it arrives
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.body as u64, value_parser = crate::flags::within(1024..=1 << 30))]
    pub max_body: u64,
    /// The largest request body once inflated (gzip)
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.inflated as u64, value_parser = crate::flags::within(1024..=1 << 30))]
    pub max_inflated: u64,
    /// The most records and values (attributes, bodies, their nested arrays and maps) a
    /// request may hold, counted before it is decoded: what decoding builds is bounded by it
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.items as u64, value_parser = crate::flags::within(1..=100_000_000))]
    pub max_items: u64,
    /// Requests decoded at once; more wait up to 5 s, then are told 503 with Retry-After
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = crate::flags::within(1..=1024))]
    pub in_flight: u64,
    /// Connections served at once (exporters keep theirs open); more are closed at once
    #[arg(long, value_name = "N", default_value_t = 2048, value_parser = crate::flags::within(1..=100_000))]
    pub max_connections: u64,
    /// A request's head must arrive within SECS of the connection (or of the last response)
    #[arg(long, value_name = "SECS", value_parser = crate::flags::secs, default_value = "10")]
    pub header_timeout: Duration,
}

/// Events as JSON lines to a file or stdout, flushed before success is answered.
struct FileSink {
    out: Mutex<Box<dyn Write + Send>>,
}

impl EventSink for FileSink {
    fn write(&self, records: Vec<Rec>) -> otlp::Written<'_> {
        Box::pin(async move {
            tokio::task::block_in_place(|| {
                let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
                for r in &records {
                    out.write_all(&r.value)
                        .and_then(|()| out.write_all(b"\n"))?;
                }
                Ok(out.flush()?)
            })
        })
    }
}

/// Events produced to a topic keyed by session, acknowledged before success is answered.
struct TopicSink {
    /// The client the producer works through.
    _fluvio: Fluvio,
    producer: TopicProducerPool,
    /// Writes one at a time: a flush acknowledges what this write sent, no other's.
    order: tokio::sync::Mutex<()>,
    /// The last write failed (for `/healthz`).
    failing: std::sync::atomic::AtomicBool,
}

impl EventSink for TopicSink {
    fn write(&self, records: Vec<Rec>) -> otlp::Written<'_> {
        Box::pin(async move {
            let _one = self.order.lock().await;
            let result = async {
                let mut sent = Vec::with_capacity(records.len());
                for r in records {
                    let key = r.key.map_or(RecordKey::NULL, RecordKey::from);
                    sent.push(
                        self.producer
                            .send(key, r.value)
                            .await
                            .map_err(NotStored::cluster)?,
                    );
                }
                self.producer.flush().await.map_err(NotStored::cluster)?;
                for out in sent {
                    out.wait().await.map_err(NotStored::cluster)?;
                }
                Ok(())
            };
            let r = tokio::time::timeout(Duration::from_secs(30), result)
                .await
                .unwrap_or(Err(NotStored::NoAck));
            self.failing.store(r.is_err(), Ordering::Relaxed);
            r
        })
    }
}

#[derive(Clone)]
struct App {
    receiver: Arc<Receiver>,
    connections: Arc<Connections>,
    sink: String,
    topic: Option<Arc<TopicSink>>,
}

async fn metrics(State(app): State<App>) -> Response {
    let mut t = Text::default();
    otlp::metrics_text(&mut t, "agent_fold_collect", &app.receiver.counters);
    let c = &app.connections;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    t.one(
        "agent_fold_collect_connections",
        Kind::Gauge,
        "HTTP connections open.",
        load(&c.open),
    );
    t.one(
        "agent_fold_collect_connections_refused_total",
        Kind::Counter,
        "Connections closed at once: the cap was reached.",
        load(&c.refused),
    );
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], t.finish()).into_response()
}

/// 200 while the sink takes writes, 503 while the last write to the topic failed. Where a token
/// is set, only a request that carries it is told where the events go.
async fn healthz(State(app): State<App>, headers: axum::http::HeaderMap) -> Response {
    let failing = app
        .topic
        .as_ref()
        .is_some_and(|t| t.failing.load(Ordering::Relaxed));
    let (code, state) = match failing {
        true => (StatusCode::SERVICE_UNAVAILABLE, "error"),
        false => (StatusCode::OK, "live"),
    };
    let body = match app.receiver.authorized(&headers) {
        true => serde_json::json!({"state": state, "sink": app.sink}),
        false => serde_json::json!({"state": state}),
    };
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `agent-fold collect`.
pub(crate) fn main(args: &Args) -> Result<i32> {
    // Every refusal before anything listens or connects.
    let token = otlp::token_for(args.listen, args.token_file.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(collect(args, token))
}

async fn collect(args: &Args, token: otlp::Token) -> Result<i32> {
    let mut signals = svc::Signals::new().context("listening for signals")?;
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("listening for SIGHUP")?;
    svc::raise_open_files();
    let (sink, describe, topic): (Arc<dyn EventSink>, String, Option<Arc<TopicSink>>) =
        match (&args.topic, &args.out) {
            (Some(t), _) => {
                let fluvio = crate::topics::connect().await?;
                let layout = crate::topics::Layout {
                    partitions: 1,
                    replication: 1,
                };
                crate::topics::ensure_topic(&fluvio, t, layout).await?;
                let producer = fluvio
                    .topic_producer(t.clone())
                    .await
                    .with_context(|| format!("opening a producer on {t}"))?;
                let sink = Arc::new(TopicSink {
                    _fluvio: fluvio,
                    producer,
                    order: tokio::sync::Mutex::new(()),
                    failing: Default::default(),
                });
                (
                    sink.clone() as Arc<dyn EventSink>,
                    format!("Fluvio topic {t}"),
                    Some(sink),
                )
            }
            (None, Some(p)) if p.as_os_str() == "-" => (
                Arc::new(FileSink {
                    out: Mutex::new(Box::new(std::io::stdout())),
                }),
                "stdout".to_owned(),
                None,
            ),
            (None, Some(p)) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening {} to append events", p.display()))?;
                (
                    Arc::new(FileSink {
                        out: Mutex::new(Box::new(std::io::BufWriter::new(file))),
                    }),
                    p.display().to_string(),
                    None,
                )
            }
            (None, None) => bail!("give --topic TOPIC or --out FILE|-"),
        };
    let limits = Limits {
        body: args.max_body as usize,
        inflated: args.max_inflated as usize,
        items: args.max_items as usize,
    };
    let receiver = Arc::new(Receiver::new(sink, token, limits, args.in_flight as usize));
    let app = App {
        receiver: Arc::clone(&receiver),
        connections: Arc::default(),
        sink: describe.clone(),
        topic,
    };
    let router = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(app.clone())
        .merge(otlp::router(Arc::clone(&receiver)));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let limits = svc::Limits::new(args.max_connections as usize, args.header_timeout);
    // The one line on stderr a script waits for (stdout may be the events).
    eprintln!("agent-fold collect: OTLP/HTTP logs on http://{addr}/v1/logs into {describe}");
    tracing::info!(max_connections = limits.connections, "listening on {addr}");
    let server = svc::serve(listener, router, limits, Arc::clone(&app.connections));
    tokio::pin!(server);
    loop {
        tokio::select! {
            () = &mut server => break,
            () = signals.recv() => break,
            // A rotated token: read the file again (a bad one keeps the token there was).
            _ = hangup.recv() => app.receiver.reload_token(),
        }
    }
    // No new connection is taken; the requests in flight are finished before the process
    // goes, so that no acknowledged batch is cut and none is answered 500.
    receiver.drain().await;
    Ok(0)
}
