//! `bench`: agent-fold's performance, side by side, in one process, on one corpus.
//!
//! - two reference modules in fluvio-smartengine: the floor (hands its input's encoded records
//!   back with one copy, the least any module costs) and Fluvio's generated identity
//!   `array_map`,
//! - the agent-fold `.wasm` in the engine, frames view and pressure view, at batch 1, 100, 10,000,
//! - the native core for both views at the same batches,
//! - a naive baseline: every record parsed into a `serde_json::Value` and serialised again.
//!
//! Then the engine's store memory per call, per-session state (a counting global allocator on
//! the native core), and memory over a 1M-record stream with `max_sessions` bounding it.
//!
//! `scripts/bench.sh [--quick]` builds what this needs and runs it.

mod clock;
mod phases;
mod report;
mod state;
mod store;

use std::path::PathBuf;
use std::time::Instant;

use agent_fold::corpus::{Corpus, CorpusConfig, Stats};
use agent_fold::module::{default_wasm_path, read_wasm};
use agent_fold::record::Rec;
use anyhow::{Result, bail};

use agent_fold::heap::Counting;
use phases::{PackedRecords, Spec};

#[global_allocator]
static ALLOC: Counting = Counting;

/// agent-fold's bench: the floor and identity modules, the frames and pressure views in
/// fluvio-smartengine at batch 1, 100 and 10,000, the native core, a naive serde_json baseline,
/// store memory per call, per-session state and memory over a long stream.
#[derive(clap::Parser)]
#[command(name = "bench")]
pub struct Args {
    /// 20,000 records unless --records says otherwise (the full run takes 200,000)
    #[arg(long)]
    pub quick: bool,
    /// Records in the timed corpus
    #[arg(long, value_parser = number)]
    records: Option<usize>,
    /// Records in the memory stream
    #[arg(long, default_value = "1000000", value_parser = number)]
    stream: usize,
    /// The corpus generator's seed
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The agent-fold module
    #[arg(long, value_name = "FILE", default_value_os_t = default_wasm_path())]
    wasm: PathBuf,
    /// Fluvio's generated identity module (default: beside the agent-fold module)
    #[arg(long, value_name = "FILE")]
    identity: Option<PathBuf>,
    /// The floor module (default: beside the agent-fold module)
    #[arg(long, value_name = "FILE")]
    floor: Option<PathBuf>,
    /// An earlier agent-fold module, run beside this one at batch 10,000 (both views)
    #[arg(long, value_name = "FILE")]
    before: Option<PathBuf>,
    /// Also one look_back call of this many MB of records in the engine's default store, per
    /// view (and with --before, the earlier module's): does it run?
    #[arg(long, value_name = "MB")]
    lookback_mb: Option<usize>,
    /// Only the modules against the reference modules at batch 10,000 (and the engine's output
    /// against the native core's), on both corpora: no other batch, memory or state phase
    #[arg(long)]
    pub references: bool,
    /// Records in the small-event corpus (default: as many as in the main one)
    #[arg(long, value_parser = number)]
    small_records: Option<usize>,
    /// Also each phase's fuel per record, on both corpora: the probe build of the module
    /// (`scripts/bench.sh --phases` builds it) run to each stage
    #[arg(long)]
    pub phases: bool,
    /// The probe build of the module (with --phases)
    #[arg(
        long,
        value_name = "FILE",
        default_value = "target/wasm-probe/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm"
    )]
    probe: PathBuf,
    /// Only this: one session of N messages through the engine (pressure view, default params,
    /// so `max_nodes` bounds it), and the least store it runs in (contract §3.7)
    #[arg(long, value_name = "N", value_parser = number)]
    long_session: Option<usize>,
}

/// An integer, `_` separators allowed.
fn number(s: &str) -> Result<usize, String> {
    s.replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} is not an integer"))
}

fn params(view: &str) -> Vec<(String, String)> {
    vec![("emit".to_string(), view.to_string())]
}

/// The batch sizes every module and the native core run at.
const BATCHES: [usize; 3] = [1, 100, 10_000];

