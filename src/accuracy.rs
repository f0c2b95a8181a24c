//! `agent-fold accuracy PATH…`: how close the projection comes to the provider's next reading.
//!
//! For each provider reading after a session's first, the figure a UI showed just before it
//! is compared with it: agent-fold's `projectedTokens` (the last reading plus the estimate of
//! what joined the surface since), beside what a meter that only shows the last reading
//! (`pressureTokens`) would have said. A reading right after a compaction is listed on its
//! own: it is where the last-reading meter is most wrong.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use agent_fold_core::pressure::sample;
use agent_fold_core::{Emit, FrameView, Input, Processor};
use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use crate::engine::Rec;
use crate::logs;
use crate::runner::inputs;

pub const USAGE: &str = "\
usage: agent-fold accuracy [--input FORMAT] PATH...

For each provider reading after a session's first, prints how far the figure shown just
before it was: agent-fold's projectedTokens, and a meter that only shows the last reading.

  --input FORMAT   claude-code, claude-stream, codex or agent-fold (default: detected per PATH)
  PATH             a log file, or a Claude Code session directory (its transcript beside it)
";

/// One provider reading, and what was shown just before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub session: String,
    pub seq: u64,
    pub timestamp: Option<String>,
    /// The provider's prompt size.
    pub reading: u64,
    /// `projectedTokens` just before (null: no projection then).
    pub projected: Option<u64>,
    /// `pressureTokens` just before: the last reading.
    pub last: u64,
    /// The first reading after a compaction.
    pub after_compaction: bool,
}

/// Replays frames through the pressure view and scores every reading after a session's first.
/// Returns them, and how many readings there were in all.
pub fn measure(frames: &[Rec]) -> Result<(Vec<Reading>, usize)> {
    let mut p = Processor::from_params([("emit", "pressure")])?;
    let emits = p
        .process(&inputs(frames))
        .map_err(|e| anyhow!("record {}: {}", e.index, e.message))?;
    let mut by_frame: HashMap<usize, Vec<Value>> = HashMap::new();
    for e in emits {
        if let Emit::New { at, value, .. } = e
            && let Ok(v) = serde_json::from_slice::<Value>(&value)
        {
            by_frame.entry(at).or_default().push(v);
        }
    }
    // Per session: (pressureTokens, projectedTokens) of the last record, a compaction since the
    // last reading.
    let mut shown: HashMap<String, (Option<u64>, Option<u64>)> = HashMap::new();
    let mut compacted: HashMap<String, bool> = HashMap::new();
    let mut out = Vec::new();
    let mut total = 0;
    for (i, f) in frames.iter().enumerate() {
        let Some(v) = FrameView::parse(&f.value) else {
            continue;
        };
        let session = match &f.key {
            Some(k) => String::from_utf8_lossy(k).into_owned(),
            None => v.session_id.as_deref().unwrap_or("").to_owned(),
        };
        let main = !v.subagent && v.seq.is_some();
        if main
            && v.kind.as_deref() == Some("assistant/message")
            && let Some(usage) = v.usage
        {
            total += 1;
            if let Some((Some(last), projected)) = shown.get(&session).copied() {
                out.push(Reading {
                    session: session.clone(),
                    seq: v.seq.unwrap_or(0),
                    timestamp: v.stamp.map(|s| s.trim_matches('"').to_owned()),
                    reading: sample(usage),
                    projected,
                    last,
                    after_compaction: compacted.remove(&session).unwrap_or(false),
                });
            }
            compacted.remove(&session);
        }
        if main && v.replaces.is_some() {
            compacted.insert(session.clone(), true);
        }
        for r in by_frame.get(&i).into_iter().flatten() {
            if r.get("type").and_then(Value::as_str) != Some("context/pressure") {
                continue;
            }
            let s = r.get("session").and_then(Value::as_str).unwrap_or("");
            let n = |k: &str| r.get(k).and_then(Value::as_u64);
            shown.insert(s.to_owned(), (n("pressureTokens"), n("projectedTokens")));
        }
    }
    Ok((out, total))
}

