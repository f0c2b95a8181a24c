//! The Prometheus text exposition format (version 0.0.4), written by hand: a family's `# HELP`
//! and `# TYPE` lines, then its samples, label values escaped.

use std::fmt::Write;

/// The content type a scraper expects.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
}

/// A scrape's text, family by family.
#[derive(Debug, Default)]
pub(crate) struct Text(String);

impl Text {
    /// Starts a family: its help and type lines.
    pub(crate) fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
        self
    }

    /// One sample of the family just started.
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.0, "{k}=\"{v}\"");
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {}", Value(value));
        self
    }

    /// A family of one sample without labels.
    pub(crate) fn one(&mut self, name: &str, kind: Kind, help: &str, value: f64) -> &mut Self {
        self.family(name, kind, help).sample(name, &[], value)
    }

    /// A family of one unlabelled sample per row `(name, kind, help, value)`, each named
    /// `{prefix}_{name}`.
    pub(crate) fn ones(&mut self, prefix: &str, rows: &[(&str, Kind, &str, f64)]) -> &mut Self {
        for (name, kind, help, value) in rows {
            self.one(&format!("{prefix}_{name}"), *kind, help, *value);
        }
        self
    }

    /// A family with one sample per `(label value, value)` of its `label`.
    pub(crate) fn labelled<'a>(
        &mut self,
        (name, kind): (&str, Kind),
        help: &str,
        label: &str,
        values: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> &mut Self {
        self.family(name, kind, help);
        for (v, x) in values {
            self.sample(name, &[(label, v)], x);
        }
        self
    }

    pub(crate) fn finish(self) -> String {
        self.0
    }
}

/// A sample's value as the text format writes it: Rust's `inf`, `-inf` and `NaN` are `+Inf`,
/// `-Inf` and `NaN` there.
struct Value(f64);

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            v if v.is_nan() => f.write_str("NaN"),
            v if v == f64::INFINITY => f.write_str("+Inf"),
            v if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            v => write!(f, "{v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escaped_labels() {
        let mut t = Text::default();
        t.one("a_total", Kind::Counter, "A count.", 3.0);
        t.family("b", Kind::Gauge, "B, per x.")
            .sample("b", &[("x", "q\"\\\n")], 1.5);
        assert_eq!(
            t.finish(),
            "# HELP a_total A count.\n# TYPE a_total counter\na_total 3\n\
             # HELP b B, per x.\n# TYPE b gauge\nb{x=\"q\\\"\\\\\\n\"} 1.5\n"
        );
    }

    /// Infinities and NaN as the text format spells them, which a Prometheus parser reads back.
    #[test]
    fn infinities_are_spelled_as_prometheus_reads_them() {
        let mut t = Text::default();
        t.one("up", Kind::Gauge, "Up.", f64::INFINITY);
        t.one("down", Kind::Gauge, "Down.", f64::NEG_INFINITY);
        t.one("odd", Kind::Gauge, "Odd.", f64::NAN);
        let text = t.finish();
        assert!(
            text.contains("\nup +Inf\n") && text.contains("\ndown -Inf\n"),
            "{text}"
        );
        assert!(text.contains("\nodd NaN\n"), "{text}");
    }
}
