//! The module params a tool runs with, settled once: `-e KEY=VALUE` read into the core's typed
//! [`Config`] before any work (a bad one refused, naming it: contract §4), the log's format
//! from `--input` and `-e input=` by one rule ([`Told`]), and what a tool adds itself — its
//! view, the window a status line is told, the compaction point the agent's settings move —
//! laid under what the user named, never over it. The core takes the [`Config`]; the engine
//! takes its strings ([`Config::params`]), the SmartModule's own interface.

use agent_fold_core::{Config, Input, PARAMS, ParamError, View};

use crate::settings::Found;

/// `--input`: a log format, or `auto` to tell it from the log's first lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Auto,
    Is(Input),
}

/// The user's module params, typed, and which of them the user named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleParams {
    config: Config,
    /// The params the user named, by their table names.
    named: Vec<&'static str>,
}

/// A param a tool cannot take, or a format named twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("--input and -e input=… both name the log's format: choose one")]
    InputTwice,
    #[error("-e {key}=…: {why}")]
    NotHere {
        key: &'static str,
        why: &'static str,
    },
}

impl Default for ModuleParams {
    fn default() -> Self {
        ModuleParams::parse([]).expect("no params parse")
    }
}

impl ModuleParams {
    /// Reads `KEY=VALUE` pairs as the module's `init` reads them.
    pub fn parse<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ModuleParams, ParamError> {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        let config = Config::from_params(pairs.iter().copied())?;
        let named = PARAMS
            .iter()
            .map(|p| p.name)
            .filter(|n| pairs.iter().any(|(k, _)| k == n))
            .collect();
        Ok(ModuleParams { config, named })
    }

    /// Whether the user named `key`.
    pub fn named(&self, key: &str) -> bool {
        self.named.contains(&key)
    }

    /// The config as the user's params give it.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Refuses `key` when the user named it: the tool sets it itself, for `why`.
    pub fn refuse(&self, key: &'static str, why: &'static str) -> Result<(), ParamsError> {
        match self.named(key) {
            true => Err(ParamsError::NotHere { key, why }),
            false => Ok(()),
        }
    }

    /// The config of one `view`: a tool runs each view it serves as its own instance.
    pub fn view(&self, view: View) -> Config {
        Config {
            view,
            ..self.config.clone()
        }
    }

    /// The log's format, unless the user named one.
    pub fn input_under(&mut self, input: Input) {
        if !self.named("input") {
            self.config.set_input(input);
        }
    }

    /// The window, unless the user named one.
    pub fn capacity_under(&mut self, tokens: u64) {
        if !self.named("capacity") {
            self.config.capacity = Some(tokens);
        }
    }

    /// What the agent's settings say, under what the user named.
    pub fn settings_under(&mut self, found: &Found) {
        if let Some(c) = found.capacity {
            self.capacity_under(c);
        }
        if let Some(at) = found.compact_at
            && !self.named("compact_at")
        {
            self.config.compact_at = at;
        }
    }
}

/// Where a log's format comes from, one rule in every tool: `--input FORMAT` names it,
/// `-e input=FORMAT` names it for the module to adapt, both is refused (even when they agree:
/// they say different things of where the adapting runs), `--input auto` or neither tells it
/// from the log's first lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Told {
    Detect,
    /// `--input FORMAT`.
    Flag(Input),
    /// `-e input=FORMAT`.
    Param(Input),
}

impl Told {
    pub(crate) fn settle(flag: Option<Format>, params: &ModuleParams) -> Result<Told, ParamsError> {
        match (flag, params.named("input")) {
            (Some(_), true) => Err(ParamsError::InputTwice),
            (Some(Format::Is(input)), false) => Ok(Told::Flag(input)),
            (Some(Format::Auto), false) | (None, false) => Ok(Told::Detect),
            (None, true) => Ok(Told::Param(params.config.input)),
        }
    }

    /// The format named, by either.
    pub(crate) fn named(self) -> Option<Input> {
        match self {
            Told::Detect => None,
            Told::Flag(i) | Told::Param(i) => Some(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_fold_core::CompactAt;

    #[test]
    fn what_a_tool_adds_goes_under_what_the_user_named() {
        let mut p = ModuleParams::parse([("capacity", "100"), ("compact_at", "none")]).unwrap();
        p.settings_under(&Found {
            capacity: Some(200_000),
            compact_at: Some(CompactAt::Tokens(150_000)),
            said: Vec::new(),
        });
        p.input_under(Input::Codex);
        assert_eq!(p.config().capacity, Some(100));
        assert_eq!(p.config().compact_at, CompactAt::Never);
        assert_eq!(p.config().input, Input::Codex);
        assert_eq!(
            p.config().compact_restore,
            1_700,
            "the prior follows the input"
        );

        let mut bare = ModuleParams::default();
        bare.settings_under(&Found {
            capacity: Some(200_000),
            compact_at: Some(CompactAt::Tokens(150_000)),
            said: Vec::new(),
        });
        assert_eq!(bare.config().capacity, Some(200_000));
        assert_eq!(bare.config().compact_at, CompactAt::Tokens(150_000));
        assert_eq!(bare.view(View::Pressure).view, View::Pressure);
        assert_eq!(bare.config().view, View::Frames);
    }

    #[test]
    fn the_format_is_named_once() {
        let none = ModuleParams::default();
        let param = ModuleParams::parse([("input", "codex")]).unwrap();
        let codex = Some(Format::Is(Input::Codex));
        assert_eq!(Told::settle(None, &none), Ok(Told::Detect));
        assert_eq!(Told::settle(Some(Format::Auto), &none), Ok(Told::Detect));
        assert_eq!(Told::settle(codex, &none), Ok(Told::Flag(Input::Codex)));
        assert_eq!(Told::settle(None, &param), Ok(Told::Param(Input::Codex)));
        assert_eq!(Told::settle(codex, &param), Err(ParamsError::InputTwice));
        assert_eq!(
            Told::settle(Some(Format::Auto), &param),
            Err(ParamsError::InputTwice)
        );
        assert!(param.refuse("input", "why").is_err());
        assert!(none.refuse("input", "why").is_ok());
    }
}
