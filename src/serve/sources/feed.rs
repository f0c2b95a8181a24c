//! Where the records come from: a followed agent log run through the module, pressure records
//! on stdin, or pressure records on a Fluvio topic. Each runs on its own and reports into the
//! board; none ever stops the server: trouble goes to the status line, and the source retries.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use fluvio::Offset;
use fluvio::consumer::{ConsumerConfigExt, Record, RetryMode};
use fluvio::dataplane::link::ErrorCode;
use futures_util::StreamExt;

use agent_fold_core::Input;

use super::fold::{self, ViewPair};
use super::follow::{Follow, LINE_BYTES};
use crate::jsonl::{Piece, Splitter};
use crate::otlp::NotStored;
use crate::record::Rec;
use crate::serve::board::row::NotARecord;
use crate::serve::board::{Board, Changes, Folded, PressureRecord, SourceState};

/// How often a followed log is looked at when something just came; each quiet poll doubles
/// the wait, up to [`IDLE_POLL`].
const POLL: Duration = Duration::from_millis(100);
/// The longest wait between two looks at an idle log.
const IDLE_POLL: Duration = Duration::from_millis(800);
/// The longest wait between two tries to reach the cluster.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where the records come from, ready to start.
pub(crate) enum Feed {
    /// Pressure records on this topic, from each partition's end less the look-back.
    Topic { topic: String, look_back: LookBack },
    /// Pressure records, one JSON a line, on stdin.
    Stdin,
    /// Agent logs (a file, a session directory, a directory of logs, OpenCode's database; with
    /// no source, every agent's home found), followed and folded.
    Logs(Vec<LogFeed>),
}

/// One followed log: where, whose home it is (when `serve` found it), and the module instances
/// over it.
pub(crate) struct LogFeed {
    pub path: PathBuf,
    pub agent: Option<&'static str>,
    pub views: Box<ViewPair>,
}

impl LogFeed {
    /// The log as the status line names it: its path, after the agent whose home it is.
    fn describe(&self) -> String {
        match self.agent {
            Some(a) => format!("{a}: {}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }
}

impl Feed {
    /// The source as the status line names it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Feed::Topic { topic, .. } => format!("Fluvio topic {topic}"),
            Feed::Stdin => "stdin".to_owned(),
            Feed::Logs(logs) => logs
                .iter()
                .map(LogFeed::describe)
                .collect::<Vec<_>>()
                .join("; "),
        }
    }

    /// The module that folds, when there is one.
    pub(crate) fn module(&self) -> Option<String> {
        match self {
            Feed::Logs(logs) => logs.first().map(|l| l.views.module()),
            _ => None,
        }
    }

    /// Starts reading: a thread for a log or stdin (blocking reads, the module's CPU work), a
    /// task on the runtime for a topic.
    pub(crate) fn start(self, board: Arc<Board>) {
        match self {
            Feed::Topic { topic, look_back } => {
                tokio::spawn(consume(topic, look_back, board));
            }
            Feed::Stdin => {
                std::thread::spawn(move || read_stdin(&board));
            }
            Feed::Logs(logs) => {
                std::thread::spawn(move || follow(logs, &board));
            }
        }
    }
}

/// Where `serve --topic` starts reading (docs/serve.md, "Where --topic starts").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LookBack {
    /// Records per partition before its end at the start; `None`: from the partition's start.
    pub records: Option<u32>,
    /// Records stamped longer ago than this (by their `timestamp`) are passed over.
    pub since: Option<Duration>,
}

/// Bytes one fetch of `--topic` may bring: a gap at a response's boundary is read again
/// ([`crate::topics::MAX_BYTES`]), so this bounds memory more than it saves requests.
const FETCH_BYTES: i32 = 4 << 20;

/// How long a topic's stream must be quiet, after the start, for the board to have caught up
/// with what the topic held.
const CAUGHT_UP_QUIET: Duration = Duration::from_millis(500);

/// Where a topic's reading stands: the next offset per partition, and whether the history the
/// topic held at the start has been read.
#[derive(Debug, Default)]
struct Reading {
    next: BTreeMap<u32, i64>,
    /// When the board first connected (ms since 1970): a record the cluster stamped before it
    /// was written before the board started.
    started_ms: Option<i64>,
    caught_up: bool,
    started: Option<std::time::Instant>,
    /// Records read while catching up.
    history: u64,
}

