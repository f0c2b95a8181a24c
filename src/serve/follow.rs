//! `tail -f` for an agent log, by polling: a JSONL file, a Claude Code session directory's
//! files (the transcript beside it and its `subagents/*.jsonl`, found again at every poll), or
//! a directory of logs (`~/.claude/projects`, `~/.codex/sessions`: every `*.jsonl` below it,
//! each a log of its own, its format told by its own first lines and its lines keyed by the
//! session it names).
//!
//! A line counts once its newline has arrived: the bytes after a file's last newline wait for
//! the next poll. A file that shrinks, is replaced (another inode at its path), has its bytes
//! before the read position changed, or comes back after vanishing no longer continues what was
//! read: the poll says so (`reset`) and reads every file again from its start.
//!
//! A `*.json` file is a document written whole each time (Gemini CLI's saved chat, OpenCode's
//! storage files, `opencode export`): when its size, time or inode changed it is read again
//! whole, as one record — never a reset: its adapter applies each of its messages once. One
//! that is not one JSON object (still being written, or broken) is said and read again when it
//! changes.
//!
//! Only regular files are followed (a FIFO's bytes cannot be read again, a device never ends);
//! a file whose size, modification time and inode are those of the last poll is not opened at
//! all; one poll reads at most [`READ_BYTES`] of a file, and a line longer than [`LINE_BYTES`]
//! is skipped, so memory stays bounded whatever is written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_fold_core::Input;
use anyhow::{Result, bail};

use crate::jsonl::{self, Splitter};
use crate::logs;
use crate::module::INVOCATION_BYTES;
use crate::record::Rec;

/// Bytes just before the read position compared at each poll, to notice a rewrite in place.
const CHECK: usize = 64;
/// The most bytes one poll reads of one file: a large file is taken in steps.
pub const READ_BYTES: u64 = 8 << 20;
/// The longest line kept: a longer one is skipped (no invocation takes more).
pub const LINE_BYTES: usize = INVOCATION_BYTES;

