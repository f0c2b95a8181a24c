//! `bench`: agent-fold's performance, side by side, in one process, on one corpus.
//!
//! - the identity `array_map` module in fluvio-smartengine (the floor any module pays),
//! - the agent-fold `.wasm` in the engine, frames view and pressure view, at batch 1, 100, 10,000,
//! - the native core for both views at the same batches,
//! - a naive baseline: every record parsed into a `serde_json::Value` and serialised again.
//!
//! Then per-session state, measured with a counting global allocator on the native core, and
//! memory over a 1M-record stream with `max_sessions` bounding it.
//!
//! `scripts/bench.sh [--quick]` builds what this needs and runs it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use agent_fold::corpus::{Corpus, CorpusConfig};
use agent_fold::module::{default_wasm_path, read_wasm};
use agent_fold::record::Rec;
use agent_fold_core::{Emit, Processor, RecordIn};
use anyhow::{Result, anyhow, bail};
use fluvio_smartengine::{
    SmartEngine, SmartModuleChainBuilder, SmartModuleChainInstance, SmartModuleConfig,
};
use fluvio_smartmodule::Record;
use fluvio_smartmodule::dataplane::smartmodule::SmartModuleInput;

// ---------------------------------------------------------------------------------------------
// A counting allocator: live heap bytes, as requested (not as malloc rounds them). It counts
// only while switched on (the memory phases), so that the timed phases run on the plain
// system allocator: an atomic per allocation would tax the naive baseline, which allocates
// per JSON value, more than the views, which hardly allocate.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Signed: a block allocated before counting started may be freed while it counts.
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, Relaxed);
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> i64 {
    LIVE.load(Relaxed)
}

fn counting(on: bool) {
    COUNTING.store(on, Relaxed);
}

// ---------------------------------------------------------------------------------------------
// Resident memory from /proc/self/status.

