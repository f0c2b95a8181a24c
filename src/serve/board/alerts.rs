//! `--alert RULE`: a session alerts once each time it crosses into a rule, never once per record.
//!
//! A rule is `FIELD OP NUMBER`: `until<20000` (untilCompactTokens), `occupancy>0.9` (or `90%`),
//! `used>150k` (projectedTokens, else pressureTokens), `pressure>=180000`; and for compaction
//! going wrong (docs/serve.md, "Alerts"): `past>5%` (how far the session is past the point it
//! compacts at, in tokens or a share of that point: compaction off, broken, or a setting the
//! agent ignores), `after>0.6` (the context the last compaction left, a share of the window:
//! it left too much), `reclaimed<10%` (what the last compaction took off, a share of what was
//! there: it did not shrink it), `thrash>=3` (compactions within `--thrash-window`). A session
//! *fires* when its value moves onto the rule's side while the rule is armed; it is armed again
//! only once the value is back past the threshold by [`HYSTERESIS`] of it, so a value that
//! wavers around the threshold alerts once. An unknown value (null) changes nothing.

use std::fmt;

use super::row::Latest;

/// How far past its threshold a value must come back before the rule is armed again: 5% of the
/// threshold (`until<20000` re-arms at 21,000 or more; `occupancy>0.9` at 0.855 or less).
pub(crate) const HYSTERESIS: f64 = 0.05;

/// What a rule reads of a session's latest record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// `untilCompactTokens`.
    Until,
    /// `contextOccupancy`.
    Occupancy,
    /// `projectedTokens`, else `pressureTokens`: what the meter shows.
    Used,
    /// `pressureTokens`: the provider's last reading.
    Pressure,
    /// What the meter shows less `compactAtTokens`: how far past its point the session is (in
    /// tokens; with `%`, a share of the point).
    Past,
    /// `lastCompactAfterTokens` of the window (`capacity`).
    After,
    /// What the last compaction took off (`lastCompactBeforeTokens` less
    /// `lastCompactAfterTokens`), a share of what was there.
    Reclaimed,
    /// Compactions within the board's thrash window.
    Thrash,
}

impl Field {
    const NAMES: [(&'static str, Field); 8] = [
        ("until", Field::Until),
        ("occupancy", Field::Occupancy),
        ("used", Field::Used),
        ("pressure", Field::Pressure),
        ("past", Field::Past),
        ("after", Field::After),
        ("reclaimed", Field::Reclaimed),
        ("thrash", Field::Thrash),
    ];

    /// Whether its values are shares (0.9, or 90%), not counts of tokens.
    fn share(self) -> bool {
        matches!(self, Field::Occupancy | Field::After | Field::Reclaimed)
    }

    /// Its value in a record; `relative`: a `past` rule written as a share of the point.
    fn value(self, r: &Latest, relative: bool) -> Option<f64> {
        match self {
            Field::Until => r.until.map(|n| n as f64),
            Field::Occupancy => r.occupancy,
            Field::Used => r.used().map(|n| n as f64),
            Field::Pressure => r.pressure.map(|n| n as f64),
            Field::Past => {
                let (used, at) = (r.used()? as f64, r.compact_at? as f64);
                match relative {
                    true if at > 0.0 => Some((used - at) / at),
                    true => None,
                    false => Some(used - at),
                }
            }
            Field::After => match (r.last_after, r.capacity) {
                (Some(a), Some(c)) if c > 0 => Some(a as f64 / c as f64),
                _ => None,
            },
            Field::Reclaimed => match (r.last_before, r.last_after) {
                (Some(b), Some(a)) if b > 0 => Some((b as f64 - a as f64) / b as f64),
                _ => None,
            },
            Field::Thrash => r.recent_compactions.map(|n| n as f64),
        }
    }
}

/// Below or above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// One `--alert` rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rule {
    pub field: Field,
    pub op: Op,
    pub threshold: f64,
    /// A `past` rule written as a share of the point (`past>5%`).
    pub relative: bool,
    /// The rule as given, trimmed: how alerts, rows and metrics name it.
    pub text: String,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a rule does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RuleError {
    #[error(
        "{0:?}: a rule is FIELD OP NUMBER, e.g. until<20000 or occupancy>0.9 (FIELD: until, occupancy, used, pressure, past, after, reclaimed, thrash; OP: <, <=, >, >=)"
    )]
    Shape(String),
    #[error(
        "{rule:?}: {field} is not one of until, occupancy, used, pressure, past, after, reclaimed, thrash"
    )]
    Field { rule: String, field: String },
    #[error(
        "{rule:?}: {number:?} is not a number ≥ 0 (20000, 20k, 1.5M; for occupancy, after and reclaimed 0.9 or 90%; for past 20k or 5%)"
    )]
    Number { rule: String, number: String },
}

