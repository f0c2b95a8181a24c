//! The four agents as the lab drives them: where each finds its model (the stand-in's URL, in
//! the environment or its own config file), where it writes its session, how a turn, a resume,
//! a manual compaction and a `/clear` are asked of it — each exactly as `../shared/AGENTS-LAB.md`
//! and the lab's own runs found the pinned releases to work. Every run gets its own scratch
//! home, so that nothing of the machine's own agents is read or written.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_fold_core::Input;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api;
use crate::http::{Answer, Request};
use crate::model::Model;

/// One of the agents the lab runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
    OpenCode,
}

impl Agent {
    pub const ALL: [Agent; 4] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::GeminiCli,
        Agent::OpenCode,
    ];

    /// Its name, as agent-fold's `input` param names its log format.
    pub fn name(self) -> &'static str {
        self.input().name()
    }

    pub fn parse(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }

    pub fn input(self) -> Input {
        match self {
            Agent::ClaudeCode => Input::ClaudeCode,
            Agent::Codex => Input::Codex,
            Agent::GeminiCli => Input::GeminiCli,
            Agent::OpenCode => Input::OpenCode,
        }
    }

    /// Its package on the npm registry.
    pub fn package(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "@anthropic-ai/claude-code",
            Agent::Codex => "@openai/codex",
            Agent::GeminiCli => "@google/gemini-cli",
            Agent::OpenCode => "opencode-ai",
        }
    }

    /// The command its package puts in `node_modules/.bin`.
    pub fn bin(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini",
            Agent::OpenCode => "opencode",
        }
    }

    /// The stand-in for the API it calls.
    pub fn serve(self, model: &Model, req: &Request) -> Answer {
        match self {
            Agent::ClaudeCode => api::anthropic::handle(model, req),
            Agent::Codex => api::responses::handle(model, req),
            Agent::GeminiCli => api::gemini::handle(model, req),
            Agent::OpenCode => api::chat::handle(model, req),
        }
    }
}

/// What a scenario sets for a run besides the prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Environment the agent is started with.
    pub env: Vec<(String, String)>,
    /// The model's context window, where the agent takes one from its configuration (Codex's
    /// `model_context_window`, OpenCode's model `limit.context`).
    pub window: Option<u64>,
    /// The agent's own compaction setting: Codex's `model_auto_compact_token_limit`, Gemini
    /// CLI's `model.compressionThreshold` (in thousandths), OpenCode's `compaction.reserved`.
    pub compact: Option<u64>,
    /// Claude Code's `settings.json`.
    pub claude_settings: Option<Value>,
}

/// One command the lab ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ran {
    pub what: String,
    pub ok: bool,
    pub seconds: f64,
}

/// One session of one agent in a scratch directory.
pub struct Session {
    pub agent: Agent,
    bin: PathBuf,
    /// The run's directory: `home/`, `work/` and what the agent wrote.
    pub dir: PathBuf,
    pub work: PathBuf,
    url: String,
    settings: Settings,
    /// The agent's session id, once its first turn named it.
    pub id: Option<String>,
    pub ran: Vec<Ran>,
    /// OpenCode: where it keeps its provider packages, shared by the lab's runs.
    cache: PathBuf,
}

/// The longest one agent command may take.
const TIMEOUT: Duration = Duration::from_secs(240);