fn status_kb(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets VmHWM to the current RSS (`5` to clear_refs); false where the kernel refuses.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Measures the peak RSS growth over a phase: VmHWM at its end minus VmRSS at its start.
struct RssProbe {
    start_kb: Option<u64>,
    reset: bool,
}

impl RssProbe {
    fn start() -> RssProbe {
        let reset = reset_hwm();
        RssProbe {
            start_kb: status_kb("VmRSS:"),
            reset,
        }
    }
    fn growth_mib(&self) -> Option<f64> {
        if !self.reset {
            return None;
        }
        let hwm = status_kb("VmHWM:")?;
        Some(hwm.saturating_sub(self.start_kb?) as f64 / 1024.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// A phase's cost: the CPU time of this thread (the engine and the native core run on the
/// calling thread), so that what other processes on a shared machine do does not count; and
/// the wall time, for reference.
#[derive(Clone, Copy, Default)]
struct Spent {
    cpu: Duration,
    wall: Duration,
}

struct Stopwatch {
    cpu: Duration,
    wall: Instant,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu(),
            wall: Instant::now(),
        }
    }
    fn add_to(self, spent: &mut Spent) {
        spent.cpu += thread_cpu().saturating_sub(self.cpu);
        spent.wall += self.wall.elapsed();
    }
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`); zero where it cannot be read.
fn thread_cpu() -> Duration {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        #[repr(C)]
        struct Timespec {
            tv_sec: i64,
            tv_nsec: i64,
        }
        unsafe extern "C" {
            fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut t = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

/// FNV-1a over the output records, to check that two runs emitted the same bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Digest(u64);

impl Digest {
    fn new() -> Digest {
        Digest(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, key: Option<&[u8]>, value: &[u8]) {
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                self.0 = (self.0 ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        match key {
            Some(k) => {
                eat(&[1]);
                eat(&(k.len() as u64).to_le_bytes());
                eat(k);
            }
            None => eat(&[0]),
        }
        eat(&(value.len() as u64).to_le_bytes());
        eat(value);
    }
}

struct Row {
    name: String,
    batch: Option<usize>,
    time: Spent,
    records: usize,
    bytes: u64,
    fuel: Option<u64>,
    rss_mib: Option<f64>,
    out: usize,
    digest: Digest,
}

impl Row {
    /// CPU seconds where the clock is there, else wall seconds.
    fn secs(&self) -> f64 {
        let cpu = self.time.cpu.as_secs_f64();
        if cpu > 0.0 {
            cpu
        } else {
            self.time.wall.as_secs_f64()
        }
        .max(1e-9)
    }
    fn wall_mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.time.wall.as_secs_f64().max(1e-9)
    }
    fn rps(&self) -> f64 {
        self.records as f64 / self.secs()
    }
    fn mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.secs()
    }
}

const VERSION: i16 = 22;

fn params(view: &str) -> Vec<(String, String)> {
    vec![("emit".to_string(), view.to_string())]
}

/// Records as a Fluvio batch holds them: every record's key and value side by side in one
/// buffer (not one allocation each, which would add a cache miss per key).
struct Batch {
    buf: Vec<u8>,
    /// Per record: its key's range, if it has a key, and its value's.
    spans: Vec<(Option<Span>, Span)>,
}

/// A range of [`Batch::buf`].
type Span = (usize, usize);

impl Batch {
    fn of(records: &[Rec]) -> Batch {
        let size = records
            .iter()
            .map(|r| r.value.len() + r.key.as_ref().map_or(0, Vec::len))
            .sum();
        let mut buf = Vec::with_capacity(size);
        let mut spans = Vec::with_capacity(records.len());
        for r in records {
            let key = r.key.as_ref().map(|k| {
                let at = buf.len();
                buf.extend_from_slice(k);
                (at, buf.len())
            });
            let at = buf.len();
            buf.extend_from_slice(&r.value);
            spans.push((key, (at, buf.len())));
        }
        Batch { buf, spans }
    }

    fn inputs(&self) -> Vec<RecordIn<'_>> {
        self.spans
            .iter()
            .map(|&(key, (v0, v1))| {
                RecordIn::new(key.map(|(k0, k1)| &self.buf[k0..k1]), &self.buf[v0..v1])
            })
            .collect()
    }
}

/// What a phase runs.
#[derive(Clone)]
enum Spec {
    /// A module in the engine: name, `.wasm`, params, records per invocation.
    Engine(&'static str, Vec<u8>, Vec<(String, String)>, usize),
    /// The native core: view, records per invocation.
    Native(&'static str, usize),
    /// Parse every record into a `serde_json::Value` and serialise it again.
    Naive,
}

enum Runner {
    Engine(Box<SmartModuleChainInstance>),
    Native(Box<Processor>),
    Naive,
}

/// One phase, fed the corpus a chunk at a time.
struct Phase {
    row: Row,
    runner: Runner,
    batch: usize,
    /// Records fed so far (the next invocation's base offset).
    fed: usize,
}

impl Phase {
    fn new(engine: &SmartEngine, spec: &Spec) -> Result<Phase> {
        let (name, batch, runner) = match spec {
            Spec::Engine(name, wasm, params, batch) => {
                let mut config = SmartModuleConfig::builder();
                config.smartmodule_names(vec!["agent-fold".to_string()]);
                for (k, v) in params {
                    config.param(k.clone(), v.clone());
                }
                let config = config.build().map_err(|e| anyhow!("{e}"))?;
                let mut builder = SmartModuleChainBuilder::default();
                builder.add_smart_module(config, wasm.clone());
                let chain = builder
                    .initialize(engine)
                    .map_err(|e| anyhow!("engine {name}: {e:#}"))?;
                let _ = chain.metrics_export(); // zero the counters
                (
                    format!("engine {name}"),
                    Some(*batch),
                    Runner::Engine(Box::new(chain)),
                )
            }
            Spec::Native(view, batch) => (
                format!("native {view}"),
                Some(*batch),
                Runner::Native(Box::new(Processor::from_params([("emit", *view)])?)),
            ),
            Spec::Naive => ("naive serde_json::Value".to_string(), None, Runner::Naive),
        };
        Ok(Phase {
            row: Row {
                name,
                batch,
                time: Spent::default(),
                records: 0,
                bytes: 0,
                fuel: None,
                rss_mib: None,
                out: 0,
                digest: Digest::new(),
            },
            runner,
            batch: batch.unwrap_or(usize::MAX),
            fed: 0,
        })
    }

    /// Runs one chunk of the corpus (`recs`, and the same records as `ins`), `batch` records
    /// an invocation. Engine phases time only `chain.process` (writing the input into the
    /// module, the module, reading its output back): building each invocation's input from
    /// the records is left off the clock, as an SPU hands the engine a batch it holds. Native
    /// phases time `Processor::process`; the naive phase, parse and serialise.
    fn feed(&mut self, recs: &[Rec], ins: &[RecordIn]) -> Result<()> {
        let row = &mut self.row;
        match &mut self.runner {
            Runner::Engine(chain) => {
                for (k, sub) in recs.chunks(self.batch).enumerate() {
                    let records: Vec<Record> = sub
                        .iter()
                        .map(|r| match &r.key {
                            Some(k) => Record::new_key_value(k.clone(), r.value.clone()),
                            None => Record::new(r.value.clone()),
                        })
                        .collect();
                    let mut input = SmartModuleInput::try_from_records(records, VERSION)?;
                    input.set_base_offset((self.fed + k * self.batch) as i64);
                    let t = Stopwatch::start();
                    let output = chain.process(input)?;
                    t.add_to(&mut row.time);
                    if let Some(e) = output.error {
                        bail!("{}: {e}", row.name);
                    }
                    row.out += output.successes.len();
                    for r in &output.successes {
                        row.digest
                            .add(r.key().map(|k| k.as_ref()), r.value().as_ref());
                    }
                }
            }
            Runner::Native(p) => {
                for sub in ins.chunks(self.batch) {
                    let t = Stopwatch::start();
                    let emits = p.process(sub).map_err(|e| anyhow!("{}: {e}", row.name))?;
                    t.add_to(&mut row.time);
                    row.out += emits.len();
                    for e in &emits {
                        match e {
                            Emit::Pass(i) => row.digest.add(sub[*i].key, sub[*i].value),
                            Emit::Replace(i, v) => row.digest.add(sub[*i].key, v),
                            Emit::New { key, value, .. } => row.digest.add(Some(key), value),
                        }
                    }
                }
            }
            Runner::Naive => {
                let t = Stopwatch::start();
                let mut bytes = 0usize;
                for r in ins {
                    let v = match serde_json::from_slice::<serde_json::Value>(r.value) {
                        Ok(v) => serde_json::to_vec(&v).expect("a Value serialises"),
                        Err(_) => r.value.to_vec(),
                    };
                    bytes += v.len();
                    std::hint::black_box(&v);
                }
                t.add_to(&mut row.time);
                row.out += ins.len();
                row.digest.add(None, &bytes.to_le_bytes());
            }
        }
        self.fed += recs.len();
        row.records += recs.len();
        row.bytes += recs.iter().map(|r| r.value.len() as u64).sum::<u64>();
        Ok(())
    }

    /// The phase's row, with the engine's fuel.
    fn finish(mut self) -> Row {
        if let Runner::Engine(chain) = &self.runner {
            self.row.fuel = chain
                .metrics_export()
                .remove("agent-fold")
                .map(|m| m.fuel_used());
        }
        self.row
    }
}

/// The corpus in chunks of 10,000 records (a multiple of every batch size measured).
fn chunks<'a>(
    corpus: &'a [Rec],
    records: &'a [RecordIn<'a>],
) -> impl Iterator<Item = (&'a [Rec], &'a [RecordIn<'a>])> {
    corpus.chunks(10_000).zip(records.chunks(10_000))
}

/// Every phase over the corpus, interleaved: each chunk goes through every phase before the
/// next chunk does, the phases' order rotating from chunk to chunk, so that what the rest of
/// a shared machine does at any moment weighs on all of them alike.
fn timed(
    engine: &SmartEngine,
    specs: &[Spec],
    corpus: &[Rec],
    records: &[RecordIn],
) -> Result<Vec<Row>> {
    let mut phases = specs
        .iter()
        .map(|s| Phase::new(engine, s))
        .collect::<Result<Vec<_>>>()?;
    let n = phases.len();
    for (c, (recs, ins)) in chunks(corpus, records).enumerate() {
        for k in 0..n {
            phases[(c + k) % n].feed(recs, ins)?;
        }
    }
    Ok(phases.into_iter().map(Phase::finish).collect())
}

/// One phase alone over the corpus, for its memory: the growth of the process's peak RSS.
fn peak_rss(
    engine: &SmartEngine,
    spec: &Spec,
    corpus: &[Rec],
    records: &[RecordIn],
) -> Result<Option<f64>> {
    let mut phase = Phase::new(engine, spec)?;
    let rss = RssProbe::start();
    for (recs, ins) in chunks(corpus, records) {
        phase.feed(recs, ins)?;
    }
    let growth = rss.growth_mib();
    drop(phase);
    Ok(growth)
}

// ---------------------------------------------------------------------------------------------
// Per-session state.

fn uuid(n: u64) -> Vec<u8> {
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        n.wrapping_mul(0x9e37_79b9) as u32,
        n & 0xffff,
        n & 0xfff,
        (n >> 12) & 0xfff,
        n
    )
    .into_bytes()
}

/// Heap bytes per frames-view session: `n` sessions each seen with a user message and a
/// counter (so each holds its run state), divided by `n`.
fn frames_bytes_per_session(n: usize) -> Result<f64> {
    let cap = n.to_string();
    let mut p = Processor::from_params([("emit", "frames"), ("max_sessions", cap.as_str())])?;
    let user = br#"{"type":"user/message","seq":0,"timestamp":"2026-11-29T10:00:00Z","message":{"role":"user","content":"hi"}}"#;
    let counter = br#"{"type":"thinking/tokens","seq":1,"timestamp":"2026-11-29T10:00:01Z","estimated_tokens_delta":5}"#;
    let mut at = 0;
    let mut taken = 0;
    while at < n {
        let keys: Vec<Vec<u8>> = (at..(at + 1000).min(n)).map(|i| uuid(i as u64)).collect();
        let mut recs = Vec::with_capacity(keys.len() * 2);
        for k in &keys {
            recs.push(RecordIn::new(Some(k), user));
            recs.push(RecordIn::new(Some(k), counter));
        }
        let t0 = live();
        drop(p.process(&recs)?);
        taken += live() - t0;
        at += keys.len();
    }
    if p.sessions() != n {
        bail!("expected {n} sessions, hold {}", p.sessions());
    }
    Ok(taken as f64 / n as f64)
}

/// Heap bytes per surface node of the pressure view: `sessions` sessions of `nodes` message
/// frames each, divided by the node count (session overhead included).
fn pressure_bytes_per_node(sessions: usize, nodes: usize) -> Result<(f64, f64)> {
    let cap = sessions.to_string();
    let mut p = Processor::from_params([("emit", "pressure"), ("max_sessions", cap.as_str())])?;
    let keys: Vec<Vec<u8>> = (0..sessions).map(|i| uuid(i as u64)).collect();
    let mut taken: i64 = 0;
    let mut taken_empty: i64 = 0;
    for seq in 0..nodes as u64 {
        let values: Vec<Vec<u8>> = keys
            .iter()
            .map(|_| {
                format!(
                    r#"{{"type":"user/message","seq":{seq},"timestamp":"2026-11-29T10:00:00Z","message":{{"role":"user","content":"hello"}}}}"#
                )
                .into_bytes()
            })
            .collect();
        let recs: Vec<RecordIn> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| RecordIn::new(Some(k), v))
            .collect();
        let t0 = live();
        drop(p.process(&recs)?);
        let d = live() - t0;
        if seq == 0 {
            taken_empty = d;
        }
        taken += d;
    }
    // The first frame creates the session with one node: its bytes minus one node's share.
    let per_node = taken as f64 / (sessions * nodes) as f64;
    Ok((per_node, taken_empty as f64 / sessions as f64))
}

/// One processor of the memory stream, and the live heap it holds.
struct Held {
    view: &'static str,
    cap: usize,
    p: Processor,
    bytes: i64,
    marks: Vec<(usize, i64, usize)>,
}

/// Streams `total` corpus records (generated as they go: the stream itself holds one
/// invocation) through native processors in invocations of 10,000, and notes the live heap
/// each holds at every quarter of the stream, with its session count. What a processor holds
/// is the sum of the heap its `process` calls left behind, so the stream's own buffers and
/// the generator do not count.
fn stream_memory(views: &[(&'static str, usize)], total: usize, seed: u64) -> Result<Vec<Held>> {
    let mut corpus = Corpus::new(CorpusConfig {
        seed,
        ..CorpusConfig::default()
    });
    let mut held = Vec::new();
    for &(view, cap) in views {
        let t0 = live();
        let c = cap.to_string();
        let p = Processor::from_params([("emit", view), ("max_sessions", c.as_str())])?;
        held.push(Held {
            view,
            cap,
            p,
            bytes: live() - t0,
            marks: Vec::new(),
        });
    }
    let mut done = 0;
    let quarter = (total / 4).max(1);
    while done < total {
        // Invocations of 10,000, cut at each quarter.
        let next_mark = ((done / quarter + 1) * quarter).min(total);
        let n = 10_000.min(next_mark - done).max(1);
        let chunk = Batch::of(&corpus.by_ref().take(n).collect::<Vec<Rec>>());
        let ins = chunk.inputs();
        for h in &mut held {
            let t0 = live();
            drop(h.p.process(&ins)?);
            h.bytes += live() - t0;
        }
        let before = done;
        done += ins.len();
        if done / quarter != before / quarter || done == total {
            for h in &mut held {
                if h.marks.last().is_none_or(|m| m.0 != done) {
                    h.marks.push((done, h.bytes, h.p.sessions()));
                }
            }
        }
    }
    Ok(held)
}

// ---------------------------------------------------------------------------------------------

/// agent-fold's bench: the identity module, the frames and pressure views in fluvio-smartengine
/// at batch 1, 100 and 10,000, the native core, a naive serde_json baseline, per-session state
/// and memory over a long stream.
#[derive(clap::Parser)]
#[command(name = "bench")]
struct Args {
    /// 20,000 records unless --records says otherwise (the full run takes 200,000)
    #[arg(long)]
    quick: bool,
    /// Records in the timed corpus
    #[arg(long, value_parser = number)]
    records: Option<usize>,
    /// Records in the memory stream
    #[arg(long, default_value = "1000000", value_parser = number)]
    stream: usize,
    /// The corpus generator's seed
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The agent-fold module
    #[arg(long, value_name = "FILE", default_value_os_t = default_wasm_path())]
    wasm: PathBuf,
    /// The identity module (default: beside the agent-fold module)
    #[arg(long, value_name = "FILE")]
    identity: Option<PathBuf>,
}

/// An integer, `_` separators allowed.
fn number(s: &str) -> Result<usize, String> {
    s.replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} is not an integer"))
}

fn parse_args() -> Result<Args> {
    use clap::Parser;
    let mut a = Args::parse();
    a.records
        .get_or_insert(if a.quick { 20_000 } else { 200_000 });
    a.identity
        .get_or_insert_with(|| a.wasm.with_file_name("agent_fold_identity.wasm"));
    Ok(a)
}

fn mib(bytes: i64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let started = Instant::now();
    let wasm = read_wasm(&args.wasm)?;
    let identity = read_wasm(args.identity.as_deref().expect("set in parse_args"))?;
    let records = args.records.expect("set in parse_args");

    eprintln!("bench: generating {} records (seed {})", records, args.seed);
    let mut generator = Corpus::new(CorpusConfig {
        seed: args.seed,
        ..CorpusConfig::default()
    });
    let corpus: Vec<Rec> = generator.by_ref().take(records).collect();
    let stats = generator.stats().clone();

    let engine = SmartEngine::new();
    let batches = [1usize, 100, 10_000];
    let mut specs = Vec::new();
    for &batch in &batches {
        specs.push(Spec::Engine("identity", identity.clone(), vec![], batch));
        specs.push(Spec::Engine(
            "frames",
            wasm.clone(),
            params("frames"),
            batch,
        ));
        specs.push(Spec::Engine(
            "pressure",
            wasm.clone(),
            params("pressure"),
            batch,
        ));
    }
    for &batch in &batches {
        specs.push(Spec::Native("frames", batch));
        specs.push(Spec::Native("pressure", batch));
    }
    specs.push(Spec::Naive);
    let batch_buffer = Batch::of(&corpus);
    let records = batch_buffer.inputs();
    eprintln!("bench: {} phases, interleaved", specs.len());
    let mut rows = timed(&engine, &specs, &corpus, &records)?;
    eprintln!("bench: peak RSS, one phase at a time");
    for (row, spec) in rows.iter_mut().zip(&specs) {
        row.rss_mib = peak_rss(&engine, spec, &corpus, &records)?;
    }

    let find = |name: &str, batch: Option<usize>| {
        rows.iter()
            .find(|r| r.name == name && r.batch == batch)
            .expect("a measured phase")
    };
    // The engine and the native core must agree byte for byte at every batch size.
    let mut agree = Vec::new();
    for &b in &batches {
        for view in ["frames", "pressure"] {
            let (e, n) = (
                find(&format!("engine {view}"), Some(b)),
                find(&format!("native {view}"), Some(b)),
            );
            agree.push((view, b, e.out == n.out && e.digest == n.digest));
        }
    }
    let id = find("engine identity", Some(10_000));
    if id.out != corpus.len() {
        bail!(
            "the identity module emitted {} of {} records",
            id.out,
            corpus.len()
        );
    }

    eprintln!("bench: per-session state");
    counting(true);
    let fps_10k = frames_bytes_per_session(10_000)?;
    let fps_100k = frames_bytes_per_session(100_000)?;
    let (per_node_1, _) = pressure_bytes_per_node(1, 100_000)?;
    let (per_node_1k, per_session_p) = pressure_bytes_per_node(1_000, 100)?;
    counting(false);

    let stream = if args.quick {
        args.stream.min(250_000)
    } else {
        args.stream
    };
    eprintln!("bench: memory over a {stream}-record stream");
    counting(true);
    let flat = stream_memory(
        &[
            ("frames", 256),
            ("pressure", 256),
            ("frames", 10_000),
            ("pressure", 10_000),
        ],
        stream,
        args.seed + 1,
    )?;
    counting(false);

    // ----- the report -----
    let mut md = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        md,
        "# agent-fold bench ({} mode)\n\nCorpus (seed {}): {stats}.\n",
        if args.quick { "quick" } else { "full" },
        args.seed
    );
    let _ = writeln!(
        md,
        "| phase | batch | records/s | MB/s | MB/s wall | fuel/record | peak RSS growth | records out |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {} |",
            r.name,
            r.batch.map_or("–".to_string(), |b| b.to_string()),
            r.rps(),
            r.mbps(),
            r.wall_mbps(),
            r.fuel.map_or("–".to_string(), |f| format!(
                "{:.0}",
                f as f64 / r.records as f64
            )),
            r.rss_mib
                .map_or("n/a".to_string(), |m| format!("{m:.1} MiB")),
            r.out
        );
    }
    let _ = writeln!(
        md,
        "\nrecords/s and MB/s are per second of this thread's CPU time \
         (CLOCK_THREAD_CPUTIME_ID): the machine is shared, and CPU time is what a phase costs \
         whatever else runs; MB/s wall is the same over wall-clock time, for reference. \
         Engine rows time `chain.process` (input written into the module, the module, its output \
         read back and decoded); native rows time `Processor::process`; naive times parse + \
         serialise. MB/s counts record values in. fuel/record is fluvio-smartengine 0.50.1's \
         `fuel_used` metric, which adds each invocation's fuel twice (transform and instance \
         wrappers): halve it for wasm instructions. The phases are interleaved, a chunk of 10,000 \
         records through each in turn (the order rotating), so that load on a shared machine \
         weighs on all alike. Peak RSS growth, measured in a second pass that runs each phase \
         alone: VmHWM at the phase's end \
         (reset through /proc/self/clear_refs at its start) minus VmRSS at its start: it \
         includes the module's linear memory, which wasmtime maps outside the heap, and the \
         host's copies of each invocation's input and output. The timed phases run on the \
         plain system allocator; the counting one is switched on only for the memory phases \
         below."
    );
    let ok = |b: bool| if b { "✓" } else { "✗ MISSED" };
    let ratio = |a: &Row, b: &Row| a.rps() / b.rps();
    let fr = ratio(find("engine frames", Some(10_000)), id);
    let pr = ratio(find("engine pressure", Some(10_000)), id);
    let nr = ratio(
        find("native frames", Some(10_000)),
        find("naive serde_json::Value", None),
    );
    let _ = writeln!(md, "\n## Ratios\n");
    let _ = writeln!(
        md,
        "- frames in engine / identity, batch 10,000: **{fr:.2}** (target ≥ 0.8) {}",
        ok(fr >= 0.8)
    );
    let _ = writeln!(
        md,
        "- pressure in engine / identity, batch 10,000: **{pr:.2}** (target ≥ 0.6) {}",
        ok(pr >= 0.6)
    );
    let _ = writeln!(
        md,
        "- native frames / naive, batch 10,000: **{nr:.1}** (target ≥ 10) {}",
        ok(nr >= 10.0)
    );
    // Fuel is deterministic: the same module on the same input burns the same fuel, however
    // busy the machine. Identity's fuel per record over the view's is the instruction-count
    // side of the same ratio.
    let fuel_ratio = |name: &str, b: usize| -> String {
        match (
            find(name, Some(b)).fuel,
            find("engine identity", Some(b)).fuel,
        ) {
            (Some(f), Some(i)) if f > 0 => format!("{:.2}", i as f64 / f as f64),
            _ => "n/a".to_string(),
        }
    };
    for &b in &batches {
        let _ = writeln!(
            md,
            "- by fuel (deterministic), batch {b}: identity's fuel / frames' {}, identity's / pressure's {}",
            fuel_ratio("engine frames", b),
            fuel_ratio("engine pressure", b)
        );
    }
    for &b in &[1usize, 100] {
        let _ = writeln!(
            md,
            "- batch {b}: frames / identity {:.2}, pressure / identity {:.2}",
            ratio(
                find("engine frames", Some(b)),
                find("engine identity", Some(b))
            ),
            ratio(
                find("engine pressure", Some(b)),
                find("engine identity", Some(b))
            )
        );
    }
    let same: Vec<String> = agree
        .iter()
        .map(|(v, b, same)| format!("{v}@{b} {}", if *same { "same" } else { "DIFFERENT" }))
        .collect();
    let _ = writeln!(
        md,
        "- engine vs native output, byte for byte: {}",
        same.join(", ")
    );

    let _ = writeln!(
        md,
        "\n## Per-session state (native core, counting allocator)\n"
    );
    let _ = writeln!(
        md,
        "- frames view: **{fps_10k:.0} B/session** at 10,000 sessions, {fps_100k:.0} B/session at \
         100,000 (36-byte session keys; target ≤ 256) {}",
        ok(fps_10k <= 256.0)
    );
    let _ = writeln!(
        md,
        "- pressure view: **{per_node_1:.1} B/surface node** (one session, 100,000 nodes; target ≤ 32) {}; \
         {per_node_1k:.1} B/node over 1,000 sessions × 100 nodes, session overhead included; \
         {per_session_p:.0} B for a session with one node",
        ok(per_node_1 <= 32.0)
    );

    let _ = writeln!(
        md,
        "\n## Memory over a {stream}-record stream (native, batch 10,000)\n\nLive heap each \
         processor holds (the sum of what its `process` calls left allocated), at each quarter \
         of the stream; the corpus has 64 sessions live at a time and a new one starts as one \
         ends.\n"
    );
    let _ = writeln!(
        md,
        "| view | max_sessions | {} |",
        flat[0]
            .marks
            .iter()
            .map(|(n, _, _)| format!("at {n}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(md, "|---|---:|{}", "---:|".repeat(flat[0].marks.len()));
    for h in &flat {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            h.view,
            h.cap,
            h.marks
                .iter()
                .map(|(_, b, s)| format!("{} ({s} sessions)", mib(*b)))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    let _ = writeln!(
        md,
        "\nTotal bench time {:.0} s.",
        started.elapsed().as_secs_f64()
    );
    print!("{md}");
    Ok(())
}
