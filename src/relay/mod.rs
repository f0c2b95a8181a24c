//! `agent-fold relay`: fills the sibling topic `<topic>-pressure` from a live cluster. The
//! module runs here, in fluvio-smartengine, as `agent-fold run` runs it (so offsets are the
//! input's own); each record it makes is produced keyed by its session; the consumer offset is
//! committed only after the cluster acknowledged what came from the records below it. The loop
//! is [`pump`], generic over the [`cluster`] client and the tests' in-memory stand-ins (`memory`,
//! built for the tests and with feature `test-doubles`).

pub(crate) mod cluster;
#[cfg(any(test, feature = "test-doubles"))]
pub mod memory;
pub mod pump;
pub(crate) mod telemetry;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use agent_fold_core::{Config, View};

use crate::module::{Instance, Module, engine_params, read_wasm};
use crate::service::hosts::Hosts;
use crate::service::{self, Limits, Signals};
use pump::{Control, Exit, Settings, Stats};
use telemetry::{Phase, Watch};

/// What to relay, from where, to where, with which module.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// The event topic
    #[arg(long, value_name = "TOPIC", value_parser = crate::topics::topic_name)]
    pub topic: String,
    /// The sibling topic the pressure records go to, created when missing [default: TOPIC-pressure]
    #[arg(long, value_name = "TOPIC", value_parser = crate::topics::topic_name)]
    pub to: Option<String>,
    /// The consumer id the relay's offsets are committed under
    #[arg(long, value_name = "ID", default_value = "agent-fold-relay")]
    pub consumer: String,
    /// A partition to relay, repeatable [default: all]: relays given different partitions share
    /// a topic
    #[arg(long = "partition", value_name = "N")]
    pub partitions: Vec<u32>,
    /// The SmartModule registered in the cluster to run, the very bytes chat consumers run
    /// [default: agent-fold]
    #[arg(long, value_name = "NAME", conflicts_with = "wasm")]
    pub smartmodule: Option<String>,
    /// A local build of the SmartModule to run instead
    #[arg(long, value_name = "FILE")]
    pub wasm: Option<PathBuf>,
    #[command(flatten)]
    pub params: crate::flags::Params,
    /// Records before the committed offset replayed through look_back on a (re)start
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub lookback: u64,
    /// Exit 0 after SECS with no new record
    #[arg(long, value_name = "SECS", value_parser = crate::flags::secs)]
    pub idle_exit: Option<Duration>,
    /// While records keep coming, settle (wait for the cluster's acknowledgements, then commit)
    /// every SECS; a pause in the stream settles at once. A crash repeats up to SECS of records
    #[arg(long, value_name = "SECS", value_parser = crate::flags::secs, default_value = "1")]
    pub commit_every: Duration,
    /// Cluster failures in a row before giving up (back-off from 0.5 s, doubling to 16 s)
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub retries: u32,
    /// Serve /metrics (Prometheus text) and /healthz on this address from the start
    #[arg(long, value_name = "IP:PORT")]
    pub metrics: Option<SocketAddr>,

    /// Partitions of the sibling topic when the relay creates it [default: the event topic's]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub to_partitions: Option<u32>,

    /// Replication factor of the sibling topic when the relay creates it [default: the event
    /// topic's]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub to_replication: Option<u32>,
}

impl Args {
    /// The sibling topic.
    pub(crate) fn to(&self) -> String {
        self.to
            .clone()
            .unwrap_or_else(|| format!("{}-pressure", self.topic))
    }

    /// How the sibling topic is laid out when the relay creates it: as the event topic is,
    /// unless the flags say otherwise.
    pub(crate) fn to_layout(&self, events: cluster::Layout) -> cluster::Layout {
        cluster::Layout {
            partitions: self.to_partitions.unwrap_or(events.partitions),
            replication: self.to_replication.unwrap_or(events.replication),
        }
    }

    /// The module's config: the pressure view, checked before any work (a bad param is named);
    /// a sibling topic that is the event topic itself is refused too (a feedback loop).
    pub(crate) fn config(&self) -> Result<Config> {
        if self.to() == self.topic {
            bail!(
                "--to {0} names the event topic itself: the relay would consume the pressure \
                 records it produces (give another topic, or leave --to out for {0}-pressure)",
                self.topic
            );
        }
        let params = self.params.settle()?;
        if params.named("emit") && params.config().view != View::Pressure {
            bail!(
                "the relay serves the pressure view: -e emit={} is refused (emit=pressure is implied)",
                params.config().view.name()
            );
        }
        Ok(params.view(View::Pressure))
    }

