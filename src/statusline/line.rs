//! The status line's text: a template of named fields, filled from the session's latest
//! `context/pressure` record and the payload. A figure that is not known leaves its field empty
//! and the default line drops the part it belongs to — never a guess.

use serde_json::Value;

use super::Payload;

/// Every field a template may name.
pub const FIELDS: [&str; 14] = [
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

/// What a line can show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields {
    /// `projectedTokens`, else `pressureTokens`.
    pub used: Option<u64>,
    pub window: Option<u64>,
    pub occupancy: Option<f64>,
    pub until: Option<u64>,
    pub compact_at: Option<u64>,
    pub pressure: Option<u64>,
    /// The figure is a projection since the last reading (it differs from the reading).
    pub projecting: bool,
    pub model: Option<String>,
    pub session: Option<String>,
}

impl Fields {
    pub fn of(record: Option<&Value>, p: &Payload) -> Fields {
        let n = |k: &str| record.and_then(|r| r.get(k)).and_then(Value::as_u64);
        let (pressure, projected) = (n("pressureTokens"), n("projectedTokens"));
        Fields {
            used: projected.or(pressure),
            window: n("capacity"),
            occupancy: record
                .and_then(|r| r.get("contextOccupancy"))
                .and_then(Value::as_f64),
            until: n("untilCompactTokens"),
            compact_at: n("compactAtTokens"),
            pressure,
            projecting: projected.is_some() && projected != pressure,
            model: p.model.clone(),
            session: p.session_id.clone(),
        }
    }

    fn get(&self, name: &str) -> String {
        let short = |v: Option<u64>| v.map(short).unwrap_or_default();
        let plain = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
        match name {
            "percent" => self
                .occupancy
                .map(|o| format!("{:.0}", o * 100.0))
                .unwrap_or_default(),
            "used" => short(self.used),
            "window" => short(self.window),
            "until" => short(self.until),
            "compact_at" => short(self.compact_at),
            "pressure" => short(self.pressure),
            "mark" => if self.projecting { "~" } else { "" }.to_owned(),
            "model" => self.model.clone().unwrap_or_default(),
            "session" => self
                .session
                .as_deref()
                .map(|s| s.chars().take(8).collect())
                .unwrap_or_default(),
            "used_tokens" => plain(self.used),
            "window_tokens" => plain(self.window),
            "until_tokens" => plain(self.until),
            "compact_at_tokens" => plain(self.compact_at),
            "pressure_tokens" => plain(self.pressure),
            _ => String::new(),
        }
    }
}

/// `84213` → `84k`, `1500` → `1.5k`, `1250000` → `1.25M`: a terminal's few columns.
pub fn short(n: u64) -> String {
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
pub enum Template {
    /// The default line, whose parts drop out when their figure is unknown.
    Default,
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Field(&'static str),
}

impl Template {
    pub fn default_line() -> Template {
        Template::Default
    }

    /// Reads `--format`: `{name}` names a field (see [`FIELDS`]), `{{` and `}}` are braces.
    pub fn parse(text: &str) -> Result<Template, String> {
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
    pub fn fill(&self, f: &Fields) -> String {
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
                if f.occupancy.is_some() {
                    parts.push(format!("{mark}{}%", f.get("percent")));
                }
                match (f.used, f.window) {
                    (Some(_), Some(_)) => {
                        parts.push(format!("~{}/{}", f.get("used"), f.get("window")))
                    }
                    (Some(_), None) => parts.push(format!("~{}", f.get("used"))),
                    _ => {}
                }
                if f.until.is_some() {
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
            used: Some(76_400),
            window: Some(200_000),
            occupancy: Some(0.382),
            until: Some(90_600),
            compact_at: Some(167_000),
            pressure: Some(84_213),
            projecting: true,
            model: Some("Opus".into()),
            session: Some("6113e919-67d3".into()),
        }
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
        let mut f = fields();
        assert_eq!(
            Template::Default.fill(&f),
            "~38% · ~76k/200k · ~91k to compact"
        );
        f.projecting = false;
        assert_eq!(
            Template::Default.fill(&f),
            "38% · ~76k/200k · 91k to compact"
        );
        f.until = None;
        f.window = None;
        f.occupancy = None;
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
