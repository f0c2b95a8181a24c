//! The status line's text: a template of named fields, filled from the session's latest
//! `context/pressure` record and the payload. A figure that is not known leaves its field empty
//! and the default line drops the part it belongs to — never a guess.

use serde_json::Value;

use super::Payload;

/// Every field a template may name.
pub(super) const FIELDS: [&str; 15] = [
    "compactions",
    "percent",
    "used",
    "window",
    "until",
    "compact_at",
    "pressure",
    "mark",
    "model",
    "session",
    "used_tokens",
    "window_tokens",
    "until_tokens",
    "compact_at_tokens",
    "pressure_tokens",
];

/// What a line can show: the session's latest record, and what the payload names.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fields {
    pub record: Option<Value>,
    pub model: Option<String>,
    pub session: Option<String>,
}

impl Fields {
    pub(crate) fn of(record: Option<&Value>, p: &Payload) -> Fields {
        Fields {
            record: record.cloned(),
            model: p.model.clone(),
            session: p.session_id.clone(),
        }
    }

    fn n(&self, name: &str) -> Option<u64> {
        self.record.as_ref()?.get(name)?.as_u64()
    }

    /// `projectedTokens`, else `pressureTokens`.
    fn used(&self) -> Option<u64> {
        self.n("projectedTokens").or(self.n("pressureTokens"))
    }

    fn occupancy(&self) -> Option<f64> {
        self.record.as_ref()?.get("contextOccupancy")?.as_f64()
    }

    /// The figure is a projection since the last reading (it differs from the reading).
    fn projecting(&self) -> bool {
        let projected = self.n("projectedTokens");
        projected.is_some() && projected != self.n("pressureTokens")
    }

    /// A field by its name; empty when its figure is unknown.
    fn get(&self, name: &str) -> String {
        let figure = match name {
            "percent" => {
                return self
                    .occupancy()
                    .map(|o| format!("{:.0}", o * 100.0))
                    .unwrap_or_default();
            }
            "mark" => return if self.projecting() { "~" } else { "" }.to_owned(),
            // How many times the session compacted (contract §3.6), as a count.
            "compactions" => {
                return self
                    .n("compactions")
                    .map(|n| n.to_string())
                    .unwrap_or_default();
            }
            "model" => return self.model.clone().unwrap_or_default(),
            "session" => {
                return self
                    .session
                    .as_deref()
                    .map(|s| s.chars().take(8).collect())
                    .unwrap_or_default();
            }
            _ => name,
        };
        let (base, plain) = match figure.strip_suffix("_tokens") {
            Some(b) => (b, true),
            None => (figure, false),
        };
        let v = match base {
            "used" => self.used(),
            "window" => self.n("capacity"),
            "until" => self.n("untilCompactTokens"),
            "compact_at" => self.n("compactAtTokens"),
            "pressure" => self.n("pressureTokens"),
            _ => None,
        };
        match (v, plain) {
            (Some(n), true) => n.to_string(),
            (Some(n), false) => short(n),
            (None, _) => String::new(),
        }
    }
}

/// `84213` → `84k`, `1500` → `1.5k`, `1250000` → `1.25M`: a terminal's few columns.
pub(super) fn short(n: u64) -> String {
    let trim = |s: String| {
        let s = s.trim_end_matches('0').trim_end_matches('.').to_owned();
        if s.is_empty() { "0".to_owned() } else { s }
    };
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{}k", trim(format!("{:.1}", n as f64 / 1e3))),
        10_000..=999_999 => format!("{}k", (n as f64 / 1e3).round() as u64),
        _ => format!("{}M", trim(format!("{:.2}", n as f64 / 1e6))),
    }
}

/// A line's template: literal text and named fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Template {
    /// The default line, whose parts drop out when their figure is unknown.
    Default,
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Field(&'static str),
}

impl Template {
    pub(crate) fn default_line() -> Template {
        Template::Default
    }