    /// The loop's settings.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            lookback: self.lookback,
            idle_exit: self.idle_exit,
            retries: self.retries,
            commit_every: self.commit_every,
            ..Settings::default()
        }
    }

    /// The partitions this relay takes, of a topic that has `count`.
    pub(crate) fn select(&self, count: u32) -> Result<Vec<u32>> {
        if self.partitions.is_empty() {
            return Ok((0..count).collect());
        }
        let mut parts = self.partitions.clone();
        parts.sort_unstable();
        parts.dedup();
        if let Some(p) = parts.iter().find(|p| **p >= count) {
            bail!(
                "--partition {p}: topic {} has partitions 0..{count}",
                self.topic
            );
        }
        Ok(parts)
    }

    /// The module, named for messages.
    fn module_name(&self) -> String {
        match (&self.wasm, &self.smartmodule) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(n)) => format!("SmartModule {n}"),
            (None, None) => "SmartModule agent-fold".into(),
        }
    }
}

/// The command line: `agent-fold relay …`: every refusal (params, `--to`, the `.wasm`, the
/// metrics address) before the cluster is contacted.
pub(crate) fn main(args: &Args) -> Result<i32> {
    let params = engine_params(&args.config()?)?;
    let local = match args.wasm.as_deref() {
        Some(path) => {
            let wasm = read_wasm(path)?;
            Instance::new(&wasm, &params, None)
                .with_context(|| format!("the SmartModule {} does not load", path.display()))?;
            Some(wasm)
        }
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        // Signals are honoured from the first instant: during the connect back-off too.
        let mut signals = Signals::new().context("listening for signals")?;
        let watch = Arc::new(Watch::default());
        if let Some(addr) = args.metrics {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("--metrics {addr}: listening"))?;
            let bound = listener.local_addr()?;
            if !bound.ip().is_loopback() {
                tracing::warn!("--metrics {bound} is not a loopback address");
            }
            tracing::info!("metrics on http://{bound}/metrics, health on http://{bound}/healthz");
            let hosts = Arc::new(Hosts::new(bound.port(), &[]));
            let app = telemetry::router(Arc::clone(&watch), hosts);
            let limits = Limits::new(64, Duration::from_secs(10));
            tokio::spawn(service::serve(listener, app, limits, Arc::default()));
        }
        relay(args, params, local, &mut signals, &watch).await
    })
}

