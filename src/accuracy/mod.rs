//! `agent-fold accuracy PATH…`: how close the projection comes to the provider's next reading.
//!
//! For each provider reading after a session's first, the figure a UI showed just before it is
//! compared with it: `projectedTokens` under each projection method (`rebased`, the default,
//! `calibrated` and the plain `fixed`), beside a meter that shows only the last reading
//! (`pressureTokens`). The readings right after a compaction are listed one by one: the moment
//! the projection exists for (contract §3.4). So are the automatic compactions, with the
//! `compactAtTokens` shown just before each (contract §3.5).
//!
//! The module runs as a deployment runs it, over the log's own lines with `input=<format>`;
//! what it showed before a reading is the session's latest record of a lower `seq`.

mod report;

pub use report::{Stats, Summary, render, stats, summarize, thousands};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_fold_core::{Emit, Frame, Input, Processor, kind, session_key, usage_tokens};
use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use crate::logs;
use crate::record::{Rec, inputs};

/// The projection methods compared, as param `projection` names them.
pub const METHODS: [&str; 3] = ["rebased", "calibrated", "fixed"];

/// `agent-fold accuracy`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The log format (default: detected per PATH)
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| Input::parse(s).ok_or_else(|| format!("{s:?} is none of {}", Input::NAMES.join(", "))))]
    pub input: Option<Input>,
    /// A module param (capacity, compact_at, compact_restore, ...); repeatable
    #[arg(short = 'e', value_name = "KEY=VALUE", value_parser = crate::flags::param)]
    pub params: Vec<(String, String)>,
    /// A log file, or a Claude Code session directory (its transcript beside it)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// One provider reading, and what was shown just before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub session: String,
    pub seq: u64,
    pub timestamp: Option<String>,
    /// The provider's prompt size.
    pub reading: u64,
    /// `projectedTokens` just before, per method of [`METHODS`] (null: no projection then).
    pub projected: [Option<u64>; 3],
    /// `pressureTokens` just before: the last reading.
    pub last: u64,
    /// The first reading after a compaction.
    pub after_compaction: bool,
}

/// An automatic compaction, and the level the meter said it would come at.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoCompaction {
    pub session: String,
    pub seq: u64,
    /// The level it fired at (`preTokens`).
    pub fired_at: u64,
    /// `compactAtTokens` just before it (under the default method).
    pub shown: Option<u64>,
}

/// Everything measured over one log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measured {
    pub readings: Vec<Reading>,
    /// Main readings in all, the unscored first of each session included.
    pub total: usize,
    pub auto_compactions: Vec<AutoCompaction>,
}

/// What one session showed, record by record: `(seq, pressureTokens, projectedTokens,
/// compactAtTokens)`, in the order the records came.
type Shown = HashMap<String, Vec<(u64, Option<u64>, Option<u64>, Option<u64>)>>;

/// The module over `lines` under one method: its `context/pressure` records by session.
fn shown_by(
    lines: &[Rec],
    input: Input,
    params: &[(String, String)],
    method: &str,
) -> Result<Shown> {
    let mut all: Vec<(&str, &str)> = params
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "emit" | "projection" | "input"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    all.extend([
        ("emit", "pressure"),
        ("projection", method),
        ("input", input.name()),
    ]);
    let mut p = Processor::from_params(all)?;
    let emits = p
        .process(&inputs(lines, 0))
        .map_err(|e| anyhow!("record {}: {}", e.index, e.message))?;
    let mut by: Shown = HashMap::new();
    for e in emits {
        let Emit::New { value, .. } = e else { continue };
        let Ok(v) = serde_json::from_slice::<Value>(&value) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("context/pressure") {
            continue;
        }
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        let Some(seq) = n("seq") else { continue };
        let session = v.get("session").and_then(Value::as_str).unwrap_or("");
        by.entry(session.to_owned()).or_default().push((
            seq,
            n("pressureTokens"),
            n("projectedTokens"),
            n("compactAtTokens"),
        ));
    }
    Ok(by)
}

/// The latest of a session's records below `seq` (records come in `seq` order).
fn before(
    shown: &Shown,
    session: &str,
    seq: u64,
) -> Option<(Option<u64>, Option<u64>, Option<u64>)> {
    let records = shown.get(session)?;
    let at = records.partition_point(|r| r.0 < seq);
    at.checked_sub(1)
        .map(|i| (records[i].1, records[i].2, records[i].3))
}

/// Scores every main reading after a session's first: `lines` are the log's own records,
/// `frames` what its adapter makes of them (the same numbering the module uses).
pub fn measure(
    lines: &[Rec],
    frames: &[Rec],
    input: Input,
    params: &[(String, String)],
) -> Result<Measured> {
    let by_method = METHODS
        .iter()
        .map(|m| shown_by(lines, input, params, m))
        .collect::<Result<Vec<_>>>()?;
    let mut out = Measured::default();
    let mut compacted: HashMap<String, bool> = HashMap::new();
    for f in frames {
        let Some(v) = Frame::parse(&f.value) else {
            continue;
        };
        let Some(seq) = v.seq().filter(|_| !v.is_subagent()) else {
            continue;
        };
        let session =
            String::from_utf8_lossy(&session_key(f.key.as_deref(), Some(&v))).into_owned();
        if v.kind() == Some(kind::COMPACT_START)
            && let Some(fired_at) = v.auto_compaction()
        {
            out.auto_compactions.push(AutoCompaction {
                session: session.clone(),
                seq,
                fired_at,
                shown: before(&by_method[0], &session, seq).and_then(|s| s.2),
            });
        }
        if v.kind() == Some(kind::ASSISTANT_MESSAGE)
            && let Some(usage) = v.usage()
        {
            out.total += 1;
            let after_compaction = compacted.remove(&session).unwrap_or(false);
            if let Some((Some(last), ..)) = before(&by_method[0], &session, seq) {
                let projected =
                    std::array::from_fn(|m| before(&by_method[m], &session, seq).and_then(|s| s.1));
                out.readings.push(Reading {
                    session: session.clone(),
                    seq,
                    timestamp: v.stamp().map(|s| s.trim_matches('"').to_owned()),
                    reading: usage_tokens(usage),
                    projected,
                    last,
                    after_compaction,
                });
            }
        }
        if v.replaces().is_some() {
            compacted.insert(session, true);
        }
    }
    Ok(out)
}

/// Reads, adapts and scores one log path.
pub fn measure_path(
    path: &Path,
    input: Option<Input>,
    params: &[(String, String)],
) -> Result<(Input, Summary)> {
    let lines = logs::read_records(Some(path))?;
    let input = match input.or_else(|| logs::detect(&lines)) {
        Some(i) => i,
        None => bail!(
            "{}: cannot tell the log's format; name it with --input",
            path.display()
        ),
    };
    let frames = if input == Input::AgentFold {
        std::borrow::Cow::Borrowed(&lines[..])
    } else {
        std::borrow::Cow::Owned(logs::adapt_all(
            input,
            &lines,
            agent_fold_core::Config::default().max_sessions,
        ))
    };
    let measured = measure(&lines, &frames, input, params)?;
    Ok((input, summarize(&measured)))
}

/// The command line: `agent-fold accuracy …`.
pub fn main(args: &Args) -> Result<i32> {
    for (i, path) in args.paths.iter().enumerate() {
        let (input, summary) = measure_path(path, args.input, &args.params)?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        if i > 0 {
            println!();
        }
        print!("{}", render(&label, input, &summary));
    }
    Ok(0)
}
