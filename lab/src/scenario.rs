//! The scenarios: what a session does, for every agent that can do it — the prompts (each with
//! its key and its script of tool calls), the files the agent reads, the settings it starts
//! with, and the manual steps between turns. A run starts the stand-in, drives the agent
//! through the plan and keeps everything in its directory under `target/lab/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::agents::{Agent, Ran, Session, Settings};
use crate::http::Server;
use crate::install::Installed;
use crate::model::{Model, Served, Step};

/// A scenario of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Three turns with tool calls: reading files, running commands.
    Basic,
    /// Three turns, a compaction asked for by hand, one more turn.
    ManualCompact,
    /// A session grown, with real content, to the agent's automatic compaction on its window.
    AutoCompact,
    /// The same with the compaction point set in the agent's own configuration.
    CompactWindow,
    /// A turn, `/clear`, a turn (Claude Code).
    Clear,
    /// A turn that starts a sub-agent (Claude Code).
    Subagent,
    /// A turn, then turns on another model.
    ModelSwitch,
    /// A tool output of 100,000 characters.
    BigOutput,
}

impl Scenario {
    pub const ALL: [Scenario; 8] = [
        Scenario::Basic,
        Scenario::ManualCompact,
        Scenario::AutoCompact,
        Scenario::CompactWindow,
        Scenario::Clear,
        Scenario::Subagent,
        Scenario::ModelSwitch,
        Scenario::BigOutput,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Basic => "basic",
            Scenario::ManualCompact => "manual-compact",
            Scenario::AutoCompact => "auto-compact",
            Scenario::CompactWindow => "compact-window",
            Scenario::Clear => "clear",
            Scenario::Subagent => "subagent",
            Scenario::ModelSwitch => "model-switch",
            Scenario::BigOutput => "big-output",
        }
    }

    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One thing a plan does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A prompt (its key first), on the session's model or another.
    Turn {
        prompt: String,
        model: Option<String>,
    },
    /// A compaction asked for by hand.
    Compact,
    /// Claude Code's `/clear`.
    Clear,
}

/// What a scenario is for one agent.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: Settings,
    pub actions: Vec<Action>,
    pub script: HashMap<String, Vec<Step>>,
    /// Files of the scratch directory: name and size in characters.
    pub files: Vec<(String, usize)>,
    /// The stand-in refuses requests over this many tokens as too long (0: never).
    pub refuse_over: u64,
}

/// A plan being written: turns with their keys and scripts.
struct Writer {
    plan: Plan,
    turns: usize,
}

impl Writer {
    fn new(settings: Settings) -> Writer {
        Writer {
            plan: Plan {
                settings,
                actions: Vec::new(),
                script: HashMap::new(),
                files: vec![("notes.txt".into(), 200)],
                refuse_over: 0,
            },
            turns: 0,
        }
    }

    fn file(&mut self, name: &str, chars: usize) -> &mut Writer {
        self.plan.files.push((name.to_owned(), chars));
        self
    }

    /// A turn asking for `steps`, on `model` when given.
    fn turn_on(&mut self, model: Option<&str>, words: &str, steps: Vec<Step>) -> &mut Writer {
        self.turns += 1;
        let key = format!("LAB-T{}", self.turns);
        self.plan.script.insert(key.clone(), steps);
        self.plan.actions.push(Action::Turn {
            prompt: format!("{key} {words}"),
            model: model.map(str::to_owned),
        });
        self
    }

    fn turn(&mut self, words: &str, steps: Vec<Step>) -> &mut Writer {
        self.turn_on(None, words, steps)
    }

    fn then(&mut self, action: Action) -> &mut Writer {
        self.plan.actions.push(action);
        self
    }

    fn done(&mut self) -> Plan {
        self.plan.clone()
    }
}

fn read(name: &str) -> Step {
    Step::Read(name.to_owned())
}

fn shell(cmd: &str) -> Step {
    Step::Shell(cmd.to_owned())
}

