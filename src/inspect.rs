//! `agent-fold inspect LOG…`: the census a user runs when a meter looks wrong — per log, what it
//! holds and what the adapter made of it: the agent and its versions, the sessions and the field
//! that keyed them, every kind of line with its count and treatment (read, priced, passed over,
//! or unknown, named with its first line), the readings (and those whose usage summed several
//! iterations), the compactions, the window and threshold with where each came from, and
//! warnings in words. `--json` for scripts.
//!
//! It runs the very adapter the module runs (`input=<format>`, contract §1), line by line, and
//! reads the frames it writes: what it says is what the meter was given.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agent_fold_core::{Adapter, Config, Frame, Input, LineKind, Treatment, kind, usage_tokens};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::accuracy::thousands;
use crate::{logs, settings};

/// `agent-fold inspect`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// The log format (default: detected per file)
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| Input::parse(s).ok_or_else(|| format!("{s:?} is none of {}", Input::NAMES.join(", "))))]
    pub input: Option<Input>,
    /// One JSON document (an array, one object a file) instead of text
    #[arg(long)]
    pub json: bool,
    /// With an OpenCode database: this session only (every session without it)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// A log file, a Claude Code session directory (its transcript beside it), or OpenCode's
    /// database (opencode.db, or the directory holding it: each session as its export)
    #[arg(required = true, value_name = "LOG")]
    pub paths: Vec<PathBuf>,
}

/// One kind of line: its treatment, how many, and the first line it stood on.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KindCount {
    pub kind: String,
    pub treatment: &'static str,
    pub lines: usize,
    pub first_line: usize,
}

/// A session the log holds, and the field that named it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SessionCount {
    pub id: String,
    pub keyed_by: &'static str,
    pub lines: usize,
}

/// A compaction as the log wrote it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Compaction {
    pub line: usize,
    pub trigger: Option<String>,
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
    /// What the agent's rule puts back that the log does not show, as the adapter priced it.
    pub restore_tokens: Option<u64>,
    pub restore_shown: bool,
    /// Whether something the log does not price may come back beyond those files (the session
    /// showed a to-do or task list, a plan or a skill): the prior stands for it.
    pub restore_beyond: bool,
}

/// A figure the adapter announced, and where it came from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Sourced {
    pub tokens: u64,
    pub line: usize,
    pub from: String,
}

/// The census of one log file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Census {
    pub file: String,
    pub input: &'static str,
    pub versions: Vec<String>,
    pub models: Vec<String>,
    pub lines: usize,
    pub not_objects: usize,
    pub sessions: Vec<SessionCount>,
    pub kinds: Vec<KindCount>,
    pub readings: usize,
    /// Lines whose usage was the sum of several iterations (the reading taken from the last of
    /// the request's own).
    pub summed_readings: Vec<usize>,
    pub compactions: Vec<Compaction>,
    pub windows: Vec<Sourced>,
    pub thresholds: Vec<Sourced>,
    pub warnings: Vec<String>,
    /// What the agent's settings on this machine set (`crate::settings`), each with where it
    /// came from: what `serve` and the status line read besides the log.
    pub settings: Vec<String>,
}