    /// Reads `--format`: `{name}` names a field (see `FIELDS`), `{{` and `}}` are braces.
    pub(crate) fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                    let Some(field) = FIELDS.iter().find(|f| **f == name) else {
                        return Err(format!(
                            "--format names {{{name}}}, which is none of {}",
                            FIELDS.map(|f| format!("{{{f}}}")).join(" ")
                        ));
                    };
                    if !lit.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Field(field));
                }
                '}' => return Err("--format has a `}` with no `{` (write `}}` for a brace)".into()),
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        Ok(Template::Parts(parts))
    }

    /// The line. The default: `~38% · ~76k/200k · ~91k to compact` while projecting, `42% ·
    /// ~84k/200k · 83k to compact` right at a reading; parts whose figure is unknown left out.
    pub(crate) fn fill(&self, f: &Fields) -> String {
        match self {
            Template::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.clone(),
                    Part::Field(name) => f.get(name),
                })
                .collect(),
            Template::Default => {
                let mark = f.get("mark");
                let mut parts = Vec::new();
                if f.occupancy().is_some() {
                    parts.push(format!("{mark}{}%", f.get("percent")));
                }
                match (f.used(), f.n("capacity")) {
                    (Some(_), Some(_)) => {
                        parts.push(format!("~{}/{}", f.get("used"), f.get("window")))
                    }
                    (Some(_), None) => parts.push(format!("~{}", f.get("used"))),
                    _ => {}
                }
                if f.n("untilCompactTokens").is_some() {
                    parts.push(format!("{mark}{} to compact", f.get("until")));
                }
                if parts.is_empty() {
                    return "ctx: no reading yet".to_owned();
                }
                parts.join(" · ")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        Fields {
            record: Some(serde_json::json!({
                "pressureTokens": 84_213, "projectedTokens": 76_400, "capacity": 200_000,
                "contextOccupancy": 0.382, "compactAtTokens": 167_000, "untilCompactTokens": 90_600,
            })),
            model: Some("Opus".into()),
            session: Some("6113e919-67d3".into()),
        }
    }

    /// The same figures right at a reading: the projection is the reading.
    fn at_reading(mut f: Fields) -> Fields {
        let r = f.record.as_mut().unwrap();
        r["pressureTokens"] = r["projectedTokens"].clone();
        f
    }

    #[test]
    fn figures_fit_a_terminal() {
        assert_eq!(short(999), "999");
        assert_eq!(short(1_500), "1.5k");
        assert_eq!(short(2_000), "2k");
        assert_eq!(short(84_213), "84k");
        assert_eq!(short(1_250_000), "1.25M");
        assert_eq!(short(1_000_000), "1M");
    }

    #[test]
    fn the_default_line_marks_a_projection_and_drops_what_is_unknown() {
        assert_eq!(
            Template::Default.fill(&fields()),
            "~38% · ~76k/200k · ~91k to compact"
        );
        let mut f = at_reading(fields());
        assert_eq!(
            Template::Default.fill(&f),
            "38% · ~76k/200k · 91k to compact"
        );
        let r = f.record.as_mut().unwrap().as_object_mut().unwrap();
        for k in ["untilCompactTokens", "capacity", "contextOccupancy"] {
            r.insert(k.into(), serde_json::Value::Null);
        }
        assert_eq!(Template::Default.fill(&f), "~76k");
        assert_eq!(
            Template::Default.fill(&Fields::default()),
            "ctx: no reading yet"
        );
    }

    #[test]
    fn templates_name_fields_and_refuse_unknown_ones() {
        let t = Template::parse("{model} {mark}{percent}% {{{used_tokens}}} left {until}").unwrap();
        assert_eq!(t.fill(&fields()), "Opus ~38% {76400} left 91k");
        assert_eq!(t.fill(&Fields::default()), " % {} left ");
        let e = Template::parse("{percnt}").unwrap_err();
        assert!(e.contains("{percnt}") && e.contains("{percent}"), "{e}");
        assert!(Template::parse("a } b").is_err());
        assert_eq!(
            Template::parse("{session}").unwrap().fill(&fields()),
            "6113e919"
        );
    }
}
