//! The bench's report, in Markdown: every phase, the views against the two reference modules
//! by time and by fuel, the engine's store per call, per-session state, memory over a stream.

use std::fmt::Write as _;
use std::time::Duration;

use agent_fold::corpus::Stats;

use crate::phases::Row;
use crate::state::Held;
use crate::store::{DEFAULT_STORE, LookBack, StoreRow};
use crate::{Args, BATCHES};

/// Per-session state of the native core.
pub(crate) struct SessionState {
    pub frames_10k: f64,
    pub frames_100k: f64,
    pub per_node_1: f64,
    /// Per node over 1,000 sessions, and a session with one node.
    pub per_node_1k: (f64, f64),
}

/// The small-event corpus's shape and phases (batch 10,000 only).
pub(crate) struct Small<'a> {
    pub stats: &'a Stats,
    pub rows: &'a [Row],
}

/// Per corpus and view, fuel per record at each of the probe's stages.
pub(crate) type Probes<'a> = [(&'a str, &'a str, Vec<f64>)];

pub(crate) struct Report<'a> {
    pub args: &'a Args,
    pub stats: &'a Stats,
    pub rows: &'a [Row],
    pub small: &'a Small<'a>,
    pub probes: &'a Probes<'a>,
    pub store: &'a [StoreRow],
    pub lookbacks: &'a [LookBack],
    pub sessions: SessionState,
    pub stream: usize,
    pub flat: &'a [Held],
    pub elapsed: Duration,
}

fn ok(b: bool) -> &'static str {
    if b { "✓" } else { "✗ MISSED" }
}