impl Reading {
    /// Whether a record the cluster stamped `stamp` (ms; negative: none) is history: written
    /// before the board started, and read before it caught up.
    fn is_history(&self, stamp: i64) -> bool {
        !self.caught_up && (stamp < 0 || self.started_ms.is_none_or(|s| stamp < s))
    }
}

/// OTLP events in (`serve --otlp`): a receiver of its own, whose events the module reads with
/// `input=otel` in a thread of its own; an exporter is answered once its events are on the
/// board.
pub(crate) struct OtlpFeed {
    pub addr: std::net::SocketAddr,
    pub token: crate::otlp::Token,
    pub views: Box<ViewPair>,
}

/// What an OTLP sink hands the module's thread: the records, and where to say it is done.
type Batch = (
    Vec<crate::record::Rec>,
    tokio::sync::oneshot::Sender<Result<(), NotStored>>,
);

/// The OTLP receiver's sink: the module's thread, through a bounded queue.
struct BoardSink(tokio::sync::mpsc::Sender<Batch>);

impl crate::otlp::EventSink for BoardSink {
    fn write(&self, records: Vec<crate::record::Rec>) -> crate::otlp::Written<'_> {
        Box::pin(async move {
            let (done, wait) = tokio::sync::oneshot::channel();
            self.0
                .send((records, done))
                .await
                .map_err(|_| NotStored::BoardGone)?;
            wait.await.map_err(|_| NotStored::BoardGone)?
        })
    }
}

/// What `serve` needs to answer OTLP: its listener, its routes, its connections' figures, its
/// counters.
pub(crate) type OtlpServer = (
    tokio::net::TcpListener,
    axum::Router,
    Arc<crate::service::Connections>,
    Arc<crate::otlp::Receiver>,
);

impl OtlpFeed {
    /// Listens, and starts the thread that runs the module over what arrives; `owns_status`:
    /// there is no other source, so this one says what the status line says.
    pub(crate) async fn start(self, board: Arc<Board>, owns_status: bool) -> Result<OtlpServer> {
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .with_context(|| format!("listening for OTLP on {}", self.addr))?;
        let addr = listener.local_addr()?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(16);
        let mut views = *self.views;
        let where_ = format!("receiving OTLP events on http://{addr}/v1/logs");
        if owns_status {
            board.batch(|b| b.status(SourceState::Live, where_.clone()));
        }
        let thread_board = Arc::clone(&board);
        tracing::info!("{where_}");
        std::thread::spawn(move || {
            while let Some((records, done)) = rx.blocking_recv() {
                let n = records.len() as u64;
                let answer = match views.push(records) {
                    Ok(out) => {
                        let gave = Gave::parse(out);
                        thread_board.batch(|b| {
                            b.read(n);
                            gave.apply(b);
                            if owns_status {
                                b.status(SourceState::Live, where_.clone());
                            }
                        });
                        Ok(())
                    }
                    Err(e) => {
                        let why = NotStored::Module(format!("{e:#}"));
                        if owns_status {
                            thread_board.batch(|b| b.status(SourceState::Error, why.to_string()));
                        }
                        Err(why)
                    }
                };
                let _ = done.send(answer);
            }
        });
        let limits = crate::otlp::decode::Limits::DEFAULT;
        let receiver = Arc::new(crate::otlp::Receiver::new(
            Arc::new(BoardSink(tx)),
            self.token,
            limits,
            8,
        ));
        Ok((
            listener,
            crate::otlp::router(Arc::clone(&receiver)),
            Arc::default(),
            receiver,
        ))
    }
}

/// Counts pressure records a source read (parsed before the lock), then [`apply`]s them.
fn take(b: &mut Changes, records: Vec<Result<PressureRecord, NotARecord>>) {
    b.read(records.len() as u64);
    apply(b, records);
}

/// Applies parsed pressure records, counting the ones that are not.
fn apply(b: &mut Changes, records: Vec<Result<PressureRecord, NotARecord>>) {
    for r in records {
        match r {
            Ok(r) => {
                b.pressure(r);
            }
            Err(why) => b.skip(why.to_string()),
        }
    }
}

/// What a batch of lines gave, parsed outside the board's lock.
struct Gave {
    records: Vec<Result<PressureRecord, NotARecord>>,
    folded: Vec<Folded>,
    skipped: Vec<String>,
}

