//! The relay's loop, generic over where records come from ([`Partition`]) and where they go
//! ([`Sink`]), so that the same code runs over the Fluvio client and the in-memory stand-ins.
//!
//! What holds, and why:
//! - commit after ack: the consumer offset moves to `n` only after [`Sink::flush`] returned, i.e.
//!   after the cluster acknowledged every record made from the inputs below `n` (at-least-once);
//!   rounds are produced as they come and settled (flushed, then committed) every
//!   `commit_every`, when the stream pauses, and before the pump ends well;
//! - the module sees each offset once per instance, in order, at its absolute position: a gap in
//!   what the stream hands over is re-fetched from the expected offset, never skipped;
//! - a (re)start rebuilds the state through `look_back` from up to `lookback` records before the
//!   committed offset, at their own offsets, then processes from the committed offset on;
//! - no invocation, `look_back` included, hands the module more than `invocation_bytes`, and the
//!   history is fed as it is fetched: memory is bounded whatever the look-back's length;
//! - each partition's module runs on a thread of the blocking pool (`Worker`), one call at a
//!   time and in order, so the partitions' modules run at once while the pumps share one task
//!   (one invocation in flight a partition: memory grows with the partitions, as fetches do).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::module::{INVOCATION_BYTES, InvocationRefused, Module, cuts};
use crate::record::Rec;

/// A record of the event topic at its offset.
pub type AtOffset = (i64, Rec);

/// Where a partition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The first offset still stored (retention removes the records before it).
    pub first: i64,
    /// The offset the next record written will get (for the lag; may be a little stale).
    pub end: i64,
    /// The consumer's committed offset: every record below it was relayed. None: never committed.
    pub committed: Option<i64>,
}

/// One partition of the event topic, as the relay's consumer sees it.
#[allow(async_fn_in_trait)] // the pumps run on one task: their futures need not be Send
pub trait Partition {
    /// Where the partition stands, committed offset included.
    async fn position(&mut self) -> Result<Position>;
    /// The partition's end, for the lag.
    async fn end(&mut self) -> Result<i64>;
    /// Records from `from` on, none at or past `to`: a fetch's worth, some 32 MiB at most (possibly
    /// none, possibly with gaps; the caller checks and reads again).
    async fn read(&mut self, from: i64, to: i64) -> Result<Vec<AtOffset>>;
    /// (Re)starts the live stream at `from`.
    async fn seek(&mut self, from: i64) -> Result<()>;
    /// The live stream's next records: waits up to `wait` for the first (none came: empty), then
    /// takes whatever else is ready, `max` at most. Every record it returns is one the caller
    /// relays or re-fetches before the next [`Partition::commit`].
    async fn poll(&mut self, max: usize, wait: Duration) -> Result<Vec<AtOffset>>;
    /// Stores `next` as the consumer's offset (every record below it is relayed), returning once
    /// the cluster acknowledged. An implementation may store less (never more): at-least-once.
    async fn commit(&mut self, next: i64) -> Result<()>;
}

/// The sibling topic, as the relay's producer sees it.
#[allow(async_fn_in_trait)]
pub trait Sink {
    /// Queues a record (keyed by its session).
    async fn send(&mut self, record: Rec) -> Result<()>;
    /// Returns once every record sent so far is acknowledged by the cluster.
    async fn flush(&mut self) -> Result<()>;
}

/// Opens a partition's log and a sink: once at the start, again after the cluster failed.
#[allow(async_fn_in_trait)]
pub trait Connect {
    type Partition: Partition;
    type Sink: Sink;
    async fn open(&mut self) -> Result<(Self::Partition, Self::Sink)>;
}

/// Makes a fresh module instance (the pump rebuilds its state through `look_back`), on a
/// thread of the blocking pool: compiling a `.wasm` takes long, and the pumps share one task.
pub type Make = Arc<dyn Fn() -> Result<Module> + Send + Sync>;

