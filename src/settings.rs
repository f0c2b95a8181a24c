//! Where an agent runs, the settings it honours that move its automatic compaction point, read
//! from its own configuration files (contract §3.5: a log never says them). Each becomes a
//! module param, and says where it came from:
//!
//! - Claude Code (`$CLAUDE_CONFIG_DIR`, else `~/.claude`, `settings.json`; a project's
//!   `.claude/settings.json` and `.claude/settings.local.json` over it): `autoCompactWindow` or
//!   `env.CLAUDE_CODE_AUTO_COMPACT_WINDOW` (the point is that window less the reserve),
//!   `env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (that share of the window less the output reserve,
//!   where lower), `env.CLAUDE_CODE_DISABLE_1M_CONTEXT` (a 200k window),
//!   `env.DISABLE_AUTO_COMPACT` / `DISABLE_COMPACT` (no point). Measured in the lab: Claude
//!   Code 2.1.50–2.1.332 compact at (window − min(output, 20,000)) − 13,000, or the share.
//! - Codex (`$CODEX_HOME`, else `~/.codex`, `config.toml`, and the profile file
//!   `<profile>.config.toml` it names): `model_auto_compact_token_limit` (capped by 90% of
//!   `model_context_window` where that is set), `model_context_window` alone (90% of it).
//!   A limit under a `[profiles.NAME]` table is not honoured by Codex, so not read.
//! - Gemini CLI (`~/.gemini/settings.json`; a project's `.gemini/settings.json` over it):
//!   `model.compressionThreshold` × 1,048,576 (older `chatCompression.contextPercentageThreshold`).
//! - OpenCode (`$XDG_CONFIG_HOME`, else `~/.config`, `opencode/opencode.json`; a project's
//!   `opencode.json` over it): `compaction.auto: false` (no point), and for the configured
//!   `model`, its provider's `limit`: `input − (compaction.reserved ?? min(20,000, output))`
//!   where `limit.input` is set, else `context − min(output, 32,000)` (OpenCode 1.18's rule).
//!
//! The environment the agent was started with is not visible from here: a setting given only
//! there is not read, and `inspect` says so.

use std::path::{Path, PathBuf};

use agent_fold_core::{CompactAt, Input};
use serde_json::Value;

pub use crate::homes::Homes;

/// What the settings say: the window and the compaction point they set (module params
/// `capacity` and `compact_at`, laid under the user's own where the params are settled), and
/// where each came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub capacity: Option<u64>,
    pub compact_at: Option<CompactAt>,
    /// `compact_at=150000 from ~/.codex/config.toml model_auto_compact_token_limit`.
    pub said: Vec<String>,
}

impl Found {
    fn capacity(&mut self, tokens: u64, from: String) {
        self.capacity = Some(tokens);
        self.say("capacity", tokens.to_string(), from);
    }

    /// The point at `tokens`, or none when the agent's automatic compaction is off.
    fn compact_at(&mut self, tokens: Option<u64>, from: String) {
        self.compact_at = Some(tokens.map_or(CompactAt::Never, CompactAt::Tokens));
        let shown = tokens.map_or_else(|| "none".to_owned(), |n| n.to_string());
        self.say("compact_at", shown, from);
    }

    fn say(&mut self, key: &str, value: String, from: String) {
        self.said.retain(|s| !s.starts_with(&format!("{key}=")));
        self.said.push(format!("{key}={value} from {from}"));
    }
}

/// The most bytes of a settings file read (a user's settings are a few kilobytes).
const MAX_SETTINGS: u64 = 1 << 20;

/// A settings file's text, when it is a regular file of a sane size.
fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SETTINGS {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn json(path: &Path) -> Option<Value> {
    serde_json::from_str(&read(path)?).ok()
}

/// A number given as a number or a string of one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s
            .trim()
            .trim_end_matches(['k', 'K'])
            .parse::<f64>()
            .ok()
            .map(|n| {
                if s.trim().ends_with(['k', 'K']) {
                    n * 1000.0
                } else {
                    n
                }
            }),
        _ => None,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(s.trim(), "1" | "true" | "yes"),
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        _ => false,
    }
}

/// Whether `input`'s agent has settings files read here.
pub(crate) fn read_for(input: Input) -> bool {
    !matches!(input, Input::Otel | Input::AgentFold)
}

