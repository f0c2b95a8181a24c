//! `agent-fold run`: feeds a JSONL log to the SmartModule in invocations of `--batch` records,
//! exactly as a consumer with the module attached would see it.

use std::io::{Read, Write};
use std::path::PathBuf;

use agent_fold_core::{Emit, FrameView, Processor, RecordIn};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::engine::{Instance, Rec, default_wasm_path, read_wasm};
use crate::jsonl;

pub const USAGE: &str = "\
usage: agent-fold run [--wasm FILE | --native] [-e KEY=VALUE]... [--batch N] [--lookback FILE]
                      [--pressure-out FILE] [--checkpoint-in FILE] [--checkpoint-out FILE]
                      [INPUT.jsonl | -]

Runs the agent-fold SmartModule over a JSONL agent log, one line per record (key: the line's
session_id), and prints every output record's value as one line on stdout.

  --wasm FILE          the SmartModule to run in fluvio-smartengine (default: the project's build)
  --native             run the core library instead of the .wasm (same output, no engine)
  -e KEY=VALUE         a module param (emit, subagents, counter_type, capacity, max_sessions,
                       malformed); repeatable
  --batch N            records per invocation (default 1000)
  --lookback FILE      records replayed through look_back before the input
  --pressure-out FILE  also run an emit=pressure instance and write its records to FILE
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
        Ok(a)
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

fn read_input(path: Option<&PathBuf>) -> Result<Vec<u8>> {
    match path {
        Some(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display())),
        None => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf)?;
            Ok(buf)
        }
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

/// `agent-fold run`. Returns the summary of the main instance's run.
pub fn run(args: &RunArgs) -> Result<Summary> {
    let input = jsonl::records(&read_input(args.input.as_ref())?);
    let history = match &args.lookback {
        Some(p) => Some(jsonl::records(
            &std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
        )),
        None => None,
    };
    let mut main = Module::new(args, &args.params, history.as_deref())?;
    let mut pressure = match &args.pressure_out {
        Some(_) => {
            let mut params: Vec<_> = args
                .params
                .iter()
                .filter(|(k, _)| k != "emit")
                .cloned()
                .collect();
            params.push(("emit".into(), "pressure".into()));
            Some(Module::new(args, &params, history.as_deref())?)
        }
        None => None,
    };
    if let Some(p) = &args.checkpoint_in {
        let doc: Value = serde_json::from_slice(&std::fs::read(p)?)
            .with_context(|| format!("reading checkpoint {}", p.display()))?;
        restore(&mut main, doc.get("main"))?;
        if let Some(pm) = &mut pressure {
            restore(pm, doc.get("pressure"))?;
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
    let mut n_out = 0;
    for (i, chunk) in input.chunks(args.batch).enumerate() {
        let base = (i * args.batch) as i64;
        let recs = main.process(chunk, base)?;
        n_out += recs.len();
        write_lines(&mut out, &recs)?;
        if let (Some(pm), Some(w)) = (&mut pressure, &mut pout) {
            write_lines(w, &pm.process(chunk, base)?)?;
        }
    }
    out.flush()?;
    if let Some(w) = &mut pout {
        w.flush()?;
    }
    if let Some(p) = &args.checkpoint_out {
        let mut doc = serde_json::Map::new();
        doc.insert("main".into(), checkpoint(&main)?);
        if let Some(pm) = &pressure {
            doc.insert("pressure".into(), checkpoint(pm)?);
        }
        std::fs::write(p, Value::Object(doc).to_string())?;
    }
    Ok(Summary::of(&input, n_out, &args.params))
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
            let a = RunArgs::parse(&args[1..])?;
            let summary = run(&a)?;
            if view_of(&a.params) == "frames" {
                eprintln!("{summary}");
            }
            Ok(0)
        }
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