/// The records a look-back's store is measured with: about 100 MB of the corpus (all of it
/// when smaller).
fn history(corpus: &[Rec]) -> &[Rec] {
    let mut bytes = 0;
    let n = corpus
        .iter()
        .take_while(|r| {
            bytes += r.bytes();
            bytes <= 100_000_000
        })
        .count();
    &corpus[..n]
}

/// `records` records of the generator's corpus (`small`: the small-event shape), and its shape.
fn generate(seed: u64, records: usize, small: bool) -> (Vec<Rec>, Stats) {
    let mut generator = Corpus::new(CorpusConfig {
        seed,
        small,
        ..CorpusConfig::default()
    });
    let corpus: Vec<Rec> = generator.by_ref().take(records).collect();
    (corpus, generator.stats().clone())
}

/// The phases at `batches`: the reference modules and both views in the engine (and an earlier
/// module's at batch 10,000), the native core (its output is what the engine's is checked
/// against), and with `naive`, the naive baseline.
fn phase_specs(
    batches: &[usize],
    floor: &[u8],
    identity: &[u8],
    wasm: &[u8],
    before: Option<&[u8]>,
    naive: bool,
) -> Vec<Spec> {
    let mut specs = Vec::new();
    for &batch in batches {
        specs.push(Spec::Engine("floor", floor.to_vec(), vec![], batch));
        specs.push(Spec::Engine("identity", identity.to_vec(), vec![], batch));
        for view in ["frames", "pressure"] {
            specs.push(Spec::Engine(view, wasm.to_vec(), params(view), batch));
        }
    }
    if let Some(before) = before {
        specs.push(Spec::Engine(
            "frames (before)",
            before.to_vec(),
            params("frames"),
            10_000,
        ));
        specs.push(Spec::Engine(
            "pressure (before)",
            before.to_vec(),
            params("pressure"),
            10_000,
        ));
    }
    for &batch in batches {
        specs.push(Spec::Native("frames", batch));
        specs.push(Spec::Native("pressure", batch));
    }
    if naive {
        specs.push(Spec::Naive);
    }
    specs
}