impl Session {
    /// Prepares a scratch home for `agent` talking to `url`; `bin` is its installed command.
    pub fn new(
        agent: Agent,
        bin: &Path,
        dir: &Path,
        url: &str,
        settings: Settings,
        cache: &Path,
    ) -> Result<Session> {
        let s = Session {
            agent,
            bin: bin.to_owned(),
            dir: dir.to_owned(),
            work: dir.join("work"),
            url: url.to_owned(),
            settings,
            id: None,
            ran: Vec::new(),
            cache: cache.to_owned(),
        };
        for d in [s.home(), s.work.clone()] {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        s.configure()?;
        Ok(s)
    }

    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    fn codex_home(&self) -> PathBuf {
        self.home().join(".codex")
    }

    fn xdg(&self, which: &str) -> PathBuf {
        match which {
            "cache" => self.cache.clone(),
            w => self.home().join(format!("xdg-{w}")),
        }
    }

    /// Writes the agent's configuration: its provider at the stand-in, and the scenario's
    /// settings.
    fn configure(&self) -> Result<()> {
        let write = |path: PathBuf, text: String| -> Result<()> {
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        };
        match self.agent {
            Agent::ClaudeCode => {
                if let Some(s) = &self.settings.claude_settings {
                    write(self.home().join(".claude/settings.json"), s.to_string())?;
                }
            }
            Agent::Codex => {
                let mut toml = String::from(
                    "model = \"gpt-5.5\"\nmodel_provider = \"lab\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n",
                );
                if let Some(w) = self.settings.window {
                    toml.push_str(&format!("model_context_window = {w}\n"));
                }
                if let Some(l) = self.settings.compact {
                    toml.push_str(&format!("model_auto_compact_token_limit = {l}\n"));
                }
                toml.push_str(&format!(
                    "\n[model_providers.lab]\nname = \"lab\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"LAB_API_KEY\"\n",
                    self.url
                ));
                write(self.codex_home().join("config.toml"), toml)?;
            }
            Agent::GeminiCli => {
                let mut s = json!({"security":{"auth":{"selectedType":"gemini-api-key"}}});
                if let Some(t) = self.settings.compact {
                    s["model"] = json!({"compressionThreshold": t as f64 / 1000.0});
                }
                write(self.home().join(".gemini/settings.json"), s.to_string())?;
            }
            Agent::OpenCode => {
                // `compaction.reserved` counts only beside a `limit.input` (OpenCode 1.18's
                // rule): the scenario that sets it names the input limit too.
                let input = self
                    .settings
                    .compact
                    .map(|_| self.settings.window.unwrap_or(200_000));
                let limit = |context: u64| match input {
                    Some(i) if context == self.settings.window.unwrap_or(200_000) => {
                        json!({"context": context, "input": i, "output": 8192})
                    }
                    _ => json!({"context": context, "output": 8192}),
                };
                let mut c = json!({
                    "$schema": "https://opencode.ai/config.json",
                    "model": "lab/lab-model", "small_model": "lab/lab-small",
                    "autoupdate": false, "share": "disabled",
                    "permission": {"bash": "allow", "read": "allow", "edit": "allow", "external_directory": "allow"},
                    "provider": {"lab": {"npm": "@ai-sdk/openai-compatible", "name": "Lab",
                        "options": {"baseURL": format!("{}/v1", self.url), "apiKey": "lab"},
                        "models": {
                            "lab-model": {"name": "Lab Model", "limit": limit(self.settings.window.unwrap_or(200_000))},
                            "lab-other": {"name": "Lab Other", "limit": limit(400_000)},
                            "lab-small": {"name": "Lab Small", "limit": limit(100_000)}}}}
                });
                if let Some(r) = self.settings.compact {
                    c["compaction"] = json!({ "reserved": r });
                }
                write(
                    self.xdg("config").join("opencode/opencode.json"),
                    c.to_string(),
                )?;
            }
        }
        Ok(())
    }

    /// The environment of every command: a scratch home, the stand-in, no traffic elsewhere.
    fn command(&self, args: &[String]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .stdin(Stdio::null());
        match self.agent {
            Agent::ClaudeCode => {
                c.env("ANTHROPIC_BASE_URL", &self.url)
                    .env("ANTHROPIC_API_KEY", "lab")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_AUTOUPDATER", "1");
            }
            Agent::Codex => {
                c.env("CODEX_HOME", self.codex_home())
                    .env("LAB_API_KEY", "lab");
            }
            Agent::GeminiCli => {
                c.env("GOOGLE_GEMINI_BASE_URL", &self.url)
                    .env("GEMINI_API_KEY", "lab")
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
            }
            Agent::OpenCode => {
                for w in ["config", "data", "cache", "state"] {
                    c.env(format!("XDG_{}_HOME", w.to_uppercase()), self.xdg(w));
                }
            }
        }
        for (k, v) in &self.settings.env {
            c.env(k, v);
        }
        c
    }

    /// Runs a command to its end (or [`TIMEOUT`]), its output kept in the run's directory.
    fn run(&mut self, what: &str, args: Vec<String>) -> Result<String> {
        let n = self.ran.len() + 1;
        let out_path = self.dir.join(format!("step-{n:02}.out"));
        let err_path = self.dir.join(format!("step-{n:02}.err"));
        let t0 = Instant::now();
        let mut child = self
            .command(&args)
            .stdout(std::fs::File::create(&out_path)?)
            .stderr(std::fs::File::create(&err_path)?)
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break Some(s);
            }
            if t0.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        let ok = status.is_some_and(|s| s.success());
        self.ran.push(Ran {
            what: what.to_owned(),
            ok,
            seconds: t0.elapsed().as_secs_f64(),
        });
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        if !ok {
            bail!(
                "{} {what}: {} after {:.1} s; stderr: {}",
                self.agent.name(),
                status.map_or("timed out".to_owned(), |s| s.to_string()),
                t0.elapsed().as_secs_f64(),
                tail(&stderr)
            );
        }
        Ok(format!("{stdout}\n{stderr}"))
    }

