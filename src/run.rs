//! `agent-fold run`: feeds a JSONL log to the SmartModule in invocations of `--batch` records,
//! exactly as a consumer with the module attached would see it.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use agent_fold_core::{Adapter, Config, Frame, Input, Malformed, Subagents, View};
use anyhow::{Context, Result, anyhow, bail};

use crate::flags::format;
use crate::module::{self, Build, Module};
use crate::params::Format;
use crate::params::{ModuleParams, Told};
use crate::record::Rec;
use crate::{logs, plot, resume};

/// The params, the module source and the log of one run.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// The SmartModule to run in fluvio-smartengine (default: the project's build, else the
    /// native library, with a note on stderr)
    #[arg(long, value_name = "FILE", conflicts_with = "native")]
    pub wasm: Option<PathBuf>,
    /// Run the core library instead of the .wasm (same output, no engine)
    #[arg(long)]
    pub native: bool,
    #[command(flatten)]
    pub params: crate::flags::Params,
    /// Records (log lines) per invocation, at most: stdin and a FIFO are read as a stream, each
    /// read's lines processed (in invocations of at most this many) and written out at once
    #[arg(long, default_value_t = crate::flags::BATCH as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// Records replayed through look_back before the input
    #[arg(long, value_name = "FILE")]
    pub lookback: Option<PathBuf>,
    /// The log's format: an agent's own (claude-code, claude-stream, codex, otel, gemini-cli,
    /// opencode), agent-fold (frames already), or auto (the default without -e input=…: told by
    /// its first lines). An agent's lines are adapted to frames here, --batch lines to an
    /// invocation, before the module sees them (the same output as the module's own -e
    /// input=FORMAT). A claude-code DIR is a session directory: the transcript beside it and its
    /// subagents/*.jsonl, merged by time
    #[arg(long = "input", value_name = "FORMAT", value_parser = format)]
    pub format: Option<Format>,
    /// With an OpenCode database (opencode.db, or the directory holding it): this session only
    /// (every session without it)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Also run an emit=pressure instance and write its records to FILE
    #[arg(long, value_name = "FILE")]
    pub pressure_out: Option<PathBuf>,
    /// Draw the session's pressureTokens, projectedTokens, capacity and compactions over time
    /// (runs an emit=pressure instance too)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Resume from a checkpoint (implies --native: a Fluvio module's state cannot leave the engine)
    #[arg(long, value_name = "FILE", conflicts_with = "wasm")]
    pub checkpoint_in: Option<PathBuf>,
    /// Write the state at the end as a checkpoint (implies --native)
    #[arg(long, value_name = "FILE", conflicts_with = "wasm")]
    pub checkpoint_out: Option<PathBuf>,
    /// The log: a JSONL file, a JSON document (a Gemini CLI saved chat, an `opencode export`:
    /// one record), a Claude Code session directory, OpenCode's database (each session as its
    /// export), a FIFO, or - for stdin (the last two read as a stream, a record a line: pipe a
    /// document through `jq -c .`)
    #[arg(value_name = "INPUT")]
    pub input: Option<PathBuf>,
}

impl Args {
    /// The module's config as the params give it (checked here, so that a bad one fails before
    /// any work, naming the param).
    pub(crate) fn config(&self) -> Result<Config> {
        Ok(self.params.settle()?.config().clone())
    }

    /// Which module runs: checkpoints are the native library's; a fresh clone without a build
    /// of the module runs the library, which gives the same output (contract §6.8), and says so.
    pub(crate) fn build(&self) -> Build {
        let native = self.native || self.checkpoint_in.is_some() || self.checkpoint_out.is_some();
        module::choose(self.wasm.as_deref(), native)
    }

    fn log(&self) -> Option<&std::path::Path> {
        self.input.as_deref().filter(|p| p.as_os_str() != "-")
    }
}

/// What a frames-view run did, from the contract §5 accounting identity.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub records_in: usize,
    pub records_out: usize,
    pub subagent_dropped: usize,
    pub malformed_dropped: usize,
    pub counters_folded_away: usize,
}

impl Summary {
    /// Adds another invocation's counts.
    pub(crate) fn add(&mut self, o: &Summary) {
        self.records_in += o.records_in;
        self.records_out += o.records_out;
        self.subagent_dropped += o.subagent_dropped;
        self.malformed_dropped += o.malformed_dropped;
        self.counters_folded_away += o.counters_folded_away;
    }

