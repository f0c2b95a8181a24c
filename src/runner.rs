//! `agent-fold run`: feeds a JSONL log to the SmartModule in invocations of `--batch` records,
//! exactly as a consumer with the module attached would see it.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use agent_fold_core::{Adapter, Emit, FrameView, Input, Processor, RecordIn};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::engine::{Instance, Rec, default_wasm_path, read_wasm};
use crate::{logs, plot};

pub const USAGE: &str = "\
usage: agent-fold run [--wasm FILE | --native] [-e KEY=VALUE]... [--batch N] [--lookback FILE]
                      [--input FORMAT] [--pressure-out FILE] [--plot FILE.svg]
                      [--checkpoint-in FILE] [--checkpoint-out FILE] [INPUT.jsonl | DIR | -]
       agent-fold accuracy [--input FORMAT] PATH...
       agent-fold corpus [--records N] [--seed S] [--sessions K] [--unkeyed]

Runs the agent-fold SmartModule over a JSONL agent log, one line per record (key: the line's
session_id), and prints every output record's value as one line on stdout. A progress bar
shows on stderr when it is a terminal.

  --wasm FILE          the SmartModule to run in fluvio-smartengine (default: the project's build,
                       else the native library, with a note on stderr)
  --native             run the core library instead of the .wasm (same output, no engine)
  -e KEY=VALUE         a module param (emit, subagents, counter_type, capacity, max_sessions,
                       malformed, input); repeatable
  --batch N            records (log lines) per invocation (default 1000)
  --lookback FILE      records replayed through look_back before the input
  --input FORMAT       the log is an agent's own: claude-code, claude-stream, codex (or auto to
                       detect it); its lines are adapted to frames here, --batch lines to an
                       invocation, before the module sees them (the same output as the module's
                       own -e input=FORMAT). A claude-code DIR is a session directory: the
                       transcript beside it and its subagents/*.jsonl, merged by time
  --pressure-out FILE  also run an emit=pressure instance and write its records to FILE
  --plot FILE.svg      draw the session's pressureTokens, projectedTokens, capacity and
                       compactions over time (runs an emit=pressure instance too)
  --checkpoint-in F    resume from a checkpoint (implies --native: a Fluvio module's state
  --checkpoint-out F   cannot leave the engine, so checkpoints are the library's)
";

/// Options of `agent-fold run`.
#[derive(Debug, Default)]
pub struct RunArgs {
    pub wasm: Option<PathBuf>,
    pub native: bool,
    pub params: Vec<(String, String)>,
    pub batch: usize,
    pub lookback: Option<PathBuf>,
    pub pressure_out: Option<PathBuf>,
    pub checkpoint_in: Option<PathBuf>,
    pub checkpoint_out: Option<PathBuf>,
    pub input: Option<PathBuf>,
    /// `--input FORMAT`: the log's format, adapted in the runner.
    pub format: Option<Input>,
    /// `--input auto`: detect the format from the log.
    pub detect: bool,
    pub plot: Option<PathBuf>,
}

impl RunArgs {
    pub fn parse(args: &[String]) -> Result<RunArgs> {
        let mut a = RunArgs {
            batch: 1000,
            ..RunArgs::default()
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| anyhow!("{name} needs a value"))
            };
            match arg.as_str() {
                "--wasm" => a.wasm = Some(value("--wasm")?.into()),
                "--native" => a.native = true,
                "-e" | "--param" => {
                    let kv = value("-e")?;
                    let (k, v) = kv
                        .split_once('=')
                        .ok_or_else(|| anyhow!("-e takes KEY=VALUE, got {kv:?}"))?;
                    a.params.push((k.to_owned(), v.to_owned()));
                }
                "--batch" => {
                    a.batch = value("--batch")?
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| anyhow!("--batch takes an integer ≥ 1"))?
                }
                "--lookback" => a.lookback = Some(value("--lookback")?.into()),
                "--pressure-out" => a.pressure_out = Some(value("--pressure-out")?.into()),
                "--checkpoint-in" => a.checkpoint_in = Some(value("--checkpoint-in")?.into()),
                "--checkpoint-out" => a.checkpoint_out = Some(value("--checkpoint-out")?.into()),
                "--input" => match value("--input")?.as_str() {
                    "auto" => a.detect = true,
                    v => {
                        a.format = Some(Input::parse(v).ok_or_else(|| {
                            anyhow!(
                                "--input: {v:?} is none of auto, {}",
                                Input::NAMES.join(", ")
                            )
                        })?)
                    }
                },
                "--plot" => a.plot = Some(value("--plot")?.into()),
                "-" => a.input = None,
                s if s.starts_with('-') => bail!("unknown option {s}\n\n{USAGE}"),
                s => {
                    if a.input.is_some() {
                        bail!("one input at most\n\n{USAGE}");
                    }
                    a.input = Some(s.into());
                }
            }
        }
        if a.checkpoint_in.is_some() || a.checkpoint_out.is_some() {
            if a.wasm.is_some() {
                bail!("checkpoints are the native library's: --wasm cannot go with them");
            }
            a.native = true;
        }
        if (a.format.is_some() || a.detect) && a.params.iter().any(|(k, _)| k == "input") {
            bail!(
                "--input adapts the log here, -e input=… in the module: choose one (same output)"
            );
        }
        Ok(a)
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One module instance, in the engine or native.
pub enum Module {
    Wasm(Box<Instance>),
    Native(Box<Processor>),
}

impl Module {
    pub fn new(
        args: &RunArgs,
        params: &[(String, String)],
        history: Option<&[Rec]>,
    ) -> Result<Module> {
        if args.native {
            let mut p =
                Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
            if let Some(h) = history {
                p.look_back(&inputs(h));
            }
            return Ok(Module::Native(Box::new(p)));
        }
        let path = args.wasm.clone().unwrap_or_else(default_wasm_path);
        let wasm = read_wasm(&path)?;
        Ok(Module::Wasm(Box::new(Instance::new(
            &wasm, params, history,
        )?)))
    }

    pub fn process(&mut self, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
        match self {
            Module::Wasm(i) => i.process(records, base_offset),
            Module::Native(p) => native_process(p, records, base_offset),
        }
    }
}

pub fn inputs(records: &[Rec]) -> Vec<RecordIn<'_>> {
    records
        .iter()
        .map(|r| RecordIn::new(r.key.as_deref(), &r.value))
        .collect()
}

/// The native library's answer to one invocation, shaped as the engine's.
pub fn native_process(p: &mut Processor, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
    let emits = p
        .process(&inputs(records))
        .map_err(|e| anyhow!("offset {}: {}", base_offset + e.index as i64, e.message))?;
    Ok(emits
        .into_iter()
        .map(|e| match e {
            Emit::Pass(i) => records[i].clone(),
            Emit::Replace(i, value) => Rec {
                key: records[i].key.clone(),
                value,
            },
            Emit::New { key, value, .. } => Rec {
                key: Some(key),
                value,
            },
        })
        .collect())
}

/// What a frames-view run did, from the SPEC §5 accounting identity.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub records_in: usize,
    pub records_out: usize,
    pub subagent_dropped: usize,
    pub malformed_dropped: usize,
    pub counters_folded_away: usize,
}

impl Summary {
    /// Adds another invocation's counts.
    pub fn add(&mut self, o: &Summary) {
        self.records_in += o.records_in;
        self.records_out += o.records_out;
        self.subagent_dropped += o.subagent_dropped;
        self.malformed_dropped += o.malformed_dropped;
        self.counters_folded_away += o.counters_folded_away;
    }

    pub fn of(input: &[Rec], output_len: usize, params: &[(String, String)]) -> Summary {
        let param = |k: &str| {
            params
                .iter()
                .rev()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str())
        };
        let drop_subs = param("subagents").unwrap_or("drop") == "drop";
        let drop_bad = param("malformed") == Some("drop");
        let mut s = Summary {
            records_in: input.len(),
            records_out: output_len,
            ..Summary::default()
        };
        for r in input {
            match FrameView::parse(&r.value) {
                None if drop_bad => s.malformed_dropped += 1,
                Some(v) if v.subagent && drop_subs => s.subagent_dropped += 1,
                _ => {}
            }
        }
        s.counters_folded_away = s
            .records_in
            .saturating_sub(s.records_out + s.subagent_dropped + s.malformed_dropped);
        s
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "records in: {}, out: {}, counters folded away: {}, sub-agent frames dropped: {}, malformed dropped: {}",
            self.records_in,
            self.records_out,
            self.counters_folded_away,
            self.subagent_dropped,
            self.malformed_dropped
        )
    }
}

fn write_lines(w: &mut impl Write, recs: &[Rec]) -> Result<()> {
    for r in recs {
        w.write_all(&r.value)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

fn view_of(params: &[(String, String)]) -> &str {
    params
        .iter()
        .rev()
        .find(|(k, _)| k == "emit")
        .map_or("frames", |(_, v)| v.as_str())
}

/// A progress bar over `len` log lines on stderr, hidden when stderr is not a terminal.
fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} lines ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb
}

/// `agent-fold run`. Returns the summary of the main instance's run.
pub fn run(args: &RunArgs) -> Result<Summary> {
    let input = logs::read_records(args.input.as_deref())?;
    // The log's format: adapted here with --input; with -e input=… the module adapts, and a
    // shadow adapter here sees the same frames for the summary and the plot's marks.
    let format = match (args.format, args.detect) {
        (Some(f), _) => Some(f),
        (None, true) => Some(logs::detect(&input).ok_or_else(|| {
            anyhow!("--input auto: cannot tell the log's format from its first lines")
        })?),
        (None, false) => match args.param("input") {
            Some(v) => Some(Input::parse(v).ok_or_else(|| {
                anyhow!(
                    "bad value {v:?} for param `input`: expected {}",
                    Input::NAMES.join(", ")
                )
            })?),
            None => None,
        },
    }
    .filter(|f| *f != Input::AgentFold);
    let adapt_here = args.format.is_some() || args.detect;
    let max_sessions = args
        .param("max_sessions")
        .and_then(|v| v.parse().ok())
        .unwrap_or(agent_fold_core::config::DEFAULT_MAX_SESSIONS);
    let mut adapter = format.map(|f| Adapter::new(f, max_sessions));
    let history = match &args.lookback {
        Some(p) => {
            let lines = logs::read_records(Some(p))?;
            Some(match (&mut adapter, adapt_here) {
                (Some(a), true) => logs::adapt_chunk(a, &lines),
                (Some(a), false) => {
                    logs::adapt_chunk(a, &lines);
                    lines
                }
                (None, _) => lines,
            })
        }
        None => None,
    };
    let mut main = Module::new(args, &args.params, history.as_deref())?;
    let mut pressure = match args.pressure_out.is_some() || args.plot.is_some() {
        true => {
            let mut params: Vec<_> = args
                .params
                .iter()
                .filter(|(k, _)| k != "emit")
                .cloned()
                .collect();
            params.push(("emit".into(), "pressure".into()));
            Some(Module::new(args, &params, history.as_deref())?)
        }
        false => None,
    };
    if let Some(p) = &args.checkpoint_in {
        let doc: Value = serde_json::from_slice(&std::fs::read(p)?)
            .with_context(|| format!("reading checkpoint {}", p.display()))?;
        restore(&mut main, doc.get("main"))?;
        if let Some(pm) = &mut pressure {
            restore(pm, doc.get("pressure"))?;
        }
        if let Some(a) = &mut adapter {
            let state = doc.get("adapter").ok_or_else(|| {
                anyhow!(
                    "the checkpoint has no adapter state for input={}",
                    a.input().name()
                )
            })?;
            a.restore(state).map_err(|e| anyhow!("{e}"))?;
        }
    }

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut pout = match &args.pressure_out {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let mut summary = Summary::default();
    let mut marks = plot::Marks::default();
    let mut pressure_recs = Vec::new();
    let pb = progress_bar(input.len());
    for (i, chunk) in input.chunks(args.batch).enumerate() {
        let base = (i * args.batch) as i64;
        let frames: Cow<[Rec]> = match &mut adapter {
            Some(a) => Cow::Owned(logs::adapt_chunk(a, chunk)),
            None => Cow::Borrowed(chunk),
        };
        let fed: &[Rec] = if adapt_here { &frames } else { chunk };
        let recs = main.process(fed, base)?;
        summary.add(&Summary::of(&frames, recs.len(), &args.params));
        write_lines(&mut out, &recs)?;
        if let Some(pm) = &mut pressure {
            let precs = pm.process(fed, base)?;
            if let Some(w) = &mut pout {
                write_lines(w, &precs)?;
            }
            if args.plot.is_some() {
                marks.note(&frames);
                pressure_recs.extend(precs);
            }
        }
        pb.inc(chunk.len() as u64);
    }
    pb.finish_and_clear();
    out.flush()?;
    if let Some(w) = &mut pout {
        w.flush()?;
    }
    if let Some(path) = &args.plot {
        plot::render(path, &plot::panels(&pressure_recs, &marks))?;
    }
    if let Some(p) = &args.checkpoint_out {
        let mut doc = serde_json::Map::new();
        doc.insert("main".into(), checkpoint(&main)?);
        if let Some(pm) = &pressure {
            doc.insert("pressure".into(), checkpoint(pm)?);
        }
        if let Some(a) = &adapter {
            doc.insert("adapter".into(), a.checkpoint());
        }
        std::fs::write(p, Value::Object(doc).to_string())?;
    }
    Ok(summary)
}

fn checkpoint(m: &Module) -> Result<Value> {
    match m {
        Module::Native(p) => Ok(serde_json::from_str(&p.checkpoint())?),
        Module::Wasm(_) => bail!("a module in the engine cannot be checkpointed"),
    }
}

fn restore(m: &mut Module, doc: Option<&Value>) -> Result<()> {
    let (Module::Native(p), Some(doc)) = (m, doc) else {
        bail!("the checkpoint has no state for this instance");
    };
    p.restore(&doc.to_string()).map_err(|e| anyhow!("{e}"))
}

/// The command line: `agent-fold run …`.
pub fn main_with(args: &[String]) -> Result<i32> {
    match args.first().map(String::as_str) {
        Some("run") => {
            let mut a = RunArgs::parse(&args[1..])?;
            if !a.native
                && a.wasm.is_none()
                && std::env::var_os("AGENT_FOLD_WASM").is_none()
                && !default_wasm_path().exists()
            {
                // A fresh clone has no build of the module yet: the library gives the same
                // output (SPEC §6.8), so run it and say so.
                eprintln!(
                    "agent-fold: no SmartModule build at {} (scripts/build-wasm.sh makes it): \
                     running the native library, which gives the same output",
                    default_wasm_path().display()
                );
                a.native = true;
            }
            let summary = run(&a)?;
            if view_of(&a.params) == "frames" {
                eprintln!("{summary}");
            }
            Ok(0)
        }
        Some("corpus") => crate::corpus::main_with(&args[1..]),
        Some("accuracy") => crate::accuracy::main_with(&args[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(0)
        }
        _ => {
            eprint!("{USAGE}");
            Ok(2)
        }
    }
}
