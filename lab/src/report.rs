//! The lab's report: a table per agent (scenario by scenario: requests, readings, what was not
//! understood, the figure's errors between readings and after each compaction, the compaction
//! point, the breakdown), what came back after each compaction, and — between two sets of
//! releases — what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::check::{Against, Scored, percent};

/// The bound the lab holds the figure to between readings (and lists what passes it).
pub const BETWEEN: f64 = 0.03;
/// The bound at the first request after a compaction.
pub const AFTER_COMPACTION: f64 = 0.10;
/// The bound on the breakdown's rows against the request's shape.
pub const ROWS: f64 = 0.05;
/// A compaction point shown against where the agent fired, where it is not between the
/// reading the agent did not fire at and the one it did (issue 54's bound).
pub const COMPACT_POINT: f64 = 0.10;

/// `median / max |error|` of a list, or `—`.
fn spread(list: &[Against]) -> String {
    if list.is_empty() {
        return "—".into();
    }
    let mut e: Vec<f64> = list.iter().map(|a| a.error().abs()).collect();
    e.sort_by(f64::total_cmp);
    format!(
        "{:.1}% / {:.1}%",
        e[e.len() / 2] * 100.0,
        e[e.len() - 1] * 100.0
    )
}

fn list(list: &[Against]) -> String {
    if list.is_empty() {
        return "—".into();
    }
    list.iter()
        .map(|a| {
            let between = if a.bracketed() {
                format!(", past {}", a.floor.unwrap_or_default())
            } else {
                String::new()
            };
            format!("{} ({}{between})", a.shown, percent(a.error()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table of a set of runs.
pub fn render(scored: &[Scored]) -> String {
    let mut out = String::new();
    let mut by_agent: BTreeMap<_, Vec<&Scored>> = BTreeMap::new();
    for s in scored {
        by_agent
            .entry((s.agent, s.version.clone()))
            .or_default()
            .push(s);
    }
    for ((agent, version), runs) in by_agent {
        let _ = writeln!(out, "\n## {} {version}\n", agent.name());
        let _ = writeln!(
            out,
            "| scenario | requests | compactions | readings | unknown kinds | between: median / max | stale meter | after each compaction | point shown (vs fired; past the reading it held at) | system / tools rows | s |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---|---|---|---|---|---|---:|");
        for s in &runs {
            let rows = match (&s.system, &s.tools) {
                (Some(a), Some(b)) => format!("{} / {}", percent(a.error()), percent(b.error())),
                _ => "not in log".into(),
            };
            let unknown = if s.unknown.is_empty() {
                "0".to_owned()
            } else {
                s.unknown.join(", ")
            };
            let _ = writeln!(
                out,
                "| {}{} | {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {:.0} |",
                s.scenario.name(),
                s.failed.as_ref().map_or("", |_| " (stopped short)"),
                s.requests,
                s.compactions,
                s.readings,
                if s.unanswered.is_empty() {
                    String::new()
                } else {
                    format!(" ({} not answered)", s.unanswered.len())
                },
                unknown,
                spread(&s.between),
                spread(&s.stale_between),
                list(&s.after_compaction),
                list(&s.compact_points),
                rows,
                s.seconds
            );
        }
        for s in &runs {
            if let Some(f) = &s.failed {
                let _ = writeln!(out, "\n{}: {f}", s.scenario.name());
            }
            let off: Vec<String> = s
                .between
                .iter()
                .filter(|a| a.error().abs() > BETWEEN)
                .map(|a| {
                    format!(
                        "seq {} {} for {} ({})",
                        a.seq,
                        a.shown,
                        a.truth,
                        percent(a.error())
                    )
                })
                .collect();
            if !off.is_empty() {
                let _ = writeln!(
                    out,
                    "\n{}: between readings, off by more than {:.0}%: {}",
                    s.scenario.name(),
                    BETWEEN * 100.0,
                    off.join("; ")
                );
            }
            for (i, parts) in s.put_back.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "\n{} — the first request after compaction {}: {}",
                    s.scenario.name(),
                    i + 1,
                    put_back(parts)
                );
            }
        }
    }
    out
}

/// What came back, summed by label: `user:summary 412, system:reminder 2,310, …`.
pub fn put_back(parts: &[(String, u64)]) -> String {
    let mut by: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for (label, tokens) in parts {
        let e = by.entry(label).or_default();
        e.0 += tokens;
        e.1 += 1;
    }
    by.iter()
        .map(|(l, (t, n))| {
            if *n > 1 {
                format!("{l} {t} ({n})")
            } else {
                format!("{l} {t}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What changed from `before` to `after` (two sets of releases run through the same
/// scenarios): versions, kinds new and gone, figures that moved by more than a point.
pub fn changes(before: &[Scored], after: &[Scored]) -> String {
    let mut out = String::new();
    let key = |s: &Scored| (s.agent, s.scenario);
    let old: BTreeMap<_, &Scored> = before.iter().map(|s| (key(s), s)).collect();
    for s in after {
        let Some(o) = old.get(&key(s)) else {
            let _ = writeln!(out, "{} {}: new", s.agent.name(), s.scenario.name());
            continue;
        };
        let mut said = Vec::new();
        if o.version != s.version {
            said.push(format!("release {} → {}", o.version, s.version));
        }
        let kinds = |x: &Scored| -> BTreeSet<String> {
            x.kinds
                .keys()
                .map(|k| k.split(" (").next().unwrap_or(k).to_owned())
                .collect()
        };
        let (ko, kn) = (kinds(o), kinds(s));
        let new: Vec<_> = kn.difference(&ko).cloned().collect();
        let gone: Vec<_> = ko.difference(&kn).cloned().collect();
        if !new.is_empty() {
            said.push(format!("new kinds: {}", new.join(", ")));
        }
        if !gone.is_empty() {
            said.push(format!("kinds no longer written: {}", gone.join(", ")));
        }
        if !s.unknown.is_empty() {
            said.push(format!("unknown to this build: {}", s.unknown.join(", ")));
        }
        for (name, a, b) in [
            (
                "between readings (max)",
                Scored::worst(&o.between),
                Scored::worst(&s.between),
            ),
            (
                "after compaction (max)",
                Scored::worst(&o.after_compaction),
                Scored::worst(&s.after_compaction),
            ),
            (
                "compaction point (max)",
                Scored::worst(&o.compact_points),
                Scored::worst(&s.compact_points),
            ),
        ] {
            if let (Some(a), Some(b)) = (a, b)
                && (a - b).abs() > 0.01
            {
                said.push(format!("{name} {:.1}% → {:.1}%", a * 100.0, b * 100.0));
            }
        }
        if s.failed.is_some() && o.failed.is_none() {
            said.push("now stops short".into());
        }
        if !said.is_empty() {
            let _ = writeln!(
                out,
                "{} {}: {}",
                s.agent.name(),
                s.scenario.name(),
                said.join("; ")
            );
        }
    }
    if out.is_empty() {
        out.push_str("nothing changed\n");
    }
    out
}
