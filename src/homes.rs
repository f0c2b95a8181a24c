//! Where each agent keeps its sessions on this machine, per user (`agent-fold serve` with no
//! source follows the homes it finds; docs/serve.md, "Sources"):
//!
//! | agent | home | where |
//! |---|---|---|
//! | Claude Code | its projects: a transcript per session | `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects` |
//! | Codex | its rollouts | `$CODEX_HOME/sessions`, else `~/.codex/sessions` |
//! | Gemini CLI | its chats, `<project>/chats/session-*.json` and `.jsonl` | `~/.gemini/tmp` |
//! | OpenCode | its database (OpenCode ≥ 1.2), else its `storage/` (older releases) | `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` |
//!
//! An environment variable that is set but empty counts as unset, as the agents read it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::opencode_db;

/// One agent's home on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// The agent, as people name it.
    pub agent: &'static str,
    /// Where its sessions are (or would be).
    pub path: PathBuf,
    /// Whether they are there now.
    pub found: bool,
}

/// Every agent's home, as `env` (the process environment, in the tool) places them; `None`
/// when no home directory is known (`HOME` unset) and no variable places it.
pub fn homes(env: impl Fn(&str) -> Option<OsString>) -> Vec<Home> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = var("HOME");
    let under = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let mut out = Vec::new();
    let mut add = |agent: &'static str, path: Option<PathBuf>, found: fn(&Path) -> bool| {
        if let Some(path) = path {
            out.push(Home {
                agent,
                found: found(&path),
                path,
            });
        }
    };
    add(
        "Claude Code",
        var("CLAUDE_CONFIG_DIR")
            .map(|d| d.join("projects"))
            .or_else(|| under(".claude/projects")),
        Path::is_dir,
    );
    add(
        "Codex",
        var("CODEX_HOME")
            .map(|d| d.join("sessions"))
            .or_else(|| under(".codex/sessions")),
        Path::is_dir,
    );
    add("Gemini CLI", under(".gemini/tmp"), Path::is_dir);
    let data = var("XDG_DATA_HOME").or_else(|| under(".local/share"));
    let opencode = data.map(|d| d.join("opencode")).map(|d| {
        let db = d.join(opencode_db::FILE_NAME);
        let storage = d.join("storage");
        // The database where there is one (or neither: it is what OpenCode writes now).
        match !db.is_file() && storage.is_dir() {
            true => storage,
            false => db,
        }
    });
    add("OpenCode", opencode, |p| p.exists());
    out
}

/// The homes of this process's environment.
pub fn here() -> Vec<Home> {
    homes(|name| std::env::var_os(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agent-fold-homes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Each home where the agent's own variable puts it, else under HOME; found when there.
    #[test]
    fn each_home_is_where_the_agent_keeps_it() {
        let dir = scratch("env");
        let home = dir.join("home");
        for d in [
            ".claude/projects",
            ".gemini/tmp",
            ".local/share/opencode/storage",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        let env = |vars: &'static [(&'static str, &'static str)]| {
            let home = home.clone();
            let dir = dir.clone();
            move |name: &str| -> Option<OsString> {
                if name == "HOME" {
                    return Some(home.clone().into());
                }
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| dir.join(v).into_os_string())
            }
        };
        let found = homes(env(&[]));
        let at: Vec<(&str, PathBuf, bool)> = found
            .iter()
            .map(|h| (h.agent, h.path.clone(), h.found))
            .collect();
        assert_eq!(
            at,
            [
                ("Claude Code", home.join(".claude/projects"), true),
                ("Codex", home.join(".codex/sessions"), false),
                ("Gemini CLI", home.join(".gemini/tmp"), true),
                ("OpenCode", home.join(".local/share/opencode/storage"), true),
            ]
        );
        // The agents' own variables; OpenCode's database over its old storage.
        std::fs::create_dir_all(dir.join("codex/sessions")).unwrap();
        std::fs::create_dir_all(dir.join("data/opencode/storage")).unwrap();
        std::fs::write(dir.join("data/opencode/opencode.db"), b"").unwrap();
        let found = homes(env(&[
            ("CLAUDE_CONFIG_DIR", "claude"),
            ("CODEX_HOME", "codex"),
            ("XDG_DATA_HOME", "data"),
        ]));
        assert_eq!(found[0].path, dir.join("claude/projects"));
        assert!(!found[0].found);
        assert_eq!(
            (found[1].path.clone(), found[1].found),
            (dir.join("codex/sessions"), true)
        );
        assert_eq!(
            (found[3].path.clone(), found[3].found),
            (dir.join("data/opencode/opencode.db"), true)
        );
        assert!(homes(|_| None).is_empty(), "no HOME, no variable: no home");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