/// Refuses a log path that cannot be followed: it exists and is neither a regular file nor a
/// directory (a FIFO, a device, a socket). A path that does not exist yet is waited for.
pub fn followable(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => bail!(
            "{} is not a regular file: serve follows a log by reading what is appended to it, \
             which a FIFO or a device cannot give (`agent-fold run` reads a FIFO as a stream)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// What one poll found.
#[derive(Debug, Default)]
pub struct Polled {
    /// A file had more bytes than one poll reads: poll again at once.
    pub more: bool,
    /// Why what was read before no longer stands; `lines` then start from the log's start.
    pub reset: Option<String>,
    /// The new complete lines, as records; a directory's files merged by time.
    pub lines: Vec<Rec>,
    /// What is wrong with the log now (vanished, unreadable), if anything.
    pub problem: Option<String>,
    /// What the log is waiting for (a file that does not exist yet), if anything.
    pub waiting: Option<String>,
    /// Lines skipped, and why (over [`LINE_BYTES`]).
    pub skipped: Vec<String>,
    /// A directory of logs: the new lines of each format, each file's lines keyed by the
    /// session it names, the files of a format merged by time (`lines` is then empty).
    pub by_format: Vec<(Input, Vec<Rec>)>,
    /// A directory of logs: the files followed.
    pub files: usize,
}

/// In a directory of logs, how often the files are listed again (in polls).
const RELIST: u64 = 16;
/// In a directory of logs, a file quiet for this many looks is looked at every
/// `2^n` polls, up to this: thousands of idle files cost a `stat` each now and then.
const BACKOFF: u32 = 5;

/// A followed log: a file, a session directory, or a directory of logs.
pub struct Follow {
    root: PathBuf,
    /// A directory of logs (not one session's): each file a log of its own.
    tree: bool,
    tails: BTreeMap<PathBuf, Tail>,
    /// A directory of logs: the files as last listed, and the polls made.
    listed: Vec<PathBuf>,
    polls: u64,
}

/// How far one file has been read.
#[derive(Debug)]
struct Tail {
    /// The file's device and inode when last read.
    id: Option<(u64, u64)>,
    /// Bytes read so far (complete lines and what `lines` holds).
    pos: u64,
    /// The lines of what was read; one still being written waits there.
    lines: Splitter,
    /// The last bytes before `pos`, as read.
    check: Vec<u8>,
    /// The file was read, then went away.
    gone: bool,
    /// Size and modification time when last read: the same again, and nothing is read.
    seen: Option<(u64, Option<SystemTime>)>,
    /// Times the file was opened to be read.
    opens: u64,
    /// In a directory of logs: the file's format once its lines tell it, the session its lines
    /// name, the lines read before the format was told, and how long it has been quiet.
    format: Option<Input>,
    key: Option<Vec<u8>>,
    held: Vec<Rec>,
    quiet: u32,
}

/// What reading one file found.
enum TailStep {
    /// Complete lines, lines skipped, and whether more bytes wait.
    Lines(Vec<Rec>, Vec<String>, bool),
    Restart(String),
    Missing,
}

/// `O_NONBLOCK`: opening a path that became a FIFO never waits for a writer.
#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

impl Default for Tail {
    fn default() -> Tail {
        Tail {
            id: None,
            pos: 0,
            lines: Splitter::new(LINE_BYTES),
            check: Vec::new(),
            gone: false,
            seen: None,
            opens: 0,
            format: None,
            key: None,
            held: Vec::new(),
            quiet: 0,
        }
    }
}

impl Tail {
    fn read(&mut self, path: &Path) -> std::io::Result<TailStep> {
        let name = path.display();
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(TailStep::Missing),
            Err(e) => return Err(e),
        };
        if !meta.is_file() {
            return Err(std::io::Error::other(format!(
                "{name} is not a regular file: it cannot be followed"
            )));
        }
        let seen = Some((meta.len(), meta.modified().ok()));
        if !self.gone
            && self.pos == meta.len()
            && self.seen == seen
            && logs::file_id(&meta) == self.id
        {
            // Idle: nothing was written since the last read.
            return Ok(TailStep::Lines(Vec::new(), Vec::new(), false));
        }
        if is_document(path) {
            return self.read_document(path, &meta, seen);
        }
        self.opens += 1;
        let mut file = match open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(TailStep::Missing),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other(format!(
                "{name} is not a regular file: it cannot be followed"
            )));
        }
        let id = logs::file_id(&meta);
        if self.pos > 0 {
            if self.gone {
                return Ok(TailStep::Restart(format!("{name} came back")));
            }
            if self.id.is_some() && id != self.id {
                return Ok(TailStep::Restart(format!("{name} was replaced")));
            }
            if meta.len() < self.pos {
                return Ok(TailStep::Restart(format!("{name} was truncated")));
            }
            let mut before = vec![0; self.check.len()];
            file.seek(SeekFrom::Start(self.pos - before.len() as u64))?;
            file.read_exact(&mut before)?;
            if before != self.check {
                return Ok(TailStep::Restart(format!("{name} was rewritten")));
            }
        }
        self.gone = false;
        self.id = id;
        let mut new = Vec::new();
        file.seek(SeekFrom::Start(self.pos))?;
        (&mut file).take(READ_BYTES).read_to_end(&mut new)?;
        self.pos += new.len() as u64;
        let more = self.pos < meta.len();
        self.seen = (!more).then_some((meta.len(), meta.modified().ok()));
        self.check.extend_from_slice(&new);
        let extra = self.check.len().saturating_sub(CHECK);
        self.check.drain(..extra);
        let mut skipped = Vec::new();
        let mut lines = Vec::new();
        let place = format!("in {name}");
        self.lines
            .push(&new, |piece| match piece.line(&place, LINE_BYTES) {
                Ok(l) => lines.push(jsonl::line_record(l)),
                Err(why) => skipped.push(why),
            });
        Ok(TailStep::Lines(lines, skipped, more))
    }
}

