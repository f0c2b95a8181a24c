//! `agent-fold accuracy PATH…`: how close the projection comes to the provider's next reading.
//!
//! For each provider reading after a session's first, the figure a UI showed just before it is
//! compared with it: `projectedTokens` under each projection method (`calibrated`, the default,
//! and the seed's `fixed`), beside what a meter that only shows the last reading
//! (`pressureTokens`) would have said. A reading right after a compaction is listed on its
//! own: it is where the last-reading meter is most wrong, and where the estimate's mispricing
//! lands whole in the projection.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agent_fold_core::{Emit, Frame, Input, Processor, session_key, usage_tokens};
use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use crate::logs;
use crate::record::{Rec, inputs};

/// The projection methods compared, as param `projection` names them.
pub const METHODS: [&str; 2] = ["calibrated", "fixed"];

/// `agent-fold accuracy`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The log format (default: detected per PATH)
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| Input::parse(s).ok_or_else(|| format!("{s:?} is none of {}", Input::NAMES.join(", "))))]
    pub input: Option<Input>,
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
    pub projected: [Option<u64>; 2],
    /// `pressureTokens` just before: the last reading.
    pub last: u64,
    /// The first reading after a compaction.
    pub after_compaction: bool,
}

/// The records each frame gave, by frame index.
fn records_by_frame(frames: &[Rec], projection: &str) -> Result<HashMap<usize, Vec<Value>>> {
    let mut p = Processor::from_params([("emit", "pressure"), ("projection", projection)])?;
    let emits = p
        .process(&inputs(frames, 0))
        .map_err(|e| anyhow!("record {}: {}", e.index, e.message))?;
    let mut by_frame: HashMap<usize, Vec<Value>> = HashMap::new();
    for e in emits {
        if let Emit::New { at, value, .. } = e
            && let Ok(v) = serde_json::from_slice::<Value>(&value)
        {
            by_frame.entry(at).or_default().push(v);
        }
    }
    Ok(by_frame)
}