/// Median, p90 and mean of errors against the readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub median_abs: f64,
    pub p90_abs: f64,
    pub median_rel: f64,
    pub p90_rel: f64,
    /// Mean of `shown − reading`: positive = the figure ran high.
    pub mean_signed: f64,
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The nearest-rank 90th percentile.
fn p90(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (0.9 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Stats of `(shown, reading)` pairs.
pub fn stats(pairs: &[(u64, u64)]) -> Stats {
    let mut abs: Vec<f64> = pairs
        .iter()
        .map(|&(s, r)| (s as f64 - r as f64).abs())
        .collect();
    let mut rel: Vec<f64> = pairs
        .iter()
        .map(|&(s, r)| (s as f64 - r as f64).abs() / (r.max(1) as f64))
        .collect();
    abs.sort_by(f64::total_cmp);
    rel.sort_by(f64::total_cmp);
    let signed: f64 = pairs.iter().map(|&(s, r)| s as f64 - r as f64).sum();
    Stats {
        n: pairs.len(),
        median_abs: median(&abs),
        p90_abs: p90(&abs),
        median_rel: median(&rel),
        p90_rel: p90(&rel),
        mean_signed: if pairs.is_empty() {
            f64::NAN
        } else {
            signed / pairs.len() as f64
        },
    }
}

/// The report's figures: the projection's and the last-reading meter's stats over the readings
/// that had a projection, and how often each was the closer.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub readings: usize,
    pub scored: usize,
    pub projection: Stats,
    pub last: Stats,
    pub projection_closer: usize,
    pub last_closer: usize,
    pub ties: usize,
    pub no_projection: usize,
    pub after_compaction: Vec<Reading>,
}

pub fn summarize(readings: &[Reading], total: usize) -> Summary {
    let with: Vec<&Reading> = readings.iter().filter(|r| r.projected.is_some()).collect();
    let proj: Vec<(u64, u64)> = with
        .iter()
        .map(|r| (r.projected.unwrap_or(0), r.reading))
        .collect();
    let last: Vec<(u64, u64)> = with.iter().map(|r| (r.last, r.reading)).collect();
    let (mut pc, mut lc, mut ties) = (0, 0, 0);
    for r in &with {
        let ep = r.projected.unwrap_or(0).abs_diff(r.reading);
        let el = r.last.abs_diff(r.reading);
        match ep.cmp(&el) {
            std::cmp::Ordering::Less => pc += 1,
            std::cmp::Ordering::Greater => lc += 1,
            std::cmp::Ordering::Equal => ties += 1,
        }
    }
    Summary {
        readings: total,
        scored: readings.len(),
        projection: stats(&proj),
        last: stats(&last),
        projection_closer: pc,
        last_closer: lc,
        ties,
        no_projection: readings.len() - with.len(),
        after_compaction: readings
            .iter()
            .filter(|r| r.after_compaction)
            .cloned()
            .collect(),
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: f64) -> String {
    if !n.is_finite() {
        return "—".into();
    }
    let neg = n < 0.0;
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if neg && digits != "0" {
        format!("−{out}")
    } else {
        out
    }
}

fn signed(n: f64) -> String {
    if n > 0.0 {
        format!("+{}", thousands(n))
    } else {
        thousands(n)
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", x * 100.0)
    } else {
        "—".into()
    }
}

fn readings(n: usize) -> String {
    match n {
        1 => "1 reading".to_owned(),
        n => format!("{n} readings"),
    }
}

/// The report of one log, as text.
pub fn render(label: &str, input: Input, s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{label} ({}): {} provider {}, {} scored (each after a session's first){}",
        input.name(),
        s.readings,
        if s.readings == 1 {
            "reading"
        } else {
            "readings"
        },
        s.scored,
        if s.no_projection > 0 {
            format!(", {} with no projection shown", s.no_projection)
        } else {
            String::new()
        }
    );
    if s.scored == 0 {
        return o;
    }
    let _ = writeln!(
        o,
        "  {:<24} {:>13} {:>11} {:>11} {:>9} {:>11}",
        "figure shown before it", "median |err|", "p90 |err|", "median rel", "p90 rel", "mean err"
    );
    for (name, st) in [
        ("projectedTokens", &s.projection),
        ("last reading only", &s.last),
    ] {
        let _ = writeln!(
            o,
            "  {:<24} {:>13} {:>11} {:>11} {:>9} {:>11}",
            name,
            thousands(st.median_abs),
            thousands(st.p90_abs),
            pct(st.median_rel),
            pct(st.p90_rel),
            signed(st.mean_signed)
        );
    }
    let _ = writeln!(
        o,
        "  the projection was closer on {}, the last reading on {}, tied on {}",
        readings(s.projection_closer),
        s.last_closer,
        s.ties
    );
    if s.after_compaction.is_empty() {
        let _ = writeln!(o, "  no reading after a compaction");
    } else {
        let _ = writeln!(o, "  right after a compaction:");
        for r in &s.after_compaction {
            let proj = match r.projected {
                Some(p) => format!(
                    "projection {} ({}, {})",
                    thousands(p as f64),
                    signed(p as f64 - r.reading as f64),
                    pct((p as f64 - r.reading as f64) / r.reading.max(1) as f64)
                ),
                None => "no projection".to_owned(),
            };
            let _ = writeln!(
                o,
                "    seq {}{}: reading {}; {}; last reading {} ({}, {})",
                r.seq,
                r.timestamp
                    .as_deref()
                    .map(|t| format!(" at {t}"))
                    .unwrap_or_default(),
                thousands(r.reading as f64),
                proj,
                thousands(r.last as f64),
                signed(r.last as f64 - r.reading as f64),
                pct((r.last as f64 - r.reading as f64) / r.reading.max(1) as f64),
            );
        }
    }
    o
}

/// Reads, adapts and scores one log path.
pub fn measure_path(path: &Path, input: Option<Input>) -> Result<(Input, Summary)> {
    let lines = logs::read_records(Some(path))?;
    let input = match input.or_else(|| logs::detect(&lines)) {
        Some(i) => i,
        None => bail!(
            "{}: cannot tell the log's format; name it with --input",
            path.display()
        ),
    };
    let frames = if input == Input::AgentFold {
        lines
    } else {
        logs::adapt_all(input, &lines, agent_fold_core::config::DEFAULT_MAX_SESSIONS)
    };
    let (readings, total) = measure(&frames)?;
    Ok((input, summarize(&readings, total)))
}

/// The command line: `agent-fold accuracy …`.
pub fn main_with(args: &[String]) -> Result<i32> {
    let mut input = None;
    let mut paths = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--input" => {
                let v = it.next().ok_or_else(|| anyhow!("--input needs a value"))?;
                input = Some(Input::parse(v).ok_or_else(|| {
                    anyhow!("--input: {v:?} is none of {}", Input::NAMES.join(", "))
                })?);
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(0);
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n\n{USAGE}"),
            s => paths.push(s.to_owned()),
        }
    }
    if paths.is_empty() {
        eprint!("{USAGE}");
        return Ok(2);
    }
    for (i, p) in paths.iter().enumerate() {
        let path = Path::new(p);
        let (input, summary) = measure_path(path, input)?;
        let label = path
            .file_name()
            .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned());
        if i > 0 {
            println!();
        }
        print!("{}", render(&label, input, &summary));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let s = stats(&[(110, 100), (90, 100), (100, 100), (130, 100)]);
        assert_eq!(s.n, 4);
        assert_eq!(s.median_abs, 10.0);
        assert_eq!(s.p90_abs, 30.0);
        assert_eq!(s.mean_signed, 7.5);
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(-45263.0), "−45,263");
    }
}