/// Whether a file is followed as a document rewritten whole (`*.json`).
fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "json")
}

impl Tail {
    /// A document changed: the whole of it as one record (at most [`LINE_BYTES`]; a larger one
    /// is skipped and said), once it is one JSON object.
    fn read_document(
        &mut self,
        path: &Path,
        meta: &std::fs::Metadata,
        seen: Option<(u64, Option<SystemTime>)>,
    ) -> std::io::Result<TailStep> {
        self.opens += 1;
        self.gone = false;
        self.id = logs::file_id(meta);
        self.pos = meta.len();
        if meta.len() > LINE_BYTES as u64 {
            self.seen = seen;
            let why = format!(
                "{} holds {} bytes, over the {LINE_BYTES} one record may: skipped",
                path.display(),
                meta.len()
            );
            return Ok(TailStep::Lines(Vec::new(), vec![why], false));
        }
        let mut text = Vec::new();
        match open(path) {
            Ok(f) => f.take(LINE_BYTES as u64 + 1).read_to_end(&mut text)?,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(TailStep::Missing),
            Err(e) => return Err(e),
        };
        let record = jsonl::document(&text).or_else(|| {
            let line = text.trim_ascii();
            agent_fold_core::is_object(line).then(|| jsonl::line_record(line))
        });
        // Not one JSON object (being written, or broken): said, and read again only once it
        // changes, so a broken file costs one read per change.
        self.seen = seen;
        // JSON of another shape (Gemini CLI's `logs.json` is an array) is no agent's log: left
        // alone, unsaid.
        let other_json = record.is_none()
            && serde_json::from_slice::<serde::de::IgnoredAny>(text.trim_ascii()).is_ok();
        let skipped = match record {
            None if !other_json => vec![format!(
                "{} is not one JSON object (yet): read again when it changes",
                path.display()
            )],
            _ => Vec::new(),
        };
        Ok(TailStep::Lines(
            record.into_iter().collect(),
            skipped,
            false,
        ))
    }
}

impl Follow {
    pub fn new(root: &Path) -> Follow {
        Follow {
            root: root.to_owned(),
            tree: logs::is_tree(root),
            tails: BTreeMap::new(),
            listed: Vec::new(),
            polls: 0,
        }
    }

    /// Whether it follows a directory of logs.
    pub fn is_tree(&self) -> bool {
        self.tree
    }

    /// Times a file was opened to be read, over the files followed now.
    pub fn opens(&self) -> u64 {
        self.tails.values().map(|t| t.opens).sum()
    }

