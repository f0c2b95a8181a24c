//! The flags the subcommands share: `-e KEY=VALUE` (a module param) and `--input FORMAT`.

use agent_fold_core::Input;

/// Records (log lines) per invocation unless `--batch` says otherwise: what `run` and `serve`
/// hand the module at a time.
pub const BATCH: usize = 1000;

/// `-e KEY=VALUE`: a module param.
pub fn param(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("takes KEY=VALUE, got {s:?}"))
}

/// `--input`: a log format, or `auto` to detect it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Auto,
    Is(Input),
}

pub fn format(s: &str) -> Result<Format, String> {
    match s {
        "auto" => Ok(Format::Auto),
        _ => Input::parse(s)
            .map(Format::Is)
            .ok_or_else(|| format!("{s:?} is none of auto, {}", Input::NAMES.join(", "))),
    }
}
