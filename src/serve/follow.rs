//! `tail -f` for an agent log, by polling: a JSONL file, a Claude Code session directory's
//! files (the transcript beside it and its `subagents/*.jsonl`, found again at every poll), or
//! a directory of logs (`~/.claude/projects`, `~/.codex/sessions`: every `*.jsonl` below it,
//! each a log of its own, its format told by its own first lines and its lines keyed by the
//! session it names).
//!
//! A line counts once its newline has arrived: the bytes after a file's last newline wait for
//! the next poll. A file that shrinks, is replaced (another inode at its path), has its bytes
//! before the read position changed, or comes back after vanishing no longer continues what was
//! read: it is read again from its start (`rereads`), and only its own sessions with it. In a
//! directory of logs, a file read again goes to module instances of a new generation, which
//! hold nothing of its sessions (the instances it leaves keep the rest, and go once no file is
//! left in them; at most [`MAX_GENERATIONS`] per format, past which the smallest generation's
//! files join the re-read), with every file that shares a session with it. The board sets those
//! sessions' alert state aside until their re-read caught up (`reread_done`), so a re-read pages
//! no one for what it paged already. Each such event, a file vanishing, and one unreadable or
//! readable again, is said once (`events`).
//!
//! OpenCode's database (`opencode.db`, given, found in a directory given, or below one) is a
//! log of many sessions: each poll asks it what changed (`PRAGMA data_version`, never a write:
//! [`crate::opencode_db`]) and reads the messages settled since, each session's as a document
//! of its export's shape keyed by the session. It is looked at every poll (no backing off: a
//! look costs a `stat` and one statement), so a turn shows within a poll or two. A database
//! replaced (another inode), back after vanishing, or holding another database's sessions is
//! read again from its start as a file is; one that vanished keeps its sessions; one that is no
//! database, a damaged one or another program's is refused in words (`unreadable`, said once)
//! and looked at again each poll, every other file followed on.
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

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use agent_fold_core::Input;
use anyhow::{Result, bail};

use crate::jsonl::{self, Splitter};
use crate::logs;
use crate::module::INVOCATION_BYTES;
use crate::opencode_db;
use crate::record::Rec;

pub use super::board::{LogEvent, Sessions};

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
    /// A file had more bytes than one poll reads, or a file starts again: poll again at once.
    pub more: bool,
    /// A single log (not a directory of logs) is read again from its start: its module
    /// instances start again too, and `lines` start from the log's start.
    pub reset: Option<String>,
    /// The new complete lines, as records; a log's files merged by time (a single log).
    pub lines: Vec<Rec>,
    /// What is wrong with the log now (vanished, unreadable), if anything.
    pub problem: Option<String>,
    /// What the log is waiting for (a file that does not exist yet), if anything.
    pub waiting: Option<String>,
    /// Lines skipped, and why (over [`LINE_BYTES`]).
    pub skipped: Vec<String>,
    /// A directory of logs: each file's new lines once its format is told, keyed by the
    /// session it names, for the instances of its format and generation (`lines` is then
    /// empty).
    pub by_file: Vec<FileLines>,
    /// A directory of logs: the files followed.
    pub files: usize,
    /// Sessions whose log is read again from its start from this poll on, and why.
    pub rereads: Vec<(String, Sessions)>,
    /// Sessions whose re-read caught up with their log in this poll.
    pub reread_done: Vec<Sessions>,
    /// What happened to the files, each said once.
    pub events: Vec<(LogEvent, String)>,
}

/// One file's new lines in a directory of logs.
#[derive(Debug)]
pub struct FileLines {
    pub path: PathBuf,
    pub format: Input,
    /// The generation of module instances it is read by (see the module's notes).
    pub generation: u32,
    pub lines: Vec<Rec>,
}

