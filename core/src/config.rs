//! The module's params (contract §4): one table says each param's name, values and default; parsed
//! once at `init`, refused with an error naming the param.

/// The format of the records an instance reads (param `input`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
    /// Frames as they are: nothing is adapted.
    #[default]
    AgentFold,
    /// Claude Code session transcripts (`~/.claude/projects/…/<session>.jsonl`).
    ClaudeCode,
    /// `claude -p --output-format stream-json --verbose` output.
    ClaudeStream,
    /// OpenAI Codex rollouts (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
    /// OpenTelemetry log events of Claude Code, Codex or Gemini CLI, one record each, as
    /// `agent-fold collect` writes them (`docs/adapters.md`).
    Otel,
    /// Gemini CLI chats (`~/.gemini/tmp/<project>/chats/`): the saved-chat JSON document, one
    /// record each time it is written, or the JSONL recording, one record a line.
    GeminiCli,
    /// OpenCode sessions: the `opencode export` document, or the message and part files of its
    /// storage, one record each.
    OpenCode,
}

impl Input {
    pub const NAMES: [&'static str; 7] = [
        "agent-fold",
        "claude-code",
        "claude-stream",
        "codex",
        "otel",
        "gemini-cli",
        "opencode",
    ];

    pub fn parse(name: &str) -> Option<Input> {
        Some(match name {
            "agent-fold" => Input::AgentFold,
            "claude-code" => Input::ClaudeCode,
            "claude-stream" => Input::ClaudeStream,
            "codex" => Input::Codex,
            "otel" => Input::Otel,
            "gemini-cli" => Input::GeminiCli,
            "opencode" => Input::OpenCode,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Input::AgentFold => "agent-fold",
            Input::ClaudeCode => "claude-code",
            Input::ClaudeStream => "claude-stream",
            Input::Codex => "codex",
            Input::Otel => "otel",
            Input::GeminiCli => "gemini-cli",
            Input::OpenCode => "opencode",
        }
    }
}

/// Which view an instance serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The chat stream: counter runs folded, sub-agent dispatches dropped.
    Frames,
    /// `context/pressure` records for the sibling topic.
    Pressure,
}

impl View {
    pub fn parse(name: &str) -> Option<View> {
        [View::Frames, View::Pressure]
            .into_iter()
            .find(|v| v.name() == name)
    }

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

impl Subagents {
    pub fn parse(name: &str) -> Option<Subagents> {
        match name {
            "drop" => Some(Subagents::Drop),
            "keep" => Some(Subagents::Keep),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Subagents::Drop => "drop",
            Subagents::Keep => "keep",
        }
    }
}

impl Malformed {
    pub fn parse(name: &str) -> Option<Malformed> {
        match name {
            "pass" => Some(Malformed::Pass),
            "drop" => Some(Malformed::Drop),
            "fail" => Some(Malformed::Fail),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Malformed::Pass => "pass",
            Malformed::Drop => "drop",
            Malformed::Fail => "fail",
        }
    }
}

/// How the projection prices what the surface gained or lost since the provider's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// [`Projection::Calibrated`] until a compaction; after one, until the next reading, the
    /// session's base plus what the context holds now (contract §3.4).
    Rebased,
    /// The estimate scaled by what the session's own readings say it is worth (contract §3.3).
    Calibrated,
    /// The plain "4 chars ≈ 1 token" estimate, unscaled.
    Fixed,
}

impl Projection {
    pub const NAMES: [&'static str; 3] = ["rebased", "calibrated", "fixed"];

    pub fn parse(name: &str) -> Option<Projection> {
        [
            Projection::Rebased,
            Projection::Calibrated,
            Projection::Fixed,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Projection::Rebased => "rebased",
            Projection::Calibrated => "calibrated",
            Projection::Fixed => "fixed",
        }
    }
}

/// Param `compact_at`: where the prompt size an agent compacts at comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactAt {
    /// The session's last automatic compaction, else the agent's documented default.
    #[default]
    Learnt,
    /// Given.
    Tokens(u64),
    /// Never shown.
    Never,
}