impl Gave {
    fn parse(out: fold::BatchOutput) -> Gave {
        Gave {
            records: out
                .pressure
                .iter()
                .map(|r| PressureRecord::parse(&r.value))
                .collect(),
            folded: out
                .frames
                .iter()
                .filter_map(|f| Folded::parse(f.key.as_deref(), &f.value))
                .collect(),
            skipped: out.skipped,
        }
    }

    fn apply(self, b: &mut Changes) {
        apply(b, self.records);
        for f in self.folded {
            b.frame(f);
        }
        for why in self.skipped {
            b.skip(why);
        }
    }
}

/// The module instances over a followed log: the configured pair for a single log; for a
/// directory of logs, a pair per format (when told file by file) and generation (a file read
/// again goes to a new one: see [`super::follow`]).
struct Views {
    base: ViewPair,
    /// By format (its name; none when the base names it) and generation.
    pairs: BTreeMap<(Option<&'static str>, u32), ViewPair>,
}

impl Views {
    /// The pair for a file of `format` in `generation`: one of that format's own when the
    /// format is told file by file, else one configured as the base is.
    fn of(&mut self, format: Input, generation: u32) -> anyhow::Result<&mut ViewPair> {
        let auto = self.base.is_auto();
        let key = (auto.then_some(format.name()), generation);
        if !self.pairs.contains_key(&key) {
            let pair = match auto {
                true => self.base.for_format(format)?,
                false => self.base.fresh()?,
            };
            self.pairs.insert(key, pair);
        }
        self.pairs
            .get_mut(&key)
            .ok_or_else(|| anyhow::anyhow!("the module instances were just made"))
    }

    /// Drops the pairs no file is read by any more.
    fn keep(&mut self, in_use: &std::collections::BTreeSet<(&'static str, u32)>) {
        let auto = self.base.is_auto();
        self.pairs.retain(|(f, g), _| {
            in_use
                .iter()
                .any(|(uf, ug)| ug == g && (!auto || Some(*uf) == *f))
        });
    }

    /// The formats read, for the status line.
    fn formats(&self) -> String {
        let mut names: Vec<&str> = self.pairs.keys().filter_map(|(f, _)| *f).collect();
        names.dedup();
        if let Some(f) = self
            .base
            .input()
            .filter(|_| names.is_empty() || !self.base.is_auto())
        {
            names = vec![f.name()];
        }
        if names.is_empty() {
            "format not yet known".to_owned()
        } else {
            names.join(", ")
        }
    }
}

/// The sessions lines are keyed by, each once.
fn keys_of(lines: &[Rec]) -> std::collections::BTreeSet<Vec<u8>> {
    lines.iter().filter_map(|r| r.key.clone()).collect()
}

/// The sessions a batch's lines (`keys`) and the module's records of them name: what a
/// re-read of its file concerns.
fn named<'a>(
    keys: &'a std::collections::BTreeSet<Vec<u8>>,
    out: &'a fold::BatchOutput,
) -> impl Iterator<Item = &'a str> {
    keys.iter()
        .map(Vec::as_slice)
        .chain(out.pressure.iter().filter_map(|r| r.key.as_deref()))
        .filter_map(|k| std::str::from_utf8(k).ok())
}

/// One followed log with its module instances.
struct Followed {
    agent: Option<&'static str>,
    log: Follow,
    views: Views,
}

