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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_fold_core::Input;
use anyhow::{Result, bail};

use crate::logs;
use crate::opencode_db;
use crate::record::Rec;

pub(crate) use crate::serve::board::{LogEvent, Sessions};
pub(crate) use tail::LINE_BYTES;
use tail::{Learned, Tail, TailStep, is_document};

mod tail;

/// Refuses a log path that cannot be followed: it exists and is neither a regular file nor a
/// directory (a FIFO, a device, a socket). A path that does not exist yet is waited for.
pub(crate) fn followable(path: &Path) -> Result<()> {
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
pub(crate) struct Polled {
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
pub(crate) struct FileLines {
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
pub(crate) const MAX_GENERATIONS: usize = 4;
/// Vanished files remembered (so that one coming back is read again, not read twice).
const GONE_KEPT: usize = 10_000;

/// A followed log: a file, a session directory, or a directory of logs.
pub(crate) struct Follow {
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

impl Follow {
    /// Follows `root`: a log, a session directory, a directory of logs, or OpenCode's database
    /// (the file, the directory holding `opencode.db`, or a database path not written yet).
    pub(crate) fn new(root: &Path) -> Follow {
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
    pub(crate) fn is_tree(&self) -> bool {
        self.tree
    }

    #[cfg(test)]
    /// Times a file was opened to be read, over the files followed now.
    pub(crate) fn opens(&self) -> u64 {
        self.tails.values().map(|t| t.opens).sum()
    }

    /// The sessions the lines of `path` (a directory's file; `None`: the single log) and the
    /// module's records of them named: what a re-read of it concerns.
    pub(crate) fn learned<'a>(
        &mut self,
        path: Option<&Path>,
        ids: impl IntoIterator<Item = &'a str>,
    ) {
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
    pub(crate) fn generations(&self) -> BTreeSet<(&'static str, u32)> {
        self.tails
            .values()
            .filter_map(|t| Some((t.format?.name(), t.generation)))
            .collect()
    }

    /// Reads what was added since the last poll.
    pub(crate) fn poll(&mut self) -> Polled {
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

#[cfg(test)]
mod tests;