/// The reference modules emitted every record.
fn check_references(rows: &[phases::Row], records: usize) -> Result<()> {
    for name in ["engine floor", "engine identity"] {
        if !rows
            .iter()
            .filter(|r| r.name == name)
            .all(|r| r.out == records)
        {
            bail!("the {name} module did not emit every record");
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    use clap::Parser;
    let args = Args::parse();
    let started = Instant::now();
    // A reference module: the file named, else the one the build puts beside the module.
    let reference = |named: &Option<PathBuf>, built: &str| {
        read_wasm(named.as_deref().unwrap_or(&args.wasm.with_file_name(built)))
    };
    let wasm = read_wasm(&args.wasm)?;
    if let Some(n) = args.long_session {
        eprintln!("bench: one session of {n} messages, the least store it runs in");
        let t = Instant::now();
        match store::long_session(&wasm, n) {
            Some(bytes) => println!(
                "one session of {n} messages (pressure view, default params): runs in a store of \
                 {} MiB (found in {:.0} s)",
                bytes >> 20,
                t.elapsed().as_secs_f64()
            ),
            None => println!("one session of {n} messages: does not run in the default store"),
        }
        return Ok(());
    }
    let identity = reference(&args.identity, "agent_fold_identity.wasm")?;
    let floor = reference(&args.floor, "agent_fold_floor.wasm")?;
    let records = args
        .records
        .unwrap_or(if args.quick { 20_000 } else { 200_000 });

    eprintln!("bench: generating {records} records (seed {})", args.seed);
    let (corpus, stats) = generate(args.seed, records, false);
    let small_records = args.small_records.unwrap_or(records);
    eprintln!(
        "bench: generating {small_records} small-event records (seed {})",
        args.seed
    );
    let (small, small_stats) = generate(args.seed, small_records, true);

    let batches: &[usize] = if args.references {
        &BATCHES[2..]
    } else {
        &BATCHES
    };
    let before = args.before.as_deref().map(read_wasm).transpose()?;
    let specs = phase_specs(
        batches,
        &floor,
        &identity,
        &wasm,
        before.as_deref(),
        !args.references,
    );
    let packed = PackedRecords::of(&corpus);
    let ins = packed.inputs();
    eprintln!("bench: {} phases, interleaved", specs.len());
    let mut rows = phases::timed(&specs, &corpus, &ins)?;
    check_references(&rows, corpus.len())?;

    let small_specs = phase_specs(
        &BATCHES[2..],
        &floor,
        &identity,
        &wasm,
        before.as_deref(),
        false,
    );
    let small_packed = PackedRecords::of(&small);
    let small_ins = small_packed.inputs();
    eprintln!(
        "bench: the small-event corpus, {} phases, interleaved",
        small_specs.len()
    );
    let small_rows = phases::timed(&small_specs, &small, &small_ins)?;
    check_references(&small_rows, small.len())?;

    let probes = if args.phases {
        eprintln!("bench: each phase's fuel (the probe module)");
        let probe = read_wasm(&args.probe)?;
        let mut probes = Vec::new();
        for (name, c) in [("large", &corpus), ("small", &small)] {
            for view in ["frames", "pressure"] {
                probes.push((name, view, phases::probe_fuel(&probe, view, c)?));
            }
        }
        probes
    } else {
        Vec::new()
    };

    let small_report = report::Small {
        stats: &small_stats,
        rows: &small_rows,
    };
    if args.references {
        let md = report::Report::references_only(
            &args,
            &stats,
            &rows,
            &small_report,
            &probes,
            started.elapsed(),
        );
        print!("{md}");
        return Ok(());
    }

    eprintln!("bench: peak RSS, one phase at a time");
    for (row, spec) in rows.iter_mut().zip(&specs) {
        row.rss_mib = phases::peak_rss(spec, &corpus, &ins)?;
    }
    eprintln!("bench: store memory per call");
    let pages: Vec<&[Rec]> = corpus.chunks(10_000).take(2).collect();
    let [first, second] = [pages[0], pages.get(1).copied().unwrap_or(pages[0])];
    let mut subjects: Vec<store::Subject> = vec![
        ("floor", &floor, vec![]),
        ("identity", &identity, vec![]),
        ("frames", &wasm, params("frames")),
        ("pressure", &wasm, params("pressure")),
    ];
    if let Some(before) = &before {
        subjects.push(("frames (before)", before, params("frames")));
        subjects.push(("pressure (before)", before, params("pressure")));
    }
    let history = history(&corpus);
    let store = store::measure(&subjects, &subjects[2..], [first, second], history);
    let lookbacks = match args.lookback_mb {
        Some(mb) => {
            eprintln!("bench: one look_back call of {mb} MB per view");
            store::one_look_back(&subjects[2..], mb * 1_000_000, args.seed + 2)
        }
        None => Vec::new(),
    };

    eprintln!("bench: per-session state");
    let sessions = report::SessionState {
        frames_10k: state::frames_bytes_per_session(10_000)?,
        frames_100k: state::frames_bytes_per_session(100_000)?,
        per_node_1: state::pressure_bytes_per_node(1, 100_000)?.0,
        per_node_1k: state::pressure_bytes_per_node(1_000, 100)?,
    };

    let stream = if args.quick {
        args.stream.min(250_000)
    } else {
        args.stream
    };
    eprintln!("bench: memory over a {stream}-record stream");
    let flat = state::stream_memory(
        &[
            ("frames", 256),
            ("pressure", 256),
            ("frames", 10_000),
            ("pressure", 10_000),
        ],
        stream,
        args.seed + 1,
    )?;

    let md = report::Report {
        args: &args,
        stats: &stats,
        rows: &rows,
        small: &small_report,
        probes: &probes,
        store: &store,
        lookbacks: &lookbacks,
        sessions,
        stream,
        flat: &flat,
        elapsed: started.elapsed(),
    }
    .markdown();
    print!("{md}");
    Ok(())
}