/// The scenario for `agent`, or `None` where the agent has no such thing.
pub fn plan(scenario: Scenario, agent: Agent) -> Option<Plan> {
    let basic = |w: &mut Writer| {
        w.file("src/lib.rs", 6_000)
            .file("docs/guide.md", 12_000)
            .turn(
                "Please read notes.txt, then list the directory.",
                vec![read("notes.txt"), shell("ls -la")],
            )
            .turn(
                "Now read the guide and the library source.",
                vec![read("docs/guide.md"), read("src/lib.rs")],
            )
            .turn(
                "Count the lines of every text file.",
                vec![shell("wc -l notes.txt docs/guide.md src/lib.rs")],
            );
    };
    let mut w = Writer::new(Settings::default());
    match scenario {
        Scenario::Basic => {
            basic(&mut w);
        }
        // Gemini CLI 0.61 compresses by hand only in its interactive UI: `-p /compress` starts
        // the compression without waiting and sends the prompt on, racing it (the summary lost
        // in three of three runs here).
        Scenario::ManualCompact if agent == Agent::GeminiCli => return None,
        // OpenCode 1.18 compacts by hand only through its server (`POST
        // /session/ID/summarize`) or its TUI; here the server's call did not reach the model
        // within two minutes, so the lab leaves it out rather than wait.
        Scenario::ManualCompact if agent == Agent::OpenCode => return None,
        Scenario::ManualCompact => {
            basic(&mut w);
            w.then(Action::Compact).turn(
                "After the compaction: list the directory again.",
                vec![shell("ls")],
            );
        }
        Scenario::AutoCompact | Scenario::CompactWindow => {
            let g = growth(scenario, agent)?;
            w.plan.settings = g.settings;
            // After the large files, small ones: the read that crosses the compaction point
            // crosses it by little, as most do (a large one right at the limit leaves Claude
            // Code no room to summarise in: its compaction fails).
            for i in 0..g.files {
                let chars = if i < g.large { g.chars } else { g.chars / 8 };
                w.file(&format!("part-{i:02}.txt"), chars);
            }
            let mut i = 0;
            while i < g.files {
                let steps: Vec<Step> = (i..(i + g.per_turn).min(g.files))
                    .map(|j| read(&format!("part-{j:02}.txt")))
                    .collect();
                i += steps.len();
                w.turn("Read the next parts of the manuscript.", steps);
            }
            w.turn("Summarise what you read in one line.", vec![shell("ls")]);
        }
        Scenario::Clear if agent == Agent::ClaudeCode => {
            w.turn("Please read notes.txt.", vec![read("notes.txt")])
                .then(Action::Clear)
                .turn("A fresh start: list the directory.", vec![shell("ls")])
                .turn("And read the notes again.", vec![read("notes.txt")]);
        }
        Scenario::Subagent if agent == Agent::ClaudeCode => {
            let sub = "LAB-SUB Read notes.txt and say what it holds.";
            w.plan
                .script
                .insert("LAB-SUB".into(), vec![read("notes.txt")]);
            w.turn(
                "Ask a sub-agent to look at the notes.",
                vec![Step::Agent(sub.into())],
            )
            .turn("Now list the directory yourself.", vec![shell("ls")]);
        }
        Scenario::ModelSwitch => {
            let other = match agent {
                Agent::ClaudeCode => "claude-sonnet-4-5",
                Agent::Codex => "gpt-5.4",
                Agent::GeminiCli => "gemini-2.5-flash",
                Agent::OpenCode => "lab-other",
            };
            w.file("src/lib.rs", 6_000)
                .turn("Please read notes.txt.", vec![read("notes.txt")])
                .turn_on(
                    Some(other),
                    "On another model: read the source.",
                    vec![read("src/lib.rs")],
                )
                .turn_on(
                    Some(other),
                    "Still there: list the directory.",
                    vec![shell("ls")],
                );
        }
        Scenario::BigOutput => {
            w.file("big.txt", 100_000)
                .turn("Print the whole big file.", vec![shell("cat big.txt")])
                .turn("Now read the notes.", vec![read("notes.txt")]);
        }
        Scenario::Clear | Scenario::Subagent => return None,
    }
    Some(w.done())
}

/// How a growing scenario reaches a compaction: the settings, and the files read (how many,
/// of how many characters, how many a turn). A file stays under the agent's bound on one tool
/// output (Claude Code's Read takes 25,000 tokens; Codex keeps some 10,000 of a command's).
struct Growth {
    settings: Settings,
    files: usize,
    /// How many of the files are of `chars` characters (the rest an eighth of it).
    large: usize,
    chars: usize,
    per_turn: usize,
}