/// Connects (with back-off), prepares the sibling topic and the module, and relays every
/// partition taken until idle, stopped or failed.
async fn relay(
    args: &Args,
    params: Vec<(&'static str, String)>,
    local: Option<Vec<u8>>,
    signals: &mut Signals,
    watch: &Watch,
) -> Result<i32> {
    let settings = args.settings();
    let to = args.to();
    let setup = async {
        let fluvio = connect(&settings, watch).await?;
        let events = cluster::layout(&fluvio, &args.topic).await?;
        let count = events.partitions;
        let parts = args.select(count)?;
        // The module first: a refusal leaves the cluster as it was.
        let wasm = match local {
            Some(w) => w,
            None => {
                let name = args.smartmodule.as_deref().unwrap_or("agent-fold");
                cluster::smartmodule_wasm(&fluvio, name).await?
            }
        };
        cluster::ensure_topic(&fluvio, &to, args.to_layout(events)).await?;
        anyhow::Ok((fluvio, parts, wasm))
    };
    let (fluvio, parts, wasm) = tokio::select! {
        r = setup => r?,
        () = signals.recv() => {
            tracing::info!("stopped before relaying: nothing was read or committed");
            return Ok(0);
        }
    };
    tracing::info!(
        "{} partitions {parts:?} -> {to}, consumer {}, {}, look-back {}",
        args.topic,
        args.consumer,
        args.module_name(),
        args.lookback
    );
    watch.figures.add(&parts);
    watch.set(Phase::Relaying);
    let ctl = Control::with_figures(Arc::clone(&watch.figures));
    // One maker for every partition's instances (each compiles the `.wasm` on its own thread).
    let make: pump::Make = Arc::new(move || -> Result<Module> {
        Ok(Module::Wasm(Box::new(Instance::new(&wasm, &params, None)?)))
    });
    let mut first = Some(fluvio);
    let mut pumps: FuturesUnordered<_> = parts
        .iter()
        .map(|&partition| {
            let mut connect = cluster::FluvioConnect {
                target: cluster::Target {
                    topic: args.topic.clone(),
                    to: to.clone(),
                    consumer: args.consumer.clone(),
                    partition,
                },
                first: first.take(),
            };
            let (make, settings, ctl) = (&make, &settings, &ctl);
            async move { pump::run(&mut connect, make, partition, settings, ctl).await }
        })
        .collect();
    let started = Instant::now();
    let relayed = async {
        let mut outcome: Result<Exit> = Ok(Exit::Idle);
        while let Some(r) = pumps.next().await {
            match r {
                Ok(Exit::Stopped) => outcome = outcome.map(|_| Exit::Stopped),
                Ok(Exit::Idle) => {}
                Err(e) => {
                    // One partition failing stops the others after their round in hand.
                    ctl.stop();
                    if outcome.is_ok() {
                        outcome = Err(e);
                    }
                }
            }
        }
        outcome
    };
    let outcome = tokio::select! {
        o = relayed => o,
        _ = stop_on(signals, &ctl, watch) => unreachable!("stop_on never ends"),
        _ = progress(&ctl) => unreachable!("progress never ends"),
    };
    watch.set(Phase::Stopping);
    tracing::info!("{}", summary(&ctl.stats(), started.elapsed(), &outcome));
    outcome.map(|_| 0)
}

/// Connects, retrying with back-off: an unreachable cluster is a clear error, never a panic.
async fn connect(s: &Settings, watch: &Watch) -> Result<fluvio::Fluvio> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match cluster::connect().await {
            Ok(f) => return Ok(f),
            Err(e) if attempt > s.retries => {
                return Err(e.context(format!("gave up after {attempt} attempts")));
            }
            Err(e) => {
                watch.connect_retries.fetch_add(1, Ordering::Relaxed);
                let delay = s.backoff * 2u32.pow((attempt - 1).min(5));
                tracing::warn!(
                    "{e:#}; retrying in {delay:.1?} (attempt {attempt} of {})",
                    s.retries + 1
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// SIGINT or SIGTERM: stop after the round in hand (flushed, committed); a second one: now.
async fn stop_on(signals: &mut Signals, ctl: &Control, watch: &Watch) {
    signals.recv().await;
    tracing::info!("stopping: finishing the round in hand (produce, acknowledgement, commit)");
    watch.set(Phase::Stopping);
    ctl.stop();
    signals.recv().await;
    tracing::warn!("stopped at once: what came after the last commit is relayed again next time");
    std::process::exit(130);
}

/// A progress line on stderr every few seconds while records move or lag.
async fn progress(ctl: &Control) {
    let every = Duration::from_secs(5);
    let mut before = ctl.stats();
    loop {
        tokio::time::sleep(every).await;
        let now = ctl.stats();
        if let Some(line) = progress_line(&before, &now, every) {
            tracing::info!("{line}");
        }
        before = now;
    }
}

fn total(stats: &BTreeMap<u32, Stats>, f: impl Fn(&Stats) -> u64) -> u64 {
    stats.values().map(f).sum()
}

/// `in 9,812/s, out 3,401/s; partition 0 at 40,123, lag 9,877; …` (none when idle).
pub(crate) fn progress_line(
    before: &BTreeMap<u32, Stats>,
    now: &BTreeMap<u32, Stats>,
    dt: Duration,
) -> Option<String> {
    let rate = |f: fn(&Stats) -> u64| {
        (total(now, f) - total(before, f).min(total(now, f))) as f64 / dt.as_secs_f64()
    };
    let (rin, rout) = (rate(|s| s.records_in), rate(|s| s.records_out));
    let lag = |s: &Stats| (s.end - s.next).max(0);
    if rin == 0.0 && now.values().all(|s| lag(s) == 0) {
        return None;
    }
    let parts: Vec<String> = now
        .iter()
        .map(|(p, s)| match s.live {
            true => format!("partition {p} at {}, lag {}", s.next, lag(s)),
            false => format!("partition {p} rebuilding"),
        })
        .collect();
    Some(format!(
        "in {rin:.0}/s, out {rout:.0}/s; {}",
        parts.join("; ")
    ))
}

/// The closing line: records in and out, the relaying rate, re-fetches and restarts.
pub(crate) fn summary(
    stats: &BTreeMap<u32, Stats>,
    elapsed: Duration,
    outcome: &Result<Exit>,
) -> String {
    let rin = total(stats, |s| s.records_in);
    let rout = total(stats, |s| s.records_out);
    // Partitions relay at once (their modules on threads of their own): the span they cover.
    let spans = stats.values().filter_map(|s| s.relaying);
    let span = match (spans.clone().map(|s| s.0).min(), spans.map(|s| s.1).max()) {
        (Some(first), Some(last)) => last - first,
        _ => Duration::ZERO,
    };
    let rate = match span.as_secs_f64() {
        b if b > 0.0 => rin as f64 / b,
        _ => 0.0,
    };
    let how = match outcome {
        Ok(Exit::Idle) => "idle",
        Ok(Exit::Stopped) => "stopped",
        Err(_) => "failed",
    };
    format!(
        "{how} after {:.1} s: {rin} records in, {rout} out; {:.2} s relaying, {rate:.0} records/s; \
         {} gaps re-fetched, {} restarts",
        elapsed.as_secs_f64(),
        span.as_secs_f64(),
        total(stats, |s| s.refetches as u64),
        total(stats, |s| s.restarts as u64)
    )
}