/// What an agent puts back at a compaction that its log does not show, before a session has
/// learnt its own (contract §3.4): `agent-fold accuracy --cross-validate`'s fit over the shared
/// real logs (`docs/accuracy.md`; scored there on logs it was not fitted on). For Claude Code
/// it is what comes back beyond the files its rule re-reads, which the adapter prices on the
/// compaction itself (`restore_tokens`): skills, plans, todos — at a compaction whose session
/// showed any (else its `compact/start` says `restore_beyond: false` and none is added);
/// Codex's summary is not in its rollout. With `input=otel` the agent varies by session: the
/// adapter names its agent's prior on the session's first header (`agent_restore_prior`,
/// header field `compact_restore`), and this is the prior of a session whose header names none.
pub const fn restore_prior(input: Input) -> u64 {
    match input {
        Input::ClaudeCode | Input::ClaudeStream => 8_300,
        Input::Codex => 1_700,
        // No compaction in a shared Gemini CLI or OpenCode log to fit one on: none.
        Input::AgentFold | Input::Otel | Input::GeminiCli | Input::OpenCode => 0,
    }
}

/// The prior of an agent an `input=otel` record names (`claude-code`, `codex`): the same fit as
/// its own log's ([`restore_prior`]); `None` for an agent none was fitted for.
pub(crate) fn agent_restore_prior(agent: &str) -> Option<u64> {
    match agent {
        "claude-code" => Some(restore_prior(Input::ClaudeCode)),
        "codex" => Some(restore_prior(Input::Codex)),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub view: View,
    pub subagents: Subagents,
    pub counter_type: String,
    pub capacity: Option<u64>,
    pub max_sessions: usize,
    /// Messages a session keeps on its surface (contract §3.7).
    pub max_nodes: usize,
    pub malformed: Malformed,
    /// The records' format: frames as they are, or an agent's log to adapt first.
    pub input: Input,
    pub projection: Projection,
    pub compact_at: CompactAt,
    /// What the agent puts back unseen at a compaction, until a session has learnt its own.
    pub compact_restore: u64,
    /// Param `compact_restore` was given: it stands over the prior a session's header names
    /// (`input=otel` names each session's agent's).
    pub restore_named: bool,
    /// Whether a session learns what its agent puts back from its own compactions (on for
    /// every param set; `agent-fold accuracy` switches it off to measure what comes back).
    pub learn_restore: bool,
}

/// One param: its name, the values it takes, its default and what it does. [`PARAMS`] is the
/// one table: `Smart.toml`'s `[[params]]`, the contract's §4 table and every host tool's
/// `--help` are generated from or checked against it (`tests/suite/params.rs`).
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    /// The values it takes, as a person reads them (`init`'s refusal quotes it).
    pub values: &'static str,
    /// Its default, or `""` for unset.
    pub default: &'static str,
    /// What it does, in a sentence or two.
    pub doc: &'static str,
}

impl Param {
    /// The default as a person reads it.
    pub fn default_shown(&self) -> &'static str {
        if self.default.is_empty() {
            "unset"
        } else {
            self.default
        }
    }

    /// The one-paragraph description `Smart.toml` and `--help` carry.
    pub fn describe(&self) -> String {
        format!(
            "{} Values: {}; default: {}.",
            self.doc,
            self.values,
            self.default_shown()
        )
    }
}

/// A cap on `max_sessions` that keeps a typo from reserving the SPU's memory.
pub(crate) const MAX_MAX_SESSIONS: usize = 10_000_000;

/// The largest `max_nodes`: surface positions stay below 2^30 between sweeps.
pub(crate) const MAX_MAX_NODES: usize = 10_000_000;