/// How a relay runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Records before the committed offset replayed through `look_back` on a (re)start.
    pub lookback: u64,
    /// Exit after this long with no new record.
    pub idle_exit: Option<Duration>,
    /// Most records per invocation (and per produce-flush-commit round).
    pub batch: usize,
    /// Most bytes (keys and values) per invocation, `look_back` included; a record over it goes
    /// alone.
    pub invocation_bytes: usize,
    /// How long a poll waits before the loop looks at stop and idle again.
    pub wait: Duration,
    /// Fetches of one missing offset before giving up on it.
    pub refetches: u32,
    /// Cluster failures in a row (no commit in between) before giving up.
    pub retries: u32,
    /// The first retry's delay; it doubles on each failure in a row, 32 times it at most.
    pub backoff: Duration,
    /// How often the lag is refreshed.
    pub lag_every: Duration,
    /// How long relayed rounds may wait to be settled (flushed, acknowledged, committed) while
    /// records keep coming: fewer round trips, more records repeated after a crash.
    pub commit_every: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            lookback: 100_000,
            idle_exit: None,
            batch: 5_000,
            invocation_bytes: INVOCATION_BYTES,
            wait: Duration::from_millis(200),
            refetches: 5,
            retries: 8,
            backoff: Duration::from_millis(500),
            lag_every: Duration::from_secs(5),
            commit_every: Duration::from_secs(1),
        }
    }
}

impl Settings {
    /// Waits of milliseconds, no lag refresh, every round settled, an idle exit after `idle`:
    /// for the loop over the in-memory stand-ins, where nothing takes long.
    pub fn brisk(idle: Duration, batch: usize) -> Settings {
        Settings {
            idle_exit: Some(idle),
            batch,
            wait: Duration::from_millis(2),
            backoff: Duration::from_millis(1),
            lag_every: Duration::ZERO,
            commit_every: Duration::ZERO,
            ..Settings::default()
        }
    }
}

/// Why a relay ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `--idle-exit`: no new record for that long.
    Idle,
    /// Asked to stop (SIGINT, SIGTERM).
    Stopped,
}

/// Why a pump stopped short.
#[derive(Debug)]
pub enum Stop {
    /// The cluster failed (connect, fetch, produce, commit): reopen, resume from the commit.
    Cluster(anyhow::Error),
    /// The module or the data cannot go on: the relay exits with this error.
    Fatal(anyhow::Error),
}

/// One partition's figures, for progress lines.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub records_in: u64,
    pub records_out: u64,
    /// The next offset to relay (everything below it is produced).
    pub next: i64,
    pub end: i64,
    /// Live: rebuilt and reading the stream.
    pub live: bool,
    /// Time this partition's rounds and settlings took (other partitions' overlap them).
    pub busy: Duration,
    /// From the start of the first poll that brought records to the end of the last round or
    /// settling that had work: the span over which this partition relayed.
    pub relaying: Option<(Instant, Instant)>,
    pub restarts: u32,
    pub refetches: u32,
    /// The committed offset: every record below it is relayed and acknowledged.
    pub committed: Option<i64>,
    /// Settlings that committed (the producer flushed, the offset stored).
    pub settles: u64,
    /// Invocations the module refused (`malformed=fail`): the relay stops at the first.
    pub refusals: u64,
}

impl Stats {
    /// Work that began at `from` ended now (the span starts at the first).
    fn worked(&mut self, from: Instant) {
        let first = self.relaying.map_or(from, |(first, _)| first);
        self.relaying = Some((first, Instant::now()));
    }
}

/// The relay's figures, shared with whoever reads them from another task (`/metrics`).
#[derive(Debug, Default)]
pub struct RelayFigures {
    stats: Mutex<BTreeMap<u32, Stats>>,
}

