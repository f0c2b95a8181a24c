//! The flags the subcommands share: `-e KEY=VALUE` (a module param) and `--input FORMAT`.

use agent_fold_core::{Input, ParamError};

use crate::params::{Format, ModuleParams};

/// Records (log lines) per invocation unless `--batch` says otherwise: what `run` and `serve`
/// hand the module at a time.
pub(crate) const BATCH: usize = 1000;

/// `-e/--param KEY=VALUE`, repeatable: the module params, the same flag in every subcommand;
/// its long help lists every param from the one table ([`agent_fold_core::PARAMS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub(crate) struct Params {
    /// A module param KEY=VALUE, repeatable (`--help` lists them)
    #[arg(short = 'e', long = "param", value_name = "KEY=VALUE", value_parser = param,
          long_help = param_help())]
    pub params: Vec<(String, String)>,
}

impl Params {
    /// The params typed, a bad one refused before any work, naming it.
    pub(crate) fn settle(&self) -> Result<ModuleParams, ParamError> {
        ModuleParams::parse(self.params.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// The long help of `-e/--param`: every param, its values and default, what it does.
pub(crate) fn param_help() -> String {
    let mut help = String::from("A module param KEY=VALUE, repeatable. The params:\n");
    for p in agent_fold_core::PARAMS {
        help.push_str(&format!("\n  {}\n      {}\n", p.name, p.describe()));
    }
    help
}

/// `-e KEY=VALUE`: a module param.
pub(crate) fn param(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("takes KEY=VALUE, got {s:?}"))
}

/// `--input`: a log format, or `auto` to detect it.
pub(crate) fn format(s: &str) -> Result<Format, String> {
    match s {
        "auto" => Ok(Format::Auto),
        _ => Input::parse(s)
            .map(Format::Is)
            .ok_or_else(|| format!("{s:?} is none of auto, {}", Input::NAMES.join(", "))),
    }
}

/// A whole number within `range`; one outside is refused, naming the range.
pub(crate) fn within(range: std::ops::RangeInclusive<u64>) -> clap::builder::RangedU64ValueParser {
    clap::value_parser!(u64).range(range)
}

/// `--since 2h` and the like: a number with a unit (`s`, `m`, `h`, `d`; seconds without one),
/// positive, a year at most.
pub(crate) fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (number, scale) = match t.as_bytes().last() {
        Some(b's') => (&t[..t.len() - 1], 1.0),
        Some(b'm') => (&t[..t.len() - 1], 60.0),
        Some(b'h') => (&t[..t.len() - 1], 3_600.0),
        Some(b'd') => (&t[..t.len() - 1], 86_400.0),
        _ => (t, 1.0),
    };
    match number.trim().parse::<f64>().map(|v| v * scale) {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 366.0 * 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(v))
        }
        _ => Err(format!(
            "takes a positive duration such as 90s, 30m, 2h or 1d (a year at most), got {s:?}"
        )),
    }
}

/// `--header-timeout SECS`, `--idle SECS` and the like: a positive number of seconds, a year at
/// most.
pub(crate) fn secs(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 366.0 * 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(v))
        }
        _ => Err(format!(
            "takes a positive number of seconds (a year at most), got {s:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_read_with_their_unit_and_refuse_in_words() {
        assert_eq!(duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(duration("2h"), Ok(Duration::from_secs(7_200)));
        assert_eq!(duration("1.5d"), Ok(Duration::from_secs(129_600)));
        assert_eq!(duration("45"), Ok(Duration::from_secs(45)));
        for bad in ["", "0h", "-2h", "2 weeks", "400d", "h"] {
            assert!(duration(bad).unwrap_err().contains("90s, 30m"), "{bad}");
        }
    }
}
