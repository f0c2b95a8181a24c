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

pub mod cross;
pub(crate) mod report;

pub(crate) use report::{AccuracySummary, render, summarize, thousands};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_fold_core::{
    Config, Emit, Frame, Input, Processor, Projection, View, kind, session_key, usage_tokens,
};
use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use crate::logs;
use crate::params::ModuleParams;
use crate::record::{Rec, inputs};

/// The projection methods compared.
pub(crate) const METHODS: [Projection; 3] = [
    Projection::Rebased,
    Projection::Calibrated,
    Projection::Fixed,
];

/// `agent-fold accuracy`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// The log format (default: detected per PATH)
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| Input::parse(s).ok_or_else(|| format!("{s:?} is none of {}", Input::NAMES.join(", "))))]
    pub input: Option<Input>,
    #[command(flatten)]
    pub params: crate::flags::Params,
    /// Score each log with every constant fitted on the other logs only (leave one session
    /// out): what comes back at a compaction, per agent; one table for all
    #[arg(long)]
    pub cross_validate: bool,
    /// With an OpenCode database: this session only (every session without it)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// A log file, a Claude Code session directory (its transcript beside it), or OpenCode's
    /// database (opencode.db, or the directory holding it: each session as its export)
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
    /// After a compaction whose log said what `postTokens` Claude Code counted: the figure a
    /// meter that used it would show (the session's base and `postTokens`, both at its scale).
    pub post_tokens: Option<u64>,
    /// After a compaction: its `compact/start` said the log writes what comes back.
    pub restore_shown: bool,
    /// After a compaction: unless its `compact/start` said nothing comes back beyond what the
    /// rule prices (`restore_beyond: false`), the prior stands for the rest.
    pub restore_beyond: bool,
}

impl Reading {
    /// What the reports say beside a reading after a compaction of what came back unseen: the
    /// log showed it, or nothing came back beyond the rule's files; else nothing.
    pub(crate) fn restore_note(&self) -> &'static str {
        if self.restore_shown {
            " (the log shows what came back)"
        } else if !self.restore_beyond {
            " (nothing beyond the rule's files)"
        } else {
            ""
        }
    }
}

/// An automatic compaction, and the level the meter said it would come at.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoCompaction {
    pub session: String,
    pub seq: u64,
    /// The level it fired at (`preTokens`).
    pub fired_at: u64,
    /// The provider's reading before the last one it came after: the agent checked there and
    /// did not fire, so its point is above it (none after fewer than two readings).
    pub prior: Option<u64>,
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

/// What one session showed, record by record, in the order the records came.
type ShownBySession = HashMap<String, Vec<Record>>;

/// One `context/pressure` record's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Record {
    seq: u64,
    pressure: Option<u64>,
    projected: Option<u64>,
    compact_at: Option<u64>,
    message: Option<u64>,
    scale: f64,
}

/// The module over `lines` under `config` with one projection method: its
/// `context/pressure` records by session.
fn shown_by(lines: &[Rec], config: &Config, method: Projection) -> Result<ShownBySession> {
    let mut p = Processor::new(&Config {
        view: View::Pressure,
        projection: method,
        ..config.clone()
    });
    let emits = p
        .process(&inputs(lines, 0))
        .map_err(|e| anyhow!("record {}: {}", e.index, e.message))?;
    let mut by: ShownBySession = HashMap::new();
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
        by.entry(session.to_owned()).or_default().push(Record {
            seq,
            pressure: n("pressureTokens"),
            projected: n("projectedTokens"),
            compact_at: n("compactAtTokens"),
            message: n("messageTokens"),
            scale: v
                .get("estimateScale")
                .and_then(Value::as_f64)
                .unwrap_or(1.0),
        });
    }
    Ok(by)
}

/// The latest of a session's records below `seq` (records come in `seq` order).
fn before(shown: &ShownBySession, session: &str, seq: u64) -> Option<Record> {
    let records = shown.get(session)?;
    let at = records.partition_point(|r| r.seq < seq);
    at.checked_sub(1).map(|i| records[i])
}

/// The module's config for scoring a log of `input`: the params given, then the log's format;
/// `emit` and `projection` are the scorer's to set.
pub fn config_for(input: Input, params: &ModuleParams) -> Config {
    let scorer = Config::default();
    let mut config = Config {
        view: scorer.view,
        projection: scorer.projection,
        ..params.config().clone()
    };
    config.set_input(input);
    config
}