impl RelayFigures {
    /// Figures for `partitions`, each at its defaults.
    pub fn new(partitions: &[u32]) -> RelayFigures {
        RelayFigures {
            stats: Mutex::new(partitions.iter().map(|p| (*p, Stats::default())).collect()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u32, Stats>> {
        // Figures only: a panic while holding the lock leaves them readable.
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of every partition's figures.
    pub fn stats(&self) -> BTreeMap<u32, Stats> {
        self.lock().clone()
    }

    /// Figures for `partitions` too, at their defaults.
    pub fn add(&self, partitions: &[u32]) {
        let mut stats = self.lock();
        for p in partitions {
            stats.entry(*p).or_default();
        }
    }
}

/// What the pumps of one relay share (they run on one task): stop, idle, figures.
pub struct Control {
    stop: Cell<bool>,
    last_record: Cell<Instant>,
    figures: Arc<RelayFigures>,
}

impl Control {
    /// Control for the pumps of `partitions`.
    pub fn new(partitions: &[u32]) -> Control {
        Control::with_figures(Arc::new(RelayFigures::new(partitions)))
    }

    /// Control whose figures go to `figures`.
    pub fn with_figures(figures: Arc<RelayFigures>) -> Control {
        Control {
            stop: Cell::new(false),
            last_record: Cell::new(Instant::now()),
            figures,
        }
    }

    /// Asks every pump to stop after the round in hand (flushed and committed).
    pub fn stop(&self) {
        self.stop.set(true);
    }

    pub fn stopping(&self) -> bool {
        self.stop.get()
    }

    /// Every partition live and no record for `idle`.
    fn idle(&self, idle: Option<Duration>) -> bool {
        idle.is_some_and(|d| {
            self.last_record.get().elapsed() >= d && self.figures.lock().values().all(|s| s.live)
        })
    }

    fn update(&self, partition: u32, f: impl FnOnce(&mut Stats)) {
        f(self.figures.lock().entry(partition).or_default());
    }

    /// A copy of every partition's figures.
    pub fn stats(&self) -> BTreeMap<u32, Stats> {
        self.figures.stats()
    }

    /// Sleeps `d`, waking early when asked to stop.
    async fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopping() && Instant::now() < until {
            let left = until.saturating_duration_since(Instant::now());
            tokio::time::sleep(left.min(Duration::from_millis(100))).await;
        }
    }
}

/// Relays one partition until idle, stopped or failed: opens, pumps, and on a cluster failure
/// backs off and opens again (resuming from the committed offset), `retries` times in a row.
pub async fn run<C: Connect>(
    connect: &mut C,
    make: &Make,
    partition: u32,
    s: &Settings,
    ctl: &Control,
) -> Result<Exit> {
    let mut failures = 0u32;
    loop {
        let next_before = ctl.stats().get(&partition).map(|st| st.next);
        let result = match connect.open().await {
            Ok((mut log, mut sink)) => pump(&mut log, &mut sink, make, partition, s, ctl).await,
            Err(e) => Err(Stop::Cluster(e)),
        };
        let e = match result {
            Ok(exit) => return Ok(exit),
            Err(Stop::Fatal(e)) => return Err(e),
            Err(Stop::Cluster(e)) => e,
        };
        ctl.update(partition, |st| {
            st.live = false;
            st.restarts += 1;
        });
        // A failure after progress starts a new count: only failures in a row give up.
        if ctl.stats().get(&partition).map(|st| st.next) != next_before {
            failures = 0;
        }
        failures += 1;
        if failures > s.retries {
            return Err(e.context(format!(
                "partition {partition}: the cluster failed {failures} times in a row; giving up"
            )));
        }
        let delay = s.backoff * 2u32.pow((failures - 1).min(5));
        tracing::warn!(
            "partition {partition}: {e:#}; retrying in {delay:.1?} (attempt {failures} of {})",
            s.retries
        );
        ctl.pause(delay).await;
        if ctl.stopping() {
            return Ok(Exit::Stopped);
        }
    }
}

/// One life of a partition's relay: rebuild from the committed offset, then relay round after
/// round (invoke, produce, flush until acknowledged, commit) until idle, stopped or failed.
pub async fn pump<L: Partition, S: Sink>(
    log: &mut L,
    sink: &mut S,
    make: &Make,
    partition: u32,
    s: &Settings,
    ctl: &Control,
) -> Result<Exit, Stop> {
    ctl.update(partition, |st| st.live = false);
    let pos = log.position().await.map_err(Stop::Cluster)?;
    let start = resume_at(&pos, partition);
    let Some(mut module) = rebuilt(log, make, &pos, start, partition, s, ctl).await? else {
        // Stopped mid-rebuild: nothing of this life was relayed, nothing to settle.
        tracing::info!("partition {partition}: stopped during the look-back, at its request");
        return Ok(Exit::Stopped);
    };
    log.seek(start).await.map_err(Stop::Cluster)?;
    ctl.update(partition, |st| {
        st.next = start;
        st.committed = pos.committed;
        st.end = st.end.max(pos.end);
        st.live = true;
    });
    // A pump going live restarts the idle clock: idle means no record since every pump is live.
    ctl.last_record.set(Instant::now());

    let mut next = start;
    let mut settled = Settled::at(start, partition, ctl);
    let mut missing: Option<(i64, u32)> = None;
    let mut lag_at = Instant::now();
    // The partition's end as last read from the cluster (not from what the stream handed over).
    let mut known_end = pos.end;
    loop {
        if ctl.stopping() {
            settled.up_to(next, log, sink).await?;
            return Ok(Exit::Stopped);
        }
        let mut end = None;
        if lag_at.elapsed() >= s.lag_every {
            end = Some(log.end().await.map_err(Stop::Cluster)?);
            lag_at = Instant::now();
        }
        if let Some(e) = end {
            known_end = known_end.max(e);
        }
        let polled = Instant::now();
        let got = log.poll(s.batch, s.wait).await.map_err(Stop::Cluster)?;
        // (expected offset, what came instead: a later offset, or the partition's end)
        let mut gap = None;
        if got.is_empty() {
            // The stream paused: what was relayed is settled now, not after the next record.
            let began = Instant::now();
            if settled.up_to(next, log, sink).await? {
                ctl.update(partition, |st| {
                    st.busy += began.elapsed();
                    st.worked(began);
                });
            }
            let idle = ctl.idle(s.idle_exit);
            if idle && end.is_none() {
                end = Some(log.end().await.map_err(Stop::Cluster)?);
            }
            if let Some(e) = end {
                ctl.update(partition, |st| st.end = e);
                known_end = known_end.max(e);
            }
            match end {
                // Records below the end that the stream did not hand over: lost at its tail.
                Some(e) if e > next => gap = Some((next, format!("the partition ends at {e}"))),
                _ if idle => return Ok(Exit::Idle),
                _ => continue,
            }
        }
        let began = Instant::now();
        let (run, instead) = contiguous(got, next);
        if let Some(offset) = instead {
            gap = Some((next + run.len() as i64, format!("got {offset}")));
        }
        let max = s.invocation_bytes;
        let made = module.call(move |m| invoke(m, run, next, max)).await?;
        next = produce_pieces(made.pieces, next, sink, partition, ctl).await?;
        match made.end {
            Ended::Whole => {}
            Ended::Failed(e) => return Err(Stop::Fatal(e)),
            Ended::Refused { at, why } => {
                // Everything before the refused record is settled; nothing past it.
                settled.up_to(at, log, sink).await?;
                ctl.update(partition, |st| st.refusals += 1);
                return Err(Stop::Fatal(anyhow!(
                    "partition {partition}: the module refused the record at offset {at}; \
                     relayed and committed up to it, nothing past it: {why}"
                )));
            }
        }
        // Caught up with the end last read: settled now, not after the wait that tells a pause.
        let caught_up = next >= known_end && settled.committed < known_end;
        if caught_up || settled.at.elapsed() >= s.commit_every {
            settled.up_to(next, log, sink).await?;
        }
        ctl.update(partition, |st| {
            st.busy += began.elapsed();
            st.worked(polled);
        });
        // Idle time counts from the end of the last round: relaying is not idling.
        ctl.last_record.set(Instant::now());
        if let Some((expected, found)) = gap {
            missing = Some(refetch(log, missing, expected, &found, partition, s, ctl).await?);
        }
    }
}

/// Where a partition's relaying resumes: its committed offset, else its first; a committed
/// offset retention has removed resumes at the first still stored, said.
fn resume_at(pos: &Position, partition: u32) -> i64 {
    match pos.committed {
        Some(c) if c < pos.first => {
            tracing::warn!(
                "partition {partition}: offsets {c}..{} are gone (retention): resuming at {}",
                pos.first,
                pos.first
            );
            pos.first
        }
        Some(c) => c,
        None => pos.first,
    }
}

/// A module made off the pumps' task, its state rebuilt through `look_back` from the
/// `lookback` records before `start` (those still stored); `None`: stopped during it.
async fn rebuilt<L: Partition>(
    log: &mut L,
    make: &Make,
    pos: &Position,
    start: i64,
    partition: u32,
    s: &Settings,
    ctl: &Control,
) -> Result<Option<Worker>, Stop> {
    let from = start.saturating_sub(s.lookback as i64).max(pos.first);
    let began = Instant::now();
    let make = Arc::clone(make);
    let made = off_task(move || make()).await?;
    let mut module = Worker(Some(made.map_err(Stop::Fatal)?));
    if !rebuild(log, &mut module, from, start, partition, s, ctl).await? {
        return Ok(None);
    }
    if from < start {
        tracing::info!(
            "partition {partition}: state rebuilt through look_back from offsets \
             {from}..{start} in {:.1?}; relaying from {start}",
            began.elapsed()
        );
    }
    Ok(Some(module))
}

/// Produces each invocation's records in order (awaiting each produce), moving the
/// partition's figures on; the offset after the last piece.
async fn produce_pieces<S: Sink>(
    pieces: Vec<(usize, Vec<Rec>)>,
    mut next: i64,
    sink: &mut S,
    partition: u32,
    ctl: &Control,
) -> Result<i64, Stop> {
    for (records_in, out) in pieces {
        let records_out = out.len() as u64;
        produce(out, sink).await?;
        let done = next + records_in as i64;
        ctl.update(partition, |st| {
            st.records_in += records_in as u64;
            st.records_out += records_out;
            st.next = done;
            st.end = st.end.max(done);
        });
        next = done;
    }
    Ok(next)
}

/// An offset that did not come (`found` came instead): fetched again from it, at most
/// `s.refetches` times in a row, then a stop naming it; the offset missing and its tries.
async fn refetch<L: Partition>(
    log: &mut L,
    missing: Option<(i64, u32)>,
    expected: i64,
    found: &str,
    partition: u32,
    s: &Settings,
    ctl: &Control,
) -> Result<(i64, u32), Stop> {
    let tries = match missing {
        Some((at, n)) if at == expected => n + 1,
        _ => 1,
    };
    if tries > s.refetches {
        return Err(Stop::Fatal(anyhow!(
            "partition {partition}: offset {expected} never came ({found}; \
             {tries} fetches; were records removed?); relayed and committed up to it"
        )));
    }
    tracing::warn!(
        "partition {partition}: expected offset {expected}, {found}: re-fetching from {expected}"
    );
    ctl.update(partition, |st| st.refetches += 1);
    log.seek(expected).await.map_err(Stop::Cluster)?;
    Ok((expected, tries))
}

/// Replays offsets `from..to` through `look_back`, fetch by fetch, each cut to
/// `invocation_bytes`; between calls it looks whether the relay is asked to stop, so that a
/// signal ends even a long history replay within a call's time. False: it stopped there.
async fn rebuild<L: Partition>(
    log: &mut L,
    module: &mut Worker,
    from: i64,
    to: i64,
    partition: u32,
    s: &Settings,
    ctl: &Control,
) -> Result<bool, Stop> {
    let mut next = from;
    let mut stalls = 0;
    while next < to {
        if ctl.stopping() {
            return Ok(false);
        }
        let got = log.read(next, to).await.map_err(Stop::Cluster)?;
        let (mut run, _) = contiguous(got, next);
        run.truncate((to - next) as usize);
        stalls = if run.is_empty() { stalls + 1 } else { 0 };
        if stalls > s.refetches {
            return Err(Stop::Fatal(anyhow!(
                "partition {partition}: offset {next} cannot be read for the look-back \
                 ({stalls} fetches came back without it)"
            )));
        }
        let fed = run.len() as i64;
        let run = Arc::new(run);
        for (first, len) in cut_spans(&run, next, s.invocation_bytes) {
            if ctl.stopping() {
                return Ok(false);
            }
            let run = Arc::clone(&run);
            let at = (first - next) as usize;
            module
                .call(move |m| m.look_back(&run[at..at + len], first, usize::MAX))
                .await?
                .map_err(Stop::Fatal)?;
        }
        next += fed;
    }
    Ok(true)
}

/// [`cuts`] of `run` (at offsets from `next`) as (first offset, length) spans.
fn cut_spans(run: &[Rec], next: i64, max: usize) -> Vec<(i64, usize)> {
    cuts(run, next, max)
        .map(|(cut, first)| (first, cut.len()))
        .collect()
}

/// The contiguous run of `got` from offset `next` (offsets below it are a re-fetch's repeats),
/// and the offset that came where the run ends, if one did (a gap).
fn contiguous(got: Vec<AtOffset>, next: i64) -> (Vec<Rec>, Option<i64>) {
    let mut run = Vec::with_capacity(got.len());
    for (offset, rec) in got {
        let expected = next + run.len() as i64;
        if offset > expected {
            return (run, Some(offset));
        }
        if offset == expected {
            run.push(rec);
        }
    }
    (run, None)
}

/// A partition's module instance, called on a thread of the blocking pool: the pumps share
/// one task, so while one partition's module runs the others fetch, produce and run theirs.
struct Worker(Option<Module>);

impl Worker {
    /// `f` over the module, off the pumps' task; the module comes back with the answer.
    async fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut Module) -> T + Send + 'static,
    ) -> Result<T, Stop> {
        let mut module = self
            .0
            .take()
            .ok_or_else(|| Stop::Fatal(anyhow!("the module was lost by an earlier call")))?;
        let (module, answer) = off_task(move || {
            let answer = f(&mut module);
            (module, answer)
        })
        .await?;
        self.0 = Some(module);
        Ok(answer)
    }
}

/// `f` on a thread of the blocking pool, off the pumps' task.
async fn off_task<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Stop> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Stop::Fatal(anyhow!("the module's thread did not finish its call: {e}")))
}