/// In a directory of logs, how often the files are listed again (in polls).
const RELIST: u64 = 16;
/// In a directory of logs, a file quiet for this many looks is looked at every
/// `2^n` polls, up to this: thousands of idle files cost a `stat` each now and then.
const BACKOFF: u32 = 5;
/// Generations of module instances per format at most (each a pair of instances).
pub const MAX_GENERATIONS: usize = 4;
/// Sessions remembered per file (or per single log): a file naming more is re-read with every
/// session on the board.
pub const SESSIONS_PER_FILE: usize = 1_024;
/// Vanished files remembered (so that one coming back is read again, not read twice).
const GONE_KEPT: usize = 10_000;

/// The sessions a file's lines and the module's records of them named.
#[derive(Debug, Default, Clone)]
struct Learned {
    ids: BTreeSet<Arc<str>>,
    /// Over [`SESSIONS_PER_FILE`]: not all are known.
    wide: bool,
}

impl Learned {
    fn add(&mut self, id: &str) {
        if self.wide || self.ids.contains(id) {
            return;
        }
        if self.ids.len() >= SESSIONS_PER_FILE {
            self.wide = true;
            self.ids.clear();
        } else {
            self.ids.insert(Arc::from(id));
        }
    }

    fn sessions(&self) -> Sessions {
        match self.wide {
            true => Sessions::All,
            false => Sessions::These(self.ids.iter().cloned().collect()),
        }
    }
}

/// A followed log: a file, a session directory, or a directory of logs.
pub struct Follow {
    root: PathBuf,
    /// A directory of logs (not one session's): each file a log of its own; or OpenCode's
    /// database, a log of many sessions (`db`).
    tree: bool,
    db: bool,
    tails: BTreeMap<PathBuf, Tail>,
    /// A directory of logs: the files as last listed, and the polls made.
    listed: Vec<PathBuf>,
    polls: u64,
    /// A single log: the sessions it named.
    learned: Learned,
    /// A single log read again: its sessions, until the re-read caught up.
    rereading: Option<Sessions>,
    /// Generations handed out (a directory of logs).
    generations: u32,
    /// Re-reads in progress (a directory of logs): their sessions and the files yet to catch
    /// up.
    groups: BTreeMap<u64, (Sessions, usize)>,
    next_group: u64,
    /// Vanished files, oldest first.
    gone: VecDeque<PathBuf>,
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
    /// Size, modification and change times when last read: the same again, and nothing is
    /// read (a change of mode moves the change time: a file made unreadable is noticed).
    seen: Option<Seen>,
    /// Times the file was opened to be read.
    opens: u64,
    /// In a directory of logs: the file's format once its lines tell it, the session its lines
    /// name, the lines read before the format was told, and how long it has been quiet.
    format: Option<Input>,
    key: Option<Vec<u8>>,
    held: Vec<Rec>,
    quiet: u32,
    /// In a directory of logs: the generation of instances that reads it, the sessions it
    /// named, and the re-read it is part of until it caught up.
    generation: u32,
    learned: Learned,
    group: Option<u64>,
    /// The last read failed (said once, until a read succeeds).
    unreadable: bool,
    /// OpenCode's database, not a file of lines; its reader once open.
    db: bool,
    follower: Option<Box<opencode_db::Follower>>,
}

/// What `stat` says of a file, to tell an idle one.
type Seen = (u64, Option<SystemTime>, Option<(i64, i64)>);

fn seen_of(meta: &std::fs::Metadata) -> Seen {
    #[cfg(unix)]
    let changed = {
        use std::os::unix::fs::MetadataExt;
        Some((meta.ctime(), meta.ctime_nsec()))
    };
    #[cfg(not(unix))]
    let changed = None;
    (meta.len(), meta.modified().ok(), changed)
}

/// What reading one file found.
enum TailStep {
    /// Complete lines, lines skipped, and whether more bytes wait.
    Lines(Vec<Rec>, Vec<String>, bool),
    Restart(LogEvent, String),
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
            generation: 0,
            learned: Learned::default(),
            group: None,
            unreadable: false,
            db: false,
            follower: None,
        }
    }
}

impl Tail {
    /// A file's tail: a database's when `db`.
    fn new(db: bool) -> Tail {
        Tail {
            db,
            ..Tail::default()
        }
    }

