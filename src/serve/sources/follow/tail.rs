//! One followed file: how far it has been read, what it was when last looked at (to tell it
//! idle, grown, truncated, replaced or rewritten in place), its format once told and the
//! sessions its lines named.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use agent_fold_core::Input;

use crate::jsonl::{self, Splitter};
use crate::logs;
use crate::module::INVOCATION_BYTES;
use crate::opencode_db;
use crate::record::Rec;
use crate::serve::board::{LogEvent, Sessions};

/// Bytes just before the read position compared at each poll, to notice a rewrite in place.
pub(super) const CHECK: usize = 64;
/// The most bytes one poll reads of one file: a large file is taken in steps.
pub(crate) const READ_BYTES: u64 = 8 << 20;
/// The longest line kept: a longer one is skipped (no invocation takes more).
pub(crate) const LINE_BYTES: usize = INVOCATION_BYTES;
/// Sessions remembered per file (or per single log): a file naming more is re-read with every
/// session on the board.
pub(crate) const SESSIONS_PER_FILE: usize = 1_024;

/// The sessions a file's lines and the module's records of them named.
#[derive(Debug, Default, Clone)]
pub(super) struct Learned {
    pub(super) ids: BTreeSet<Arc<str>>,
    /// Over [`SESSIONS_PER_FILE`]: not all are known.
    pub(super) wide: bool,
}

impl Learned {
    pub(super) fn add(&mut self, id: &str) {
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

    pub(super) fn sessions(&self) -> Sessions {
        match self.wide {
            true => Sessions::All,
            false => Sessions::These(self.ids.iter().cloned().collect()),
        }
    }
}

/// How far one file has been read.
#[derive(Debug)]
pub(super) struct Tail {
    /// The file's device and inode when last read.
    pub(super) id: Option<(u64, u64)>,
    /// Bytes read so far (complete lines and what `lines` holds).
    pub(super) pos: u64,
    /// The lines of what was read; one still being written waits there.
    pub(super) lines: Splitter,
    /// The last bytes before `pos`, as read.
    pub(super) check: Vec<u8>,
    /// The file was read, then went away.
    pub(super) gone: bool,
    /// Size, modification and change times when last read: the same again, and nothing is
    /// read (a change of mode moves the change time: a file made unreadable is noticed).
    pub(super) seen: Option<Seen>,
    /// Times the file was opened to be read.
    pub(super) opens: u64,
    /// In a directory of logs: the file's format once its lines tell it, the session its lines
    /// name, the lines read before the format was told, and how long it has been quiet.
    pub(super) format: Option<Input>,
    pub(super) key: Option<Vec<u8>>,
    pub(super) held: Vec<Rec>,
    pub(super) quiet: u32,
    /// In a directory of logs: the generation of instances that reads it, the sessions it
    /// named, and the re-read it is part of until it caught up.
    pub(super) generation: u32,
    pub(super) learned: Learned,
    pub(super) group: Option<u64>,
    /// The last read failed (said once, until a read succeeds).
    pub(super) unreadable: bool,
    /// OpenCode's database, not a file of lines; its reader once open.
    pub(super) db: bool,
    pub(super) follower: Option<Box<opencode_db::Follower>>,
}

/// What `stat` says of a file, to tell an idle one.
pub(super) type Seen = (u64, Option<SystemTime>, Option<(i64, i64)>);

pub(super) fn seen_of(meta: &std::fs::Metadata) -> Seen {
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
pub(super) enum TailStep {
    /// Complete lines, lines skipped, and whether more bytes wait.
    Lines(Vec<Rec>, Vec<String>, bool),
    Restart(LogEvent, String),
    Missing,
}

/// `O_NONBLOCK`: opening a path that became a FIFO never waits for a writer.
#[cfg(unix)]
pub(super) fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
pub(super) fn open(path: &Path) -> std::io::Result<File> {
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
    pub(super) fn new(db: bool) -> Tail {
        Tail {
            db,
            ..Tail::default()
        }
    }

    pub(super) fn read(&mut self, path: &Path) -> std::io::Result<TailStep> {
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
    pub(super) fn back_or_replaced(
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

    pub(super) fn read_db(&mut self, path: &Path) -> std::io::Result<TailStep> {
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
pub(super) fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "json")
}

impl Tail {
    /// A document changed: the whole of it as one record (at most [`LINE_BYTES`]; a larger one
    /// is skipped and said), once it is one JSON object.
    pub(super) fn read_document(
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
    pub(super) fn failed(
        &mut self,
        path: &Path,
        e: &std::io::Error,
        events: &mut Vec<(LogEvent, String)>,
    ) {
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

    pub(super) fn succeeded(&mut self, path: &Path, events: &mut Vec<(LogEvent, String)>) {
        if self.unreadable {
            self.unreadable = false;
            events.push((
                LogEvent::Readable,
                format!("{} can be read again: followed on", path.display()),
            ));
        }
    }

    /// Marks the file gone; said the first time.
    pub(super) fn vanished(&mut self, path: &Path, events: &mut Vec<(LogEvent, String)>) -> bool {
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

impl Tail {
    /// A directory's file: its new lines once its format is told (keyed by the session its
    /// lines name), else `None` while they wait; after [`logs::DETECT_LINES`] lines that do not
    /// tell, the file is read as agent-fold frames — a document that does not tell is none.
    pub(super) fn told(
        &mut self,
        path: &Path,
        lines: Vec<Rec>,
        document: bool,
    ) -> Option<Vec<Rec>> {
        if self.db {
            // OpenCode's documents, each keyed by its own session already.
            self.format = Some(Input::OpenCode);
            return Some(lines);
        }
        if self.format.is_none() {
            self.held.extend(lines);
            let verdict = logs::detect::verdict(&self.held);
            if let logs::Verdict::Told(input) = verdict {
                self.format = Some(input);
            } else if document {
                // A JSON file that is no agent's log (a settings file, an index): left alone.
                self.held.clear();
                return None;
            }
            if verdict == logs::Verdict::Waiting {
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
    pub(super) fn keyed(&mut self, format: Input, mut lines: Vec<Rec>) -> Vec<Rec> {
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