/// What the module made of one poll's run, invocation by invocation.
struct Made {
    /// Each invocation's records in (a count) and out, in order.
    pieces: Vec<(usize, Vec<Rec>)>,
    end: Ended,
}

/// How a run's invocations ended.
enum Ended {
    Whole,
    /// The module refused the record at offset `at` (`malformed=fail`): `pieces` hold what the
    /// records before it made.
    Refused {
        at: i64,
        why: String,
    },
    /// The module cannot go on; `pieces` hold what came before.
    Failed(anyhow::Error),
}

/// The module over `run` (first offset `next`) in invocations of at most `max` bytes. A
/// refused invocation changes no state: the records before the refused one go again alone,
/// and nothing after it is invoked.
fn invoke(module: &mut Module, run: Vec<Rec>, next: i64, max: usize) -> Made {
    let mut pieces = Vec::new();
    let end = match invocations(module, &run, next, max, &mut pieces) {
        Ok(()) => Ended::Whole,
        Err(end) => end,
    };
    Made { pieces, end }
}

/// [`invoke`]'s invocations, each one's records in and out pushed to `pieces`; what stopped
/// them is the error.
fn invocations(
    module: &mut Module,
    run: &[Rec],
    next: i64,
    max: usize,
    pieces: &mut Vec<(usize, Vec<Rec>)>,
) -> Result<(), Ended> {
    for (piece, first) in cuts(run, next, max) {
        let refusal = match module.process(piece, first) {
            Ok(out) => {
                pieces.push((piece.len(), out));
                continue;
            }
            Err(e) => match e.downcast::<InvocationRefused>() {
                Ok(r) if (first..first + piece.len() as i64).contains(&r.offset) => r,
                Ok(r) => return Err(Ended::Failed(r.into())),
                Err(e) => return Err(Ended::Failed(e)),
            },
        };
        let before = &piece[..(refusal.offset - first) as usize];
        if !before.is_empty() {
            let out = module.process(before, first).map_err(Ended::Failed)?;
            pieces.push((before.len(), out));
        }
        let (at, why) = (refusal.offset, refusal.text);
        return Err(Ended::Refused { at, why });
    }
    Ok(())
}

