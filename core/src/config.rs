//! The module's params (SPEC §4): one table says each param's name, values and default; parsed
//! once at `init`, refused with an error naming the param.

use std::fmt;

pub use crate::adapt::Input;

/// Which view an instance serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The chat stream: counter runs folded, sub-agent dispatches dropped.
    Frames,
    /// `context/pressure` records for the sibling topic.
    Pressure,
}

impl View {
    /// The view's name, as param `emit` and a checkpoint's `view` spell it.
    pub fn name(self) -> &'static str {
        match self {
            View::Frames => "frames",
            View::Pressure => "pressure",
        }
    }
}

/// What the frames view does with a sub-agent's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subagents {
    Drop,
    /// Passed through in place, never folded, transparent to main runs.
    Keep,
}

/// What either view does with a record that is not a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Emitted unchanged (frames view; ignored by the pressure view); a main non-counter.
    Pass,
    Drop,
    /// The invocation fails, naming the record's offset.
    Fail,
}

/// How the projection prices what the surface gained or lost since the provider's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// The estimate scaled by what the session's own readings say it is worth (SPEC §3).
    Calibrated,
    /// The seed's fixed "4 chars ≈ 1 token".
    Fixed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub view: View,
    pub subagents: Subagents,
    pub counter_type: String,
    pub capacity: Option<u64>,
    pub max_sessions: usize,
    pub malformed: Malformed,
    /// The records' format: frames as they are, or an agent's log to adapt first.
    pub input: Input,
    pub projection: Projection,
}

/// One param: its name, the values it takes (the default first) and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub values: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

/// A cap on `max_sessions` that keeps a typo from reserving the SPU's memory.
pub const MAX_MAX_SESSIONS: usize = 10_000_000;

/// Every param, in the order SPEC §4 lists them.
pub const PARAMS: [Param; 8] = [
    Param {
        name: "emit",
        values: "frames | pressure",
        default: "frames",
        doc: "which view this instance serves",
    },
    Param {
        name: "subagents",
        values: "drop | keep",
        default: "drop",
        doc: "frames view: what becomes of a sub-agent's frames",
    },
    Param {
        name: "counter_type",
        values: "a frame type",
        default: "thinking/tokens",
        doc: "the type of the frames a run folds",
    },
    Param {
        name: "capacity",
        values: "an integer ≥ 1",
        default: "",
        doc: "the context window when no request/header names one",
    },
    Param {
        name: "max_sessions",
        values: "an integer in 1..=10000000",
        default: "10000",
        doc: "sessions that keep state; the least recently used is evicted first and comes back partial",
    },
    Param {
        name: "malformed",
        values: "pass | drop | fail",
        default: "pass",
        doc: "what becomes of a record that is not a JSON object",
    },
    Param {
        name: "input",
        values: "agent-fold | claude-code | claude-stream | codex",
        default: "agent-fold",
        doc: "the log format on the topic; others are adapted to frames first",
    },
    Param {
        name: "projection",
        values: "calibrated | fixed",
        default: "calibrated",
        doc: "pressure view: scale the estimated delta by the session's calibration, or the seed's fixed heuristic",
    },
];

impl Default for Config {
    fn default() -> Self {
        Config::from_params([]).expect("the defaults parse")
    }
}

/// A param `init` refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// No such param.
    Unknown { key: String },
    /// A value the param does not take.
    BadValue {
        key: String,
        value: String,
        expected: &'static str,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ParamError::Unknown { key } => {
                let known: Vec<&str> = PARAMS.iter().map(|p| p.name).collect();
                write!(f, "unknown param `{key}` (known: {})", known.join(", "))
            }
            ParamError::BadValue {
                key,
                value,
                expected,
            } => {
                write!(
                    f,
                    "bad value {value:?} for param `{key}`: expected {expected}"
                )
            }
        }
    }
}

impl std::error::Error for ParamError {}

impl ParamError {
    /// The param it names.
    pub fn key(&self) -> &str {
        match self {
            ParamError::Unknown { key } | ParamError::BadValue { key, .. } => key,
        }
    }
}

