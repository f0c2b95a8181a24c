//! `agent-fold statusline`: a Claude Code status line. Claude Code runs the command after every
//! message with the session's JSON on stdin; this reads the session's transcript with the
//! module's own adapter and pressure view (`input=claude-code`, the window as `capacity`) and
//! prints one line: the projected occupancy, `~used/window`, how far the automatic compaction
//! is, and a `~` while the figure is a projection since the last provider reading.
//!
//! A call reads only what the transcript gained since the last: a small checkpoint per
//! transcript (the library's own codec and the byte offset read) lives in the user's cache
//! directory. Whatever goes wrong, the command prints one short line and exits 0: a status
//! line must never spill an error onto the user's screen. What went wrong goes to stderr.

mod cache;
mod line;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use agent_fold_core::{Config, Emit, Input, Processor, View};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

pub(crate) use line::{Fields, Template};

use crate::flags::BATCH;
use crate::jsonl::{Piece, Splitter, line_record};
use crate::params::ModuleParams;
use crate::record::Rec;

/// The most stdin is read: Claude Code's payload is a few kilobytes.
const MAX_STDIN: u64 = 1 << 20;
/// A transcript line longer than this (a pasted image, a huge tool output) is skipped: memory
/// stays bounded.
const MAX_LINE: usize = 64 << 20;
/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// `agent-fold statusline`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// The line's template: text with named fields in braces — {percent} {used} {window}
    /// {until} {compact_at} {pressure} {compactions} {mark} {model} {session} ({used_tokens},
    /// {window_tokens}, {until_tokens}, {compact_at_tokens}, {pressure_tokens}: plain integers)
    #[arg(long, value_name = "TEMPLATE")]
    pub format: Option<String>,
    /// Print the session's latest context/pressure record (JSON) instead of the line
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Where the per-transcript checkpoints live (default: $XDG_CACHE_HOME/agent-fold/statusline,
    /// else ~/.cache/agent-fold/statusline)
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub params: crate::flags::Params,
}

/// What Claude Code sends on stdin, the fields this reads (its statusline documentation's shape).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Payload {
    pub session_id: Option<String>,
    pub transcript: PathBuf,
    pub window: Option<u64>,
    pub model: Option<String>,
    /// The session's working directory (`workspace.current_dir`, else `cwd`): where its
    /// project settings are.
    pub cwd: Option<PathBuf>,
}

impl Payload {
    pub(crate) fn read(text: &str) -> Result<Payload> {
        let v: Value = serde_json::from_str(text).context("stdin is not JSON")?;
        if !v.is_object() {
            bail!("stdin is not a JSON object");
        }
        let transcript = v
            .get("transcript_path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| anyhow!("stdin names no transcript_path"))?;
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        Ok(Payload {
            session_id: s(v.get("session_id")),
            transcript: PathBuf::from(transcript),
            window: v
                .pointer("/context_window/context_window_size")
                .and_then(Value::as_u64)
                .filter(|w| *w >= 1),
            model: s(v.pointer("/model/display_name")).or_else(|| s(v.pointer("/model/id"))),
            cwd: s(v.pointer("/workspace/current_dir"))
                .or_else(|| s(v.get("cwd")))
                .map(PathBuf::from),
        })
    }
}

/// The module's config for a transcript: the pressure view over Claude Code lines, the
/// compaction point its settings move (user and project, `crate::settings`), the window Claude
/// Code reports as the capacity over theirs, and the user's own params over both.
fn config(p: &Payload, user: &ModuleParams) -> Config {
    let mut params = user.clone();
    params.settings_under(&crate::settings::for_agent(
        Input::ClaudeCode,
        &crate::settings::Homes::from_env(),
        p.cwd.as_deref(),
    ));
    if let Some(w) = p.window {
        params.capacity_under(w);
    }
    let mut config = params.view(View::Pressure);
    config.set_input(Input::ClaudeCode);
    config
}

/// The session's latest `context/pressure` record after reading the transcript's new lines
/// (`None`: no record yet).
pub(crate) fn latest(p: &Payload, user: &ModuleParams, cache_dir: &Path) -> Result<Option<Value>> {
    let config = config(p, user);
    // A regular file only, looked at before it is opened and opened without waiting: a FIFO
    // named as the transcript would block the open until a writer came, and a status line
    // must never hang the agent's screen.
    let (file, _) =
        crate::logs::open_regular(&p.transcript).context("cannot open the transcript")?;
    let meta = file.metadata()?;
    let identity = cache::Identity::of(&p.transcript, &meta, &config);
    // A refused restore leaves the processor as it was: fresh.
    let mut processor = Processor::new(&config);
    let mut state = match cache::load(cache_dir, &identity, meta.len()) {
        Some(c) if processor.restore(&c.checkpoint).is_ok() => c,
        _ => cache::Cached::fresh(identity),
    };
    let mut reader = file;
    reader.seek(SeekFrom::Start(state.offset))?;
    // Whole lines only: one still being written is read whole next time; one over the limit
    // is skipped, up to its newline, across calls if need be.
    let mut lines = match state.skipping {
        true => Splitter::dropping(MAX_LINE),
        false => Splitter::new(MAX_LINE),
    };
    let mut batch: Vec<Rec> = Vec::with_capacity(BATCH);
    let mut chunk = vec![0; CHUNK];
    let mut read = 0u64;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        read += n as u64;
        lines.push(&chunk[..n], |piece| {
            if let Piece::Line(l) = piece {
                batch.push(line_record(l));
            }
        });
        if batch.len() >= BATCH {
            feed(&mut processor, &mut batch, &mut state, p)?;
        }
    }
    state.offset += read - lines.held().unwrap_or(0) as u64;
    state.skipping = lines.held().is_none();
    feed(&mut processor, &mut batch, &mut state, p)?;
    state.checkpoint = processor.checkpoint();
    cache::store(cache_dir, &state);
    Ok(state.latest)
}