/// Queues `out` on the sibling topic.
async fn produce<S: Sink>(out: Vec<Rec>, sink: &mut S) -> Result<(), Stop> {
    for r in out {
        sink.send(r).await.map_err(Stop::Cluster)?;
    }
    Ok(())
}

/// What is settled: every record made from the offsets below `committed` is acknowledged by
/// the cluster and the offset committed; `at`: when the last settling ended.
struct Settled<'a> {
    committed: i64,
    at: Instant,
    partition: u32,
    ctl: &'a Control,
}

impl Settled<'_> {
    fn at(committed: i64, partition: u32, ctl: &Control) -> Settled<'_> {
        Settled {
            committed,
            at: Instant::now(),
            partition,
            ctl,
        }
    }

    /// Settles what was relayed below `to`: waits for the cluster's acknowledgement of every
    /// record produced so far, then commits `to`. Nothing to settle: no round trip (false).
    async fn up_to<L: Partition, S: Sink>(
        &mut self,
        to: i64,
        log: &mut L,
        sink: &mut S,
    ) -> Result<bool, Stop> {
        let work = to > self.committed;
        if work {
            sink.flush().await.map_err(Stop::Cluster)?;
            log.commit(to).await.map_err(Stop::Cluster)?;
            self.committed = to;
            self.ctl.update(self.partition, |st| {
                st.committed = Some(to);
                st.settles += 1;
            });
        }
        self.at = Instant::now();
        Ok(work)
    }
}