/// The settings `input`'s agent honours, where it runs; `project`: the session's working
/// directory, where known.
pub fn for_agent(input: Input, homes: &Homes, project: Option<&Path>) -> Found {
    match input {
        Input::ClaudeCode | Input::ClaudeStream => claude(homes, project),
        Input::Codex => codex(homes),
        Input::GeminiCli => gemini(homes, project),
        Input::OpenCode => opencode(homes, project),
        Input::Otel | Input::AgentFold => Found::default(),
    }
}

/// An agent's settings files in the order it reads them, later over earlier: the user's,
/// then each of `in_project` under the project's directory.
fn layered(user: Option<PathBuf>, project: Option<&Path>, in_project: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = user.into_iter().collect();
    if let Some(p) = project {
        files.extend(in_project.iter().map(|rel| p.join(rel)));
    }
    files
}

/// Claude Code's reserve below the window it compacts at: 20,000 of output and 13,000.
const CLAUDE_RESERVE: f64 = 33_000.0;
const CLAUDE_OUTPUT: f64 = 20_000.0;

fn claude(homes: &Homes, project: Option<&Path>) -> Found {
    let files = layered(
        homes.claude().map(|d| d.join("settings.json")),
        project,
        &[".claude/settings.json", ".claude/settings.local.json"],
    );
    // Later files stand over earlier ones, key by key.
    let (mut window, mut pct, mut one_m_off, mut off) = (None, None, None, None);
    for f in &files {
        let Some(v) = json(f) else { continue };
        let name = f.display();
        if let Some(w) = v.get("autoCompactWindow").and_then(number) {
            window = Some((w, format!("{name} autoCompactWindow")));
        }
        let env = v.get("env");
        let get = |k: &str| env.and_then(|e| e.get(k));
        if let Some(w) = get("CLAUDE_CODE_AUTO_COMPACT_WINDOW").and_then(number) {
            window = Some((w, format!("{name} env.CLAUDE_CODE_AUTO_COMPACT_WINDOW")));
        }
        if let Some(p) = get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").and_then(number) {
            pct = Some((p, format!("{name} env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")));
        }
        if let Some(d) = get("CLAUDE_CODE_DISABLE_1M_CONTEXT") {
            one_m_off = Some((
                truthy(d),
                format!("{name} env.CLAUDE_CODE_DISABLE_1M_CONTEXT"),
            ));
        }
        for k in ["DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"] {
            if let Some(d) = get(k) {
                off = Some((truthy(d), format!("{name} env.{k}")));
            }
        }
    }
    let mut found = Found::default();
    if let Some((true, from)) = off {
        found.compact_at(None, from);
        return found;
    }
    let mut capacity = None;
    if let Some((true, from)) = one_m_off {
        capacity = Some(200_000.0);
        found.capacity(200_000, from);
    }
    // The window the point is taken from: the configured one (100k to 1M), else the model's
    // (only known here when set above).
    let (base, from) = match (&window, capacity) {
        (Some((w, from)), _) if (100_000.0..=1_000_000.0).contains(w) => {
            let w = capacity.map_or(*w, |c| w.min(c));
            (Some(w), from.clone())
        }
        (_, Some(c)) => (Some(c), "the 200k window".into()),
        _ => (None, String::new()),
    };
    let Some(base) = base else {
        if let Some((p, from)) = pct {
            // A share of a window only the log names: the point needs that window.
            found.said.push(format!(
                "{from}={p}: a share of the model's window, which the log names"
            ));
        }
        return found;
    };
    let mut at = base - CLAUDE_RESERVE;
    let mut said = from;
    if let Some((p, pfrom)) = pct.filter(|(p, _)| *p > 0.0 && *p < 100.0) {
        let share = (base - CLAUDE_OUTPUT) * p / 100.0;
        if share < at {
            at = share;
            said = format!("{said} and {pfrom}");
        }
    }
    if window.is_some() || capacity.is_none() || at != base - CLAUDE_RESERVE {
        found.compact_at(Some(at.round() as u64), said);
    }
    found
}

