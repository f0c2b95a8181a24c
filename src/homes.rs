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
pub(crate) struct Home {
    /// The agent, as people name it.
    pub agent: &'static str,
    /// Where its sessions are (or would be).
    pub path: PathBuf,
    /// Whether they are there now.
    pub found: bool,
}

/// Where the agents' own directories are: from an environment (this process's, or a
/// test's), an agent's variable over its place under `HOME`. The one place they are worked
/// out: the sessions `serve` follows ([`homes`]) and the settings that move a compaction
/// point (`settings`) are both under them.
#[derive(Debug, Clone, Default)]
pub struct Homes {
    pub home: Option<PathBuf>,
    pub claude_config_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub xdg_data_home: Option<PathBuf>,
}

impl Homes {
    /// From `env`; a variable set but empty counts as unset, as the agents read it.
    pub fn from_vars(env: impl Fn(&str) -> Option<OsString>) -> Homes {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Homes {
            home: var("HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            xdg_data_home: var("XDG_DATA_HOME"),
        }
    }

    /// This process's environment.
    pub fn from_env() -> Homes {
        Homes::from_vars(|name| std::env::var_os(name))
    }

    /// A scratch home holding every agent's own (the lab's).
    pub fn under(home: &Path) -> Homes {
        Homes {
            home: Some(home.to_owned()),
            claude_config_dir: None,
            codex_home: Some(home.join(".codex")),
            xdg_config_home: Some(home.join("xdg-config")),
            xdg_data_home: Some(home.join("xdg-data")),
        }
    }

    fn under_home(&self, rel: &str) -> Option<PathBuf> {
        Some(self.home.as_ref()?.join(rel))
    }

    /// Claude Code's directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn claude(&self) -> Option<PathBuf> {
        self.claude_config_dir
            .clone()
            .or_else(|| self.under_home(".claude"))
    }

    /// Codex's: `$CODEX_HOME`, else `~/.codex`.
    pub fn codex(&self) -> Option<PathBuf> {
        self.codex_home
            .clone()
            .or_else(|| self.under_home(".codex"))
    }

    /// Gemini CLI's: `~/.gemini`.
    pub fn gemini(&self) -> Option<PathBuf> {
        self.under_home(".gemini")
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config` (OpenCode's settings are under it).
    pub fn xdg_config(&self) -> Option<PathBuf> {
        self.xdg_config_home
            .clone()
            .or_else(|| self.under_home(".config"))
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share` (OpenCode's sessions are under it).
    pub fn xdg_data(&self) -> Option<PathBuf> {
        self.xdg_data_home
            .clone()
            .or_else(|| self.under_home(".local/share"))
    }
}

/// Every agent's home, as `env` (the process environment, in the tool) places them; none
/// where no home directory is known (`HOME` unset) and no variable places it.
pub(crate) fn homes(env: impl Fn(&str) -> Option<OsString>) -> Vec<Home> {
    let dirs = Homes::from_vars(env);
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
        dirs.claude().map(|d| d.join("projects")),
        Path::is_dir,
    );
    add(
        "Codex",
        dirs.codex().map(|d| d.join("sessions")),
        Path::is_dir,
    );
    add(
        "Gemini CLI",
        dirs.gemini().map(|d| d.join("tmp")),
        Path::is_dir,
    );
    let opencode = dirs.xdg_data().map(|d| d.join("opencode")).map(|d| {
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
pub(crate) fn here() -> Vec<Home> {
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