/// One invocation of the module over the lines read; the session's latest record is kept.
fn feed(
    p: &mut Processor,
    batch: &mut Vec<Rec>,
    state: &mut cache::Cached,
    payload: &Payload,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let out = p.process(&crate::record::inputs(batch, state.lines))?;
    state.lines += batch.len() as i64;
    batch.clear();
    for e in out {
        let Emit::New { value, .. } = e else { continue };
        let Ok(v) = serde_json::from_slice::<Value>(&value) else {
            continue;
        };
        let ours = match (
            &payload.session_id,
            v.get("session").and_then(Value::as_str),
        ) {
            (Some(want), Some(got)) => want == got,
            _ => true,
        };
        if ours && v.get("type").and_then(Value::as_str) == Some("context/pressure") {
            state.latest = Some(v);
        }
    }
    Ok(())
}

/// The default cache directory.
fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("agent-fold").join("statusline")
}

/// The line (or JSON) for a payload; `Err` carries the short line to print instead and the
/// reason for stderr.
pub(crate) fn render(args: &Args, stdin: &str) -> std::result::Result<String, (String, String)> {
    let short = |line: &str, e: anyhow::Error| (line.to_owned(), format!("{e:#}"));
    let template = match &args.format {
        Some(t) => Template::parse(t).map_err(|e| ("agent-fold: bad --format".to_owned(), e))?,
        None => Template::default_line(),
    };
    let payload = Payload::read(stdin).map_err(|e| short("ctx ?", e))?;
    let dir = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let params = args.params.settle().map_err(|e| short("ctx ?", e.into()))?;
    let record = latest(&payload, &params, &dir).map_err(|e| short("ctx ?", e))?;
    if args.json {
        return Ok(record.map_or_else(|| "null".to_owned(), |r| r.to_string()));
    }
    let fields = Fields::of(record.as_ref(), &payload);
    Ok(template.fill(&fields))
}

/// The command line: one line on stdout, exit 0, whatever happens.
pub(crate) fn main(args: &Args) -> Result<i32> {
    let mut stdin = String::new();
    let read = std::io::stdin()
        .take(MAX_STDIN)
        .read_to_string(&mut stdin)
        .map_err(|e| anyhow!("reading stdin: {e}"));
    let line = match read {
        Err(e) => {
            eprintln!("agent-fold statusline: {e:#}");
            "ctx ?".to_owned()
        }
        Ok(_) => match render(args, &stdin) {
            Ok(line) => line,
            Err((line, why)) => {
                eprintln!("agent-fold statusline: {why}");
                line
            }
        },
    };
    println!("{line}");
    Ok(0)
}