fn codex(homes: &Homes) -> Found {
    let mut found = Found::default();
    let Some(dir) = homes.codex() else {
        return found;
    };
    let main = dir.join("config.toml");
    let Some(config) = read(&main).and_then(|t| toml::from_str::<toml::Table>(&t).ok()) else {
        return found;
    };
    // A profile file (`<name>.config.toml`, Codex ≥ 0.131) stands over the main file's keys.
    let profile = config
        .get("profile")
        .and_then(|p| p.as_str())
        .map(|p| dir.join(format!("{p}.config.toml")))
        .and_then(|p| {
            Some((
                read(&p).and_then(|t| toml::from_str::<toml::Table>(&t).ok())?,
                p,
            ))
        });
    let get = |k: &str| -> Option<(u64, String)> {
        if let Some((t, p)) = &profile
            && let Some(v) = t.get(k).and_then(toml::Value::as_integer)
        {
            return Some((v.max(0) as u64, format!("{} {k}", p.display())));
        }
        let v = config.get(k).and_then(toml::Value::as_integer)?;
        Some((v.max(0) as u64, format!("{} {k}", main.display())))
    };
    let limit = get("model_auto_compact_token_limit").filter(|(l, _)| *l >= 1);
    let window = get("model_context_window").filter(|(w, _)| *w >= 1);
    let own = window.as_ref().map(|(w, _)| w * 9 / 10);
    match (limit, own) {
        (Some((l, from)), Some(o)) if o < l => {
            found.compact_at(Some(o), format!("90% of {}", window.unwrap().1));
            let _ = from;
        }
        (Some((l, from)), _) => found.compact_at(Some(l), from),
        (None, Some(o)) => {
            found.compact_at(Some(o), format!("90% of {}", window.unwrap().1));
        }
        (None, None) => {}
    }
    found
}

fn gemini(homes: &Homes, project: Option<&Path>) -> Found {
    let mut found = Found::default();
    let files = layered(
        homes.gemini().map(|g| g.join("settings.json")),
        project,
        &[".gemini/settings.json"],
    );
    for f in &files {
        let Some(v) = json(f) else { continue };
        let t = v
            .pointer("/model/compressionThreshold")
            .and_then(number)
            .map(|t| (t, "model.compressionThreshold"))
            .or_else(|| {
                v.pointer("/chatCompression/contextPercentageThreshold")
                    .and_then(number)
                    .map(|t| (t, "chatCompression.contextPercentageThreshold"))
            });
        if let Some((t, key)) = t.filter(|(t, _)| *t > 0.0 && *t <= 1.0) {
            let at = (t * 1_048_576.0).round() as u64;
            found.compact_at(Some(at), format!("{} {key}", f.display()));
        }
    }
    found
}

fn opencode(homes: &Homes, project: Option<&Path>) -> Found {
    let mut found = Found::default();
    let files = layered(
        homes.xdg_config().map(|d| d.join("opencode/opencode.json")),
        project,
        &["opencode.json"],
    );
    let mut merged = serde_json::Map::new();
    let mut last = String::new();
    for f in &files {
        if let Some(Value::Object(o)) = json(f) {
            merge(&mut merged, o);
            last = f.display().to_string();
        }
    }
    if merged.is_empty() {
        return found;
    }
    let v = Value::Object(merged);
    if v.pointer("/compaction/auto") == Some(&Value::Bool(false)) {
        found.compact_at(None, format!("{last} compaction.auto"));
        return found;
    }
    let Some((provider, model)) = v
        .get("model")
        .and_then(Value::as_str)
        .and_then(|m| m.split_once('/'))
    else {
        return found;
    };
    let limit = v.pointer(&format!("/provider/{provider}/models/{model}/limit"));
    let n = |k: &str| limit.and_then(|l| l.get(k)).and_then(Value::as_u64);
    let Some(context) = n("context").filter(|c| *c > 0) else {
        return found;
    };
    let output = n("output").unwrap_or(32_000).min(32_000);
    let at = match n("input") {
        Some(input) => {
            let reserved = v
                .pointer("/compaction/reserved")
                .and_then(Value::as_u64)
                .unwrap_or(output.min(20_000));
            input.saturating_sub(reserved)
        }
        None => context.saturating_sub(output),
    };
    let from = format!("{last} provider.{provider}.models.{model}.limit");
    found.capacity(context, from.clone());
    found.compact_at(Some(at), from);
    found
}

