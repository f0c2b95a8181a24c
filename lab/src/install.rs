//! The agents' releases, installed from the npm registry on demand into the lab's directory
//! (never into the repository): the pinned set — `lab/package.json` names each agent's exact
//! release, `lab/package-lock.json` what that resolved to — installed again only when either
//! changed, or the newest of each (`npm install …@latest`).
//!
//! The pinned set is installed with `npm install` from the lockfile, not `npm ci`: npm leaves
//! out of a lockfile the platform packages the registry does not answer for (OpenCode's for
//! other systems), and `npm ci` then refuses the lockfile as out of sync.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::agents::Agent;

/// Which releases a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Releases {
    /// The exact releases `lab/package-lock.json` pins.
    Pinned,
    /// The newest release of each agent on the registry today.
    Newest,
}

impl Releases {
    pub fn name(self) -> &'static str {
        match self {
            Releases::Pinned => "pinned",
            Releases::Newest => "newest",
        }
    }
}

/// A set of installed agents.
#[derive(Debug, Clone)]
pub struct Installed {
    pub root: PathBuf,
    pub versions: BTreeMap<Agent, String>,
}

impl Installed {
    /// The agent's command. Claude Code and OpenCode ship a launcher that an install script
    /// replaces with their native binary; the lab runs no install scripts, so it runs the
    /// binary of this platform's package (`@anthropic-ai/claude-code-linux-x64/claude`,
    /// `opencode-linux-x64/bin/opencode`) itself.
    pub fn bin(&self, agent: Agent) -> PathBuf {
        let modules = self.root.join("node_modules");
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => other,
        };
        let native = match agent {
            Agent::ClaudeCode => Some(format!("{}-linux-{arch}/claude", agent.package())),
            Agent::OpenCode => Some(format!("{}-linux-{arch}/bin/opencode", "opencode")),
            _ => None,
        };
        match native.map(|n| modules.join(n)) {
            Some(p) if p.is_file() => p,
            _ => modules.join(".bin").join(agent.bin()),
        }
    }

    /// `claude-code 2.1.332, codex 0.171.0, …`.
    pub fn describe(&self) -> String {
        self.versions
            .iter()
            .map(|(a, v)| format!("{} {v}", a.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The repository's `lab/` folder (the pins).
pub fn pins_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_owned()
}

/// Where the lab installs and runs: `$AGENT_FOLD_LAB_DIR`, else `target/lab` of the workspace.
pub fn lab_dir() -> PathBuf {
    match std::env::var_os("AGENT_FOLD_LAB_DIR") {
        Some(d) => PathBuf::from(d),
        None => pins_dir().join("../target/lab"),
    }
}

/// Installs `releases` where they are missing, saying so through `say`.
pub fn install(releases: Releases, say: &dyn Fn(&str)) -> Result<Installed> {
    let root = lab_dir().join(releases.name());
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    match releases {
        Releases::Pinned => {
            let pins = pins_dir();
            let lock = std::fs::read(pins.join("package-lock.json"))
                .context("reading lab/package-lock.json")?;
            let manifest =
                std::fs::read(pins.join("package.json")).context("reading lab/package.json")?;
            let stamp = format!(
                "{:016x}",
                agent_fold_core::fnv1a(&[&manifest[..], &lock].concat())
            );
            let stamp_file = root.join("node_modules/.agent-fold-lab");
            if std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(&stamp) {
                say("lab: installing the pinned agents (npm install from lab/package-lock.json)");
                std::fs::write(root.join("package.json"), &manifest)?;
                std::fs::write(root.join("package-lock.json"), &lock)?;
                npm(&root, &["install"])?;
                std::fs::write(&stamp_file, &stamp)?;
            }
        }
        Releases::Newest => {
            say("lab: installing the newest release of each agent (npm install …@latest)");
            let deps: serde_json::Map<String, Value> = Agent::ALL
                .iter()
                .map(|a| (a.package().to_owned(), json!("latest")))
                .collect();
            let manifest =
                json!({"name":"agent-fold-lab-newest","private":true,"dependencies":deps});
            std::fs::write(root.join("package.json"), manifest.to_string())?;
            let _ = std::fs::remove_file(root.join("package-lock.json"));
            let mut args = vec!["install".to_owned()];
            args.extend(Agent::ALL.iter().map(|a| format!("{}@latest", a.package())));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            npm(&root, &args)?;
        }
    }
    let mut versions = BTreeMap::new();
    for a in Agent::ALL {
        let manifest = root
            .join("node_modules")
            .join(a.package())
            .join("package.json");
        let v: Value = serde_json::from_slice(
            &std::fs::read(&manifest).with_context(|| format!("reading {}", manifest.display()))?,
        )?;
        versions.insert(a, v["version"].as_str().unwrap_or("?").to_owned());
    }
    Ok(Installed { root, versions })
}

fn npm(dir: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("npm")
        .args(args)
        // No package's install script runs: see [`Installed::bin`].
        .args([
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(dir)
        .status()
        .context("running npm (the lab needs Node.js and npm)")?;
    if !status.success() {
        bail!(
            "npm {} in {} failed: {status}",
            args.join(" "),
            dir.display()
        );
    }
    Ok(())
}