impl Rule {
    /// Reads `until<20000`, `occupancy >= 90%`, `used>150k`.
    pub(crate) fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let at = text
            .find(['<', '>'])
            .ok_or_else(|| RuleError::Shape(text.to_owned()))?;
        let (name, rest) = text.split_at(at);
        let (op, number) = match rest.as_bytes() {
            [b'<', b'=', ..] => (Op::Le, &rest[2..]),
            [b'>', b'=', ..] => (Op::Ge, &rest[2..]),
            [b'<', ..] => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        let name = name.trim();
        let field = Field::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| RuleError::Field {
                rule: text.to_owned(),
                field: name.to_owned(),
            })?;
        let bad = || RuleError::Number {
            rule: text.to_owned(),
            number: number.trim().to_owned(),
        };
        let number = number.trim();
        let percent = field.share() || field == Field::Past;
        let (digits, scale) = match number.as_bytes().last() {
            Some(b'%') if percent => (&number[..number.len() - 1], 0.01),
            Some(b'k' | b'K') if !field.share() => (&number[..number.len() - 1], 1e3),
            Some(b'M') if !field.share() => (&number[..number.len() - 1], 1e6),
            _ => (number, 1.0),
        };
        let relative = field == Field::Past && number.ends_with('%');
        let threshold = digits
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(bad)?
            * scale;
        if name.is_empty() || ((field.share() || relative) && threshold > 10.0) {
            return Err(bad());
        }
        let op_text = op.text();
        let shown = if field.share() {
            format!("{name}{op_text}{threshold}")
        } else if relative {
            format!("{name}{op_text}{}%", (threshold * 1e4).round() / 1e2)
        } else {
            format!("{name}{op_text}{}", threshold.round() as u64)
        };
        Ok(Rule {
            field,
            op,
            threshold,
            relative,
            text: shown,
        })
    }

    /// Whether `v` is on the rule's side.
    fn holds(&self, v: f64) -> bool {
        match self.op {
            Op::Lt => v < self.threshold,
            Op::Le => v <= self.threshold,
            Op::Gt => v > self.threshold,
            Op::Ge => v >= self.threshold,
        }
    }

    /// Whether `v` is back past the threshold by the hysteresis: the rule is armed again.
    fn cleared(&self, v: f64) -> bool {
        let margin = self.threshold * HYSTERESIS;
        match self.op {
            Op::Lt | Op::Le => v >= self.threshold + margin,
            Op::Gt | Op::Ge => v <= self.threshold - margin,
        }
    }

    /// The rule's value for a record, when known.
    pub(crate) fn value(&self, r: &Latest) -> Option<f64> {
        self.field.value(r, self.relative)
    }
}

/// Which rules fire for one session: bit `i` for rule `i` (at most 64 rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Firing(pub u64);

/// The most `--alert` rules.
pub(crate) const MAX_RULES: usize = 64;