/// `b`'s keys over `a`'s, objects merged.
fn merge(a: &mut serde_json::Map<String, Value>, b: serde_json::Map<String, Value>) {
    for (k, v) in b {
        match (a.get_mut(&k), v) {
            (Some(Value::Object(x)), Value::Object(y)) => merge(x, y),
            (_, v) => {
                a.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "agent-fold-settings-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(p: PathBuf, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn param(f: &Found, k: &str) -> Option<String> {
        match k {
            "capacity" => f.capacity.map(|n| n.to_string()),
            "compact_at" => f.compact_at.map(|at| match at {
                CompactAt::Tokens(n) => n.to_string(),
                CompactAt::Never => "none".to_owned(),
                CompactAt::Learnt => "learnt".to_owned(),
            }),
            _ => None,
        }
    }

    #[test]
    fn each_agent_s_settings_move_its_point_and_say_from_where() {
        let h = home();
        let homes = Homes::under(&h);
        // Codex: a limit under the window's 90%; the profile file over the main file.
        write(
            h.join(".codex/config.toml"),
            "model_auto_compact_token_limit = 150000\n",
        );
        let f = for_agent(Input::Codex, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("150000"));
        assert!(
            f.said[0].contains("config.toml model_auto_compact_token_limit"),
            "{f:?}"
        );
        write(
            h.join(".codex/config.toml"),
            "profile = \"big\"\nmodel_auto_compact_token_limit = 150000\n[profiles.big]\nmodel_auto_compact_token_limit = 1\n",
        );
        write(
            h.join(".codex/big.config.toml"),
            "model_context_window = 100000\n",
        );
        let f = for_agent(Input::Codex, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("90000"), "{f:?}");
        // Claude Code: the configured window less the reserve; a share where lower; off.
        write(
            h.join(".claude/settings.json"),
            r#"{"autoCompactWindow":300000}"#,
        );
        let f = for_agent(Input::ClaudeCode, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("267000"));
        let project = h.join("proj");
        write(
            project.join(".claude/settings.local.json"),
            r#"{"env":{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE":"50"}}"#,
        );
        let f = for_agent(Input::ClaudeCode, &homes, Some(&project));
        assert_eq!(param(&f, "compact_at").as_deref(), Some("140000"), "{f:?}");
        write(
            project.join(".claude/settings.json"),
            r#"{"env":{"CLAUDE_CODE_DISABLE_1M_CONTEXT":"1"}}"#,
        );
        std::fs::remove_file(project.join(".claude/settings.local.json")).unwrap();
        std::fs::remove_file(h.join(".claude/settings.json")).unwrap();
        let f = for_agent(Input::ClaudeCode, &homes, Some(&project));
        assert_eq!(param(&f, "capacity").as_deref(), Some("200000"));
        write(
            h.join(".claude/settings.json"),
            r#"{"env":{"DISABLE_AUTO_COMPACT":"1"}}"#,
        );
        let f = for_agent(Input::ClaudeCode, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("none"));
        // Gemini CLI: a share of 1,048,576.
        write(
            h.join(".gemini/settings.json"),
            r#"{"model":{"compressionThreshold":0.1}}"#,
        );
        let f = for_agent(Input::GeminiCli, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("104858"));
        // OpenCode: its model's limits, the reserve only beside an input limit.
        write(
            h.join("xdg-config/opencode/opencode.json"),
            r#"{"model":"lab/m","provider":{"lab":{"models":{"m":{"limit":{"context":100000,"output":8192}}}}}}"#,
        );
        let f = for_agent(Input::OpenCode, &homes, None);
        assert_eq!(param(&f, "compact_at").as_deref(), Some("91808"));
        assert_eq!(param(&f, "capacity").as_deref(), Some("100000"));
        write(
            h.join("xdg-config/opencode/opencode.json"),
            r#"{"model":"lab/m","compaction":{"reserved":10000},"provider":{"lab":{"models":{"m":{"limit":{"context":100000,"input":80000,"output":8192}}}}}}"#,
        );
        assert_eq!(
            param(&for_agent(Input::OpenCode, &homes, None), "compact_at").as_deref(),
            Some("70000")
        );
        // Nothing configured: nothing said; a settings file that is not a file: nothing read.
        let empty = h.join("nobody");
        let f = for_agent(Input::Codex, &Homes::under(&empty), None);
        assert_eq!(f, Found::default());
        let _ = std::fs::remove_dir_all(&h);
    }
}