    /// One invocation's counts: `input` the frames it was given, `output_len` what came out.
    pub(crate) fn of(input: &[Rec], output_len: usize, config: &Config) -> Summary {
        let mut s = Summary {
            records_in: input.len(),
            records_out: output_len,
            ..Summary::default()
        };
        for r in input {
            match Frame::parse(&r.value) {
                None if config.malformed == Malformed::Drop => s.malformed_dropped += 1,
                Some(v) if v.is_subagent() && config.subagents == Subagents::Drop => {
                    s.subagent_dropped += 1
                }
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

/// A progress bar over `len` log lines on stderr (none for a stream, whose length is not
/// known), hidden when stderr is not a terminal.
fn progress_bar(len: Option<usize>) -> indicatif::ProgressBar {
    let Some(len) = len.filter(|_| std::io::stderr().is_terminal()) else {
        return indicatif::ProgressBar::hidden();
    };
    let pb = indicatif::ProgressBar::new(len as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} lines ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb
}

/// A log whose first lines ([`logs::DETECT_LINES`]) do not tell its format: said on stderr, and
/// read as agent-fold frames — unless a pressure output was asked for (`--pressure-out`,
/// `--plot`, `-e emit=pressure`), which such lines would leave empty: then refused. An empty
/// log is no log of any format: nothing is said.
fn untold(args: &Args, config: &Config, input: &logs::LogReader) -> Result<Option<Input>> {
    if input.known_len() == Some(0) {
        return Ok(None);
    }
    let name = args
        .log()
        .map_or_else(|| "stdin".to_owned(), |p| p.display().to_string());
    let why = format!(
        "{name}: its first {} lines do not tell its format (none is an agent's log line this \
         build knows, nor an agent-fold frame)",
        logs::DETECT_LINES
    );
    if args.format == Some(Format::Auto)
        || args.pressure_out.is_some()
        || args.plot.is_some()
        || config.view == View::Pressure
    {
        bail!(
            "{why}: name it with --input FORMAT ({})",
            Input::NAMES.join(", ")
        );
    }
    tracing::warn!(
        "{why}: its lines go to the module as agent-fold frames (--input FORMAT names another)"
    );
    Ok(None)
}

/// `agent-fold run`. Returns the summary of the main instance's run.
pub(crate) fn run(args: &Args) -> Result<Summary> {
    let params = args.params.settle()?;
    // The log's format: adapted here, told by its first lines unless --input names it; with
    // -e input=… the module adapts, and a shadow adapter here sees the same frames for the
    // summary and the plot's marks.
    let told = Told::settle(args.format, &params)?;
    let mut input = logs::LogReader::open_in(args.log(), args.session.as_deref())?;
    let format = match told {
        Told::Detect => match input.detect()? {
            Some(f) => Some(f),
            None => untold(args, params.config(), &input)?,
        },
        Told::Flag(f) | Told::Param(f) => Some(f),
    }
    .filter(|f| *f != Input::AgentFold);
    let mut run = Instances::start(args, &params, format, !matches!(told, Told::Param(_)))?;
    let start = match &args.checkpoint_in {
        Some(p) => run.resume(p)?,
        None => 0,
    };
    let mut out = Outputs::open(args)?;
    let end = run.feed(&mut input, start, args, &mut out)?;
    out.finish(args)?;
    if let Some(p) = &args.checkpoint_out {
        run.save(p, end)?;
    }
    Ok(out.summary)
}

/// The instances of one run: the main one, the pressure one when an output asks for it, and
/// the adapter that turns the log's lines into frames here.
struct Instances {
    config: Config,
    adapter: Option<Adapter>,
    /// The main instance is given the adapter's frames (else the log's own lines: `-e input=`).
    adapt_here: bool,
    main: Module,
    pressure: Option<Module>,
}

impl Instances {
    /// Every instance made, the look-back history replayed through each (offsets −n … −1, the
    /// adapter learning it whether or not the main instance is given it adapted).
    fn start(
        args: &Args,
        params: &ModuleParams,
        format: Option<Input>,
        adapt_here: bool,
    ) -> Result<Instances> {
        let config = params.config().clone();
        let build = args.build();
        let mut adapter = format.map(|input| {
            Adapter::for_config(&Config {
                input,
                ..config.clone()
            })
        });
        let history = match &args.lookback {
            Some(p) => {
                let lines = logs::read_records(p)?;
                let base = -(lines.len() as i64);
                let adapted = adapter.as_mut().map(|a| logs::adapt_chunk(a, &lines, base));
                Some((lines, adapted.filter(|_| adapt_here), base))
            }
            None => None,
        };
        let main_history = history
            .as_ref()
            .map(|(lines, adapted, b)| (adapted.as_deref().unwrap_or(&lines[..]), *b));
        let main = Module::new(&build, &config, main_history)?;
        // The pressure view reads the log's own lines and adapts them itself, as a relay over
        // the topic does: the agent's defaults (contract §3.4, §3.5) come with its `input`.
        let pressure_config = || {
            let mut p = params.clone();
            if let (true, Some(f)) = (adapt_here, format) {
                p.input_under(f);
            }
            p.view(View::Pressure)
        };
        let pressure_history = history.as_ref().map(|(lines, _, b)| (&lines[..], *b));
        let pressure = match args.pressure_out.is_some() || args.plot.is_some() {
            true => Some(Module::new(&build, &pressure_config(), pressure_history)?),
            false => None,
        };
        Ok(Instances {
            config,
            adapter,
            adapt_here,
            main,
            pressure,
        })
    }

    /// Restores every instance from the checkpoint at `path`; where the log goes on.
    fn resume(&mut self, path: &Path) -> Result<i64> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading checkpoint {}", path.display()))?;
        let doc = resume::Checkpoint::read(&text)?;
        self.main.restore(doc.main)?;
        if let Some(pm) = &mut self.pressure {
            pm.restore(doc.pressure.ok_or_else(|| {
                anyhow!("the checkpoint has no state for the pressure instance")
            })?)?;
        }
        if let Some(a) = &mut self.adapter {
            let state = doc.adapter.ok_or_else(|| {
                anyhow!(
                    "the checkpoint has no adapter state for input={}",
                    a.input().name()
                )
            })?;
            a.restore(state)?;
        }
        Ok(doc.offset)
    }

    /// Feeds the log from offset `start` in invocations of `--batch` lines, writing each
    /// invocation's records as it goes; the offset after the last line.
    fn feed(
        &mut self,
        input: &mut logs::LogReader,
        start: i64,
        args: &Args,
        out: &mut Outputs,
    ) -> Result<i64> {
        let pb = progress_bar(input.known_len());
        let stream = input.is_stream();
        let mut base = start;
        while let Some(chunk) = input.next_batch(args.batch as usize)? {
            let chunk = &chunk[..];
            let frames: Cow<[Rec]> = match &mut self.adapter {
                Some(a) => Cow::Owned(logs::adapt_chunk(a, chunk, base)),
                None => Cow::Borrowed(chunk),
            };
            let fed: &[Rec] = if self.adapt_here { &frames } else { chunk };
            let recs = self.main.process(fed, base)?;
            out.summary
                .add(&Summary::of(&frames, recs.len(), &self.config));
            write_lines(&mut out.frames, &recs)?;
            if let Some(pm) = &mut self.pressure {
                out.pressure(&frames, pm.process(chunk, base)?, args)?;
            }
            if stream {
                // A stream's answer goes out before the next read waits (contract §1: each
                // record's output as soon as its invocation is processed).
                out.flush()?;
            }
            base += chunk.len() as i64;
            pb.inc(chunk.len() as u64);
        }
        pb.finish_and_clear();
        Ok(base)
    }

    /// Writes every instance's state to `path`, the log to go on at `offset`.
    fn save(&self, path: &Path, offset: i64) -> Result<()> {
        let main_doc = self.main.checkpoint()?;
        let pressure_doc = self.pressure.as_ref().map(Module::checkpoint).transpose()?;
        let adapter_doc = self.adapter.as_ref().map(Adapter::checkpoint);
        let doc = resume::Checkpoint {
            main: &main_doc,
            pressure: pressure_doc.as_deref(),
            adapter: adapter_doc.as_deref(),
            offset,
        };
        std::fs::write(path, doc.write()?)?;
        Ok(())
    }
}

/// Where a run's records go: the frames on stdout, the pressure records to `--pressure-out`,
/// what `--plot` draws, and the summary.
struct Outputs {
    frames: std::io::BufWriter<std::io::StdoutLock<'static>>,
    pressure: Option<std::io::BufWriter<std::fs::File>>,
    marks: plot::Marks,
    plotted: Vec<Rec>,
    summary: Summary,
}

impl Outputs {
    fn open(args: &Args) -> Result<Outputs> {
        let pressure = match &args.pressure_out {
            Some(p) => Some(std::io::BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
            )),
            None => None,
        };
        Ok(Outputs {
            frames: std::io::BufWriter::new(std::io::stdout().lock()),
            pressure,
            marks: plot::Marks::default(),
            plotted: Vec::new(),
            summary: Summary::default(),
        })
    }

    /// One invocation's pressure records, for the lines that gave `frames`.
    fn pressure(&mut self, frames: &[Rec], records: Vec<Rec>, args: &Args) -> Result<()> {
        if let Some(w) = &mut self.pressure {
            write_lines(w, &records)?;
        }
        if args.plot.is_some() {
            self.marks.note(frames);
            self.plotted.extend(records);
        }
        Ok(())
    }

    /// The pressure records first: once a line's answer is on stdout, its pressure records
    /// are on --pressure-out.
    fn flush(&mut self) -> Result<()> {
        if let Some(w) = &mut self.pressure {
            w.flush()?;
        }
        self.frames.flush()?;
        Ok(())
    }

    /// Everything written out, and the plot drawn.
    fn finish(&mut self, args: &Args) -> Result<()> {
        self.flush()?;
        if let Some(path) = &args.plot {
            plot::render(path, &plot::panels(&self.plotted, &self.marks))?;
        }
        Ok(())
    }
}

/// The command line: `agent-fold run …`.
pub(crate) fn main(args: &Args) -> Result<i32> {
    let summary = run(args)?;
    if args.config()?.view == View::Frames {
        eprintln!("{summary}");
    }
    Ok(0)
}
