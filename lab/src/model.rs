//! The model the stand-ins play, whatever the API: a script of steps per prompt, chosen by the
//! key word (`LAB-…`) of the latest user prompt a request carries, and the record of every
//! request — the lab's ground truth.
//!
//! A step is a tool call the agent runs in its scratch directory (read a file, run a command,
//! start a sub-agent) or the turn's closing text. The script's progress is kept here, per key,
//! not read from the request: after a compaction the request no longer holds the earlier tool
//! results, and the turn must go on, not start again (Codex loops otherwise).

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::tokens::Count;

/// The word a scenario's prompts start their key with; nothing else the lab writes holds it.
pub const KEY: &str = "LAB-";

/// One thing the model does in answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// Read a file of the scratch directory (a path relative to it).
    Read(String),
    /// Run a shell command in the scratch directory.
    Shell(String),
    /// Start a sub-agent with this prompt (where the agent has one).
    Agent(String),
}

/// What a request is, as the API layer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A request of the conversation: the meter's business.
    Turn,
    /// The agent asking for a summary of its context: a compaction.
    Compaction,
    /// A side call that carries no conversation (Gemini CLI's router, a token count).
    Side,
}

/// What the stand-in answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    Text,
    Tool(Step),
    Summary,
    /// An HTTP error (the API's "prompt is too long").
    Refused(u16),
}

/// One request, as the record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Served {
    /// Its place among the run's requests, from 1.
    pub seq: u64,
    /// Milliseconds since 1970 when it arrived.
    pub at_ms: u64,
    pub api: String,
    pub path: String,
    pub kind: Kind,
    /// The key of the latest prompt it carried.
    pub key: Option<String>,
    /// What it carried, counted, and priced by agent-fold's estimate.
    pub count: Count,
    pub estimated: Count,
    /// The prompt size the usage answered (the count, or nothing when refused).
    pub answered: Option<u64>,
    /// Output tokens answered.
    pub output: u64,
    pub reply: Reply,
    /// The id the answer carried (a message's or a response's).
    pub id: String,
    /// The model the request named.
    pub model: Option<String>,
    /// For the first conversation request after a compaction: what it carried, message by
    /// message, labelled by role and kind — what the agent put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_compaction: Option<Vec<(String, u64)>>,
}

/// A request, read by its API into what the model needs.
#[derive(Debug, Clone)]
pub struct Asked {
    pub kind: Kind,
    pub key: Option<String>,
    pub count: Count,
    pub estimated: Count,
    pub model: Option<String>,
    /// Its messages' tokens, each labelled by role and kind.
    pub parts: Vec<(String, u64)>,
}

/// The scenario's script and the run's record, shared by the stand-in's connections.
pub struct Model {
    /// Steps per key, in order; the closing text follows the last.
    script: HashMap<String, Vec<Step>>,
    /// The scratch directory the agent runs in (tools name paths in it).
    pub work: PathBuf,
    /// Requests whose count is above this are refused as too long (0: none).
    pub refuse_over: u64,
    state: Mutex<State>,
    record: PathBuf,
}

#[derive(Default)]
struct State {
    /// Steps issued per key.
    issued: HashMap<String, usize>,
    served: Vec<Served>,
    /// A compaction was answered and no conversation request came since.
    compacted: bool,
}

impl Model {
    pub fn new(script: HashMap<String, Vec<Step>>, work: &Path, record: &Path) -> Model {
        Model {
            script,
            work: work.to_owned(),
            refuse_over: 0,
            state: Mutex::default(),
            record: record.to_owned(),
        }
    }

    /// Decides the answer to a conversation request and records it; `reply` builds the API's
    /// answer from it, with the id it will carry.
    pub fn answer(
        &self,
        api: &str,
        path: &str,
        asked: &Asked,
        output: impl Fn(&Reply) -> u64,
    ) -> Served {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let total = asked.count.total();
        let reply = match asked.kind {
            Kind::Side => Reply::Text,
            _ if self.refuse_over > 0 && total > self.refuse_over => Reply::Refused(400),
            Kind::Compaction => Reply::Summary,
            Kind::Turn => match &asked.key {
                Some(k) => {
                    let done = st.issued.get(k).copied().unwrap_or(0);
                    match self.script.get(k).and_then(|s| s.get(done)) {
                        Some(step) => {
                            st.issued.insert(k.clone(), done + 1);
                            Reply::Tool(step.clone())
                        }
                        None => Reply::Text,
                    }
                }
                None => Reply::Text,
            },
        };
        let seq = st.served.len() as u64 + 1;
        let after_compaction = match asked.kind {
            Kind::Turn if st.compacted && !matches!(reply, Reply::Refused(_)) => {
                st.compacted = false;
                Some(asked.parts.clone())
            }
            Kind::Compaction => {
                st.compacted = true;
                None
            }
            _ => None,
        };
        let served = Served {
            seq,
            at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            api: api.to_owned(),
            path: path.to_owned(),
            kind: asked.kind,
            key: asked.key.clone(),
            count: asked.count,
            estimated: asked.estimated,
            answered: (!matches!(reply, Reply::Refused(_))).then_some(total),
            output: output(&reply),
            id: format!("lab_{seq:06}"),
            model: asked.model.clone(),
            after_compaction,
            reply,
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.record)
            && let Ok(line) = serde_json::to_string(&served)
        {
            let _ = writeln!(f, "{line}");
        }
        st.served.push(served.clone());
        served
    }