/// Every param, in the order the contract (§4) lists them.
pub const PARAMS: [Param; 11] = [
    Param {
        name: "emit",
        values: "frames or pressure",
        default: "frames",
        doc: "Which view this instance serves: the chat stream with counter runs folded, or context/pressure and context/error records for the sibling topic `<topic>-pressure`.",
    },
    Param {
        name: "subagents",
        values: "drop or keep",
        default: "drop",
        doc: "Frames view: drop the frames whose extras.parent_tool_use_id is a string, or pass them in place, never folded and invisible to main runs.",
    },
    Param {
        name: "counter_type",
        values: "a frame type",
        default: "thinking/tokens",
        doc: "The `type` of the counter frames a run folds.",
    },
    Param {
        name: "capacity",
        values: "an integer >= 1",
        default: "",
        doc: "Pressure view: the context window when neither a request/header nor the adapted log names one (§3.1).",
    },
    Param {
        name: "max_sessions",
        values: "an integer in 1..=10000000",
        default: "10000",
        doc: "Sessions keeping state; beyond it the least recently used is evicted (adapter and view state together) and comes back partial. A key over 1,024 bytes keeps none, so memory is bounded by max_sessions x (1,024-byte key + state, its surface at most max_nodes x 16 bytes), in the engine's 1 GB too.",
    },
    Param {
        name: "max_nodes",
        values: "an integer in 1..=10000000",
        default: "100000",
        doc: "Pressure view: messages a session keeps on its surface (about 16 bytes each); past it the oldest are dropped and the session goes on partial (§3.7): messageTokens null, the projection counting what changed since the reading it stands on, a replacement from a dropped message a front cut. A session of any length fits in max_nodes x 16 bytes.",
    },
    Param {
        name: "malformed",
        values: "pass, drop or fail",
        default: "pass",
        doc: "A record that is not a JSON object is passed unchanged (a main non-counter; the pressure view ignores it), dropped, or fails the invocation naming its offset.",
    },
    Param {
        name: "input",
        values: "agent-fold, claude-code, claude-stream, codex, otel, gemini-cli or opencode",
        default: "agent-fold",
        doc: "The records' format: agent-fold frames, or an agent's own log (Claude Code transcripts, claude -p stream-json, Codex rollouts, the OpenTelemetry log events agent-fold collect writes, Gemini CLI chats, OpenCode sessions) adapted to frames first, per session, each line (each message of a document written again) applied once (§1).",
    },
    Param {
        name: "projection",
        values: "rebased, calibrated or fixed",
        default: "rebased",
        doc: "Pressure view: re-base at a compaction (§3.4), scale the estimated delta by the session's own readings (§3.3), or the plain 4-chars-per-token estimate.",
    },
    Param {
        name: "compact_at",
        values: "an integer >= 1, or none",
        default: "",
        doc: "Pressure view: the prompt size at which the agent compacts on its own, or none for no threshold. Unset: the session's last automatic compaction, else the agent's own threshold, else for Claude Code the window less its reserve (§3.5).",
    },
    Param {
        name: "compact_restore",
        values: "an integer >= 0",
        default: "",
        doc: "Pressure view, rebased: what the agent puts back at a compaction that its log does not show, beyond what its compaction's restore_tokens prices (none where it says restore_beyond: false), until the session learns its own (§3.4). Unset: 8300 for claude-code and claude-stream, 1700 for codex, 0 for agent-fold, gemini-cli and opencode, fitted on the shared real logs and scored on logs they were not fitted on (docs/accuracy.md); for otel each session's agent's (the same, else 0).",
    },
];

/// An integer in `1..=max`.
fn count(value: &str, max: usize) -> Option<usize> {
    value.parse().ok().filter(|n| (1..=max).contains(n))
}

impl Default for Config {
    fn default() -> Self {
        Config::from_params([]).expect("the defaults parse")
    }
}