    /// One prompt: the session's first, or a resume of it; `model` switches the model.
    pub fn turn(&mut self, prompt: &str, model: Option<&str>) -> Result<()> {
        let mut args: Vec<String> = Vec::new();
        let s = |x: &str| x.to_owned();
        match self.agent {
            Agent::ClaudeCode => {
                args.push(s("-p"));
                if let Some(id) = &self.id {
                    args.extend([s("--resume"), id.clone()]);
                }
                args.extend([prompt.to_owned(), s("--output-format"), s("json")]);
                args.extend(["--allowedTools", "Bash", "Read", "Agent"].map(s));
                if let Some(m) = model {
                    args.extend([s("--model"), s(m)]);
                }
            }
            Agent::Codex => {
                args.push(s("exec"));
                if let Some(id) = &self.id {
                    args.extend([s("resume"), id.clone()]);
                }
                args.push(s("--skip-git-repo-check"));
                if let Some(m) = model {
                    args.extend([s("-m"), s(m)]);
                }
                args.push(prompt.to_owned());
            }
            Agent::GeminiCli => {
                args.push(s("--yolo"));
                if self.id.is_some() {
                    args.extend([s("--resume"), s("latest")]);
                }
                if let Some(m) = model {
                    args.extend([s("-m"), s(m)]);
                }
                args.extend([s("-p"), prompt.to_owned()]);
            }
            Agent::OpenCode => {
                args.extend([s("run"), s("--format"), s("json")]);
                if let Some(id) = &self.id {
                    args.extend([s("--session"), id.clone()]);
                }
                if let Some(m) = model {
                    args.extend([s("--model"), format!("lab/{m}")]);
                }
                // One word an argument: a single argument with spaces is stored quoted.
                args.extend(prompt.split(' ').map(str::to_owned));
            }
        }
        let out = self.run(&format!("turn {}", first_words(prompt)), args)?;
        if self.id.is_none() {
            self.id = Some(self.session_id(&out)?);
        }
        Ok(())
    }