    /// Reads what was added since the last poll.
    pub fn poll(&mut self) -> Polled {
        if self.tree {
            return self.poll_tree();
        }
        let files = match logs::log_files(&self.root) {
            Ok(files) => files,
            Err(e) => {
                return Polled {
                    waiting: Some(format!("{e:#}: waiting for it")),
                    ..Polled::default()
                };
            }
        };
        let (mut problems, mut waiting, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        let mut more = false;
        // A file read before and no longer listed (a directory's) is gone too.
        let listed: BTreeSet<&PathBuf> = files.iter().collect();
        for (path, tail) in &mut self.tails {
            if tail.pos > 0 && !listed.contains(path) {
                tail.gone = true;
            }
        }
        let mut read = Vec::new();
        for path in &files {
            let tail = self.tails.entry(path.clone()).or_default();
            match tail.read(path) {
                Ok(TailStep::Lines(lines, skips, again)) => {
                    read.push(lines);
                    skipped.extend(skips);
                    more |= again;
                }
                Ok(TailStep::Missing) => {
                    if tail.pos > 0 {
                        tail.gone = true;
                    } else {
                        waiting.push(format!(
                            "{} does not exist yet: waiting for it",
                            path.display()
                        ));
                    }
                }
                Ok(TailStep::Restart(why)) => return self.restart(why),
                Err(e) => problems.push(format!("reading {}: {e}", path.display())),
            }
        }
        for (path, tail) in &self.tails {
            if tail.gone {
                problems.push(format!(
                    "{} vanished: waiting for it to come back",
                    path.display()
                ));
            }
        }
        Polled {
            lines: logs::merge(read),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            waiting: (!waiting.is_empty()).then(|| waiting.join("; ")),
            skipped,
            more,
            files: files.len(),
            ..Polled::default()
        }
    }

    /// Everything read so far is void: the next poll starts from scratch.
    fn restart(&mut self, why: String) -> Polled {
        self.tails.clear();
        self.listed.clear();
        self.polls = 0;
        let again = self.poll();
        Polled {
            reset: Some(format!("{why}: read again from its start")),
            ..again
        }
    }

    /// A directory of logs: each file polled on its own (a quiet one less often), its lines
    /// held until they tell its format, then keyed by the session it names.
    fn poll_tree(&mut self) -> Polled {
        if self.polls.is_multiple_of(RELIST) {
            match logs::tree_files(&self.root) {
                Ok(files) => self.listed = files,
                Err(e) => {
                    return Polled {
                        waiting: Some(format!("{e:#}: waiting for it")),
                        ..Polled::default()
                    };
                }
            }
            // A file no longer listed is a session gone: it goes quietly.
            let listed: BTreeSet<&PathBuf> = self.listed.iter().collect();
            self.tails.retain(|p, _| listed.contains(p));
        }
        self.polls += 1;
        let (mut problems, mut skipped) = (Vec::new(), Vec::new());
        let mut more = false;
        let mut read: Vec<(Input, Vec<Vec<Rec>>)> = Vec::new();
        for path in &self.listed {
            let tail = self.tails.entry(path.clone()).or_default();
            let every = 1u64 << tail.quiet.min(BACKOFF);
            if tail.pos > 0 && !self.polls.is_multiple_of(every) {
                continue;
            }
            match tail.read(path) {
                Ok(TailStep::Lines(lines, skips, again)) => {
                    tail.quiet = if lines.is_empty() { tail.quiet + 1 } else { 0 };
                    skipped.extend(skips);
                    more |= again;
                    if let Some(lines) = tail.told(lines, is_document(path)) {
                        let format = tail.format.expect("told");
                        match read.iter_mut().find(|(f, _)| *f == format) {
                            Some((_, files)) => files.push(lines),
                            None => read.push((format, vec![lines])),
                        }
                    }
                }
                Ok(TailStep::Missing) => tail.gone = true,
                Ok(TailStep::Restart(why)) => return self.restart(why),
                Err(e) => problems.push(format!("reading {}: {e}", path.display())),
            }
        }
        self.tails.retain(|_, t| !t.gone);
        Polled {
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            skipped,
            more,
            by_format: read
                .into_iter()
                .map(|(f, files)| (f, logs::merge(files)))
                .collect(),
            files: self.listed.len(),
            ..Polled::default()
        }
    }
}

impl Tail {
    /// A directory's file: its new lines once its format is told (keyed by the session its
    /// lines name), else `None` while they wait; after [`logs::DETECT_LINES`] lines that do not
    /// tell, the file is read as agent-fold frames — a document that does not tell is none.
    fn told(&mut self, lines: Vec<Rec>, document: bool) -> Option<Vec<Rec>> {
        if self.format.is_none() {
            self.format = lines.iter().find_map(|r| Input::detect(&r.value));
            if document && self.format.is_none() {
                // A JSON file that is no agent's log (a settings file, an index): left alone.
                return None;
            }
            self.held.extend(lines);
            if self.format.is_none() && self.held.len() < logs::DETECT_LINES {
                return None;
            }
            let format = *self.format.get_or_insert(Input::AgentFold);
            let held = std::mem::take(&mut self.held);
            return Some(self.keyed(format, held));
        }
        let format = self.format.expect("told above");
        Some(self.keyed(format, lines))
    }