impl Followed {
    /// One poll: what the log gained, run through the module, applied to the board. Returns
    /// whether it was quiet, and the log's state and words for the status line.
    fn step(&mut self, board: &Board, states: &mut [Status], at: usize) -> bool {
        let (log, views) = (&mut self.log, &mut self.views);
        let polled = log.poll();
        let quiet = polled.lines.is_empty()
            && polled.by_file.iter().all(|f| f.lines.is_empty())
            && polled.rereads.is_empty()
            && !polled.more;
        if polled.reset.is_some() {
            views.base.reset();
        }
        // A file read again leaves its instances: those no file is read by go.
        if !polled.rereads.is_empty() {
            views.keep(&log.generations());
        }
        let read = (polled.lines.len()
            + polled.by_file.iter().map(|f| f.lines.len()).sum::<usize>())
            as u64;
        // The module's work and the parsing happen outside the board's lock: pages keep being
        // served.
        let mut gave = Vec::new();
        let mut failed = None;
        if !polled.lines.is_empty() {
            let keys = keys_of(&polled.lines);
            match views.base.push(polled.lines) {
                Ok(out) => {
                    log.learned(None, named(&keys, &out));
                    gave.push(Gave::parse(out));
                }
                Err(e) => failed = Some(format!("the module failed: {e:#}")),
            }
        }
        for file in polled.by_file {
            if file.lines.is_empty() {
                continue;
            }
            let keys = keys_of(&file.lines);
            match views
                .of(file.format, file.generation)
                .and_then(|p| p.push(file.lines))
            {
                Ok(out) => {
                    log.learned(Some(&file.path), named(&keys, &out));
                    gave.push(Gave::parse(out));
                }
                Err(e) => failed = Some(format!("the module failed: {e:#}")),
            }
        }
        let (state, message) = match (polled.problem.or(failed), polled.waiting) {
            (Some(p), _) => (SourceState::Error, p),
            (None, Some(w)) => (SourceState::Starting, w),
            (None, None) if log.is_tree() => (
                SourceState::Live,
                format!("following {} logs ({})", polled.files, views.formats()),
            ),
            (None, None) if views.base.waiting() => (
                SourceState::Starting,
                "waiting for the log's first lines, to tell its format".to_owned(),
            ),
            (None, None) => (
                SourceState::Live,
                format!("following ({})", views.formats()),
            ),
        };
        // The status line changes in the same batch as the rows: a page never shows this
        // poll's rows beside the last poll's words.
        states[at] = (self.agent, state, message);
        let (state, message) = status_of(states);
        board.batch(|b| {
            b.status(state, message);
            for (event, what) in &polled.events {
                b.log_event(*event, what);
            }
            for (why, sessions) in &polled.rereads {
                b.reread(sessions, why);
            }
            b.read(read);
            for why in polled.skipped {
                b.read(1);
                b.skip(why);
            }
            for g in gave {
                g.apply(b);
            }
            for sessions in &polled.reread_done {
                b.reread_done(sessions);
            }
        });
        quiet
    }
}

/// What the status line says of several logs: the worst state among them (an error, else one
/// still starting, else live), and each log's words after the agent whose home it is.
/// One log's standing: the agent whose home it is, its state and words.
type Status = (Option<&'static str>, SourceState, String);

fn status_of(states: &[Status]) -> (SourceState, String) {
    let rank = |s: SourceState| match s {
        SourceState::Error => 0,
        SourceState::Starting => 1,
        SourceState::Live => 2,
        SourceState::Ended => 3,
    };
    let state = states
        .iter()
        .map(|(_, s, _)| *s)
        .min_by_key(|s| rank(*s))
        .unwrap_or(SourceState::Starting);
    let words: Vec<String> = states
        .iter()
        .map(|(agent, _, m)| match agent {
            Some(a) => format!("{a}: {m}"),
            None => m.clone(),
        })
        .collect();
    (state, words.join("; "))
}

/// Follows the logs for ever, running what each gains through its module instances; the
/// status line says how each stands.
fn follow(logs: Vec<LogFeed>, board: &Board) {
    let mut all: Vec<Followed> = logs
        .into_iter()
        .map(|l| Followed {
            agent: l.agent,
            log: Follow::new(&l.path),
            views: Views {
                base: *l.views,
                pairs: BTreeMap::new(),
            },
        })
        .collect();
    let mut states: Vec<Status> = all
        .iter()
        .map(|f| (f.agent, SourceState::Starting, "starting".to_owned()))
        .collect();
    let mut wait = POLL;
    loop {
        let mut quiet = true;
        for (at, f) in all.iter_mut().enumerate() {
            quiet &= f.step(board, &mut states, at);
        }
        if quiet {
            std::thread::sleep(wait);
            wait = (wait * 2).min(IDLE_POLL);
        } else {
            wait = POLL;
        }
    }
}

/// Reads pressure records from stdin until it closes; what a read brings is one batch, parsed
/// before it is applied. A line over [`LINE_BYTES`] is skipped, as the follower skips one, so
/// that a writer that never ends its line holds no more than that.
fn read_stdin(board: &Board) {
    board.batch(|b| b.status(SourceState::Live, "reading pressure records"));
    let mut stdin = std::io::stdin().lock();
    let mut lines = Splitter::new(LINE_BYTES);
    let read = |piece: Piece<'_>, got: &mut Vec<Result<PressureRecord, NotARecord>>| {
        got.push(
            piece
                .line("on stdin", LINE_BYTES)
                .map_err(NotARecord::Line)
                .and_then(PressureRecord::parse),
        )
    };
    let end = loop {
        let buf = match stdin.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break format!("reading stdin failed: {e}"),
        };
        if buf.is_empty() {
            break "stdin closed: the last figures stay".to_owned();
        }
        let mut got = Vec::new();
        lines.push(buf, |p| read(p, &mut got));
        let n = buf.len();
        stdin.consume(n);
        if !got.is_empty() {
            board.batch(|b| take(b, got));
        }
    };
    // The last line may lack its newline.
    let mut got = Vec::new();
    lines.finish(|p| read(p, &mut got));
    board.batch(|b| {
        take(b, got);
        b.status(SourceState::Ended, end);
    });
}