    /// Every request so far.
    pub fn served(&self) -> Vec<Served> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .served
            .clone()
    }

    /// An absolute path in the scratch directory.
    pub fn path(&self, relative: &str) -> String {
        self.work.join(relative).to_string_lossy().into_owned()
    }
}

/// The key a text holds (`LAB-` and the word after it), if any.
pub fn key_in(text: &str) -> Option<String> {
    let at = text.rfind(KEY)?;
    let word: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (word.len() > KEY.len()).then_some(word)
}

/// What the model says when it has nothing to call: short, and naming its key so that a log
/// line can be told by it.
pub fn closing_text(key: Option<&str>) -> String {
    format!("Done with {}.", key.unwrap_or("that"))
}

/// The summary the model writes when asked to compact: a few hundred characters, no key.
pub const SUMMARY: &str = "<analysis>The user asked for a few files to be read and commands to be run in a scratch directory; each was done and the results were reported back.</analysis>\n<summary>\n1. Primary request: read the files and run the commands the user named, then report.\n2. Key facts: the scratch directory holds text files of prose and code; the commands listed it and counted lines.\n3. Files touched: the files named in the requests, read in full.\n4. Errors: none.\n5. Pending tasks: none; the next prompt says what comes next.\n6. Current work: waiting for the next instruction.\n</summary>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_the_last_lab_word_of_a_text() {
        assert_eq!(key_in("LAB-T1 read it").as_deref(), Some("LAB-T1"));
        assert_eq!(
            key_in("old LAB-T1, now LAB-t2_x.").as_deref(),
            Some("LAB-t2_x")
        );
        assert_eq!(key_in("LAB- alone"), None);
        assert_eq!(key_in("nothing"), None);
        assert!(key_in(SUMMARY).is_none());
    }

    #[test]
    fn steps_follow_the_script_per_key_then_the_closing_text() {
        let dir = std::env::temp_dir();
        let record = dir.join(format!("lab-model-{}.jsonl", std::process::id()));
        let script = HashMap::from([(
            "LAB-A".to_owned(),
            vec![Step::Read("a.txt".into()), Step::Shell("ls".into())],
        )]);
        let m = Model::new(script, &dir, &record);
        let ask = |kind, key: &str| Asked {
            kind,
            key: Some(key.to_owned()),
            count: Count {
                system: 1,
                tools: 2,
                messages: 3,
            },
            estimated: Count::default(),
            model: None,
            parts: vec![("user:text".into(), 3)],
        };
        let replies: Vec<Reply> = [
            ask(Kind::Turn, "LAB-A"),
            ask(Kind::Compaction, "LAB-A"),
            ask(Kind::Turn, "LAB-A"),
            ask(Kind::Turn, "LAB-A"),
            ask(Kind::Turn, "LAB-B"),
        ]
        .iter()
        .map(|a| m.answer("test", "/", a, |_| 1).reply)
        .collect();
        assert_eq!(
            replies,
            [
                Reply::Tool(Step::Read("a.txt".into())),
                Reply::Summary,
                Reply::Tool(Step::Shell("ls".into())),
                Reply::Text,
                Reply::Text
            ]
        );
        let served = m.served();
        assert_eq!(served[0].answered, Some(6));
        assert!(served[1].after_compaction.is_none());
        assert_eq!(
            served[2].after_compaction.as_deref(),
            Some(&[("user:text".to_owned(), 3)][..])
        );
        assert!(served[3].after_compaction.is_none());
        let lines = std::fs::read_to_string(&record).unwrap();
        assert_eq!(lines.lines().count(), 5);
        let _ = std::fs::remove_file(&record);
    }
}
