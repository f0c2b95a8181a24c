//! The timed phases: modules in fluvio-smartengine, the native core, the naive baseline, each
//! fed the same corpus a chunk at a time, interleaved; and each alone again for its peak RSS.

use agent_fold::module::Instance;
use agent_fold::record::Rec;
use agent_fold_core::{Emit, Fnv1a, Processor, RecordIn};
use anyhow::{Result, anyhow, bail};

use crate::clock::{Spent, Stopwatch};
use agent_fold::heap::RssProbe;

/// FNV-1a over the output records, to check that two runs emitted the same bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Digest(Fnv1a);

impl Digest {
    fn add(&mut self, key: Option<&[u8]>, value: &[u8]) {
        match key {
            Some(k) => {
                self.0.write(&[1]);
                self.0.write(&(k.len() as u64).to_le_bytes());
                self.0.write(k);
            }
            None => self.0.write(&[0]),
        }
        self.0.write(&(value.len() as u64).to_le_bytes());
        self.0.write(value);
    }
}

/// One phase's measurements.
pub(crate) struct Row {
    pub name: String,
    pub batch: Option<usize>,
    pub time: Spent,
    pub records: usize,
    pub bytes: u64,
    pub fuel: Option<u64>,
    pub rss_mib: Option<f64>,
    pub out: usize,
    pub digest: Digest,
}

impl Row {
    /// CPU seconds where the clock is there, else wall seconds.
    pub(crate) fn secs(&self) -> f64 {
        let cpu = self.time.cpu.as_secs_f64();
        if cpu > 0.0 {
            cpu
        } else {
            self.time.wall.as_secs_f64()
        }
        .max(1e-9)
    }

    pub(crate) fn wall_mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.time.wall.as_secs_f64().max(1e-9)
    }

    pub(crate) fn rps(&self) -> f64 {
        self.records as f64 / self.secs()
    }

    pub(crate) fn mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.secs()
    }

    pub(crate) fn fuel_per_record(&self) -> Option<f64> {
        Some(self.fuel? as f64 / self.records.max(1) as f64)
    }
}

/// Records laid out as a Fluvio batch holds them: every record's key and value side by side
/// in one buffer (not one allocation each, which would add a cache miss per key).
pub(crate) struct PackedRecords {
    buf: Vec<u8>,
    /// Per record: its key's range, if it has a key, and its value's.
    spans: Vec<(Option<Span>, Span)>,
}

/// A range of [`PackedRecords::buf`].
type Span = (usize, usize);

impl PackedRecords {
    pub(crate) fn of(records: &[Rec]) -> PackedRecords {
        let size = records.iter().map(Rec::bytes).sum();
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
        PackedRecords { buf, spans }
    }

    pub(crate) fn inputs(&self) -> Vec<RecordIn<'_>> {
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
pub(crate) enum Spec {
    /// A module in the engine: name, `.wasm`, params, records per invocation.
    Engine(&'static str, Vec<u8>, Vec<(String, String)>, usize),
    /// The native core: view, records per invocation.
    Native(&'static str, usize),
    /// Parse every record into a `serde_json::Value` and serialise it again.
    Naive,
}

enum Runner {
    Engine(Box<Instance>),
    Native(Box<Processor>),
    Naive,
}

/// One phase, fed the corpus a chunk at a time.
struct Phase {
    row: Row,
    runner: Runner,
    batch: usize,
}

impl Phase {
    fn new(spec: &Spec) -> Result<Phase> {
        let (name, batch, runner) = match spec {
            Spec::Engine(name, wasm, params, batch) => {
                let instance = Instance::new(wasm, params, None)
                    .map_err(|e| anyhow!("engine {name}: {e:#}"))?;
                let _ = instance.metrics(); // zero the counters (init's fuel)
                (
                    format!("engine {name}"),
                    Some(*batch),
                    Runner::Engine(Box::new(instance)),
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
                digest: Digest::default(),
            },
            runner,
            batch: batch.unwrap_or(usize::MAX),
        })
    }

    /// Runs one chunk of the corpus (`recs`, and the same records as `ins`), `batch` records
    /// an invocation. Engine phases time only `Instance::call`, which is the engine's
    /// `process` (the input written into the module, the module, its output read back and
    /// decoded): building each invocation's input from the records is left off the clock, as
    /// an SPU hands the engine a batch it holds. Native phases time `Processor::process`; the
    /// naive phase, parse and serialise.
    fn feed(&mut self, recs: &[Rec], ins: &[RecordIn]) -> Result<()> {
        let row = &mut self.row;
        match &mut self.runner {
            Runner::Engine(instance) => {
                for (k, sub) in recs.chunks(self.batch).enumerate() {
                    // Records fed so far are the next invocation's base offset.
                    let input = Instance::input(sub, (row.records + k * self.batch) as i64);
                    let t = Stopwatch::start();
                    let output = instance.call(input)?;
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
        row.records += recs.len();
        row.bytes += recs.iter().map(|r| r.value.len() as u64).sum::<u64>();
        Ok(())
    }

    /// The phase's row, with the engine's fuel.
    fn finish(mut self) -> Row {
        if let Runner::Engine(instance) = &self.runner {
            self.row.fuel = instance.metrics().map(|m| m.fuel_used());
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
pub(crate) fn timed(specs: &[Spec], corpus: &[Rec], records: &[RecordIn]) -> Result<Vec<Row>> {
    let mut phases = specs.iter().map(Phase::new).collect::<Result<Vec<_>>>()?;
    let n = phases.len();
    for (c, (recs, ins)) in chunks(corpus, records).enumerate() {
        for k in 0..n {
            phases[(c + k) % n].feed(recs, ins)?;
        }
    }
    Ok(phases.into_iter().map(Phase::finish).collect())
}

/// One phase alone over the corpus, for its memory: the growth of the process's peak RSS.
pub(crate) fn peak_rss(spec: &Spec, corpus: &[Rec], records: &[RecordIn]) -> Result<Option<f64>> {
    let mut phase = Phase::new(spec)?;
    let rss = RssProbe::start();
    for (recs, ins) in chunks(corpus, records) {
        phase.feed(recs, ins)?;
    }
    let growth = rss.growth_mib();
    drop(phase);
    Ok(growth)
}

/// The probe's stages, in order (`smartmodule/src/probe.rs`), then the whole call.
pub(crate) const PROBE_STAGES: [&str; 7] =
    ["read", "walk", "scan", "lookup", "view", "records", "whole"];

/// Fuel per record of the probe module at each of [`PROBE_STAGES`], one view, batch 10,000:
/// deterministic, so one pass each.
pub(crate) fn probe_fuel(probe: &[u8], view: &str, corpus: &[Rec]) -> Result<Vec<f64>> {
    let mut fuel = Vec::new();
    for stage in PROBE_STAGES {
        let mut params = vec![("emit".to_string(), view.to_string())];
        if stage != "whole" {
            params.push(("probe".to_string(), stage.to_string()));
        }
        let mut instance = Instance::new(probe, &params, None)
            .map_err(|e| anyhow!("the probe module ({view}, {stage}): {e:#}"))?;
        let _ = instance.metrics(); // zero the counters (init's fuel)
        for (k, sub) in corpus.chunks(10_000).enumerate() {
            let output = instance.call(Instance::input(sub, (k * 10_000) as i64))?;
            if let Some(e) = output.error {
                bail!("the probe module ({view}, {stage}): {e}");
            }
        }
        let used = instance.metrics().map_or(0, |m| m.fuel_used());
        fuel.push(used as f64 / corpus.len().max(1) as f64);
    }
    Ok(fuel)
}