    /// The lines keyed by the session the file names (agent-fold frames name their own).
    fn keyed(&mut self, format: Input, mut lines: Vec<Rec>) -> Vec<Rec> {
        if format == Input::AgentFold {
            return lines;
        }
        for r in &mut lines {
            if self.key.is_none() {
                self.key = format.session_named(&r.value).map(String::into_bytes);
            }
            if self.key.is_some() {
                r.key.clone_from(&self.key);
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use agent_fold_testkit::append;

    use super::*;

    /// An empty scratch directory of the test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agent-fold-follow-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The lines a poll read: of the log, or of each format of a directory of logs.
    fn values(p: &Polled) -> Vec<String> {
        p.lines
            .iter()
            .chain(p.by_format.iter().flat_map(|(_, l)| l))
            .map(|r| String::from_utf8_lossy(&r.value).into_owned())
            .collect()
    }

    #[test]
    fn lines_count_once_complete_and_rewrites_start_again() {
        let dir = scratch("log");
        let log = dir.join("log.jsonl");
        let _ = std::fs::remove_file(&log);
        let mut f = Follow::new(&log);
        assert!(f.poll().waiting.unwrap().contains("does not exist yet"));
        append(&log, b"{\"a\":1}\n{\"b\":");
        let p = f.poll();
        assert_eq!(values(&p), [r#"{"a":1}"#]);
        assert_eq!(p.problem, None);
        assert!(values(&f.poll()).is_empty(), "half a line waits");
        append(&log, b"2}\r\n\n");
        assert_eq!(values(&f.poll()), [r#"{"b":2}"#]);

        // Truncated, then longer than before: a new log.
        std::fs::write(&log, b"{\"c\":3}\n").unwrap();
        let p = f.poll();
        assert!(p.reset.as_deref().unwrap().contains("truncated"));
        assert_eq!(values(&p), [r#"{"c":3}"#]);
        std::fs::write(&log, b"{\"d\":4}\n{\"e\":5}\n").unwrap();
        let p = f.poll();
        assert!(p.reset.as_deref().unwrap().contains("rewritten"));
        assert_eq!(values(&p), [r#"{"d":4}"#, r#"{"e":5}"#]);

        // Gone: reported until it comes back, then read from its start.
        std::fs::remove_file(&log).unwrap();
        assert!(f.poll().problem.unwrap().contains("vanished"));
        assert!(f.poll().problem.unwrap().contains("vanished"));
        std::fs::write(&log, b"{\"f\":6}\n").unwrap();
        let p = f.poll();
        assert!(p.reset.as_deref().unwrap().contains("came back"));
        assert_eq!(
            (values(&p), p.problem),
            (vec![r#"{"f":6}"#.to_owned()], None)
        );

        // Replaced by another file at the same path.
        let other = dir.join("other.jsonl");
        std::fs::write(&other, b"{\"f\":6}\n{\"g\":7}\n").unwrap();
        std::fs::rename(&other, &log).unwrap();
        let p = f.poll();
        assert!(p.reset.as_deref().unwrap().contains("replaced"));
        assert_eq!(values(&p).len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_session_directory_merges_its_files_by_time() {
        let dir = scratch("dir");
        let session = dir.join("s1");
        std::fs::create_dir_all(session.join("subagents")).unwrap();
        let main = dir.join("s1.jsonl");
        append(&main, b"{\"n\":1,\"timestamp\":\"2026-01-01T00:00:01Z\"}\n");
        let mut f = Follow::new(&session);
        assert_eq!(values(&f.poll()).len(), 1);
        append(&main, b"{\"n\":3,\"timestamp\":\"2026-01-01T00:00:03Z\"}\n");
        append(
            &session.join("subagents/agent-a.jsonl"),
            b"{\"n\":2,\"timestamp\":\"2026-01-01T00:00:02Z\"}\n",
        );
        let ns: Vec<String> = values(&f.poll())
            .iter()
            .map(|v| v[5..6].to_owned())
            .collect();
        assert_eq!(ns, ["2", "3"], "a new sub-agent file joins, merged by time");
        std::fs::remove_file(session.join("subagents/agent-a.jsonl")).unwrap();
        assert!(f.poll().problem.unwrap().contains("agent-a.jsonl vanished"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn idle_files_are_not_opened_again_and_a_written_one_is() {
        let dir = scratch("idle");
        std::fs::create_dir_all(dir.join("many")).unwrap();
        let frame = |i: usize, seq: u64| {
            format!("{{\"type\":\"user/message\",\"session_id\":\"s{i}\",\"seq\":{seq}}}\n")
        };
        for i in 0..50 {
            append(
                &dir.join(format!("many/{i:02}.jsonl")),
                frame(i, 1).as_bytes(),
            );
        }
        let mut f = Follow::new(&dir.join("many"));
        assert_eq!(values(&f.poll()).len(), 50);
        let opened = f.opens();
        assert_eq!(opened, 50);
        for _ in 0..5 {
            assert!(values(&f.poll()).is_empty());
        }
        assert_eq!(f.opens(), opened, "five idle polls opened nothing");
        append(&dir.join("many/07.jsonl"), frame(7, 2).as_bytes());
        // Quiet files are looked at less often: within 32 polls the new line is read.
        let got: Vec<String> = (0..32).flat_map(|_| values(&f.poll())).collect();
        assert_eq!(got, [frame(7, 2).trim_end()]);
        assert_eq!(f.opens(), opened + 1, "only the file written to");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A document is read whole each time it changes, never as a reset; one that is not one
    /// JSON object is said once per change and not read again until it changes.
    #[test]
    fn a_document_is_read_whole_per_change_and_a_broken_one_once() {
        let dir = scratch("doc");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session-x.json");
        std::fs::write(&path, "{\n  \"sessionId\": \"x\",\n  \"messages\": []\n}\n").unwrap();
        let mut f = Follow::new(&path);
        let p = f.poll();
        assert_eq!(p.lines.len(), 1, "the whole document, one record");
        assert!(p.lines[0].value.starts_with(b"{") && p.reset.is_none());
        assert!(f.poll().lines.is_empty(), "unchanged: nothing");
        std::fs::write(
            &path,
            "{\"sessionId\": \"x\", \"messages\": [{\"id\": \"a\"}]}",
        )
        .unwrap();
        let p = f.poll();
        assert_eq!(
            (p.lines.len(), p.reset.is_none()),
            (1, true),
            "rewritten: read again, no reset"
        );
        std::fs::write(&path, "{\"sessionId\": \"x\", \"mess").unwrap();
        let p = f.poll();
        assert!(p.lines.is_empty());
        assert!(
            p.skipped[0].contains("not one JSON object"),
            "{:?}",
            p.skipped
        );
        let opens = f.opens();
        assert!(f.poll().skipped.is_empty(), "said once");
        assert_eq!(f.opens(), opens, "and not read again until it changes");
        std::fs::write(&path, "[{\"sessionId\": \"x\"}]").unwrap();
        let p = f.poll();
        assert!(
            p.lines.is_empty() && p.skipped.is_empty(),
            "JSON of another shape: left alone"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_that_is_no_regular_file_cannot_be_followed() {
        let err = followable(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(err.contains("is not a regular file"), "{err}");
        assert!(
            followable(Path::new("/nonexistent/yet.jsonl")).is_ok(),
            "waited for"
        );
        let mut f = Follow::new(Path::new("/dev/null"));
        let p = f.poll();
        assert!(p.problem.unwrap().contains("not a regular file"));
        assert_eq!(f.opens(), 0, "a device is never opened");
    }
}