/// Consumes the topic for ever: on a failure, the status says so, and the consumer connects
/// again (backing off up to [`MAX_BACKOFF`]) from the next offset of each partition.
async fn consume(topic: String, look_back: LookBack, board: Arc<Board>) {
    let mut reading = Reading::default();
    let mut wait = Duration::from_millis(250);
    loop {
        let why = match consume_once(&topic, look_back, &board, &mut reading, &mut wait).await {
            // A gap: read again at once from the first record missing.
            Ok(Again::Now) => continue,
            Ok(Again::Ended) => "the stream from the cluster ended".to_owned(),
            Err(e) => format!("{e:#}"),
        };
        board.batch(|b| {
            b.status(
                SourceState::Error,
                format!("{why}: retrying every {}s at most", MAX_BACKOFF.as_secs()),
            )
        });
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(MAX_BACKOFF);
    }
}

/// Why a topic's stream stopped without an error.
enum Again {
    /// A gap in a partition's offsets: read again from the first record missing.
    Now,
    /// The cluster ended it.
    Ended,
}

async fn consume_once(
    topic: &str,
    look_back: LookBack,
    board: &Board,
    reading: &mut Reading,
    wait: &mut Duration,
) -> Result<Again> {
    let fluvio = crate::topics::connect().await?;
    let Some(layout) = crate::topics::find(&fluvio, topic).await? else {
        // A topic made again under this name starts at offset 0: read it from its start.
        reading.next.clear();
        bail!("the cluster has no topic {topic}");
    };
    let partitions = layout.partitions;
    reading
        .started_ms
        .get_or_insert_with(crate::serve::board::now_ms);
    let started = *reading.started.get_or_insert_with(std::time::Instant::now);
    let streams = open_partitions(&fluvio, topic, partitions, reading, look_back).await?;
    *wait = Duration::from_millis(250);
    let live = format!("consuming {partitions} partition(s)");
    board.batch(|b| {
        let message = if reading.caught_up {
            live.clone()
        } else {
            format!("{live}: catching up with their recent history")
        };
        b.status(SourceState::Live, message)
    });
    let cutoff = look_back
        .since
        .map(|d| crate::serve::board::now_ms() - d.as_millis() as i64);
    let mut records = futures_util::stream::select_all(streams).ready_chunks(512);
    loop {
        let chunk = if reading.caught_up {
            records.next().await
        } else {
            match tokio::time::timeout(CAUGHT_UP_QUIET, records.next()).await {
                Ok(chunk) => chunk,
                Err(_) => {
                    // Quiet: what the topic held at the start is read.
                    reading.caught_up = true;
                    let secs = started.elapsed().as_secs_f64();
                    tracing::info!(
                        records = reading.history,
                        secs,
                        "caught up with {topic}: {} records of history in {secs:.1} s",
                        reading.history
                    );
                    board.batch(|b| b.status(SourceState::Live, live.clone()));
                    continue;
                }
            }
        };
        let Some(chunk) = chunk else { break };
        let sorted = reading.sort(chunk, cutoff);
        board.batch(|b| {
            b.catching_up(true);
            b.read(sorted.passed);
            take(b, sorted.history);
            b.catching_up(false);
            take(b, sorted.news);
        });
        if let Some((p, want, got)) = sorted.gap {
            tracing::debug!(
                partition = p,
                want,
                got,
                "a gap in the records: read again from it"
            );
            return Ok(Again::Now);
        }
        match sorted.failed {
            Some(ErrorCode::TopicDeleted) => {
                reading.next.clear();
                bail!("the topic {topic} was deleted");
            }
            Some(code) => bail!("the consumer stream failed: {code:?}"),
            None => {}
        }
    }
    Ok(Again::Ended)
}

