//! The crossings a stream of pressure records should alert on, counted apart from the server
//! (`docs/serve.md`, "Alerts"): a session crosses a rule when its value moves onto the rule's
//! side while the rule is armed; it is armed again once the value is back past the threshold by
//! 5% of it; an unknown value changes nothing. The tests and the board bench hold the server's
//! alerts to these counts.

use std::collections::BTreeMap;

/// One rule: `until<20000`, `occupancy>0.9`, `used>150000`, `pressure>=180000` (plain numbers).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub text: String,
    field: String,
    below: bool,
    inclusive: bool,
    threshold: f64,
}

impl Rule {
    pub fn parse(text: &str) -> Option<Rule> {
        let at = text.find(['<', '>'])?;
        let (field, rest) = text.split_at(at);
        let below = rest.starts_with('<');
        let inclusive = rest[1..].starts_with('=');
        let number = &rest[if inclusive { 2 } else { 1 }..];
        Some(Rule {
            text: text.to_owned(),
            field: field.trim().to_owned(),
            below,
            inclusive,
            threshold: number.trim().parse().ok()?,
        })
    }

    fn on(&self, v: f64) -> bool {
        match (self.below, self.inclusive) {
            (true, false) => v < self.threshold,
            (true, true) => v <= self.threshold,
            (false, false) => v > self.threshold,
            (false, true) => v >= self.threshold,
        }
    }

    fn clear(&self, v: f64) -> bool {
        match self.below {
            true => v >= self.threshold * 1.05,
            false => v <= self.threshold * 0.95,
        }
    }
}

/// Crossings per rule and session, as records come.
#[derive(Debug, Clone)]
pub struct Crossings {
    rules: Vec<Rule>,
    /// Per (rule, session): whether it fired and has not cleared.
    firing: BTreeMap<(usize, String), bool>,
    counts: BTreeMap<(usize, String), u64>,
    /// Per (rule, session): the crossings back that ended an alert.
    resolved: BTreeMap<(usize, String), u64>,
}

impl Crossings {
    pub fn new(rules: Vec<Rule>) -> Crossings {
        Crossings {
            rules,
            firing: BTreeMap::new(),
            counts: BTreeMap::new(),
            resolved: BTreeMap::new(),
        }
    }

    /// One record's figures: `untilCompactTokens`, `contextOccupancy`, what the meter shows
    /// (`used`) and `pressureTokens`.
    pub fn observe(
        &mut self,
        session: &str,
        until: Option<u64>,
        occupancy: Option<f64>,
        used: Option<u64>,
        pressure: Option<u64>,
    ) {
        for (i, rule) in self.rules.iter().enumerate() {
            let value = match rule.field.as_str() {
                "until" => until.map(|n| n as f64),
                "occupancy" => occupancy,
                "used" => used.map(|n| n as f64),
                "pressure" => pressure.map(|n| n as f64),
                _ => None,
            };
            let Some(v) = value else { continue };
            let firing = self.firing.entry((i, session.to_owned())).or_default();
            if !*firing && rule.on(v) {
                *firing = true;
                *self.counts.entry((i, session.to_owned())).or_default() += 1;
            } else if *firing && rule.clear(v) {
                *firing = false;
                *self.resolved.entry((i, session.to_owned())).or_default() += 1;
            }
        }
    }

    /// Per rule (its text), the crossings per session.
    pub fn counts(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.per_rule(&self.counts)
    }

    /// Per rule (its text), the alerts resolved per session (a crossing back while firing).
    pub fn resolutions(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.per_rule(&self.resolved)
    }

    fn per_rule(
        &self,
        by: &BTreeMap<(usize, String), u64>,
    ) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for ((i, s), n) in by {
            out.entry(self.rules[*i].text.clone())
                .or_default()
                .insert(s.clone(), *n);
        }
        out
    }

    /// All crossings back of a rule.
    pub fn total_resolved(&self, rule: &str) -> u64 {
        self.resolutions().get(rule).map_or(0, |m| m.values().sum())
    }

    /// All crossings of a rule.
    pub fn total(&self, rule: &str) -> u64 {
        self.counts().get(rule).map_or(0, |m| m.values().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wavering_counts_once_and_clearing_rearms() {
        let mut c = Crossings::new(vec![Rule::parse("until<20000").unwrap()]);
        for v in [50_000, 19_000, 20_500, 19_000, 21_000, 10_000] {
            c.observe("a", Some(v), None, None, None);
        }
        c.observe("a", None, None, None, None);
        assert_eq!(c.total("until<20000"), 2);
    }
}
