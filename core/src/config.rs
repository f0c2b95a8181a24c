//! The module's params (SPEC §4): parsed once at `init`, refused with a message naming them.

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
}

pub const DEFAULT_COUNTER_TYPE: &str = "thinking/tokens";
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// A cap on `max_sessions` that keeps a typo from reserving the SPU's memory.
pub const MAX_MAX_SESSIONS: usize = 10_000_000;

impl Default for Config {
    fn default() -> Self {
        Config {
            view: View::Frames,
            subagents: Subagents::Drop,
            counter_type: DEFAULT_COUNTER_TYPE.to_owned(),
            capacity: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            malformed: Malformed::Pass,
            input: Input::AgentFold,
        }
    }
}

/// A param `init` refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError(pub String);

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

pub const PARAMS: [&str; 7] = [
    "emit",
    "subagents",
    "counter_type",
    "capacity",
    "max_sessions",
    "malformed",
    "input",
];

fn bad(key: &str, value: &str, expected: &str) -> ParamError {
    ParamError(format!(
        "agent-fold: bad value {value:?} for param `{key}`: expected {expected}"
    ))
}

impl Config {
    /// Reads the params a consumer passed (`-e key=value`, or `with:` in a transforms list).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Config, ParamError> {
        let mut c = Config::default();
        for (key, value) in params {
            match key {
                "emit" => {
                    c.view = match value {
                        "frames" => View::Frames,
                        "pressure" => View::Pressure,
                        _ => return Err(bad(key, value, "frames or pressure")),
                    }
                }
                "subagents" => {
                    c.subagents = match value {
                        "drop" => Subagents::Drop,
                        "keep" => Subagents::Keep,
                        _ => return Err(bad(key, value, "drop or keep")),
                    }
                }
                "counter_type" => {
                    if value.is_empty() {
                        return Err(bad(key, value, "a non-empty frame type"));
                    }
                    c.counter_type = value.to_owned();
                }
                "capacity" => {
                    c.capacity = match value.parse::<u64>() {
                        Ok(n) if n >= 1 => Some(n),
                        _ => return Err(bad(key, value, "an integer ≥ 1 (tokens)")),
                    }
                }
                "max_sessions" => {
                    c.max_sessions = match value.parse::<usize>() {
                        Ok(n) if (1..=MAX_MAX_SESSIONS).contains(&n) => n,
                        _ => {
                            return Err(bad(
                                key,
                                value,
                                &format!("an integer in 1..={MAX_MAX_SESSIONS}"),
                            ));
                        }
                    }
                }
                "malformed" => {
                    c.malformed = match value {
                        "pass" => Malformed::Pass,
                        "drop" => Malformed::Drop,
                        "fail" => Malformed::Fail,
                        _ => return Err(bad(key, value, "pass, drop or fail")),
                    }
                }
                "input" => {
                    c.input = match Input::parse(value) {
                        Some(i) => i,
                        None => return Err(bad(key, value, &Input::NAMES.join(", "))),
                    }
                }
                _ => {
                    return Err(ParamError(format!(
                        "agent-fold: unknown param `{key}` (known: {})",
                        PARAMS.join(", ")
                    )));
                }
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        assert_eq!(Config::from_params([]).unwrap(), Config::default());
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
        ])
        .unwrap();
        assert_eq!(c.view, View::Pressure);
        assert_eq!(c.subagents, Subagents::Keep);
        assert_eq!(c.counter_type, "x/y");
        assert_eq!(c.capacity, Some(200_000));
        assert_eq!(c.max_sessions, 3);
        assert_eq!(c.malformed, Malformed::Fail);
        assert_eq!(c.input, Input::Codex);
    }

    #[test]
    fn every_input_is_read() {
        for name in Input::NAMES {
            let c = Config::from_params([("input", name)]).unwrap();
            assert_eq!(c.input.name(), name);
        }
        let e = Config::from_params([("input", "claude")]).unwrap_err();
        assert!(
            e.0.contains("`input`") && e.0.contains("claude-stream"),
            "{e}"
        );
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
            ("colour", "blue"),
        ] {
            let e = Config::from_params([(k, v)]).unwrap_err();
            assert!(e.0.contains(&format!("`{k}`")), "{e}");
        }
    }
}