/// A param `init` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// No such param.
    #[error("unknown param `{key}` (known: {})", known_params())]
    Unknown { key: String },
    /// A value the param does not take.
    #[error("bad value {value:?} for param `{key}`: expected {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: &'static str,
    },
}

/// Every param's name, for a refusal to list.
fn known_params() -> String {
    PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

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
            max_nodes: 0,
            malformed: Malformed::Pass,
            input: Input::AgentFold,
            projection: Projection::Rebased,
            compact_at: CompactAt::Learnt,
            compact_restore: 0,
            restore_named: false,
            learn_restore: true,
        };
        for p in PARAMS {
            if !p.default.is_empty() {
                c.set(p.name, p.default)?;
            }
        }
        let mut restore = None;
        for (key, value) in params {
            if key == "compact_restore" {
                restore = Some(value);
            }
            c.set(key, value)?;
        }
        // The prior follows the input unless the param named one, in whichever order they came.
        if restore.is_none() {
            c.compact_restore = restore_prior(c.input);
        }
        c.restore_named = restore.is_some();
        Ok(c)
    }

    /// The log's format, and with it the restore prior unless `compact_restore` was named
    /// (the prior follows the input, as [`Config::from_params`] reads it in any order).
    pub fn set_input(&mut self, input: Input) {
        self.input = input;
        if !self.restore_named {
            self.compact_restore = restore_prior(input);
        }
    }

    /// The params that give this config back: a SmartModule takes its params as strings (the
    /// engine's, and `Smart.toml`'s), so a host tool's typed config crosses as these
    /// (`Config::from_params(c.params()) == c` for every config whose `learn_restore` is on:
    /// that one is no param).
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("emit", self.view.name().to_owned()),
            ("subagents", self.subagents.name().to_owned()),
            ("counter_type", self.counter_type.clone()),
            ("max_sessions", self.max_sessions.to_string()),
            ("max_nodes", self.max_nodes.to_string()),
            ("malformed", self.malformed.name().to_owned()),
            ("input", self.input.name().to_owned()),
            ("projection", self.projection.name().to_owned()),
        ];
        if let Some(c) = self.capacity {
            out.push(("capacity", c.to_string()));
        }
        match self.compact_at {
            CompactAt::Learnt => {}
            CompactAt::Tokens(n) => out.push(("compact_at", n.to_string())),
            CompactAt::Never => out.push(("compact_at", "none".to_owned())),
        }
        if self.restore_named {
            out.push(("compact_restore", self.compact_restore.to_string()));
        }
        out
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
            "emit" => self.view = View::parse(value).ok_or_else(bad)?,
            "subagents" => self.subagents = Subagents::parse(value).ok_or_else(bad)?,
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
            "max_sessions" => self.max_sessions = count(value, MAX_MAX_SESSIONS).ok_or_else(bad)?,
            "max_nodes" => self.max_nodes = count(value, MAX_MAX_NODES).ok_or_else(bad)?,
            "malformed" => self.malformed = Malformed::parse(value).ok_or_else(bad)?,
            "input" => self.input = Input::parse(value).ok_or_else(bad)?,
            "projection" => self.projection = Projection::parse(value).ok_or_else(bad)?,
            "compact_at" => {
                self.compact_at = match value {
                    "none" => CompactAt::Never,
                    n => CompactAt::Tokens(
                        n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(bad)?,
                    ),
                }
            }
            "compact_restore" => {
                self.compact_restore = value.parse::<u64>().map_err(|_| bad())?;
            }
            _ => unreachable!("every param of the table is read"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value each param takes, crossed with the others one at a time: the strings a
    /// typed config hands the engine read back as the same config.
    #[test]
    fn a_config_crosses_as_its_params_and_back() {
        let values: &[(&str, &[&str])] = &[
            ("emit", &["frames", "pressure"]),
            ("subagents", &["drop", "keep"]),
            ("counter_type", &["thinking/tokens", "x/y"]),
            ("capacity", &["1", "200000"]),
            ("max_sessions", &["1", "10000000"]),
            ("max_nodes", &["7"]),
            ("malformed", &["pass", "drop", "fail"]),
            ("input", &Input::NAMES),
            ("projection", &["rebased", "calibrated", "fixed"]),
            ("compact_at", &["1", "none"]),
            ("compact_restore", &["0", "9000"]),
        ];
        let mut configs = vec![Config::default()];
        for (k, vs) in values {
            for v in *vs {
                configs.push(Config::from_params([(*k, *v)]).unwrap());
                configs.push(Config::from_params([(*k, *v), ("input", "codex")]).unwrap());
            }
        }
        for c in configs {
            let p = c.params();
            let back = Config::from_params(p.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
            assert_eq!(back, c, "{p:?}");
        }
    }

    #[test]
    fn setting_the_input_moves_the_prior_unless_it_was_named() {
        let mut c = Config::default();
        c.set_input(Input::ClaudeCode);
        assert_eq!(c, Config::from_params([("input", "claude-code")]).unwrap());
        let mut named = Config::from_params([("compact_restore", "5")]).unwrap();
        named.set_input(Input::Codex);
        assert_eq!(named.compact_restore, 5);
    }

    #[test]
    fn defaults_come_from_the_table() {
        let c = Config::default();
        assert_eq!(c.view, View::Frames);
        assert_eq!(c.counter_type, "thinking/tokens");
        assert_eq!(c.max_sessions, 10_000);
        assert_eq!(c.projection, Projection::Rebased);
        assert_eq!(c.capacity, None);
        assert_eq!(c.compact_at, CompactAt::Learnt);
        assert_eq!(c.compact_restore, 0);
    }

    #[test]
    fn the_restore_prior_follows_the_input_unless_given() {
        let restore = |params: &[(&str, &str)]| {
            Config::from_params(params.iter().copied())
                .unwrap()
                .compact_restore
        };
        assert_eq!(restore(&[("input", "claude-code")]), 8_300);
        assert_eq!(restore(&[("input", "claude-stream")]), 8_300);
        assert_eq!(restore(&[("input", "codex")]), 1_700);
        assert_eq!(restore(&[("compact_restore", "9"), ("input", "codex")]), 9);
        assert_eq!(restore(&[("input", "codex"), ("compact_restore", "0")]), 0);
        assert_eq!(restore(&[("input", "otel")]), 0);
        let named = |params: &[(&str, &str)]| {
            Config::from_params(params.iter().copied())
                .unwrap()
                .restore_named
        };
        assert!(!named(&[("input", "otel")]));
        assert!(named(&[("input", "otel"), ("compact_restore", "0")]));
        assert_eq!(agent_restore_prior("claude-code"), Some(8_300));
        assert_eq!(agent_restore_prior("codex"), Some(1_700));
        assert_eq!(agent_restore_prior("gemini-cli"), None);
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
            ("compact_at", "150000"),
            ("compact_restore", "1234"),
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
        assert_eq!(c.compact_at, CompactAt::Tokens(150_000));
        assert_eq!(c.compact_restore, 1234);
        let c = Config::from_params([("compact_at", "none"), ("projection", "calibrated")]);
        assert_eq!(c.as_ref().unwrap().compact_at, CompactAt::Never);
        assert_eq!(c.unwrap().projection, Projection::Calibrated);
    }

    #[test]
    fn names_round_trip() {
        for n in Input::NAMES {
            assert_eq!(Input::parse(n).unwrap().name(), n);
        }
        assert_eq!(Input::parse("claude"), None);
        for n in Projection::NAMES {
            assert_eq!(Projection::parse(n).unwrap().name(), n);
        }
        assert_eq!(Projection::parse("stale"), None);
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
            ("compact_at", "0"),
            ("compact_at", "-1"),
            ("compact_at", "never"),
            ("compact_restore", "-5"),
            ("compact_restore", "lots"),
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