impl Config {
    /// Reads the params a consumer passed (`-e key=value`, or `with:` in a transforms list);
    /// every param not given takes its default from [`PARAMS`].
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Config, ParamError> {
        let mut c = Config {
            view: View::Frames,
            subagents: Subagents::Drop,
            counter_type: String::new(),
            capacity: None,
            max_sessions: 0,
            malformed: Malformed::Pass,
            input: Input::AgentFold,
            projection: Projection::Calibrated,
        };
        for p in PARAMS {
            if !p.default.is_empty() {
                c.set(p.name, p.default)?;
            }
        }
        for (key, value) in params {
            c.set(key, value)?;
        }
        Ok(c)
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        let Some(param) = PARAMS.iter().find(|p| p.name == key) else {
            return Err(ParamError::Unknown {
                key: key.to_owned(),
            });
        };
        let bad = || ParamError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: param.values,
        };
        match key {
            "emit" => {
                self.view = [View::Frames, View::Pressure]
                    .into_iter()
                    .find(|v| v.name() == value)
                    .ok_or_else(bad)?;
            }
            "subagents" => {
                self.subagents = match value {
                    "drop" => Subagents::Drop,
                    "keep" => Subagents::Keep,
                    _ => return Err(bad()),
                }
            }
            "counter_type" if value.is_empty() => return Err(bad()),
            "counter_type" => self.counter_type = value.to_owned(),
            "capacity" => {
                self.capacity = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(bad)?,
                )
            }
            "max_sessions" => {
                self.max_sessions = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_MAX_SESSIONS).contains(n))
                    .ok_or_else(bad)?
            }
            "malformed" => {
                self.malformed = match value {
                    "pass" => Malformed::Pass,
                    "drop" => Malformed::Drop,
                    "fail" => Malformed::Fail,
                    _ => return Err(bad()),
                }
            }
            "input" => self.input = Input::parse(value).ok_or_else(bad)?,
            "projection" => {
                self.projection = match value {
                    "calibrated" => Projection::Calibrated,
                    "fixed" => Projection::Fixed,
                    _ => return Err(bad()),
                }
            }
            _ => unreachable!("every param of the table is read"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_table() {
        let c = Config::default();
        assert_eq!(c.view, View::Frames);
        assert_eq!(c.counter_type, "thinking/tokens");
        assert_eq!(c.max_sessions, 10_000);
        assert_eq!(c.projection, Projection::Calibrated);
        assert_eq!(c.capacity, None);
    }

    #[test]
    fn every_param_is_read() {
        let c = Config::from_params([
            ("emit", "pressure"),
            ("subagents", "keep"),
            ("counter_type", "x/y"),
            ("capacity", "200000"),
            ("max_sessions", "3"),
            ("malformed", "fail"),
            ("input", "codex"),
            ("projection", "fixed"),
        ])
        .unwrap();
        assert_eq!(c.view, View::Pressure);
        assert_eq!(c.subagents, Subagents::Keep);
        assert_eq!(c.counter_type, "x/y");
        assert_eq!(c.capacity, Some(200_000));
        assert_eq!(c.max_sessions, 3);
        assert_eq!(c.malformed, Malformed::Fail);
        assert_eq!(c.input, Input::Codex);
        assert_eq!(c.projection, Projection::Fixed);
    }

    #[test]
    fn every_input_is_read() {
        for name in Input::NAMES {
            let c = Config::from_params([("input", name)]).unwrap();
            assert_eq!(c.input.name(), name);
        }
        let e = Config::from_params([("input", "claude")]).unwrap_err();
        assert!(
            matches!(&e, ParamError::BadValue { key, .. } if key == "input"),
            "{e}"
        );
        assert!(e.to_string().contains("claude-stream"), "{e}");
    }

    #[test]
    fn refusals_name_the_param() {
        for (k, v) in [
            ("emit", "both"),
            ("subagents", "yes"),
            ("counter_type", ""),
            ("capacity", "0"),
            ("capacity", "-5"),
            ("max_sessions", "0"),
            ("max_sessions", "many"),
            ("malformed", "ignore"),
            ("input", "json"),
            ("input", ""),
            ("projection", "smart"),
        ] {
            let e = Config::from_params([(k, v)]).unwrap_err();
            assert!(
                matches!(&e, ParamError::BadValue { key, value, .. } if key == k && value == v),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("`{k}`")), "{e}");
        }
        let e = Config::from_params([("colour", "blue")]).unwrap_err();
        assert_eq!(
            e,
            ParamError::Unknown {
                key: "colour".into()
            }
        );
        assert_eq!(e.key(), "colour");
    }
}
