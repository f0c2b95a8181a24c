//! `agent-fold accuracy --cross-validate`: each log scored with every constant the method takes
//! from logs fitted on the other logs only (leave one session out).
//!
//! The one such constant is what an agent puts back at a compaction that its log does not show
//! (param `compact_restore`; its default per agent is this fit over the shared logs,
//! `docs/accuracy.md`). A log's residuals are, at each compaction whose log does not write what
//! comes back, the first reading after it less what `rebased` showed with nothing unseen added
//! and nothing learnt; the prior for a log is the median of the residuals of the other logs of
//! its agent.

use std::fmt::Write as _;

use agent_fold_core::{Input, restore_prior};
use anyhow::Result;

use super::report::{against, median, pct, stats, thousands};
use super::{Log, METHODS, Reading, config_for};
use crate::params::ModuleParams;

/// Which agent a log format is: Claude Code's transcripts and streams share one prior.
fn agent(input: Input) -> Input {
    match input {
        Input::ClaudeStream => Input::ClaudeCode,
        i => i,
    }
}

/// A log's residuals: at each compaction its log does not show what comes back and whose
/// session showed work that may come back beyond the rule's files (`restore_beyond`), the
/// first reading after it less `rebased` with nothing unseen and nothing learnt.
pub fn residuals(log: &Log, params: &ModuleParams) -> Result<Vec<i64>> {
    let mut config = config_for(log.input, params);
    config.compact_restore = 0;
    config.restore_named = true;
    config.learn_restore = false;
    let m = log.measure(&config)?;
    Ok(m.readings
        .iter()
        .filter(|r| r.after_compaction && !r.restore_shown && r.restore_beyond)
        .filter_map(|r| r.projected[0].map(|p| r.reading as i64 - p as i64))
        .collect())
}

/// The prior residuals give: their median, rounded to the nearest 100, never below 0; `None`
/// when there are none.
pub fn fit(residuals: &[i64]) -> Option<u64> {
    let mut r: Vec<f64> = residuals.iter().map(|&x| x as f64).collect();
    r.sort_by(f64::total_cmp);
    let m = median(&r);
    m.is_finite()
        .then(|| ((m.max(0.0) / 100.0).round() * 100.0) as u64)
}

/// One compaction of a log scored with the prior fitted on the other logs.
#[derive(Debug, Clone)]
pub struct CompactionRow {
    pub label: String,
    pub input: Input,
    /// The compaction's number in its log (1, 2, …).
    pub nth: usize,
    /// The prior it was scored with, and how many compactions of other logs it was fitted on
    /// (0: none, the shipped default stood; `None`: the param was given).
    pub prior: u64,
    pub fitted_on: Option<usize>,
    pub reading: Reading,
}

/// One log's readings between compactions, scored with its fitted prior.
#[derive(Debug, Clone)]
pub struct LogRow {
    pub label: String,
    pub scored: usize,
    /// Median |error| per method of [`METHODS`], then the last reading's.
    pub median_abs: [f64; 4],
}

/// The cross-validated table.
#[derive(Debug, Clone)]
pub struct Table {
    pub compactions: Vec<CompactionRow>,
    pub logs: Vec<LogRow>,
    /// The priors fitted on every log given, per agent, with their compaction counts: what the
    /// shipped defaults are checked against.
    pub fitted_on_all: Vec<(Input, Option<u64>, usize)>,
}