/// Scores every main reading after a session's first: `lines` are the log's own records,
/// `frames` what its adapter makes of them under `config` (the numbering the module uses).
///
/// A reading is scored against what the meter showed when its request left: just before the
/// reading's frame, or, where the frame names `anchor_seq` (Codex writes a response and its
/// tool outputs before the reading of the request that made them), right after that frame.
pub(crate) fn measure(lines: &[Rec], frames: &[Rec], config: &Config) -> Result<Measured> {
    let by_method = METHODS
        .iter()
        .map(|m| shown_by(lines, config, *m))
        .collect::<Result<Vec<_>>>()?;
    let mut out = Measured::default();
    // Per session: the first reading and the messageTokens it was anchored to; what the last
    // compaction's boundary said (postTokens, restore shown, anything beyond the rule); a
    // replacement seen since.
    let mut first: HashMap<String, (u64, u64)> = HashMap::new();
    let mut boundary: HashMap<String, (Option<u64>, bool, bool)> = HashMap::new();
    let mut compacted: HashMap<String, bool> = HashMap::new();
    // Per session, its last two readings since its last compaction (the older first).
    let mut last_two: HashMap<String, [Option<u64>; 2]> = HashMap::new();
    for f in frames {
        let Some(v) = Frame::parse(&f.value) else {
            continue;
        };
        let Some(seq) = v.seq().filter(|_| !v.is_subagent()) else {
            continue;
        };
        let session =
            String::from_utf8_lossy(&session_key(f.key.as_deref(), Some(&v))).into_owned();
        if v.kind() == Some(kind::COMPACT_START) {
            if let Some(fired_at) = v.auto_compaction() {
                out.auto_compactions.push(AutoCompaction {
                    session: session.clone(),
                    seq,
                    fired_at,
                    prior: last_two.get(&session).and_then(|r| r[0]),
                    shown: before(&by_method[0], &session, seq).and_then(|s| s.compact_at),
                });
            }
            boundary.insert(
                session.clone(),
                (post_tokens(&f.value), v.restore_shown(), v.restore_beyond()),
            );
            last_two.remove(&session);
        }
        if v.kind() == Some(kind::ASSISTANT_MESSAGE)
            && let Some(usage) = v.usage()
        {
            out.total += 1;
            let reading = usage_tokens(usage);
            // A request written as several lines repeats its reading: one reading.
            let two = last_two.entry(session.clone()).or_default();
            if two[1] != Some(reading) {
                *two = [two[1], Some(reading)];
            }
            let after_compaction = compacted.remove(&session).unwrap_or(false);
            let at = v.anchor_seq().filter(|a| *a < seq).map_or(seq, |a| a + 1);
            let shown = |m: usize| before(&by_method[m], &session, at);
            if let Some(Record {
                pressure: Some(last),
                ..
            }) = shown(0)
            {
                let (post, restore_shown, restore_beyond) = after_compaction
                    .then(|| boundary.get(&session).copied())
                    .flatten()
                    .unwrap_or((None, false, true));
                let post_tokens =
                    post.zip(first.get(&session))
                        .zip(shown(1))
                        .map(|((post, &(r0, m0)), s)| {
                            ((r0 as f64 - s.scale * m0 as f64).max(0.0) + s.scale * post as f64)
                                .round() as u64
                        });
                out.readings.push(Reading {
                    session: session.clone(),
                    seq,
                    timestamp: v.stamp().map(|s| s.trim_matches('"').to_owned()),
                    reading,
                    projected: std::array::from_fn(|m| shown(m).and_then(|s| s.projected)),
                    last,
                    after_compaction,
                    post_tokens,
                    restore_shown,
                    restore_beyond,
                });
            }
            if !first.contains_key(&session)
                && let Some(m0) = shown(1).and_then(|s| s.message)
            {
                first.insert(session.clone(), (reading, m0));
            }
        }
        // A compaction's replacement (a request list rewritten is none, contract §3.1).
        if v.replaces().is_some() && !v.rewrite() {
            compacted.insert(session, true);
        }
    }
    Ok(out)
}

/// `compactMetadata.postTokens` of a Claude Code boundary, where its `compact/start` carries it.
fn post_tokens(value: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(value).ok()?;
    v.pointer("/extras/compact_metadata/postTokens")?.as_u64()
}

/// A log read and adapted for scoring.
pub struct Log {
    pub label: String,
    pub input: Input,
    pub lines: Vec<Rec>,
}

impl Log {
    /// Reads a log path; its format from `input`, else detected.
    pub fn read(path: &Path, input: Option<Input>) -> Result<Log> {
        Log::read_in(path, None, input)
    }

    /// [`Log::read`], of one session of an OpenCode database when `session` names one.
    pub fn read_in(path: &Path, session: Option<&str>, input: Option<Input>) -> Result<Log> {
        let lines = logs::read_records_in(path, session)?;
        let input = match input.or_else(|| logs::detect::detect(&lines)) {
            Some(i) => i,
            None => bail!(
                "{}: cannot tell the log's format; name it with --input",
                path.display()
            ),
        };
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Log {
            label,
            input,
            lines,
        })
    }

    /// Scores the log under `config`.
    pub fn measure(&self, config: &Config) -> Result<Measured> {
        let frames = if self.input == Input::AgentFold {
            std::borrow::Cow::Borrowed(&self.lines[..])
        } else {
            std::borrow::Cow::Owned(logs::adapt_all(config, &self.lines))
        };
        measure(&self.lines, &frames, config)
    }
}

/// Reads, adapts and scores one log path.
pub fn measure_path(
    path: &Path,
    input: Option<Input>,
    params: &ModuleParams,
) -> Result<(Input, AccuracySummary)> {
    measure_session(path, None, input, params)
}

/// [`measure_path`], of one session of an OpenCode database when `session` names one.
pub(crate) fn measure_session(
    path: &Path,
    session: Option<&str>,
    input: Option<Input>,
    params: &ModuleParams,
) -> Result<(Input, AccuracySummary)> {
    let log = Log::read_in(path, session, input)?;
    let measured = log.measure(&config_for(log.input, params))?;
    Ok((log.input, summarize(&measured)))
}

/// The command line: `agent-fold accuracy …`.
pub(crate) fn main(args: &Args) -> Result<i32> {
    let params = args.params.settle()?;
    if args.cross_validate {
        let logs = args
            .paths
            .iter()
            .map(|p| Log::read_in(p, args.session.as_deref(), args.input))
            .collect::<Result<Vec<_>>>()?;
        print!("{}", cross::render(&cross::cross_validate(&logs, &params)?));
        return Ok(0);
    }
    for (i, path) in args.paths.iter().enumerate() {
        let (input, summary) = measure_session(path, args.session.as_deref(), args.input, &params)?;
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
