//! What a run teaches: agent-fold run over the logs the agent wrote, held to what the
//! stand-in recorded — every reading one the stand-in answered; the figure shown when each
//! request left against what the stand-in counted for it, between readings and at the first
//! request after a compaction; the breakdown's system and tools rows against the parts the
//! stand-in counted; the compaction point shown against where the agent fired; every line
//! kind known.

use std::collections::BTreeMap;

use agent_fold::testing::accuracy::{self, Log};
use agent_fold::testing::inspect;
use agent_fold::testing::params::ModuleParams;
use agent_fold_core::{Config, Emit, Processor, Projection, View};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::Agent;
use crate::model::{Kind, Reply};
use crate::scenario::{Outcome, Scenario};

/// One figure against the truth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Against {
    pub shown: u64,
    pub truth: u64,
    /// Where in the log: the frame's `seq` (0 where none applies).
    #[serde(default)]
    pub seq: u64,
    /// For a compaction point: the reading before the last one the compaction came after. The
    /// agent checked there and did not fire, so its point lies above it; a point in
    /// `(floor, truth]` is the agent's rule, whatever one request added past it.
    #[serde(default)]
    pub floor: Option<u64>,
}

impl Against {
    /// The error as a share of the truth.
    pub fn error(&self) -> f64 {
        if self.truth == 0 {
            return if self.shown == 0 { 0.0 } else { 1.0 };
        }
        (self.shown as f64 - self.truth as f64) / self.truth as f64
    }

    /// A compaction point between the reading where the agent did not fire and where it did.
    pub fn bracketed(&self) -> bool {
        self.floor.is_some_and(|f| f < self.shown) && self.shown <= self.truth
    }
}

/// What one run scored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scored {
    pub agent: Agent,
    pub version: String,
    pub scenario: Scenario,
    pub seconds: f64,
    /// The conversation requests the stand-in answered, and the compactions it was asked for.
    pub requests: usize,
    pub compactions: usize,
    /// Every kind of line of the logs, with its treatment (`kind (treatment)` → lines).
    pub kinds: BTreeMap<String, usize>,
    /// The kinds this build does not know.
    pub unknown: Vec<String>,
    /// Whether agent-fold told each log's format by itself (no `--input`).
    pub detected: bool,
    /// The log's main readings, and those the stand-in never answered.
    pub readings: usize,
    pub unanswered: Vec<u64>,
    /// The figure shown when each request left (`rebased`), against the reading it got: between
    /// readings, and at the first request after each compaction.
    pub between: Vec<Against>,
    pub after_compaction: Vec<Against>,
    /// The last reading shown instead (a stale meter), at the same requests.
    pub stale_between: Vec<Against>,
    /// The breakdown's `systemTokens` and `toolsTokens` (raw estimates, contract §3.3) against
    /// the last request's system prompt and tools as the stand-in received them, priced by the
    /// same estimate: whether the meter read the request's real shape.
    pub system: Option<Against>,
    pub tools: Option<Against>,
    /// Before each automatic compaction, `compactAtTokens` against where it fired.
    pub compact_points: Vec<Against>,
    /// Automatic compactions with no point shown before them.
    #[serde(default)]
    pub unpointed: usize,
    /// What the first request after each compaction carried, by label.
    pub put_back: Vec<Vec<(String, u64)>>,
    pub failed: Option<String>,
}

impl Scored {
    /// The largest |error| of a list, none when empty.
    pub fn worst(list: &[Against]) -> Option<f64> {
        list.iter().map(|a| a.error().abs()).reduce(f64::max)
    }
}