/// Replays frames through the pressure view under each method and scores every reading after a
/// session's first. Returns them, and how many readings there were in all.
pub fn measure(frames: &[Rec]) -> Result<(Vec<Reading>, usize)> {
    let by_method = [
        records_by_frame(frames, METHODS[0])?,
        records_by_frame(frames, METHODS[1])?,
    ];
    // Per session: pressureTokens and projectedTokens (per method) of the last record.
    let mut shown: HashMap<String, (Option<u64>, [Option<u64>; 2])> = HashMap::new();
    let mut compacted: HashMap<String, bool> = HashMap::new();
    let mut out = Vec::new();
    let mut total = 0;
    for (i, f) in frames.iter().enumerate() {
        let Some(v) = Frame::parse(&f.value) else {
            continue;
        };
        let session =
            String::from_utf8_lossy(&session_key(f.key.as_deref(), Some(&v))).into_owned();
        let main = !v.is_subagent() && v.seq().is_some();
        if main
            && v.kind() == Some("assistant/message")
            && let Some(usage) = v.usage()
        {
            total += 1;
            if let Some((Some(last), projected)) = shown.get(&session).copied() {
                out.push(Reading {
                    session: session.clone(),
                    seq: v.seq().unwrap_or(0),
                    timestamp: v.stamp().map(|s| s.trim_matches('"').to_owned()),
                    reading: usage_tokens(usage),
                    projected,
                    last,
                    after_compaction: compacted.remove(&session).unwrap_or(false),
                });
            }
            compacted.remove(&session);
        }
        if main && v.replaces().is_some() {
            compacted.insert(session.clone(), true);
        }
        for (m, records) in by_method.iter().enumerate() {
            for r in records.get(&i).into_iter().flatten() {
                if r.get("type").and_then(Value::as_str) != Some("context/pressure") {
                    continue;
                }
                let s = r.get("session").and_then(Value::as_str).unwrap_or("");
                let n = |k: &str| r.get(k).and_then(Value::as_u64);
                let entry = shown.entry(s.to_owned()).or_default();
                entry.0 = n("pressureTokens");
                entry.1[m] = n("projectedTokens");
            }
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

/// The report's figures: per method, stats over the readings that had a projection and how
/// often it was closer than the last reading; the last-reading meter's stats over the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub readings: usize,
    pub scored: usize,
    pub projection: [Stats; 2],
    pub last: Stats,
    /// Per method: readings where the projection was closer than the last reading, farther, tied.
    pub closer: [(usize, usize, usize); 2],
    pub no_projection: usize,
    pub after_compaction: Vec<Reading>,
}

pub fn summarize(readings: &[Reading], total: usize) -> Summary {
    let with: Vec<&Reading> = readings
        .iter()
        .filter(|r| r.projected.iter().all(Option::is_some))
        .collect();
    let per = |m: usize| -> (Stats, (usize, usize, usize)) {
        let pairs: Vec<(u64, u64)> = with
            .iter()
            .map(|r| (r.projected[m].unwrap_or(0), r.reading))
            .collect();
        let mut c = (0, 0, 0);
        for r in &with {
            match r.projected[m]
                .unwrap_or(0)
                .abs_diff(r.reading)
                .cmp(&r.last.abs_diff(r.reading))
            {
                std::cmp::Ordering::Less => c.0 += 1,
                std::cmp::Ordering::Greater => c.1 += 1,
                std::cmp::Ordering::Equal => c.2 += 1,
            }
        }
        (stats(&pairs), c)
    };
    let (s0, c0) = per(0);
    let (s1, c1) = per(1);
    let last: Vec<(u64, u64)> = with.iter().map(|r| (r.last, r.reading)).collect();
    Summary {
        readings: total,
        scored: readings.len(),
        projection: [s0, s1],
        last: stats(&last),
        closer: [c0, c1],
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

/// `shown` against `reading`: `80,373 (+35,110, 77.6%)`.
fn against(shown: u64, reading: u64) -> String {
    let d = shown as f64 - reading as f64;
    format!(
        "{} ({}, {})",
        thousands(shown as f64),
        signed(d),
        pct(d / reading.max(1) as f64)
    )
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
    let row = |o: &mut String, name: &str, st: &Stats| {
        let _ = writeln!(
            o,
            "  {:<28} {:>13} {:>11} {:>11} {:>9} {:>11}",
            name,
            thousands(st.median_abs),
            thousands(st.p90_abs),
            pct(st.median_rel),
            pct(st.p90_rel),
            signed(st.mean_signed)
        );
    };
    let _ = writeln!(
        o,
        "  {:<28} {:>13} {:>11} {:>11} {:>9} {:>11}",
        "figure shown before it", "median |err|", "p90 |err|", "median rel", "p90 rel", "mean err"
    );
    for (m, name) in METHODS.iter().enumerate() {
        row(
            &mut o,
            &format!("projectedTokens, {name}"),
            &s.projection[m],
        );
    }
    row(&mut o, "last reading only", &s.last);
    for (m, name) in METHODS.iter().enumerate() {
        let (c, f, t) = s.closer[m];
        let _ = writeln!(
            o,
            "  {name}: closer than the last reading on {c}, farther on {f}, tied on {t}"
        );
    }
    if s.after_compaction.is_empty() {
        let _ = writeln!(o, "  no reading after a compaction");
    } else {
        let _ = writeln!(o, "  right after a compaction:");
        for r in &s.after_compaction {
            let mut line = format!(
                "    seq {}{}: reading {}",
                r.seq,
                r.timestamp
                    .as_deref()
                    .map(|t| format!(" at {t}"))
                    .unwrap_or_default(),
                thousands(r.reading as f64)
            );
            for (m, name) in METHODS.iter().enumerate() {
                let shown = match r.projected[m] {
                    Some(p) => against(p, r.reading),
                    None => "no projection".to_owned(),
                };
                let _ = write!(line, "; {name} {shown}");
            }
            let _ = writeln!(o, "{line}; last reading {}", against(r.last, r.reading));
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
        logs::adapt_all(
            input,
            &lines,
            agent_fold_core::Config::default().max_sessions,
        )
    };
    let (readings, total) = measure(&frames)?;
    Ok((input, summarize(&readings, total)))
}

/// The command line: `agent-fold accuracy …`.
pub fn main(args: &Args) -> Result<i32> {
    for (i, path) in args.paths.iter().enumerate() {
        let (input, summary) = measure_path(path, args.input)?;
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