    fn read(&mut self, path: &Path) -> std::io::Result<TailStep> {
        if self.db {
            return self.read_db(path);
        }
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
        let seen = Some(seen_of(&meta));
        if !self.gone
            && !self.unreadable
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
            if let Some(step) = self.back_or_replaced(&name, id) {
                return Ok(step);
            }
            if meta.len() < self.pos {
                return Ok(TailStep::Restart(
                    LogEvent::Truncated,
                    format!("{name} was truncated"),
                ));
            }
            let mut before = vec![0; self.check.len()];
            file.seek(SeekFrom::Start(self.pos - before.len() as u64))?;
            file.read_exact(&mut before)?;
            if before != self.check {
                return Ok(TailStep::Restart(
                    LogEvent::Rewritten,
                    format!("{name} was rewritten"),
                ));
            }
        }
        self.gone = false;
        self.id = id;
        let mut new = Vec::new();
        file.seek(SeekFrom::Start(self.pos))?;
        (&mut file).take(READ_BYTES).read_to_end(&mut new)?;
        self.pos += new.len() as u64;
        let more = self.pos < meta.len();
        self.seen = (!more).then(|| seen_of(&meta));
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

impl Tail {
    /// OpenCode's database: what changed since the last poll, each session's settled messages
    /// as a document keyed by the session (at most [`READ_BYTES`] a poll; then `more`). The
    /// file replaced, back after vanishing, or holding another database's sessions starts
    /// again; gone, the reader is closed (no deleted file held open).
    /// A file read before that is back after vanishing, or another file now (its id
    /// changed): read again from its start, paging no one twice (docs/serve.md).
    fn back_or_replaced(
        &self,
        name: &impl std::fmt::Display,
        id: Option<(u64, u64)>,
    ) -> Option<TailStep> {
        if self.gone {
            return Some(TailStep::Restart(
                LogEvent::CameBack,
                format!("{name} came back"),
            ));
        }
        (self.id.is_some() && id != self.id)
            .then(|| TailStep::Restart(LogEvent::Replaced, format!("{name} was replaced")))
    }