impl Firing {
    pub(crate) fn has(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    #[cfg(test)]
    /// The rules `r` crosses into: each returned once, until it clears again. `self` becomes
    /// the new state.
    pub(crate) fn step(&mut self, rules: &[Rule], r: &Latest) -> Vec<usize> {
        self.step_both(rules, r).0
    }

    /// [`Firing::step`], and the rules `r` clears (each firing until now: the alerts it ends).
    pub(crate) fn step_both(&mut self, rules: &[Rule], r: &Latest) -> (Vec<usize>, Vec<usize>) {
        let (mut crossed, mut cleared) = (Vec::new(), Vec::new());
        for (i, rule) in rules.iter().enumerate().take(MAX_RULES) {
            let Some(v) = rule.value(r) else { continue };
            let bit = 1u64 << i;
            if self.0 & bit == 0 && rule.holds(v) {
                self.0 |= bit;
                crossed.push(i);
            } else if self.0 & bit != 0 && rule.cleared(v) {
                self.0 &= !bit;
                cleared.push(i);
            }
        }
        (crossed, cleared)
    }

    /// The rules firing, by index.
    pub(crate) fn iter(self) -> impl Iterator<Item = usize> {
        (0..MAX_RULES).filter(move |i| self.has(*i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn until(n: u64) -> Latest {
        Latest {
            until: Some(n),
            ..Latest::default()
        }
    }

    #[test]
    fn rules_read_and_refuse_in_words() {
        let r = Rule::parse(" until < 20k ").unwrap();
        assert_eq!(
            (r.field, r.op, r.threshold),
            (Field::Until, Op::Lt, 20_000.0)
        );
        assert_eq!(r.text, "until<20000");
        let o = Rule::parse("occupancy>=90%").unwrap();
        assert_eq!((o.op, o.threshold), (Op::Ge, 0.9));
        assert_eq!(o.text, "occupancy>=0.9");
        assert_eq!(Rule::parse("used>1.5M").unwrap().threshold, 1_500_000.0);
        for bad in [
            "until",
            "speed>3",
            "until<x",
            "until<-5",
            "occupancy>20k",
            "<5",
            "occupancy>50",
        ] {
            let e = Rule::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad.trim()) || e.contains("rule"), "{bad}: {e}");
        }
    }

    /// Wavering around the threshold alerts once; coming back past the hysteresis arms it
    /// again; a null changes nothing.
    #[test]
    fn a_crossing_alerts_once_until_it_clears() {
        let rules = [Rule::parse("until<20000").unwrap()];
        let mut f = Firing::default();
        let mut fired = 0;
        for v in [50_000, 19_999, 20_500, 19_000, 20_900, 15_000] {
            fired += f.step(&rules, &until(v)).len();
        }
        assert_eq!(fired, 1, "20,500 and 20,900 are within the hysteresis");
        assert_eq!(f.step(&rules, &Latest::default()).len(), 0);
        assert!(f.has(0), "a null leaves it firing");
        assert!(f.step(&rules, &until(21_000)).is_empty());
        assert!(!f.has(0), "21,000 clears it");
        assert_eq!(f.step(&rules, &until(100)), [0], "and it fires again");
    }

    #[test]
    fn occupancy_above_clears_below_the_margin() {
        let rules = [Rule::parse("occupancy>0.9").unwrap()];
        let mut f = Firing::default();
        let occ = |o: f64| Latest {
            occupancy: Some(o),
            ..Latest::default()
        };
        assert_eq!(f.step(&rules, &occ(0.95)), [0]);
        assert!(f.step(&rules, &occ(0.86)).is_empty());
        assert!(f.has(0));
        f.step(&rules, &occ(0.85));
        assert!(!f.has(0));
    }

    #[test]
    fn compaction_rules_read_their_units() {
        let p = Rule::parse("past>5%").unwrap();
        assert_eq!(
            (p.field, p.threshold, p.relative),
            (Field::Past, 0.05, true)
        );
        assert_eq!(p.text, "past>5%");
        let t = Rule::parse("past > 20k").unwrap();
        assert_eq!(
            (t.threshold, t.relative, t.text.as_str()),
            (20_000.0, false, "past>20000")
        );
        assert_eq!(Rule::parse("after>60%").unwrap().text, "after>0.6");
        assert_eq!(Rule::parse("reclaimed<0.1").unwrap().threshold, 0.1);
        assert_eq!(Rule::parse("thrash>=3").unwrap().text, "thrash>=3");
        for bad in [
            "after>20k",
            "reclaimed<50",
            "thrash>3%",
            "past>2000%",
            "after>1M",
        ] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
    }

    /// Past the point by the margin fires; the compaction's drop clears it; unknown point
    /// (compaction off by a setting read) changes nothing.
    #[test]
    fn past_the_point_fires_and_a_compaction_clears_it() {
        let rules = [
            Rule::parse("past>5%").unwrap(),
            Rule::parse("past>10k").unwrap(),
        ];
        let at = |used: u64, compact_at: Option<u64>| Latest {
            projected: Some(used),
            compact_at,
            ..Latest::default()
        };
        let mut f = Firing::default();
        assert!(f.step(&rules, &at(160_000, Some(167_000))).is_empty());
        assert!(
            f.step(&rules, &at(174_000, Some(167_000))).is_empty(),
            "4.2%, 7k past"
        );
        assert_eq!(f.step(&rules, &at(178_000, Some(167_000))), [0, 1]);
        assert!(
            f.step(&rules, &at(400_000, None)).is_empty(),
            "no point: no change"
        );
        assert_eq!(f.0, 0b11);
        assert_eq!(f.step_both(&rules, &at(40_000, Some(167_000))).1, [0, 1]);
    }

    #[test]
    fn a_compaction_that_left_too_much_or_took_little_fires_until_a_good_one() {
        let rules = [
            Rule::parse("after>0.6").unwrap(),
            Rule::parse("reclaimed<10%").unwrap(),
        ];
        let last = |before: u64, after: u64| Latest {
            capacity: Some(200_000),
            compactions: Some(1),
            last_before: Some(before),
            last_after: Some(after),
            ..Latest::default()
        };
        let mut f = Firing::default();
        assert!(f.step(&rules, &Latest::default()).is_empty(), "none yet");
        assert!(
            f.step(&rules, &last(170_000, 30_000)).is_empty(),
            "a good one"
        );
        assert_eq!(
            f.step(&rules, &last(170_000, 160_000)),
            [0, 1],
            "80%, took 5.9%"
        );
        assert!(f.step(&rules, &last(170_000, 160_000)).is_empty(), "once");
        let (fired, cleared) = f.step_both(&rules, &last(165_000, 118_000));
        assert_eq!(
            (fired, cleared),
            (vec![], vec![1]),
            "59% is within the margin; took 28%"
        );
        let (fired, cleared) = f.step_both(&rules, &last(165_000, 60_000));
        assert_eq!((fired, cleared), (vec![], vec![0]), "30% of the window");
        assert_eq!(f.0, 0);
    }

    #[test]
    fn thrash_counts_the_window() {
        let rules = [Rule::parse("thrash>=3").unwrap()];
        let recent = |n: u64| Latest {
            recent_compactions: Some(n),
            ..Latest::default()
        };
        let mut f = Firing::default();
        assert!(f.step(&rules, &recent(2)).is_empty());
        assert_eq!(f.step(&rules, &recent(3)), [0]);
        assert!(f.step(&rules, &recent(4)).is_empty());
        assert_eq!(f.step_both(&rules, &recent(2)).1, [0]);
    }
}