fn mib(bytes: i64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

impl Report<'_> {
    fn get(&self, name: &str, batch: Option<usize>) -> Option<&Row> {
        get(self.rows, name, batch)
    }

    /// The report of `bench --references`: the reference tables of both corpora, engine
    /// against native, and the phases when measured.
    pub(crate) fn references_only(
        args: &Args,
        stats: &Stats,
        rows: &[Row],
        small: &Small,
        probes: &Probes,
        elapsed: Duration,
    ) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# agent-fold bench (references, batch 10,000)\n\nCorpus (seed {}): {stats}.\n\n\
             Small-event corpus (seed {}): {}.",
            args.seed, args.seed, small.stats
        );
        let _ = writeln!(
            md,
            "\n## The corpus, against the reference modules, batch 10,000"
        );
        references_table(&mut md, rows);
        same_as_native(&mut md, rows, &[10_000]);
        small_section(&mut md, small);
        phases_table(&mut md, probes);
        let _ = writeln!(md, "\nTotal bench time {:.0} s.", elapsed.as_secs_f64());
        md
    }

    fn find(&self, name: &str, batch: Option<usize>) -> &Row {
        find(self.rows, name, batch)
    }

    pub(crate) fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# agent-fold bench ({} mode)\n\nCorpus (seed {}): {}.\n",
            if self.args.quick { "quick" } else { "full" },
            self.args.seed,
            self.stats
        );
        self.phases(&mut md);
        self.references(&mut md);
        self.ratios(&mut md);
        self.store_memory(&mut md);
        self.state(&mut md);
        let _ = writeln!(
            md,
            "\nTotal bench time {:.0} s.",
            self.elapsed.as_secs_f64()
        );
        md
    }

    fn phases(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "| phase | batch | records/s | MB/s | MB/s wall | fuel/record | peak RSS growth | records out |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for r in self.rows {
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {} |",
                r.name,
                r.batch.map_or("–".to_string(), |b| b.to_string()),
                r.rps(),
                r.mbps(),
                r.wall_mbps(),
                r.fuel_per_record()
                    .map_or("–".to_string(), |f| format!("{f:.0}")),
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
             Engine rows time the engine's `process` (input encoded and written into the module, \
             the module, its output read back and decoded); native rows time \
             `Processor::process`; naive times parse + serialise. MB/s counts record values in. \
             fuel/record is fluvio-smartengine 0.50.1's `fuel_used` metric, which adds each \
             invocation's fuel twice (transform and instance wrappers): halve it for wasm \
             instructions. The phases are interleaved, a chunk of 10,000 records through each in \
             turn (the order rotating), so that load on a shared machine weighs on all alike. \
             Peak RSS growth, measured in a second pass that runs each phase alone: VmHWM at the \
             phase's end (reset through /proc/self/clear_refs at its start) minus VmRSS at its \
             start: it includes the module's linear memory, which wasmtime maps outside the \
             heap, and the host's copies of each invocation's input and output. The timed phases \
             run on the plain system allocator; the counting one is switched on only for the \
             memory phases below."
        );
    }

    /// Each module at batch 10,000 against the floor and the identity module.
    fn references(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Against the reference modules, batch 10,000");
        references_table(md, self.rows);
    }

    fn ratios(&self, md: &mut String) {
        let b = Some(10_000);
        let floor = self.find("engine floor", b);
        let fr = self.find("engine frames", b).rps() / floor.rps();
        let pr = self.find("engine pressure", b).rps() / floor.rps();
        let nr =
            self.find("native frames", b).rps() / self.find("naive serde_json::Value", None).rps();
        let _ = writeln!(md, "\n## Ratios\n");
        let _ = writeln!(
            md,
            "- frames in engine / floor, batch 10,000: **{fr:.2}** (target ≥ 0.6) {}",
            ok(fr >= 0.6)
        );
        let _ = writeln!(
            md,
            "- pressure in engine / floor, batch 10,000: **{pr:.2}** (target ≥ 0.5) {}",
            ok(pr >= 0.5)
        );
        let _ = writeln!(
            md,
            "- native frames / naive, batch 10,000: **{nr:.1}** (target ≥ 10) {}",
            ok(nr >= 10.0)
        );
        for view in ["frames", "pressure"] {
            let before = self.get(&format!("engine {view} (before)"), b);
            let now = self.find(&format!("engine {view}"), b);
            if let (Some(f0), Some(f1)) = (before.and_then(|r| r.fuel), now.fuel) {
                let f = f1 as f64 / f0 as f64;
                let _ = writeln!(
                    md,
                    "- {view}: fuel per record now / before, batch 10,000: **{f:.3}** (target ≤ 0.25) {}",
                    ok(f <= 0.25)
                );
            }
        }
        for &b in &BATCHES[..2] {
            let floor = self.find("engine floor", Some(b));
            let of = |view: &str| self.find(&format!("engine {view}"), Some(b)).rps() / floor.rps();
            let _ = writeln!(
                md,
                "- batch {b}: frames / floor {:.2}, pressure / floor {:.2}",
                of("frames"),
                of("pressure")
            );
        }
        same_as_native(md, self.rows, &BATCHES);
        small_section(md, self.small);
        phases_table(md, self.probes);
    }

    fn store_memory(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## The engine's store per call\n\n\
             The smallest store limit (to a MiB) under which a fresh instance runs the calls: the \
             module's linear memory at its peak. Input is the keys and values of one call.\n\n\
             | calls | input | store | store ÷ input |\n|---|---:|---:|---:|"
        );
        for s in self.store {
            let store = s.store.map_or("over 1 GB".to_string(), |b| mib(b as i64));
            let ratio = s.store.map_or("–".to_string(), |b| {
                format!("{:.2}", b as f64 / s.bytes as f64)
            });
            let _ = writeln!(
                md,
                "| {} | {} | {store} | {ratio} |",
                s.what,
                mib(s.bytes as i64)
            );
        }
        if !self.lookbacks.is_empty() {
            let _ = writeln!(md, "\nOne look_back call in the engine's default store:\n");
        }
        for l in self.lookbacks {
            let outcome = match &l.error {
                None => "runs".to_string(),
                Some(e) => format!("fails: {}", e.lines().next().unwrap_or("")),
            };
            let _ = writeln!(md, "- {} ({}): {outcome}", l.what, mib(l.bytes as i64));
        }
        for s in self.store.iter().filter(|s| s.what.contains("look_back")) {
            if let Some(b) = s.store {
                let _ = writeln!(
                    md,
                    "\n- {}: a look-back call fits the default {} MB store up to about **{:.0} MB** \
                     of records at this ratio.",
                    s.what,
                    DEFAULT_STORE / 1_000_000,
                    DEFAULT_STORE as f64 / (b as f64 / s.bytes as f64) / 1e6
                );
            }
        }
    }

    fn state(&self, md: &mut String) {
        let s = &self.sessions;
        let _ = writeln!(
            md,
            "\n## Per-session state (native core, counting allocator)\n"
        );
        let _ = writeln!(
            md,
            "- frames view: **{:.0} B/session** at 10,000 sessions, {:.0} B/session at \
             100,000 (36-byte session keys; target ≤ 256) {}",
            s.frames_10k,
            s.frames_100k,
            ok(s.frames_10k <= 256.0)
        );
        let _ = writeln!(
            md,
            "- pressure view: **{:.1} B/surface node** (one session, 100,000 nodes; target ≤ 32) {}; \
             {:.1} B/node over 1,000 sessions × 100 nodes, session overhead included; \
             {:.0} B for a session with one node",
            s.per_node_1,
            ok(s.per_node_1 <= 32.0),
            s.per_node_1k.0,
            s.per_node_1k.1
        );
        let _ = writeln!(
            md,
            "\n## Memory over a {}-record stream (native, batch 10,000)\n\nLive heap each \
             processor holds (the sum of what its `process` calls left allocated), at each quarter \
             of the stream; the corpus has 64 sessions live at a time and a new one starts as one \
             ends.\n",
            self.stream
        );
        let _ = writeln!(
            md,
            "| view | max_sessions | {} |",
            self.flat[0]
                .marks
                .iter()
                .map(|(n, _, _)| format!("at {n}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(md, "|---|---:|{}", "---:|".repeat(self.flat[0].marks.len()));
        for h in self.flat {
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
    }
}

fn get<'r>(rows: &'r [Row], name: &str, batch: Option<usize>) -> Option<&'r Row> {
    rows.iter().find(|r| r.name == name && r.batch == batch)
}

fn find<'r>(rows: &'r [Row], name: &str, batch: Option<usize>) -> &'r Row {
    get(rows, name, batch).expect("a measured phase")
}