/// Scores each of `logs` with the prior fitted on the others of its agent.
pub fn cross_validate(logs: &[Log], params: &ModuleParams) -> Result<Table> {
    let given = params.named("compact_restore");
    let residuals = logs
        .iter()
        .map(|l| residuals(l, params))
        .collect::<Result<Vec<_>>>()?;
    let mut table = Table {
        compactions: Vec::new(),
        logs: Vec::new(),
        fitted_on_all: Vec::new(),
    };
    for a in [Input::ClaudeCode, Input::Codex, Input::AgentFold] {
        let all: Vec<i64> = logs
            .iter()
            .zip(&residuals)
            .filter(|(l, _)| agent(l.input) == a)
            .flat_map(|(_, r)| r.iter().copied())
            .collect();
        if logs.iter().any(|l| agent(l.input) == a) {
            table.fitted_on_all.push((a, fit(&all), all.len()));
        }
    }
    for (i, log) in logs.iter().enumerate() {
        let training: Vec<i64> = logs
            .iter()
            .zip(&residuals)
            .enumerate()
            .filter(|(j, (l, _))| *j != i && agent(l.input) == agent(log.input))
            .flat_map(|(_, (_, r))| r.iter().copied())
            .collect();
        let mut scored_with = config_for(log.input, params);
        let fitted_on = match given {
            true => None,
            false => {
                scored_with.compact_restore =
                    fit(&training).unwrap_or_else(|| restore_prior(log.input));
                scored_with.restore_named = true;
                Some(training.len())
            }
        };
        let prior = scored_with.compact_restore;
        let m = log.measure(&scored_with)?;
        for (i, r) in m.readings.iter().filter(|r| r.after_compaction).enumerate() {
            table.compactions.push(CompactionRow {
                label: log.label.clone(),
                input: log.input,
                nth: i + 1,
                prior,
                fitted_on,
                reading: r.clone(),
            });
        }
        let with: Vec<&Reading> = m
            .readings
            .iter()
            .filter(|r| r.projected.iter().all(Option::is_some))
            .collect();
        let of = |f: &dyn Fn(&Reading) -> u64| {
            let pairs: Vec<(u64, u64)> = with.iter().map(|r| (f(r), r.reading)).collect();
            stats(&pairs).median_abs
        };
        table.logs.push(LogRow {
            label: log.label.clone(),
            scored: with.len(),
            median_abs: [
                of(&|r| r.projected[0].unwrap_or(0)),
                of(&|r| r.projected[1].unwrap_or(0)),
                of(&|r| r.projected[2].unwrap_or(0)),
                of(&|r| r.last),
            ],
        });
    }
    Ok(table)
}

/// Relative error of `shown` against `reading`, signed.
fn rel(shown: u64, reading: u64) -> f64 {
    (shown as f64 - reading as f64) / reading.max(1) as f64
}

/// The table as text: one line per compaction, a summary of `rebased` at the compactions, the
/// readings between them per log.
pub fn render(t: &Table) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Cross-validated (leave one session out): each log is scored with what comes back at a \
         compaction fitted on the other logs of its agent only."
    );
    for (a, prior, n) in &t.fitted_on_all {
        let _ = writeln!(
            o,
            "  fitted on every log given, {}: {} ({n} compactions)",
            a.name(),
            prior.map_or("none".into(), |p| thousands(p as f64))
        );
    }
    let _ = writeln!(
        o,
        "\nAt each compaction, the figure shown when the first request after it left, against that request's reading:"
    );
    let names: Vec<&str> = METHODS.iter().map(|m| m.name()).collect();
    let _ = writeln!(
        o,
        "  log (compaction) | prior (fitted on) | reading | last reading | {} | postTokens",
        names.join(" | ")
    );
    let mut errors = Vec::new();
    for c in &t.compactions {
        let r = &c.reading;
        let shown = |p: Option<u64>| p.map_or("—".to_owned(), |p| against(p, r.reading));
        let fitted = match c.fitted_on {
            Some(0) => "default".to_owned(),
            Some(n) => format!("{n}"),
            None => "given".to_owned(),
        };
        let methods: Vec<String> = r.projected.iter().map(|p| shown(*p)).collect();
        let _ = writeln!(
            o,
            "  {} ({}) | {} ({fitted}) | {} | {} | {} | {}{}",
            c.label,
            c.nth,
            thousands(c.prior as f64),
            thousands(r.reading as f64),
            against(r.last, r.reading),
            methods.join(" | "),
            shown(r.post_tokens),
            r.restore_note()
        );
        if let Some(p) = r.projected[0] {
            errors.push(rel(p, r.reading).abs());
        }
    }
    errors.sort_by(f64::total_cmp);
    if let Some(worst) = errors.last() {
        let within = |x: f64| errors.iter().filter(|e| **e <= x).count();
        let _ = writeln!(
            o,
            "  {} at {} compactions: median |error| {}, worst {}; within ±10%: {}, within ±15%: {}, within ±25%: {}",
            names[0],
            errors.len(),
            pct(median(&errors)),
            pct(*worst),
            within(0.10),
            within(0.15),
            within(0.25)
        );
    }
    let _ = writeln!(
        o,
        "\nBetween readings (median |error| of the figure shown when each request left):"
    );
    let _ = writeln!(o, "  log | scored | {} | last reading", names.join(" | "));
    for l in &t.logs {
        let m: Vec<String> = l.median_abs.iter().map(|x| thousands(*x)).collect();
        let _ = writeln!(o, "  {} | {} | {}", l.label, l.scored, m.join(" | "));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn the_prior_is_the_median_rounded_and_never_negative() {
        assert_eq!(fit(&[]), None);
        assert_eq!(fit(&[1_249, 90_000, -5]), Some(1_200));
        assert_eq!(fit(&[1_250, 1_350]), Some(1_300));
        assert_eq!(fit(&[-4_000, -10]), Some(0));
    }
}