    fn read_db(&mut self, path: &Path) -> std::io::Result<TailStep> {
        let name = path.display();
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                self.follower = None;
                return Ok(TailStep::Missing);
            }
            Err(e) => return Err(e),
        };
        if !meta.is_file() {
            self.follower = None;
            return Err(std::io::Error::other(format!(
                "{name} is not a regular file: it cannot be followed"
            )));
        }
        let id = logs::file_id(&meta);
        if self.pos > 0
            && let Some(step) = self.back_or_replaced(&name, id)
        {
            return Ok(step);
        }
        let follower = match &mut self.follower {
            Some(f) => f,
            None => {
                self.opens += 1;
                let f = opencode_db::Follower::open(path).map_err(std::io::Error::other)?;
                self.follower.insert(Box::new(f))
            }
        };
        let step = match follower.poll(LINE_BYTES, READ_BYTES as usize) {
            Ok(step) => step,
            Err(e) => {
                // Opened again at the next poll: a reader that failed holds nothing.
                self.follower = None;
                return Err(std::io::Error::other(e));
            }
        };
        if step.rewritten && self.pos > 0 {
            return Ok(TailStep::Restart(
                LogEvent::Rewritten,
                format!("{name} was rewritten: it holds another database's sessions"),
            ));
        }
        self.gone = false;
        self.id = id;
        self.pos = self.pos.max(1) + step.records.len() as u64;
        Ok(TailStep::Lines(step.records, step.skipped, step.more))
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
        seen: Option<Seen>,
    ) -> std::io::Result<TailStep> {
        self.opens += 1;
        if meta.len() > LINE_BYTES as u64 {
            self.gone = false;
            self.id = logs::file_id(meta);
            self.pos = meta.len();
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
        self.gone = false;
        self.id = logs::file_id(meta);
        self.pos = meta.len();
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

    /// Said once: a read that failed, and the first that succeeds after it.
    fn failed(&mut self, path: &Path, e: &std::io::Error, events: &mut Vec<(LogEvent, String)>) {
        if !self.unreadable {
            self.unreadable = true;
            events.push((
                LogEvent::Unreadable,
                format!(
                    "{} cannot be read ({e}): its sessions stay as they were; it is read again \
                     once it can be",
                    path.display()
                ),
            ));
        }
    }

    fn succeeded(&mut self, path: &Path, events: &mut Vec<(LogEvent, String)>) {
        if self.unreadable {
            self.unreadable = false;
            events.push((
                LogEvent::Readable,
                format!("{} can be read again: followed on", path.display()),
            ));
        }
    }

    /// Marks the file gone; said the first time.
    fn vanished(&mut self, path: &Path, events: &mut Vec<(LogEvent, String)>) -> bool {
        if self.gone || self.pos == 0 {
            return false;
        }
        self.gone = true;
        events.push((
            LogEvent::Vanished,
            format!(
                "{} vanished: its sessions stay as they were; read again if it comes back",
                path.display()
            ),
        ));
        true
    }
}

impl Follow {
    /// Follows `root`: a log, a session directory, a directory of logs, or OpenCode's database
    /// (the file, the directory holding `opencode.db`, or a database path not written yet).
    pub fn new(root: &Path) -> Follow {
        let db = logs::database(root)
            .or_else(|| (!root.exists() && logs::names_database(root)).then(|| root.to_owned()));
        let (root, db) = match db {
            Some(p) => (p, true),
            None => (root.to_owned(), false),
        };
        Follow {
            tree: db || logs::is_tree(&root),
            db,
            root,
            tails: BTreeMap::new(),
            listed: Vec::new(),
            polls: 0,
            learned: Learned::default(),
            rereading: None,
            generations: 0,
            groups: BTreeMap::new(),
            next_group: 0,
            gone: VecDeque::new(),
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

    /// The sessions the lines of `path` (a directory's file; `None`: the single log) and the
    /// module's records of them named: what a re-read of it concerns.
    pub fn learned<'a>(&mut self, path: Option<&Path>, ids: impl IntoIterator<Item = &'a str>) {
        let learned = match path.and_then(|p| self.tails.get_mut(p)) {
            Some(t) => &mut t.learned,
            None if path.is_none() => &mut self.learned,
            None => return,
        };
        for id in ids {
            learned.add(id);
        }
    }

    /// The (format's name, generation) pairs of instances some file is read by: the others
    /// can go.
    pub fn generations(&self) -> BTreeSet<(&'static str, u32)> {
        self.tails
            .values()
            .filter_map(|t| Some((t.format?.name(), t.generation)))
            .collect()
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
        let mut events = Vec::new();
        let mut more = false;
        // A file read before and no longer listed (a directory's) is gone too.
        let listed: BTreeSet<&PathBuf> = files.iter().collect();
        for (path, tail) in &mut self.tails {
            if !listed.contains(path) {
                tail.vanished(path, &mut events);
            }
        }
        let mut read = Vec::new();
        for path in &files {
            let tail = self.tails.entry(path.clone()).or_default();
            match tail.read(path) {
                Ok(TailStep::Lines(lines, skips, again)) => {
                    tail.succeeded(path, &mut events);
                    read.push(lines);
                    skipped.extend(skips);
                    more |= again;
                }
                Ok(TailStep::Missing) => {
                    if tail.pos == 0 {
                        waiting.push(format!(
                            "{} does not exist yet: waiting for it",
                            path.display()
                        ));
                    } else {
                        tail.vanished(path, &mut events);
                    }
                }
                Ok(TailStep::Restart(event, why)) => {
                    let mut again = self.restart(why.clone());
                    again.events.splice(
                        0..0,
                        events
                            .into_iter()
                            .chain([(event, format!("{why}: read again from its start"))]),
                    );
                    return again;
                }
                Err(e) => {
                    tail.failed(path, &e, &mut events);
                    problems.push(format!("reading {}: {e}", path.display()));
                }
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
        let mut reread_done = Vec::new();
        if !more && let Some(s) = self.rereading.take() {
            reread_done.push(s);
        }
        Polled {
            lines: logs::merge(read),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            waiting: (!waiting.is_empty()).then(|| waiting.join("; ")),
            skipped,
            more,
            files: files.len(),
            reread_done,
            events,
            ..Polled::default()
        }
    }

    /// A single log: everything read so far is void; it is read again from its start, and its
    /// sessions with it.
    fn restart(&mut self, why: String) -> Polled {
        let sessions = self.learned.sessions();
        self.tails.clear();
        self.polls = 0;
        // Read again before the last re-read caught up: it ends with this one.
        self.rereading = Some(match (self.rereading.take(), &sessions) {
            (Some(Sessions::These(mut old)), Sessions::These(new)) => {
                old.extend(new.iter().cloned());
                old.sort();
                old.dedup();
                Sessions::These(old)
            }
            (Some(_), _) => Sessions::All,
            (None, s) => s.clone(),
        });
        let again = self.poll();
        let mut rereads = vec![(format!("{why}: read again from its start"), sessions)];
        rereads.extend(again.rereads);
        Polled {
            reset: Some(format!("{why}: read again from its start")),
            rereads,
            ..again
        }
    }

    /// A directory of logs: each file polled on its own (a quiet one less often), its lines
    /// held until they tell its format, then keyed by the session it names.
    fn poll_tree(&mut self) -> Polled {
        let mut events = Vec::new();
        if self.polls.is_multiple_of(RELIST) {
            let listing = match self.db {
                true => Ok(vec![self.root.clone()]),
                false => logs::tree_files(&self.root),
            };
            match listing {
                Ok(files) => self.listed = files,
                Err(e) => {
                    return Polled {
                        waiting: Some(format!("{e:#}: waiting for it")),
                        ..Polled::default()
                    };
                }
            }
            // A file no longer listed is gone: its sessions stay; it is said once, and read
            // again from its start if it comes back. One never read goes quietly.
            let listed: BTreeSet<&PathBuf> = self.listed.iter().collect();
            let mut gone = Vec::new();
            self.tails.retain(|p, t| {
                if listed.contains(p) {
                    return true;
                }
                if t.vanished(p, &mut events) {
                    gone.push(p.clone());
                }
                t.gone
            });
            self.gone.extend(gone);
        }
        self.polls += 1;
        let (mut problems, mut skipped) = (Vec::new(), Vec::new());
        let mut more = false;
        let mut by_file: Vec<FileLines> = Vec::new();
        let mut restarts = Vec::new();
        let mut done = Vec::new();
        for path in &self.listed {
            let db = self.db
                || path
                    .file_name()
                    .is_some_and(|n| n == opencode_db::FILE_NAME);
            let tail = self
                .tails
                .entry(path.clone())
                .or_insert_with(|| Tail::new(db));
            let every = 1u64 << tail.quiet.min(BACKOFF);
            // A database is asked at every poll: a look is one statement, and a turn shows
            // within a second.
            if !tail.db && tail.pos > 0 && !tail.unreadable && !self.polls.is_multiple_of(every) {
                continue;
            }
            match tail.read(path) {
                Ok(TailStep::Lines(lines, skips, again)) => {
                    tail.succeeded(path, &mut events);
                    tail.quiet = if lines.is_empty() { tail.quiet + 1 } else { 0 };
                    skipped.extend(skips);
                    more |= again;
                    if let Some(lines) = tail.told(path, lines, is_document(path))
                        && let Some(format) = tail.format
                        && !lines.is_empty()
                    {
                        by_file.push(FileLines {
                            path: path.clone(),
                            format,
                            generation: tail.generation,
                            lines,
                        });
                    }
                    if !again && let Some(g) = tail.group.take() {
                        done.push(g);
                    }
                }
                Ok(TailStep::Missing) => {
                    if tail.vanished(path, &mut events) {
                        self.gone.push_back(path.clone());
                    }
                    if tail.pos == 0 {
                        tail.gone = true;
                    }
                    if let Some(g) = tail.group.take() {
                        done.push(g);
                    }
                }
                Ok(TailStep::Restart(event, why)) => restarts.push((path.clone(), event, why)),
                Err(e) => {
                    tail.failed(path, &e, &mut events);
                    problems.push(format!("reading {}: {e}", path.display()));
                }
            }
        }
        // Never read and gone: nothing to remember. Gone after being read: remembered, the
        // latest GONE_KEPT.
        self.tails.retain(|_, t| !(t.gone && t.pos == 0));
        while self.gone.len() > GONE_KEPT {
            if let Some(p) = self.gone.pop_front()
                && self.tails.get(&p).is_some_and(|t| t.gone)
            {
                self.tails.remove(&p);
            }
        }
        let mut rereads = Vec::new();
        for (path, event, why) in restarts {
            // Already part of a re-read begun in this poll: read from its start with it.
            if self.tails.get(&path).is_some_and(|t| t.pos == 0) {
                continue;
            }
            let what = format!("{why}: read again from its start");
            let (files, sessions) = self.reread(&path);
            by_file.retain(|f| !files.contains(&f.path));
            events.push((event, what.clone()));
            rereads.push((what, sessions));
            more = true;
        }
        let mut reread_done = Vec::new();
        for g in done {
            if let Some((_, pending)) = self.groups.get_mut(&g) {
                *pending = pending.saturating_sub(1);
                if *pending == 0
                    && let Some((sessions, _)) = self.groups.remove(&g)
                {
                    reread_done.push(sessions);
                }
            }
        }
        Polled {
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            skipped,
            more,
            by_file,
            files: self.listed.len(),
            rereads,
            reread_done,
            events,
            ..Polled::default()
        }
    }

    /// A directory's file starts again: it, every file that shares a session with it (and,
    /// past [`MAX_GENERATIONS`], the files of its format's smallest generation) are read again
    /// from their start by instances of a new generation; the files and the sessions they
    /// named are returned.
    fn reread(&mut self, path: &Path) -> (BTreeSet<PathBuf>, Sessions) {
        let format = self.tails.get(path).and_then(|t| t.format);
        let mut files: BTreeSet<PathBuf> = BTreeSet::from([path.to_owned()]);
        // Every file sharing a session with one of the set, until none joins.
        loop {
            let mut named: BTreeSet<Arc<str>> = BTreeSet::new();
            let mut wide = false;
            for p in &files {
                if let Some(t) = self.tails.get(p) {
                    named.extend(t.learned.ids.iter().cloned());
                    wide |= t.learned.wide;
                }
            }
            let joining: Vec<PathBuf> = self
                .tails
                .iter()
                .filter(|(p, t)| {
                    !files.contains(*p)
                        && ((wide && (format.is_none() || t.format == format))
                            || t.learned.ids.iter().any(|id| named.contains(id)))
                })
                .map(|(p, _)| p.clone())
                .collect();
            if joining.is_empty() {
                break;
            }
            files.extend(joining);
        }
        // Within the generations' bound: the smallest others join.
        if let Some(f) = format {
            loop {
                let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
                for (p, t) in &self.tails {
                    if t.format == Some(f) && !files.contains(p) {
                        *sizes.entry(t.generation).or_default() += 1;
                    }
                }
                if sizes.len() < MAX_GENERATIONS {
                    break;
                }
                let Some((&smallest, _)) = sizes.iter().min_by_key(|(g, n)| (**n, **g)) else {
                    break;
                };
                files.extend(
                    self.tails
                        .iter()
                        .filter(|(_, t)| t.format == Some(f) && t.generation == smallest)
                        .map(|(p, _)| p.clone()),
                );
            }
        }
        let mut learned = Learned::default();
        for p in &files {
            if let Some(t) = self.tails.get(p) {
                learned.wide |= t.learned.wide;
                learned.ids.extend(t.learned.ids.iter().cloned());
                // Part of a re-read not yet caught up: it leaves that one, and a re-read left
                // by every file ends with this one.
                if let Some(g) = t.group
                    && let Some((old, pending)) = self.groups.get_mut(&g)
                {
                    *pending = pending.saturating_sub(1);
                    if *pending == 0 {
                        match old {
                            Sessions::All => learned.wide = true,
                            Sessions::These(ids) => learned.ids.extend(ids.iter().cloned()),
                        }
                        self.groups.remove(&g);
                    }
                }
            }
        }
        let sessions = learned.sessions();
        self.generations += 1;
        let generation = self.generations;
        self.next_group += 1;
        let group = self.next_group;
        let mut pending = 0;
        for p in &files {
            if let Some(t) = self.tails.get_mut(p) {
                let reading = !t.gone;
                pending += usize::from(reading);
                *t = Tail {
                    generation,
                    learned: std::mem::take(&mut t.learned),
                    group: reading.then_some(group),
                    opens: t.opens,
                    db: t.db,
                    ..Tail::default()
                };
            }
        }
        self.groups.insert(group, (sessions.clone(), pending));
        (files, sessions)
    }
}

impl Tail {
    /// A directory's file: its new lines once its format is told (keyed by the session its
    /// lines name), else `None` while they wait; after [`logs::DETECT_LINES`] lines that do not
    /// tell, the file is read as agent-fold frames — a document that does not tell is none.
    fn told(&mut self, path: &Path, lines: Vec<Rec>, document: bool) -> Option<Vec<Rec>> {
        if self.db {
            // OpenCode's documents, each keyed by its own session already.
            self.format = Some(Input::OpenCode);
            return Some(lines);
        }
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
            if self.format.is_none() {
                // Never silent (docs/adapters.md, "Telling a log's format").
                tracing::warn!(
                    "{}: its first {} lines do not tell its format: read as agent-fold frames",
                    path.display(),
                    logs::DETECT_LINES
                );
            }
            let format = *self.format.get_or_insert(Input::AgentFold);
            let held = std::mem::take(&mut self.held);
            return Some(self.keyed(format, held));
        }
        let format = self.format?;
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
            .chain(p.by_file.iter().flat_map(|f| &f.lines))
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

    /// Polls until `f` holds of what was polled (at most 64 polls: a quiet file is looked at
    /// every 32 at most), teaching the follower the sessions each file's lines named, as the
    /// server does; every poll on the way is returned.
    fn poll_until(f: &mut Follow, what: impl Fn(&Polled) -> bool) -> Vec<Polled> {
        let mut all = Vec::new();
        for _ in 0..64 {
            let p = f.poll();
            for fl in &p.by_file {
                let keys: Vec<String> = fl
                    .lines
                    .iter()
                    .filter_map(|r| r.key.as_ref())
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect();
                f.learned(Some(&fl.path), keys.iter().map(String::as_str));
            }
            let done = what(&p);
            all.push(p);
            if done {
                return all;
            }
        }
        panic!("not within 64 polls: {all:?}");
    }

    /// In a directory of logs a file truncated, vanished then back, or replaced is read again
    /// alone: its own sessions are named for the re-read, its lines go to instances of a new
    /// generation, the others' lines are not read again; each event is said once.
    #[test]
    fn a_file_of_a_tree_that_starts_again_is_read_again_alone() {
        let dir = scratch("tree-reread");
        std::fs::create_dir_all(dir.join("many")).unwrap();
        let frame = |i: usize, seq: u64| {
            format!("{{\"type\":\"user/message\",\"session_id\":\"s{i}\",\"seq\":{seq}}}\n")
        };
        let file = |i: usize| dir.join(format!("many/{i}.jsonl"));
        for i in 0..5 {
            append(&file(i), frame(i, 1).as_bytes());
        }
        let mut f = Follow::new(&dir.join("many"));
        let first = poll_until(&mut f, |p| p.by_file.len() == 5);
        let p = first.last().unwrap();
        assert!(p.by_file.iter().all(|fl| fl.generation == 0));
        assert!(p.rereads.is_empty());

        // Truncated (`: > 2.jsonl`): s2 alone is read again, and its re-read is over at once.
        std::fs::write(file(2), b"").unwrap();
        let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
        let p = polls.last().unwrap();
        assert_eq!(
            p.rereads,
            [(
                format!(
                    "{} was truncated: read again from its start",
                    file(2).display()
                ),
                Sessions::These(vec![Arc::from("s2")])
            )]
        );
        assert_eq!(p.events.len(), 1, "{:?}", p.events);
        assert_eq!(p.events[0].0, LogEvent::Truncated);
        let after = poll_until(&mut f, |p| !p.reread_done.is_empty());
        assert_eq!(
            after.last().unwrap().reread_done,
            [Sessions::These(vec![Arc::from("s2")])]
        );
        append(&file(2), frame(2, 2).as_bytes());
        let p = poll_until(&mut f, |p| !p.by_file.is_empty());
        let fl = &p.last().unwrap().by_file;
        assert_eq!(fl.len(), 1);
        assert_eq!((fl[0].path.clone(), fl[0].generation), (file(2), 1));
        assert!(
            p.iter()
                .all(|p| p.events.is_empty() && p.rereads.is_empty())
        );

        // Vanished: said once, its sessions kept; back: read again, alone.
        std::fs::remove_file(file(3)).unwrap();
        let polls = poll_until(&mut f, |p| !p.events.is_empty());
        assert_eq!(polls.last().unwrap().events[0].0, LogEvent::Vanished);
        assert!(polls.iter().all(|p| p.rereads.is_empty()));
        for _ in 0..40 {
            assert!(f.poll().events.is_empty(), "said once");
        }
        append(&file(3), frame(3, 1).as_bytes());
        let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
        let p = polls.last().unwrap();
        assert_eq!(p.events[0].0, LogEvent::CameBack);
        assert_eq!(p.rereads[0].1, Sessions::These(vec![Arc::from("s3")]));
        let p = poll_until(&mut f, |p| !p.by_file.is_empty());
        let fl = &p.last().unwrap().by_file;
        assert_eq!((fl[0].path.clone(), fl[0].lines.len()), (file(3), 1));
        assert_eq!(fl[0].generation, 2);

        // Replaced; generations stay within the bound: the smallest joins the re-read.
        for (round, i) in [0usize, 1, 4].into_iter().enumerate() {
            let other = dir.join("other.jsonl.tmp");
            std::fs::write(&other, frame(i, 1)).unwrap();
            std::fs::rename(&other, file(i)).unwrap();
            let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
            let p = polls.last().unwrap();
            assert_eq!(p.events[0].0, LogEvent::Replaced, "round {round}");
            poll_until(&mut f, |p| !p.reread_done.is_empty());
            let in_use = f.generations();
            assert!(in_use.len() <= MAX_GENERATIONS, "{in_use:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file that cannot be read (here a FIFO put in its place: the tests run as root, whom
    /// no mode stops) is said once and its sessions kept; once it can be read again, that is
    /// said once too, and it is followed on from where it was.
    #[test]
    fn a_file_that_cannot_be_read_is_said_once_and_followed_again() {
        let dir = scratch("unreadable");
        let log = dir.join("log.jsonl");
        append(&log, b"{\"a\":1}\n");
        let mut f = Follow::new(&log);
        assert_eq!(values(&f.poll()), [r#"{"a":1}"#]);
        let kept = dir.join("kept.jsonl");
        std::fs::rename(&log, &kept).unwrap();
        let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path it is given, which lives until it ends.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(made, 0);
        let p = f.poll();
        assert_eq!(p.events.len(), 1, "{:?}", p.events);
        assert_eq!(p.events[0].0, LogEvent::Unreadable);
        assert!(p.problem.unwrap().contains("not a regular file"));
        for _ in 0..3 {
            let p = f.poll();
            assert!(p.events.is_empty() && p.problem.is_some(), "said once");
        }
        std::fs::remove_file(&log).unwrap();
        std::fs::rename(&kept, &log).unwrap();
        append(&log, b"{\"b\":2}\n");
        let p = f.poll();
        assert_eq!(p.events[0].0, LogEvent::Readable, "{:?}", p.events);
        assert_eq!(values(&p), [r#"{"b":2}"#], "followed on from where it was");
        assert_eq!(p.problem, None);
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