pub(crate) fn main(args: &Args) -> Result<i32> {
    let mut all = Vec::new();
    for path in &args.paths {
        if let Some(db) = logs::database(path) {
            all.push(census_database(&db, args.session.as_deref(), args.input)?);
            continue;
        }
        if args.session.is_some() {
            bail!(
                "{} is not an OpenCode database: --session picks one session of one (opencode.db)",
                path.display()
            );
        }
        for file in logs::log_files(path)? {
            let mut c = census_file(&file, args.input)?;
            if let Some(input) = Input::parse(c.input).filter(|i| settings::read_for(*i)) {
                let mut said = settings::for_agent(input, &settings::Homes::from_env(), None).said;
                if said.is_empty() {
                    said.push(
                        "none of the agent's settings files here moves the compaction point".into(),
                    );
                }
                said.push("the environment the agent was started with is not visible: a setting given only there is not read".into());
                c.settings = said;
            }
            all.push(c);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        let mut out = String::new();
        for c in &all {
            render(&mut out, c);
        }
        print!("{out}");
    }
    Ok(0)
}

/// The census of the log at `file`, read as `serve` reads a log: a regular file only (a FIFO,
/// a device or a directory is refused before anything is read, so nothing waits for a writer
/// or reads for ever), streamed line by line, a line over [`LINE_BYTES`] skipped and counted:
/// what it holds is bounded by one line, whatever the file's size.
pub(crate) fn census_file(file: &Path, input: Option<Input>) -> Result<Census> {
    let (f, len) = logs::open_regular(file)?;
    // A document (one JSON object over several lines) is read whole: it is one record, as
    // `serve` reads one, within the same bound.
    if len <= LINE_BYTES as u64 {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(f, LINE_BYTES as u64), &mut text)
            .with_context(|| format!("reading {}", file.display()))?;
        return census(file, &text, input);
    }
    census_of(file, Text::File(file), input)
}

/// The census of an OpenCode database: each session (or `session` alone) as its export
/// document ([`crate::opencode_db`]), a record each (a long session's in several, each within
/// [`LINE_BYTES`]), numbered from 1 as lines are.
pub(crate) fn census_database(
    db: &Path,
    session: Option<&str>,
    input: Option<Input>,
) -> Result<Census> {
    let records = logs::read_records_in(db, session)?;
    let values: Vec<&[u8]> = records.iter().map(|r| &r.value[..]).collect();
    census_of(db, Text::Records(&values), input)
}

/// The longest line the census reads: `serve`'s bound, what one invocation of the module takes
/// (a longer one is skipped and counted).
pub(crate) const LINE_BYTES: usize = crate::module::INVOCATION_BYTES;

/// Where a census reads its lines from, as often as it asks.
enum Text<'a> {
    /// A document: one record, line 1.
    Document(&'a [u8]),
    /// A text in memory.
    Memory(&'a [u8]),
    /// A regular file, opened again for each reading.
    File(&'a Path),
    /// Records read already (an OpenCode database's documents), numbered from 1.
    Records(&'a [&'a [u8]]),
}

impl Text<'_> {
    /// Hands `each` the text's lines (numbered from 1, empty ones left out) until it returns
    /// `false`; a line over [`LINE_BYTES`] is skipped, and counted in `skipped` with its
    /// number.
    fn each(
        &self,
        skipped: &mut Vec<usize>,
        mut each: impl FnMut(usize, &[u8]) -> bool,
    ) -> Result<()> {
        let mut take = |(n, line): crate::jsonl::Numbered<'_>| match line {
            Ok(l) => each(n as usize, l),
            Err(_) => {
                skipped.push(n as usize);
                true
            }
        };
        match self {
            Text::Document(t) => {
                take((1, Ok(*t)));
            }
            Text::Records(records) => {
                for (i, r) in records.iter().enumerate() {
                    if !take((i as u64 + 1, Ok(*r))) {
                        break;
                    }
                }
            }
            Text::Memory(t) => crate::jsonl::read_lines(*t, LINE_BYTES, "", &mut take)?,
            Text::File(path) => {
                let (f, _) = logs::open_regular(path)?;
                crate::jsonl::read_lines(f, LINE_BYTES, "", &mut take)
                    .with_context(|| format!("reading {}", path.display()))?
            }
        }
        Ok(())
    }
}

/// The field a format's lines name their session by.
fn session_field(input: Input) -> &'static str {
    match input {
        Input::ClaudeCode => "sessionId",
        Input::ClaudeStream => "session_id",
        Input::Codex => "session_meta payload.id",
        Input::Otel => "session",
        Input::GeminiCli => "sessionId",
        Input::OpenCode => "info.id / sessionID",
        Input::AgentFold => "session_id",
    }
}