/// The growing scenarios for each agent: on its default window where the content to reach it
/// can be read in a minute (Claude Code's 1M: some four megabytes), else on a smaller window
/// set in its own configuration; `compact-window`, on the point set by its own setting.
fn growth(scenario: Scenario, agent: Agent) -> Option<Growth> {
    let auto = scenario == Scenario::AutoCompact;
    let settings = |f: &dyn Fn(&mut Settings)| {
        let mut s = Settings::default();
        f(&mut s);
        s
    };
    Some(match agent {
        // Claude Code: its default 1M model; the point moved by its `autoCompactWindow`
        // setting (100,000: compacting at 67,000).
        Agent::ClaudeCode if auto => Growth {
            settings: Settings::default(),
            files: 60,
            large: 35,
            chars: 90_000,
            per_turn: 4,
        },
        Agent::ClaudeCode => Growth {
            settings: settings(&|s| {
                s.claude_settings = Some(serde_json::json!({"autoCompactWindow": 100_000}));
            }),
            files: 10,
            large: 5,
            chars: 36_000,
            per_turn: 2,
        },
        // Codex: a 60,000 window (compacting at 90% of it), or a limit of 30,000.
        Agent::Codex if auto => Growth {
            settings: settings(&|s| s.window = Some(60_000)),
            files: 12,
            large: 5,
            chars: 36_000,
            per_turn: 2,
        },
        Agent::Codex => Growth {
            settings: settings(&|s| s.compact = Some(30_000)),
            files: 8,
            large: 2,
            chars: 36_000,
            per_turn: 2,
        },
        // Gemini CLI: its compression threshold, a share of the model's 1,048,576 tokens.
        Agent::GeminiCli => Growth {
            settings: settings(&|s| s.compact = Some(if auto { 60 } else { 30 })),
            files: if auto { 20 } else { 14 },
            large: if auto { 4 } else { 2 },
            chars: 36_000,
            per_turn: 2,
        },
        // OpenCode: its model's context limit, or the reserve it keeps below it.
        Agent::OpenCode => Growth {
            settings: settings(&|s| {
                s.window = Some(60_000);
                if !auto {
                    s.compact = Some(25_000);
                }
            }),
            files: if auto { 12 } else { 8 },
            large: if auto { 5 } else { 3 },
            chars: 36_000,
            per_turn: 2,
        },
    })
}

/// What a run left: the record of every request, the commands, the logs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub agent: Agent,
    pub version: String,
    pub scenario: Scenario,
    pub dir: PathBuf,
    pub served: Vec<Served>,
    pub ran: Vec<Ran>,
    pub logs: Vec<PathBuf>,
    /// Why the run stopped short, if it did.
    pub failed: Option<String>,
}