/// Scores a run.
pub fn score(o: &Outcome) -> Result<Scored> {
    let input = o.agent.input();
    let mut s = Scored {
        agent: o.agent,
        version: o.version.clone(),
        scenario: o.scenario,
        seconds: o.ran.iter().map(|r| r.seconds).sum(),
        requests: o.served.iter().filter(|r| r.kind == Kind::Turn).count(),
        compactions: o
            .served
            .iter()
            .filter(|r| r.kind == Kind::Compaction)
            .count(),
        kinds: BTreeMap::new(),
        unknown: Vec::new(),
        detected: true,
        readings: 0,
        unanswered: Vec::new(),
        between: Vec::new(),
        after_compaction: Vec::new(),
        stale_between: Vec::new(),
        system: None,
        tools: None,
        compact_points: Vec::new(),
        unpointed: 0,
        put_back: o
            .served
            .iter()
            .filter_map(|r| r.after_compaction.clone())
            .collect(),
        failed: o.failed.clone(),
    };
    let mut answered: BTreeMap<u64, usize> = BTreeMap::new();
    for a in o
        .served
        .iter()
        .filter(|r| r.kind != Kind::Side && !matches!(r.reply, Reply::Refused(_)))
        .filter_map(|r| r.answered)
    {
        *answered.entry(a).or_default() += 1;
    }
    let of_kind = |k: Kind| -> std::collections::BTreeSet<u64> {
        o.served
            .iter()
            .filter(|r| r.kind == k)
            .filter_map(|r| r.answered)
            .collect()
    };
    let (turns, summaries) = (of_kind(Kind::Turn), of_kind(Kind::Compaction));
    for path in scored_logs(o) {
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let census = inspect::census(&path, &text, Some(input))?;
        for k in &census.kinds {
            *s.kinds
                .entry(format!("{} ({})", k.kind, k.treatment))
                .or_default() += k.lines;
            if k.treatment == "unknown" {
                s.unknown.push(k.kind.clone());
            }
        }
        let log = Log::read(&path, None).or_else(|_| {
            s.detected = false;
            Log::read(&path, Some(input))
        })?;
        if log.input != input {
            s.detected = false;
        }
        // The stand-ins send nothing a log does not show: the prior for what real providers
        // add unseen after a compaction (contract §3.4) is scored on the shared real logs, not
        // here.
        let mut params = ModuleParams::parse([("compact_restore", "0")])?;
        // The settings the agent honours, read from its scratch home as `serve` and the status
        // line read them where an agent runs.
        let homes = agent_fold::testing::settings::Homes::under(&o.dir.join("home"));
        params.settings_under(&agent_fold::testing::settings::for_agent(
            input,
            &homes,
            Some(&o.dir.join("work")),
        ));
        let config = accuracy::config_for(input, &params);
        let log = Log { input, ..log };
        let measured = log.measure(&config)?;
        s.readings += measured.total;
        // Each reading must be one the stand-in answered.
        let firsts = first_readings(&log, &config)?;
        for value in firsts
            .into_iter()
            .chain(measured.readings.iter().map(|r| r.reading))
        {
            match answered.get_mut(&value) {
                Some(n) if *n > 0 => *n -= 1,
                _ => s.unanswered.push(value),
            }
        }
        for r in &measured.readings {
            let Some(shown) = r.projected[0] else {
                continue;
            };
            // A compaction's own request (its summary asked for) is no request of the
            // conversation: not scored.
            if summaries.contains(&r.reading) && !turns.contains(&r.reading) {
                continue;
            }
            let against = Against {
                shown,
                truth: r.reading,
                seq: r.seq,
                floor: None,
            };
            if r.after_compaction {
                s.after_compaction.push(against);
            } else {
                s.between.push(against);
                s.stale_between.push(Against {
                    shown: r.last,
                    truth: r.reading,
                    seq: r.seq,
                    floor: None,
                });
            }
        }
        for c in &measured.auto_compactions {
            s.unpointed += usize::from(c.shown.is_none());
            if let Some(shown) = c.shown {
                s.compact_points.push(Against {
                    shown,
                    truth: c.fired_at,
                    seq: c.seq,
                    floor: c.prior,
                });
            }
        }
        if let Some(last) = last_record(&log, &config)? {
            let last_turn = o
                .served
                .iter()
                .rev()
                .find(|r| r.kind == Kind::Turn && r.answered.is_some());
            if let Some(t) = last_turn {
                let n = |k: &str| last.get(k).and_then(Value::as_u64);
                if let Some(shown) = n("systemTokens") {
                    s.system = Some(Against {
                        shown,
                        truth: t.estimated.system,
                        seq: 0,
                        floor: None,
                    });
                }
                if let Some(shown) = n("toolsTokens") {
                    s.tools = Some(Against {
                        shown,
                        truth: t.estimated.tools,
                        seq: 0,
                        floor: None,
                    });
                }
            }
        }
    }
    Ok(s)
}

/// The logs a run is scored on: the main sessions' (a Claude Code sub-agent's own file is read
/// with its session's directory, not alone).
fn scored_logs(o: &Outcome) -> Vec<std::path::PathBuf> {
    o.logs
        .iter()
        .filter(|p| !p.to_string_lossy().contains("/subagents/"))
        .filter(|p| match o.agent {
            // OpenCode: its export, until its database is read.
            Agent::OpenCode => p.extension().is_some_and(|e| e == "json"),
            _ => true,
        })
        .cloned()
        .collect()
}

/// The module's pressure records over a log, in order.
fn records(log: &Log, config: &Config) -> Result<Vec<Value>> {
    let mut p = Processor::new(&Config {
        view: View::Pressure,
        projection: Projection::Rebased,
        ..config.clone()
    });
    let emits = p
        .process(&agent_fold::record::inputs(&log.lines, 0))
        .map_err(|e| anyhow::anyhow!("record {}: {}", e.index, e.message))?;
    Ok(emits
        .into_iter()
        .filter_map(|e| match e {
            Emit::New { value, .. } => serde_json::from_slice::<Value>(&value).ok(),
            _ => None,
        })
        .filter(|v| v["type"] == "context/pressure")
        .collect())
}

/// The last pressure record of a log.
fn last_record(log: &Log, config: &Config) -> Result<Option<Value>> {
    Ok(records(log, config)?.pop())
}

/// Each session's first reading (which nothing is scored against, but which must be one the
/// stand-in answered too).
fn first_readings(log: &Log, config: &Config) -> Result<Vec<u64>> {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for r in records(log, config)? {
        let (Some(session), Some(p)) = (r["session"].as_str(), r["pressureTokens"].as_u64()) else {
            continue;
        };
        seen.entry(session.to_owned()).or_insert(p);
    }
    Ok(seen.into_values().collect())
}

/// `+1.2%`.
pub fn percent(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}