/// The agent's version a line names: Claude Code's `version`, a stream's `claude_code_version`,
/// a Codex `session_meta`'s `payload.cli_version`, an OpenCode export's `info.version`.
fn version_of(v: &Value) -> Option<&str> {
    v.get("version")
        .or_else(|| v.get("claude_code_version"))
        .or_else(|| v.pointer("/payload/cli_version"))
        .or_else(|| v.pointer("/info/version"))
        .and_then(Value::as_str)
}

/// The census of one log held in memory.
pub fn census(file: &Path, text: &[u8], input: Option<Input>) -> Result<Census> {
    // A document (Gemini CLI's saved chat, `opencode export`) is one record, its kinds its
    // messages'.
    match crate::jsonl::document(text) {
        Some(_) => census_of(file, Text::Document(text.trim_ascii()), input),
        None => census_of(file, Text::Memory(text), input),
    }
}

/// The census of the lines of `text`.
fn census_of(file: &Path, text: Text<'_>, input: Option<Input>) -> Result<Census> {
    let mut skipped = Vec::new();
    let mut detected = None;
    if input.is_none() {
        let mut detector = logs::Detector::default();
        text.each(&mut skipped, |_, l| {
            let verdict = detector.line(l);
            if let logs::Verdict::Told(told) = verdict {
                detected = Some(told);
            }
            verdict == logs::Verdict::Waiting
        })?;
        skipped.clear();
    }
    let input = match input.or(detected) {
        Some(i) => i,
        None => bail!(
            "{}: cannot tell the log's format; name it with --input",
            file.display()
        ),
    };
    let mut adapter = Adapter::for_config(&Config {
        input,
        ..Config::default()
    });
    let mut kinds: BTreeMap<(String, Treatment), (usize, usize)> = BTreeMap::new();
    let mut sessions: Vec<SessionCount> = Vec::new();
    let mut versions: Vec<String> = Vec::new();
    let mut models: Vec<String> = Vec::new();
    let mut other_ids: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut c = Census {
        file: file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        input: input.name(),
        versions: Vec::new(),
        models: Vec::new(),
        lines: 0,
        not_objects: 0,
        sessions: Vec::new(),
        kinds: Vec::new(),
        readings: 0,
        summed_readings: Vec::new(),
        compactions: Vec::new(),
        windows: Vec::new(),
        thresholds: Vec::new(),
        warnings: Vec::new(),
        settings: Vec::new(),
    };
    let mut first_not_object = None;
    let mut frames = Vec::new();
    let mut window = None;
    text.each(&mut skipped, |n, line| {
        let (n, line) = (&n, &line);
        c.lines += 1;
        let parts = agent_fold_core::line_records(line);
        let mut any = false;
        for part in &parts {
            let found = input.census_all(part);
            if found.is_empty() {
                continue;
            }
            any = true;
            for LineKind { kind, treatment } in found {
                let e = kinds.entry((kind, treatment)).or_insert((0, *n));
                e.0 += 1;
            }
            let Ok(v) = serde_json::from_slice::<Value>(part) else {
                continue;
            };
            if let Some(ver) = version_of(&v).filter(|s| !versions.iter().any(|x| x == s)) {
                versions.push(ver.to_owned());
            }
            if let Some(id) = input.session_named(part) {
                match sessions.iter_mut().find(|s| s.id == id) {
                    Some(s) => s.lines += 1,
                    None => sessions.push(SessionCount {
                        id: id.clone(),
                        keyed_by: session_field(input),
                        lines: 1,
                    }),
                }
                // Another id field that disagrees with the session's key.
                if input == Input::ClaudeCode
                    && let Some(other) = v.get("session_id").and_then(Value::as_str)
                    && other != id
                {
                    let e = other_ids.entry(other.to_owned()).or_insert((0, *n));
                    e.0 += 1;
                }
            }
        }
        if !any {
            c.not_objects += 1;
            first_not_object.get_or_insert(*n);
        }
        frames.clear();
        adapter.push(None, line, Some(*n as i64), &mut frames);
        for f in &frames {
            read_frame(&mut c, &mut models, &mut window, *n, f);
        }
        true
    })?;
    if let Some(first) = skipped.first() {
        c.warnings.push(format!(
            "{} lines over {} MiB were skipped (first at line {first}), as serve skips them",
            skipped.len(),
            LINE_BYTES >> 20
        ));
    }
    c.kinds = kinds
        .into_iter()
        .map(|((kind, t), (lines, first_line))| KindCount {
            kind,
            treatment: t.word(),
            lines,
            first_line,
        })
        .collect();
    c.kinds
        .sort_by(|a, b| (a.treatment, &a.kind).cmp(&(b.treatment, &b.kind)));
    for (other, (count, first)) in other_ids {
        c.warnings.push(format!(
            "{count} lines (from line {first}) carry session_id {other} beside a different sessionId: the session is keyed by sessionId (after /clear, session_id keeps the process's first transcript)"
        ));
    }
    if !c.summed_readings.is_empty() {
        c.warnings.push(format!(
            "{} readings had usage summed over several iterations (an advisor's turn), at lines {}: each reading is the request's own, its last own iteration",
            c.summed_readings.len(),
            join(&c.summed_readings)
        ));
    }
    let unknown: Vec<String> = c
        .kinds
        .iter()
        .filter(|k| k.treatment == Treatment::Unknown.word())
        .map(|k| format!("{} (line {})", k.kind, k.first_line))
        .collect();
    if !unknown.is_empty() {
        c.warnings.push(format!(
            "kinds this build does not know, passed through and marked unknown_kind: {}",
            unknown.join(", ")
        ));
    }
    if let Some(first) = first_not_object {
        c.warnings.push(format!(
            "{} lines are not JSON objects (first at line {first}): passed on as they came",
            c.not_objects
        ));
    }
    // A database holds a user's every session: many are what it is.
    if sessions.len() > 1 && !matches!(text, Text::Records(_)) {
        c.warnings
            .push(format!("{} sessions in one file", sessions.len()));
    }
    c.sessions = sessions;
    c.versions = versions;
    c.models = models;
    Ok(c)
}