/// A partition's records as the consumer streams them.
type PartitionStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Record, ErrorCode>> + Send>>;

/// A stream for each of the topic's `partitions`, each from where it was left, else
/// `look_back` records before its end (as its leader knows it: the cluster's metadata lags).
async fn open_partitions(
    fluvio: &fluvio::Fluvio,
    topic: &str,
    partitions: u32,
    reading: &Reading,
    look_back: LookBack,
) -> Result<Vec<PartitionStream>> {
    let mut streams: Vec<PartitionStream> = Vec::new();
    for p in 0..partitions {
        let start = match (reading.next.get(&p), look_back.records) {
            (Some(n), _) => Offset::absolute(*n)?,
            (None, Some(n)) => Offset::from_end(n),
            (None, None) => Offset::beginning(),
        };
        let config = ConsumerConfigExt::builder()
            .topic(topic)
            .partition(p)
            .offset_start(start)
            .max_bytes(FETCH_BYTES)
            // Our own retry, so that a lost cluster shows on the page.
            .retry_mode(RetryMode::Disabled)
            .build()?;
        let stream = fluvio
            .consumer_with_config(config)
            .await
            .with_context(|| format!("consuming {topic} partition {p}"))?;
        streams.push(Box::pin(stream));
    }
    Ok(streams)
}

/// One chunk of a topic's records, sorted for the board: the history it replays without
/// paging anyone, the news, the records passed over (older than `--since`), and what stops the
/// read — a gap in a partition's offsets, a failed stream.
struct Sorted {
    history: Vec<Result<PressureRecord, NotARecord>>,
    news: Vec<Result<PressureRecord, NotARecord>>,
    passed: u64,
    gap: Option<(u32, i64, i64)>,
    failed: Option<ErrorCode>,
}

impl Reading {
    /// Sorts a chunk, moving each partition's next offset on; records from `cutoff` (ms) on
    /// only, by their own stamp.
    fn sort(&mut self, chunk: Vec<Result<Record, ErrorCode>>, cutoff: Option<i64>) -> Sorted {
        let mut sorted = Sorted {
            history: Vec::new(),
            news: Vec::with_capacity(chunk.len()),
            passed: 0,
            gap: None,
            failed: None,
        };
        for r in chunk {
            let rec = match r {
                Ok(rec) => rec,
                Err(code) => {
                    sorted.failed = Some(code);
                    continue;
                }
            };
            // This Fluvio can skip records at a response's boundary: a partition's offsets
            // must follow on, else it is read again from the first one missing.
            let (p, at) = (rec.partition(), rec.offset());
            match self.next.get(&p) {
                Some(want) if at > *want => {
                    sorted.gap = Some((p, *want, at));
                    break;
                }
                Some(want) if at < *want => continue,
                _ => {}
            }
            self.next.insert(p, at + 1);
            let parsed = PressureRecord::parse(rec.get_value().as_ref());
            // Older than --since by its own stamp: passed over, read all the same.
            if let (Some(cut), Ok(p)) = (cutoff, &parsed)
                && p.stamp_ms.is_some_and(|t| t < cut)
            {
                sorted.passed += 1;
                continue;
            }
            if self.is_history(rec.timestamp()) {
                self.history += 1;
                sorted.history.push(parsed);
            } else {
                sorted.news.push(parsed);
            }
        }
        sorted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_what_the_cluster_stamped_before_the_start_until_caught_up() {
        let mut r = Reading {
            started_ms: Some(1_000),
            ..Reading::default()
        };
        assert!(r.is_history(999));
        assert!(!r.is_history(1_000), "written since the start: news");
        assert!(r.is_history(-1), "unstamped, before catching up: history");
        r.caught_up = true;
        assert!(
            !r.is_history(5) && !r.is_history(-1),
            "after it, all is news"
        );
    }
}
