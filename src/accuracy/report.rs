//! The accuracy report: errors against the readings, and the text `agent-fold accuracy` prints.

use std::fmt::Write as _;

use agent_fold_core::Input;

use super::{AutoCompaction, METHODS, Measured, Reading};

/// Median, p90 and mean of errors against the readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorStats {
    pub n: usize,
    pub median_abs: f64,
    pub p90_abs: f64,
    pub median_rel: f64,
    pub p90_rel: f64,
    /// Mean of `shown − reading`: positive = the figure ran high.
    pub mean_signed: f64,
}

pub(crate) fn median(sorted: &[f64]) -> f64 {
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

/// The error statistics of `(shown, reading)` pairs.
pub(crate) fn stats(pairs: &[(u64, u64)]) -> ErrorStats {
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
    ErrorStats {
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
pub struct AccuracySummary {
    pub readings: usize,
    pub scored: usize,
    pub projection: [ErrorStats; 3],
    pub last: ErrorStats,
    /// Per method: readings where the projection was closer than the last reading, farther, tied.
    pub closer: [(usize, usize, usize); 3],
    pub no_projection: usize,
    pub after_compaction: Vec<Reading>,
    pub auto_compactions: Vec<AutoCompaction>,
}

pub(crate) fn summarize(m: &Measured) -> AccuracySummary {
    let readings = &m.readings[..];
    let with: Vec<&Reading> = readings
        .iter()
        .filter(|r| r.projected.iter().all(Option::is_some))
        .collect();
    let per = |m: usize| -> (ErrorStats, (usize, usize, usize)) {
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
    let per: [(ErrorStats, (usize, usize, usize)); 3] = std::array::from_fn(per);
    let last: Vec<(u64, u64)> = with.iter().map(|r| (r.last, r.reading)).collect();
    AccuracySummary {
        readings: m.total,
        scored: readings.len(),
        projection: per.map(|p| p.0),
        last: stats(&last),
        closer: per.map(|p| p.1),
        no_projection: readings.len() - with.len(),
        after_compaction: readings
            .iter()
            .filter(|r| r.after_compaction)
            .cloned()
            .collect(),
        auto_compactions: m.auto_compactions.clone(),
    }
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: f64) -> String {
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

pub(crate) fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", x * 100.0)
    } else {
        "—".into()
    }
}

/// `shown` against `reading`: `80,373 (+35,110, 77.6%)`.
pub(crate) fn against(shown: u64, reading: u64) -> String {
    let d = shown as f64 - reading as f64;
    format!(
        "{} ({}, {})",
        thousands(shown as f64),
        signed(d),
        pct(d / reading.max(1) as f64)
    )
}

/// The report of one log, as text.
pub fn render(label: &str, input: Input, s: &AccuracySummary) -> String {
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
    let row = |o: &mut String, name: &str, st: &ErrorStats| {
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
    for (m, name) in METHODS.iter().map(|p| p.name()).enumerate() {
        row(
            &mut o,
            &format!("projectedTokens, {name}"),
            &s.projection[m],
        );
    }
    row(&mut o, "last reading only", &s.last);
    for (m, name) in METHODS.iter().map(|p| p.name()).enumerate() {
        let (c, f, t) = s.closer[m];
        let _ = writeln!(
            o,
            "  {name}: closer than the last reading on {c}, farther on {f}, tied on {t}"
        );
    }
    if s.after_compaction.is_empty() {
        let _ = writeln!(o, "  no reading after a compaction");
    } else {
        let _ = writeln!(
            o,
            "  right after a compaction (the figure shown when the reading's request left):"
        );
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
            for (m, name) in METHODS.iter().map(|p| p.name()).enumerate() {
                let shown = match r.projected[m] {
                    Some(p) => against(p, r.reading),
                    None => "no projection".to_owned(),
                };
                let _ = write!(line, "; {name} {shown}");
            }
            if let Some(p) = r.post_tokens {
                let _ = write!(line, "; postTokens {}", against(p, r.reading));
            }
            line.push_str(r.restore_note());
            let _ = writeln!(o, "{line}; last reading {}", against(r.last, r.reading));
        }
    }
    if !s.auto_compactions.is_empty() {
        let _ = writeln!(
            o,
            "  automatic compactions (compactAtTokens shown just before each, against the level it fired at):"
        );
        for a in &s.auto_compactions {
            let shown = match a.shown {
                Some(c) => against(c, a.fired_at),
                None => "unknown".to_owned(),
            };
            let _ = writeln!(
                o,
                "    seq {}: fired at {}; shown {shown}",
                a.seq,
                thousands(a.fired_at as f64)
            );
        }
    }
    o
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