/// What one frame the adapter wrote for line `n` tells the census.
fn read_frame(
    c: &mut Census,
    models: &mut Vec<String>,
    window: &mut Option<u64>,
    n: usize,
    bytes: &[u8],
) {
    let Some(f) = Frame::parse(bytes) else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let extras = v.get("extras");
    let source = extras
        .and_then(|e| e.get("source_type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match f.kind() {
        Some(kind::ASSISTANT_MESSAGE) if !f.is_subagent() => {
            if let Some(usage) = f.usage() {
                c.readings += 1;
                if extras.and_then(|e| e.get("usage_summed")) == Some(&Value::Bool(true)) {
                    c.summed_readings.push(n);
                }
                let reading = usage_tokens(usage);
                if let Some(w) = *window
                    && reading > w
                {
                    c.warnings.push(format!(
                        "line {n}: a reading of {} tokens is above the window of {} the log named",
                        thousands(reading as f64),
                        thousands(w as f64)
                    ));
                }
            }
        }
        Some(kind::REQUEST_HEADER) => {
            if let Some(m) = f.model().filter(|m| !models.iter().any(|x| x == m)) {
                models.push(m.to_owned());
            }
            let from = match source {
                "inferred" => "Claude's window for the model the session names (1,000,000 for a [1m] name, a model whose own window it is, or once a reading is above 200,000)".to_owned(),
                "model table" => "the agent's own window for the model the log names (its table: Gemini CLI's tokenLimit, Claude's)".to_owned(),
                s => format!("the log's {s}"),
            };
            // Said again unchanged (Codex names its window at every turn): listed once.
            if let Some(w) = f.context_window().filter(|w| *window != Some(*w)) {
                *window = Some(w);
                c.windows.push(Sourced {
                    tokens: w,
                    line: n,
                    from,
                });
            }
            if let Some(t) = f
                .auto_compact_tokens()
                .filter(|t| c.thresholds.last().is_none_or(|l| l.tokens != *t))
            {
                c.thresholds.push(Sourced {
                    tokens: t,
                    line: n,
                    from: match source {
                        "model table" => "the agent's default for the model: half its window (Gemini CLI's compression threshold)".to_owned(),
                        s => format!("the agent's configuration ({s})"),
                    },
                });
            }
            if let (Some(r), Some(w)) = (f.compact_reserve(), *window)
                && c.thresholds
                    .last()
                    .is_none_or(|l| l.tokens != w.saturating_sub(r))
            {
                c.thresholds.push(Sourced {
                    tokens: w.saturating_sub(r),
                    line: n,
                    from: format!(
                        "the window less {} (the agent's reserve by version)",
                        thousands(r as f64)
                    ),
                });
            }
        }
        Some(kind::COMPACT_START) => {
            let meta = extras.and_then(|e| e.get("compact_metadata"));
            c.compactions.push(Compaction {
                line: n,
                trigger: v.get("trigger").and_then(Value::as_str).map(str::to_owned),
                pre_tokens: v.get("preTokens").and_then(Value::as_u64),
                post_tokens: meta
                    .and_then(|m| m.get("postTokens"))
                    .and_then(Value::as_u64),
                restore_tokens: f.restore_tokens(),
                restore_shown: f.restore_shown(),
                restore_beyond: f.restore_beyond(),
            });
        }
        _ => {}
    }
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The census as text.
pub fn render(out: &mut String, c: &Census) {
    let t = |n: u64| thousands(n as f64);
    let _ = writeln!(out, "{}", c.file);
    let versions = match c.versions.is_empty() {
        true => "no version named".to_owned(),
        false => format!("version {}", c.versions.join(", ")),
    };
    let _ = writeln!(out, "  agent: {} ({versions})", c.input);
    if !c.models.is_empty() {
        let _ = writeln!(out, "  models: {}", c.models.join(", "));
    }
    let _ = writeln!(
        out,
        "  lines: {} ({} not JSON objects)",
        t(c.lines as u64),
        t(c.not_objects as u64)
    );
    for s in &c.sessions {
        let (id, by, n) = (&s.id, &s.keyed_by, t(s.lines as u64));
        let unit = if s.lines == 1 { "line" } else { "lines" };
        let _ = writeln!(out, "  session {id} (keyed by {by}, named on {n} {unit})");
    }
    let _ = writeln!(out, "  kinds:");
    for k in &c.kinds {
        let (how, kind, n, first) = (&k.treatment, &k.kind, t(k.lines as u64), k.first_line);
        let _ = writeln!(
            out,
            "    {how:<12} {kind:<44} {n:>6}  first at line {first}"
        );
    }
    let _ = writeln!(
        out,
        "  readings: {} ({} summed over iterations)",
        t(c.readings as u64),
        c.summed_readings.len()
    );
    for k in &c.compactions {
        let mut s = format!(
            "  compaction at line {}: {}",
            k.line,
            k.trigger.as_deref().unwrap_or("no trigger named")
        );
        if let Some(p) = k.pre_tokens {
            let _ = write!(s, ", preTokens {}", t(p));
        }
        if let Some(p) = k.post_tokens {
            let _ = write!(s, ", postTokens {}", t(p));
        }
        if k.restore_shown {
            s.push_str(", the log shows what comes back");
        } else if let Some(r) = k.restore_tokens {
            let _ = write!(s, ", the agent's rule puts back ~{} unseen", t(r));
            if !k.restore_beyond {
                s.push_str(" and nothing beyond (no to-do or task list, plan or skill before it)");
            }
        }
        let _ = writeln!(out, "{s}");
    }
    for (what, list) in [("window", &c.windows), ("threshold", &c.thresholds)] {
        for w in list {
            let (n, line, from) = (t(w.tokens), w.line, &w.from);
            let _ = writeln!(out, "  {what} {n} from line {line}: {from}");
        }
    }
    if c.windows.is_empty() {
        let _ = writeln!(
            out,
            "  window: not named by the log (param capacity names it)"
        );
    }
    for s in &c.settings {
        let _ = writeln!(out, "  settings on this machine: {s}");
    }
    for w in &c.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
}