/// Runs `scenario` with `agent` from `installed`, in `dir` (emptied first).
pub fn run(
    installed: &Installed,
    agent: Agent,
    scenario: Scenario,
    dir: &Path,
) -> Result<Option<Outcome>> {
    let Some(plan) = plan(scenario, agent) else {
        return Ok(None);
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    let work = dir.join("work");
    write_files(&work, &plan.files)?;
    let mut model = Model::new(plan.script.clone(), &work, &dir.join("requests.jsonl"));
    model.refuse_over = plan.refuse_over;
    let model = Arc::new(model);
    let serving = Arc::clone(&model);
    let server = Server::start(move |req| agent.serve(&serving, req))?;
    let cache = crate::install::lab_dir().join("cache");
    let mut session = Session::new(
        agent,
        &installed.bin(agent),
        dir,
        &server.url(),
        plan.settings.clone(),
        &cache,
    )?;
    let mut failed = None;
    for action in &plan.actions {
        let done = match action {
            Action::Turn { prompt, model } => session.turn(prompt, model.as_deref()),
            Action::Compact => session.compact(),
            Action::Clear => session.clear(),
        };
        if let Err(e) = done {
            failed = Some(format!("{e:#}"));
            break;
        }
    }
    let mut logs = session.logs()?;
    if agent == Agent::OpenCode && session.id.is_some() {
        match session.export() {
            Ok(p) => logs.push(p),
            Err(e) => failed = failed.or(Some(format!("{e:#}"))),
        }
    }
    drop(server);
    Ok(Some(Outcome {
        agent,
        version: installed.versions.get(&agent).cloned().unwrap_or_default(),
        scenario,
        dir: dir.to_owned(),
        served: model.served(),
        ran: session.ran.clone(),
        logs,
        failed,
    }))
}

/// Writes the plan's files: the notes, and text of the size asked for, cut from this
/// repository's own sources and documentation (real code and prose, as an agent reads them —
/// made-up text would price unlike either), each file a different slice.
fn write_files(work: &Path, files: &[(String, usize)]) -> Result<()> {
    let corpus = corpus()?;
    let mut at = 0;
    for (name, chars) in files {
        let path: PathBuf = work.join(name);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        let text = if name == "notes.txt" {
            "The answer is 42.\nThe lab keeps its notes short.\n".to_owned()
        } else {
            let (slice, next) = slice(&corpus, at, *chars);
            at = next;
            slice
        };
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The commit whose sources are the files the agents read: fixed, so that a scenario's
/// figures do not move with every edit of this repository's documents (the lab's own commit).
const CORPUS_COMMIT: &str = "1d2373c34068c47a9d0f1d7ef3d25d4343650d7f";

/// The directories of the corpus: Rust sources and Markdown documents, code and prose.
const CORPUS_DIRS: [&str; 5] = ["docs", "core/src", "src", "testkit/src", "tests/suite"];

/// This repository's Rust sources and Markdown documents at [`CORPUS_COMMIT`], in a fixed
/// order, as one text; where git or that commit is not at hand (an export, a shallow clone),
/// the working tree's, said on stderr.
fn corpus() -> Result<String> {
    static AT_COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let root = crate::install::pins_dir().join("..");
    let text = match AT_COMMIT.get_or_init(|| corpus_at(&root, CORPUS_COMMIT)) {
        Some(text) => text.clone(),
        None => {
            eprintln!(
                "lab: commit {CORPUS_COMMIT} is not in this clone: the agents read the working tree's sources (figures may differ from docs/lab.md)"
            );
            let mut files = Vec::new();
            for dir in CORPUS_DIRS {
                collect(&root.join(dir), &mut files)?;
            }
            files.sort();
            let mut text = String::new();
            for f in files {
                text.push_str(&std::fs::read_to_string(&f).unwrap_or_default());
                text.push('\n');
            }
            text
        }
    };
    anyhow::ensure!(text.len() > 100_000, "the repository's sources are missing");
    Ok(text)
}

/// The corpus files at `commit`, read with git, or `None`.
fn corpus_at(root: &Path, commit: &str) -> Option<String> {
    let git = |args: &[&str]| -> Option<Vec<u8>> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    };
    let mut args = vec!["ls-tree", "-r", "--name-only", commit, "--"];
    args.extend(CORPUS_DIRS);
    let list = String::from_utf8(git(&args)?).ok()?;
    let mut files: Vec<&str> = list
        .lines()
        .filter(|f| f.ends_with(".rs") || f.ends_with(".md"))
        .collect();
    files.sort();
    let mut text = String::new();
    for f in files {
        let body = git(&["show", &format!("{commit}:{f}")])?;
        text.push_str(&String::from_utf8_lossy(&body));
        text.push('\n');
    }
    Some(text)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
            out.push(p);
        }
    }
    Ok(())
}

/// `chars` bytes of `corpus` from `at` (wrapping round), cut at line ends; and where the
/// next slice starts.
fn slice(corpus: &str, at: usize, chars: usize) -> (String, usize) {
    let mut out = String::with_capacity(chars + 200);
    let mut i = at % corpus.len();
    for line in corpus[i..].lines().chain(corpus.lines().cycle()) {
        if out.len() + line.len() + 1 > chars {
            break;
        }
        out.push_str(line);
        out.push('\n');
        i += line.len() + 1;
    }
    (out, i % corpus.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plan_keys_its_turns_and_scripts_them() {
        for s in Scenario::ALL {
            for a in Agent::ALL {
                let Some(p) = plan(s, a) else {
                    assert!(matches!(
                        (s, a),
                        (Scenario::Clear | Scenario::Subagent, _)
                            | (Scenario::ManualCompact, Agent::GeminiCli | Agent::OpenCode)
                    ));
                    continue;
                };
                for act in &p.actions {
                    if let Action::Turn { prompt, .. } = act {
                        let key = crate::model::key_in(prompt).unwrap();
                        assert!(p.script.contains_key(&key), "{s:?} {a:?} {prompt}");
                    }
                }
            }
        }
        assert_eq!(Scenario::parse("auto-compact"), Some(Scenario::AutoCompact));
    }

    #[test]
    fn files_are_slices_of_real_text_each_different() {
        let corpus = corpus().unwrap();
        let (a, next) = slice(&corpus, 0, 10_000);
        let (b, _) = slice(&corpus, next, 10_000);
        assert!(a.len() <= 10_000 && a.len() > 9_000, "{}", a.len());
        assert_ne!(a, b);
        // Wrapping round the end still gives the size asked for.
        let (c, _) = slice(&corpus, corpus.len() - 100, 5_000);
        assert!(c.len() > 4_000);
    }
}