/// Each module at batch 10,000 against the floor and the identity module.
fn references_table(md: &mut String, rows: &[Row]) {
    let b = Some(10_000);
    let floor = find(rows, "engine floor", b);
    let identity = find(rows, "engine identity", b);
    let _ = writeln!(
        md,
        "\n| module | MB/s | × floor | × identity | fuel/record | identity's fuel ÷ its |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    let names = [
        "floor",
        "identity",
        "frames (before)",
        "pressure (before)",
        "frames",
        "pressure",
    ];
    for name in names {
        let Some(r) = get(rows, &format!("engine {name}"), b) else {
            continue; // an earlier module only with --before
        };
        // The floor burns next to no fuel: a ratio to it would say nothing.
        let by_fuel = match (identity.fuel, r.fuel) {
            (Some(i), Some(f)) if f >= r.records as u64 => {
                format!("{:.2}", i as f64 / f as f64)
            }
            _ => "–".to_string(),
        };
        let _ = writeln!(
            md,
            "| {name} | {:.0} | {:.2} | {:.2} | {} | {by_fuel} |",
            r.mbps(),
            r.rps() / floor.rps(),
            r.rps() / identity.rps(),
            r.fuel_per_record()
                .map_or("–".to_string(), |f| format!("{f:.0}")),
        );
    }
    let _ = writeln!(
        md,
        "\nThe floor module hands its input's encoded records (`raw_bytes`, already a \
         `Vec<Record>` encoding) back as its output with one copy, decoding nothing: what the \
         engine spends around any module. The identity module is Fluvio's generated \
         `array_map` around a function that returns its record. Fuel is deterministic: the \
         same module on the same input burns the same fuel, however busy the machine."
    );
}

/// Whether each view's output in the engine is the native core's, byte for byte.
fn same_as_native(md: &mut String, rows: &[Row], batches: &[usize]) {
    let mut same = Vec::new();
    for &b in batches {
        for view in ["frames", "pressure"] {
            let e = find(rows, &format!("engine {view}"), Some(b));
            let n = find(rows, &format!("native {view}"), Some(b));
            let agree = e.out == n.out && e.digest == n.digest;
            same.push(format!(
                "{view}@{b} {}",
                if agree { "same" } else { "DIFFERENT" }
            ));
        }
    }
    let _ = writeln!(
        md,
        "- engine vs native output, byte for byte: {}",
        same.join(", ")
    );
}

/// The small-event corpus against the reference modules.
fn small_section(md: &mut String, small: &Small) {
    let _ = writeln!(
        md,
        "\n## Small events, against the reference modules, batch 10,000\n\n\
         The generator's small-event shape (`CorpusConfig::small`): {}.",
        small.stats
    );
    references_table(md, small.rows);
    let _ = writeln!(md);
    same_as_native(md, small.rows, &[10_000]);
}

/// Each phase's fuel per record: the differences between the probe's stages.
fn phases_table(md: &mut String, probes: &Probes) {
    if probes.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Fuel per record by phase, batch 10,000\n\n\
         The probe build of the module (feature `probe`) stops each call after a phase and hands \
         back no record; a phase's fuel is the difference between the stages around it. Fuel \
         counts each wasm instruction twice.\n"
    );
    let head: Vec<String> = probes
        .iter()
        .map(|(corpus, view, _)| format!("{view}, {corpus}"))
        .collect();
    let _ = writeln!(md, "| phase | {} |", head.join(" | "));
    let _ = writeln!(md, "|---|{}", "---:|".repeat(probes.len()));
    const NAMES: [&str; 7] = [
        "input read (the call's records decoded)",
        "JSON walk (each record checked as an object)",
        "field scan (the fields the views read, the session key)",
        "session lookup",
        "fold / projection",
        "records made (folded frames, pressure records)",
        "output written",
    ];
    for (i, name) in NAMES.iter().enumerate() {
        let cells: Vec<String> = probes
            .iter()
            .map(|(_, _, f)| {
                let before = if i == 0 { 0.0 } else { f[i - 1] };
                format!("{:.0}", f[i] - before)
            })
            .collect();
        let _ = writeln!(md, "| {name} | {} |", cells.join(" | "));
    }
    let totals: Vec<String> = probes
        .iter()
        .map(|(_, _, f)| format!("{:.0}", f[f.len() - 1]))
        .collect();
    let _ = writeln!(md, "| **the whole call** | {} |", totals.join(" | "));
}