    /// The session id a first turn's output names.
    fn session_id(&self, out: &str) -> Result<String> {
        let found = match self.agent {
            Agent::ClaudeCode => out
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|v| v["session_id"].as_str().map(str::to_owned)),
            Agent::Codex => out
                .lines()
                .find_map(|l| l.trim().strip_prefix("session id:"))
                .map(|s| s.trim().to_owned()),
            // Gemini CLI resumes the latest of the project's chats: no id needed.
            Agent::GeminiCli => Some("latest".to_owned()),
            Agent::OpenCode => out
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|v| {
                    v["sessionID"]
                        .as_str()
                        .or(v["part"]["sessionID"].as_str())
                        .map(str::to_owned)
                }),
        };
        found.with_context(|| format!("{}: no session id in its output", self.agent.name()))
    }

    /// Compacts by hand, as each agent lets a user: Claude Code's `/compact`, Codex's
    /// app-server `thread/compact/start`, Gemini CLI's `/compress`, OpenCode's server
    /// `POST /session/ID/summarize`.
    pub fn compact(&mut self) -> Result<()> {
        let id = self.id.clone().context("compact before any turn")?;
        match self.agent {
            Agent::ClaudeCode => {
                let args = ["-p", "--resume", &id, "/compact", "--output-format", "json"];
                self.run("/compact", args.map(str::to_owned).to_vec())?;
            }
            Agent::GeminiCli => {
                let args = ["--yolo", "--resume", "latest", "-p", "/compress"];
                self.run("/compress", args.map(str::to_owned).to_vec())?;
            }
            Agent::Codex => self.codex_compact(&id)?,
            Agent::OpenCode => self.opencode_summarize(&id)?,
        }
        Ok(())
    }

    /// Claude Code's `/clear`: a new session from here (its id is the next turn's).
    pub fn clear(&mut self) -> Result<()> {
        let id = self.id.clone().context("clear before any turn")?;
        let args = ["-p", "--resume", &id, "/clear", "--output-format", "json"];
        let out = self.run("/clear", args.map(str::to_owned).to_vec())?;
        self.id = Some(self.session_id(&out)?);
        Ok(())
    }

    /// Codex compacts by hand only through its app server (JSON-RPC on stdio).
    fn codex_compact(&mut self, thread: &str) -> Result<()> {
        let t0 = Instant::now();
        let mut child = self
            .command(&["app-server".to_owned()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.join("app-server.err"))?)
            .spawn()?;
        let mut stdin = child.stdin.take().context("app-server stdin")?;
        let stdout = child.stdout.take().context("app-server stdout")?;
        let (tx, rx) = std::sync::mpsc::channel::<Value>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let send = |stdin: &mut std::process::ChildStdin, v: Value| writeln!(stdin, "{v}");
        let wait = |pred: &dyn Fn(&Value) -> bool| -> bool {
            let end = Instant::now() + Duration::from_secs(90);
            while let Some(left) = end.checked_duration_since(Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(m) if pred(&m) => return true,
                    Ok(_) => {}
                    Err(_) => return false,
                }
            }
            false
        };
        send(
            &mut stdin,
            json!({"id":1,"method":"initialize","params":{"clientInfo":{"name":"agent-fold-lab","version":"0"}}}),
        )?;
        let mut ok = wait(&|m| m["id"] == 1);
        send(&mut stdin, json!({"method":"initialized"}))?;
        send(
            &mut stdin,
            json!({"id":2,"method":"thread/resume","params":{"threadId":thread}}),
        )?;
        ok &= wait(&|m| m["id"] == 2);
        send(
            &mut stdin,
            json!({"id":3,"method":"thread/compact/start","params":{"threadId":thread}}),
        )?;
        ok &= wait(&|m| {
            m["method"] == "thread/compacted"
                || m["method"] == "turn/completed"
                || (m["method"] == "item/completed"
                    && m["params"]["item"]["type"] == "contextCompaction")
        });
        drop(stdin);
        std::thread::sleep(Duration::from_millis(300));
        let _ = child.kill();
        let _ = child.wait();
        self.ran.push(Ran {
            what: "app-server thread/compact/start".into(),
            ok,
            seconds: t0.elapsed().as_secs_f64(),
        });
        if !ok {
            bail!("codex app-server did not compact the thread");
        }
        Ok(())
    }

    /// OpenCode compacts by hand through its server: `POST /session/ID/summarize`.
    fn opencode_summarize(&mut self, id: &str) -> Result<()> {
        let t0 = Instant::now();
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = self
            .command(&["serve".into(), "--port".into(), port.to_string()])
            .stdout(std::fs::File::create(self.dir.join("serve.out"))?)
            .stderr(std::fs::File::create(self.dir.join("serve.err"))?)
            .spawn()?;
        let body = json!({"providerID":"lab","modelID":"lab-model","auto":false}).to_string();
        let mut status = None;
        while t0.elapsed() < Duration::from_secs(60) && status.is_none() {
            std::thread::sleep(Duration::from_millis(200));
            status = post(port, &format!("/session/{id}/summarize"), &body, &self.work).ok();
        }
        let _ = child.kill();
        let _ = child.wait();
        let ok = status.is_some_and(|s| (200..300).contains(&s));
        self.ran.push(Ran {
            what: "serve POST /session/ID/summarize".into(),
            ok,
            seconds: t0.elapsed().as_secs_f64(),
        });
        if !ok {
            bail!("opencode's server did not summarise the session: {status:?}");
        }
        Ok(())
    }

    /// The log files the agent wrote for this run: what agent-fold reads.
    pub fn logs(&self) -> Result<Vec<PathBuf>> {
        let (root, keep): (PathBuf, fn(&Path) -> bool) = match self.agent {
            Agent::ClaudeCode => (self.home().join(".claude/projects"), |p| {
                p.extension().is_some_and(|e| e == "jsonl")
            }),
            Agent::Codex => (self.codex_home().join("sessions"), |p| {
                p.extension().is_some_and(|e| e == "jsonl")
            }),
            Agent::GeminiCli => (self.home().join(".gemini/tmp"), |p| {
                p.to_string_lossy().contains("/chats/")
            }),
            Agent::OpenCode => (self.xdg("data").join("opencode"), |p| {
                p.file_name().is_some_and(|n| n == "opencode.db")
            }),
        };
        let mut found = Vec::new();
        walk(&root, &mut found)?;
        found.retain(|p| keep(p));
        found.sort();
        Ok(found)
    }

    /// OpenCode: the session as `opencode export` prints it.
    pub fn export(&mut self) -> Result<PathBuf> {
        let id = self.id.clone().context("export before any turn")?;
        let out = self.run("export", vec!["export".into(), id])?;
        let start = out
            .find('{')
            .context("no JSON in opencode export's output")?;
        let path = self.dir.join("export.json");
        let doc: Value = serde_json::Deserializer::from_str(&out[start..])
            .into_iter::<Value>()
            .next()
            .context("opencode export printed no document")??;
        std::fs::write(&path, doc.to_string())?;
        Ok(path)
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let p = e.path();
        if e.file_type()?.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// A bare HTTP POST on loopback; the status.
fn post(port: u16, path: &str, body: &str, directory: &Path) -> Result<u16> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-opencode-directory: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        directory.display(),
        body.len()
    )?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no status line")
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn tail(s: &str) -> String {
    let t: Vec<&str> = s.lines().rev().take(6).collect();
    t.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
