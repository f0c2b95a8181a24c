//! OpenCode's database, `opencode.db` (OpenCode ≥ 1.2 keeps its sessions there, SQLite in WAL
//! mode): each session read as `opencode export` writes it, so that one adapter
//! (`input=opencode`, docs/adapters.md "OpenCode") reads both containers and a session's
//! figures are the same either way.
//!
//! The tables read: `session(id, …)`, `message(id, session_id, data)` and `part(id,
//! message_id, data)`, where `data` is the JSON object the export carries less its ids. A
//! session's document is the export's shape, `{"info": <session>, "messages": [{"info":
//! <message data + id, sessionID>, "parts": [<part data + id, sessionID, messageID>]}]}`,
//! messages and parts in id order, the ids appended after the data as the export appends
//! them: a message or part is the export's byte for byte.
//!
//! **Beside the writer.** The database is opened read-only (`SQLITE_OPEN_READ_ONLY`, and
//! `query_only`): this process never writes it, so it never checkpoints the writer's WAL
//! (checkpoint on close is off as well); each read is one short statement outside any
//! explicit transaction, so no read transaction outlives a poll to hold the writer's
//! checkpoints back; a busy timeout rides out the moments a reader must wait (WAL recovery).
//! A reader in WAL mode never blocks a writer (sqlite.org/wal.html): measured against OpenCode
//! 1.18.33 in docs/serve.md.
//!
//! **A session as it runs** ([`Follower`]): new message rows are listed by rowid above the
//! highest listed (the rowid of an ordinary table only grows, save for the topmost reused
//! after a delete, which is checked by its id), and a message joins a document once it is
//! settled — a later message of its session exists, or it is an assistant's message that
//! completed or failed (`time.completed`, `error`). Until then its rows are still being
//! written (a user message's text part comes after the message row; an assistant's tokens
//! when it completes). A settled message is read once, as the export's document written
//! again applies each message once: later edits of it are not read. Each document after a
//! session's first opens with the last message already read (its id alone), which the
//! adapter's document reading takes as the place to pick up after (docs/adapters.md,
//! "Documents written again").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, ffi};

use crate::record::Rec;

/// The database's file name in OpenCode's data directory (`$XDG_DATA_HOME/opencode/`).
pub const FILE_NAME: &str = "opencode.db";

/// How long a read waits for a lock before it fails (SQLite's busy handler retries within it).
const BUSY_TIMEOUT: Duration = Duration::from_millis(1_000);

/// Message rows listed per statement: a database of any size is listed in steps.
const LIST_ROWS: i64 = 4_096;

/// Listed messages waiting to be read at most: past it, rows are listed again only once the
/// waiting ones are read.
const PENDING_MAX: usize = 65_536;

/// Why a database cannot be read, in words a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{path} is not an SQLite database, or a damaged one ({why}): refused")]
    Corrupt { path: String, why: String },
    #[error("{path} is an SQLite database but not OpenCode's: it has no {missing}")]
    NotOpenCode { path: String, missing: String },
    #[error("reading {path}: {source}")]
    Sqlite {
        path: String,
        source: rusqlite::Error,
    },
    #[error("{path} holds no session {id} (it holds {count}: {some})")]
    NoSession {
        path: String,
        id: String,
        count: usize,
        some: String,
    },
}

/// A JSON string literal of `s`.
fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `data`, a JSON object's text, with `ids` appended as members after its own (as OpenCode's
/// export appends them); `None` when `data` is not a JSON object.
fn with_ids(data: &[u8], ids: &[(&str, &str)]) -> Option<Vec<u8>> {
    let data = data.trim_ascii();
    if !agent_fold_core::is_object(data) {
        return None;
    }
    let body = data[1..data.len() - 1].trim_ascii();
    let mut out = Vec::with_capacity(data.len() + 96);
    out.push(b'{');
    out.extend_from_slice(body);
    for (i, (name, value)) in ids.iter().enumerate() {
        if i > 0 || !body.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(quoted(name).as_bytes());
        out.push(b':');
        out.extend_from_slice(quoted(value).as_bytes());
    }
    out.push(b'}');
    Some(out)
}

/// What a message's data says of whether it is still being written.
#[derive(Debug, Default, serde::Deserialize)]
struct Head {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    time: Option<Times>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct Times {
    #[serde(default)]
    completed: Option<serde::de::IgnoredAny>,
}

/// Whether a message is settled: a later message of its session exists, or it is an
/// assistant's that completed or failed. The second: whether it is an assistant's still
/// running (looked at again at every change; a user's waits for the next message row).
fn settled(data: &[u8], later: bool) -> (bool, bool) {
    if later {
        return (true, false);
    }
    let head: Head = serde_json::from_slice(data).unwrap_or_default();
    let assistant = head.role.as_deref() == Some("assistant");
    let done = head.time.is_some_and(|t| t.completed.is_some()) || head.error.is_some();
    (assistant && done, assistant && !done)
}

/// One message row.
struct Message {
    session: String,
    data: Vec<u8>,
}

/// An OpenCode database, open read-only.
pub struct Db {
    conn: Connection,
    path: PathBuf,
}

impl Db {
    /// Opens the database read-only and checks that it is OpenCode's: a file that is not an
    /// SQLite database (or a damaged one) and one without the tables read are refused in
    /// words, before anything is read.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        let shown = path.display().to_string();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| DbError::Sqlite {
            path: shown.clone(),
            source: e,
        })?;
        let db = Db {
            conn,
            path: path.to_owned(),
        };
        let setup = |c: &Connection| -> rusqlite::Result<()> {
            c.busy_timeout(BUSY_TIMEOUT)?;
            c.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )?;
            c.pragma_update(None, "query_only", true)
        };
        setup(&db.conn).map_err(|e| db.error(e))?;
        db.check()?;
        Ok(db)
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A failed read in words: a file that is not a database (or a damaged one) is said so.
    fn error(&self, e: rusqlite::Error) -> DbError {
        let path = self.path.display().to_string();
        match e.sqlite_error_code() {
            Some(ffi::ErrorCode::NotADatabase | ffi::ErrorCode::DatabaseCorrupt) => {
                DbError::Corrupt {
                    path,
                    why: e.to_string(),
                }
            }
            _ => DbError::Sqlite { path, source: e },
        }
    }

    /// The tables and columns read are there.
    fn check(&self) -> Result<(), DbError> {
        for (table, columns) in [
            ("session", &["id"][..]),
            ("message", &["id", "session_id", "data"][..]),
            ("part", &["id", "message_id", "data"][..]),
        ] {
            let mut st = self
                .conn
                .prepare("SELECT name FROM pragma_table_info(?1)")
                .map_err(|e| self.error(e))?;
            let have: BTreeSet<String> = st
                .query_map([table], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| self.error(e))?;
            if have.is_empty() {
                return Err(DbError::NotOpenCode {
                    path: self.path.display().to_string(),
                    missing: format!("`{table}` table"),
                });
            }
            if let Some(c) = columns.iter().find(|c| !have.contains(**c)) {
                return Err(DbError::NotOpenCode {
                    path: self.path.display().to_string(),
                    missing: format!("`{table}.{c}` column"),
                });
            }
        }
        Ok(())
    }

    /// Changes when another connection commits (`PRAGMA data_version`): nothing to read while
    /// it stands.
    pub fn data_version(&self) -> Result<i64, DbError> {
        self.conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(|e| self.error(e))
    }

    /// The sessions, in id order (OpenCode's ids sort by time).
    pub fn sessions(&self) -> Result<Vec<String>, DbError> {
        let mut st = self
            .conn
            .prepare("SELECT id FROM session ORDER BY id")
            .map_err(|e| self.error(e))?;
        st.query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.error(e))
    }

    /// The oldest session (its id and creation time): another database in its place has
    /// another one.
    fn first_session(&self) -> Result<Option<String>, DbError> {
        self.conn
            .query_row("SELECT id FROM session ORDER BY rowid LIMIT 1", [], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map_err(|e| self.error(e))
    }

    /// The session's `info`, as the export names its fields (those the session row holds
    /// plainly); `{"id": …}` alone when the row is gone.
    fn info(&self, session: &str) -> Result<Vec<u8>, DbError> {
        let row = self
            .conn
            .query_row(
                "SELECT slug, project_id, directory, path, title, version, time_created, \
                 time_updated FROM session WHERE id = ?1",
                [session],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<i64>>(6)?,
                        r.get::<_, Option<i64>>(7)?,
                    ))
                },
            )
            .optional();
        // A session table of another shape (a later release's) names the session alone.
        let row = row.unwrap_or(None);
        let mut info = serde_json::Map::new();
        info.insert("id".into(), session.into());
        if let Some((slug, project, dir, path, title, version, created, updated)) = row {
            for (name, v) in [
                ("slug", slug),
                ("projectID", project),
                ("directory", dir),
                ("path", path),
                ("title", title),
                ("version", version),
            ] {
                if let Some(v) = v {
                    info.insert(name.into(), v.into());
                }
            }
            let mut time = serde_json::Map::new();
            for (name, v) in [("created", created), ("updated", updated)] {
                if let Some(v) = v {
                    time.insert(name.into(), v.into());
                }
            }
            info.insert("time".into(), time.into());
        }
        Ok(serde_json::Value::Object(info).to_string().into_bytes())
    }

    /// A message row by id.
    fn message(&self, id: &str) -> Result<Option<Message>, DbError> {
        self.conn
            .query_row(
                "SELECT session_id, data FROM message WHERE id = ?1",
                [id],
                |r| {
                    Ok(Message {
                        session: r.get(0)?,
                        data: r.get_ref(1)?.as_bytes_or_null()?.unwrap_or(b"").to_vec(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// A message's parts, in id order: each its id and data.
    fn parts(&self, message: &str) -> Result<Vec<(String, Vec<u8>)>, DbError> {
        let mut st = self
            .conn
            .prepare("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")
            .map_err(|e| self.error(e))?;
        st.query_map([message], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get_ref(1)?.as_bytes_or_null()?.unwrap_or(b"").to_vec(),
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| self.error(e))
    }

    /// A session's message ids, in id order.
    fn message_ids(&self, session: &str) -> Result<Vec<String>, DbError> {
        let mut st = self
            .conn
            .prepare("SELECT id FROM message WHERE session_id = ?1 ORDER BY id")
            .map_err(|e| self.error(e))?;
        st.query_map([session], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.error(e))
    }

    /// Message rows from rowid `from` on (`from` included), in rowid order, at most
    /// [`LIST_ROWS`]: each its rowid, id and session.
    fn listed(&self, from: i64) -> Result<Vec<(i64, String, String)>, DbError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT rowid, id, session_id FROM message WHERE rowid >= ?1 ORDER BY rowid \
                 LIMIT ?2",
            )
            .map_err(|e| self.error(e))?;
        st.query_map([from, LIST_ROWS], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.error(e))
    }

    /// The highest message rowid and its id.
    fn top(&self) -> Result<Option<(i64, String)>, DbError> {
        self.conn
            .query_row(
                "SELECT rowid, id FROM message ORDER BY rowid DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// One message as the export writes it, `{"info": …, "parts": […]}`, its parts in id order
    /// while they fit in `max` bytes; `None` when its data is not a JSON object. The parts
    /// left out are counted.
    fn message_json(
        &self,
        id: &str,
        m: &Message,
        max: usize,
        left_out: &mut usize,
    ) -> Result<Option<Vec<u8>>, DbError> {
        let Some(info) = with_ids(&m.data, &[("id", id), ("sessionID", &m.session)]) else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(info.len() + 64);
        out.extend_from_slice(b"{\"info\":");
        out.extend_from_slice(&info);
        out.extend_from_slice(b",\"parts\":[");
        let mut first = true;
        for (pid, data) in self.parts(id)? {
            let ids = [
                ("id", pid.as_str()),
                ("sessionID", &m.session),
                ("messageID", id),
            ];
            let Some(part) = with_ids(&data, &ids) else {
                *left_out += 1;
                continue;
            };
            if out.len() + part.len() + 3 > max {
                *left_out += 1;
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&part);
        }
        out.extend_from_slice(b"]}");
        Ok(Some(out))
    }

    /// The session's whole document, as `opencode export` writes it, in documents of at most
    /// `max` bytes (each after the first opening with the last message of the one before:
    /// see the module's notes); what was left out, said. Every message is read, settled or
    /// not, as the export reads them.
    pub fn session_documents(
        &self,
        session: &str,
        max: usize,
    ) -> Result<(Vec<Vec<u8>>, Vec<String>), DbError> {
        let mut doc = Documents::new(session, self.info(session)?, None, max);
        for id in self.message_ids(session)? {
            if let Some(m) = self.message(&id)? {
                doc.push(self, &id, &m)?;
            }
        }
        Ok(doc.finish())
    }

    /// Every session's documents ([`Db::session_documents`]), or those of `only`, keyed by
    /// session, as records.
    pub fn records(&self, only: Option<&str>, max: usize) -> Result<Vec<Rec>, DbError> {
        let sessions = self.sessions()?;
        let chosen: Vec<&String> = match only {
            Some(id) => match sessions.iter().find(|s| *s == id) {
                Some(s) => vec![s],
                None => {
                    let some: Vec<&str> = sessions.iter().take(5).map(String::as_str).collect();
                    return Err(DbError::NoSession {
                        path: self.path.display().to_string(),
                        id: id.to_owned(),
                        count: sessions.len(),
                        some: if some.is_empty() {
                            "none".to_owned()
                        } else {
                            some.join(", ") + if sessions.len() > 5 { ", …" } else { "" }
                        },
                    });
                }
            },
            None => sessions.iter().collect(),
        };
        let mut out = Vec::new();
        for s in chosen {
            let (docs, said) = self.session_documents(s, max)?;
            for why in said {
                tracing::warn!("{why}");
            }
            out.extend(docs.into_iter().map(|d| Rec {
                key: Some(s.as_bytes().to_vec()),
                value: d,
            }));
        }
        Ok(out)
    }
}

/// One session's documents being written: messages appended while a document stays within
/// its bound, then a new one, opening with the last message written.
struct Documents {
    session: String,
    info: Vec<u8>,
    max: usize,
    /// The last message written (a document's anchor), and the document being written.
    last: Option<String>,
    current: Vec<u8>,
    /// Messages in `current`, the anchor not counted.
    messages: usize,
    done: Vec<Vec<u8>>,
    said: Vec<String>,
}

impl Documents {
    fn new(session: &str, info: Vec<u8>, last: Option<String>, max: usize) -> Documents {
        let mut d = Documents {
            session: session.to_owned(),
            info,
            max,
            last,
            current: Vec::new(),
            messages: 0,
            done: Vec::new(),
            said: Vec::new(),
        };
        d.open();
        d
    }

    /// Opens a document: the session, and the anchor when a message was written before.
    fn open(&mut self) {
        self.current.clear();
        self.current.extend_from_slice(b"{\"info\":");
        self.current.extend_from_slice(&self.info);
        self.current.extend_from_slice(b",\"messages\":[");
        if let Some(last) = &self.last {
            self.current.extend_from_slice(b"{\"info\":{\"id\":");
            self.current.extend_from_slice(quoted(last).as_bytes());
            self.current.extend_from_slice(b"},\"parts\":[]}");
        }
        self.messages = 0;
    }

    /// Closes the document being written, when it holds a message.
    fn close(&mut self) {
        if self.messages > 0 {
            let mut doc = std::mem::take(&mut self.current);
            doc.extend_from_slice(b"]}");
            self.done.push(doc);
        }
        self.open();
    }

    /// Bytes written so far, the open document's included.
    fn bytes(&self) -> usize {
        self.done.iter().map(Vec::len).sum::<usize>() + self.current.len()
    }

    /// Appends message `id`; its parts over the bound are left out and said.
    fn push(&mut self, db: &Db, id: &str, m: &Message) -> Result<(), DbError> {
        // Room for the document's opening, its anchor and its end.
        let room = self
            .max
            .saturating_sub(self.info.len() + 2 * id.len() + 96)
            .max(1);
        let mut left_out = 0;
        let Some(json) = db.message_json(id, m, room, &mut left_out)? else {
            self.said.push(format!(
                "{}: message {id} of session {} is not a JSON object: left out",
                db.path.display(),
                self.session
            ));
            return Ok(());
        };
        if left_out > 0 {
            self.said.push(format!(
                "{}: message {id} of session {}: {left_out} part(s) that are not JSON objects \
                 or over the {} bytes one record may hold were left out",
                db.path.display(),
                self.session,
                self.max
            ));
        }
        if self.messages > 0 && self.current.len() + json.len() + 3 > self.max {
            self.close();
        }
        if self.messages > 0 || self.last.is_some() {
            self.current.push(b',');
        }
        self.current.extend_from_slice(&json);
        self.messages += 1;
        self.last = Some(id.to_owned());
        Ok(())
    }

    /// The documents, and what was said.
    fn finish(mut self) -> (Vec<Vec<u8>>, Vec<String>) {
        self.close();
        (self.done, self.said)
    }
}

/// What one look at a followed database found.
#[derive(Debug, Default)]
pub struct Step {
    /// Documents of the sessions that gained settled messages, keyed by session.
    pub records: Vec<Rec>,
    /// What was left out, and why.
    pub skipped: Vec<String>,
    /// More is waiting than one look reads: look again at once.
    pub more: bool,
    /// Another database stands where this one was (its oldest session is another): everything
    /// read from it is void.
    pub rewritten: bool,
}

/// A database followed as OpenCode writes it: see the module's notes.
pub struct Follower {
    db: Db,
    /// `PRAGMA data_version` at the last look.
    version: Option<i64>,
    /// The oldest session when first read.
    first: Option<Option<String>>,
    /// The highest message row listed (rowid and id).
    top: Option<(i64, String)>,
    /// Rows above `top` wait to be listed (the listing stopped at its bound).
    unlisted: bool,
    /// Per session, the messages listed and not yet read into a document, by id.
    pending: BTreeMap<String, BTreeSet<String>>,
    /// Sessions to look at: they gained a listed message, or their last one is an assistant's
    /// still running.
    dirty: BTreeSet<String>,
    running: BTreeSet<String>,
    /// Per session, the last message read into a document.
    read: HashMap<String, String>,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("path", &self.db.path)
            .field("version", &self.version)
            .field("top", &self.top)
            .field("waiting", &self.waiting())
            .field("sessions", &self.read.len())
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// Follows the database at `path` from its start.
    pub fn open(path: &Path) -> Result<Follower, DbError> {
        Ok(Follower {
            db: Db::open(path)?,
            version: None,
            first: None,
            top: None,
            unlisted: false,
            pending: BTreeMap::new(),
            dirty: BTreeSet::new(),
            running: BTreeSet::new(),
            read: HashMap::new(),
        })
    }

    /// Messages listed and waiting to be read.
    fn waiting(&self) -> usize {
        self.pending.values().map(BTreeSet::len).sum()
    }

    /// Lists the message rows written since the last listing.
    fn list(&mut self) -> Result<(), DbError> {
        let top = self.db.top()?;
        // The topmost rows deleted (a session reverted): the listing goes on from the highest
        // that remains, the row reusing the rowid above it checked by its id.
        if let (Some((at, _)), Some(now)) = (&self.top, &top)
            && now.0 < *at
        {
            self.top = Some(now.clone());
        }
        if top.is_none() {
            self.top = None;
        }
        self.unlisted = false;
        while self.waiting() < PENDING_MAX {
            let from = self.top.as_ref().map_or(0, |(r, _)| *r);
            let rows = self.db.listed(from)?;
            let full = rows.len() as i64 == LIST_ROWS;
            let mut new = 0;
            for (rowid, id, session) in rows {
                if self.top.as_ref() == Some(&(rowid, id.clone())) {
                    continue;
                }
                new += 1;
                self.top = Some((rowid, id.clone()));
                if self.read.get(&session).is_some_and(|r| *r >= id) {
                    // Read already (a row listed again after the top moved back).
                    continue;
                }
                self.pending.entry(session.clone()).or_default().insert(id);
                self.dirty.insert(session);
            }
            if !full || new == 0 {
                return Ok(());
            }
        }
        self.unlisted = true;
        Ok(())
    }

    /// Reads what changed since the last look: the settled messages of the sessions that
    /// gained some, in documents of at most `max` bytes, `budget` bytes in all at most (then
    /// `more`).
    pub fn poll(&mut self, max: usize, budget: usize) -> Result<Step, DbError> {
        let mut step = Step::default();
        let version = self.db.data_version()?;
        let changed = self.version != Some(version);
        self.version = Some(version);
        if changed {
            let first = self.db.first_session()?;
            match &self.first {
                Some(f) if f.is_some() && *f != first => {
                    step.rewritten = true;
                    return Ok(step);
                }
                _ => self.first = Some(first),
            }
            self.list()?;
            self.dirty.extend(self.running.iter().cloned());
        } else if self.dirty.is_empty() && !self.unlisted {
            return Ok(step);
        }
        if self.unlisted && self.waiting() < PENDING_MAX / 2 {
            self.list()?;
        }
        let mut bytes = 0;
        while let Some(session) = self.dirty.pop_first() {
            if bytes >= budget {
                self.dirty.insert(session);
                step.more = true;
                break;
            }
            self.running.remove(&session);
            let ids: Vec<String> = self
                .pending
                .get(&session)
                .map(|p| p.iter().cloned().collect())
                .unwrap_or_default();
            let mut doc = Documents::new(
                &session,
                self.db.info(&session)?,
                self.read.get(&session).cloned(),
                max,
            );
            let mut taken = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                let Some(m) = self.db.message(id)? else {
                    // Deleted since it was listed.
                    taken.push(id.clone());
                    continue;
                };
                let (ready, running) = settled(&m.data, i + 1 < ids.len());
                if !ready {
                    if running {
                        self.running.insert(session.clone());
                    }
                    break;
                }
                doc.push(&self.db, id, &m)?;
                taken.push(id.clone());
                if bytes + doc.bytes() >= budget && i + 1 < ids.len() {
                    // The rest next time.
                    self.dirty.insert(session.clone());
                    step.more = true;
                    break;
                }
            }
            if let Some(p) = self.pending.get_mut(&session) {
                for id in &taken {
                    p.remove(id);
                }
                if p.is_empty() {
                    self.pending.remove(&session);
                }
            }
            if let Some(last) = &doc.last {
                self.read.insert(session.clone(), last.clone());
            }
            bytes += doc.bytes();
            let (docs, said) = doc.finish();
            step.skipped.extend(said);
            step.records.extend(docs.into_iter().map(|d| Rec {
                key: Some(session.as_bytes().to_vec()),
                value: d,
            }));
        }
        step.more |= self.unlisted;
        Ok(step)
    }

    /// Sessions followed (that have had a message).
    pub fn sessions(&self) -> usize {
        self.read.len().max(self.pending.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_appended_as_the_export_appends_them() {
        assert_eq!(
            with_ids(
                br#" {"type":"text","text":"hi"} "#,
                &[("id", "p1"), ("sessionID", "s")]
            )
            .unwrap(),
            br#"{"type":"text","text":"hi","id":"p1","sessionID":"s"}"#
        );
        assert_eq!(
            with_ids(b"{ }", &[("id", "p\"1")]).unwrap(),
            br#"{"id":"p\"1"}"#
        );
        assert_eq!(with_ids(b"[1]", &[("id", "x")]), None);
        assert_eq!(with_ids(b"{\"a\":", &[("id", "x")]), None);
    }

    #[test]
    fn a_message_settles_when_a_later_one_exists_or_it_completed() {
        let running = br#"{"role":"assistant","time":{"created":1}}"#;
        let done = br#"{"role":"assistant","time":{"created":1,"completed":2}}"#;
        let failed = br#"{"role":"assistant","time":{"created":1},"error":{"name":"APIError"}}"#;
        let user = br#"{"role":"user","time":{"created":1}}"#;
        assert_eq!(settled(running, false), (false, true));
        assert_eq!(settled(running, true), (true, false));
        assert_eq!(settled(done, false), (true, false));
        assert_eq!(settled(failed, false), (true, false));
        assert_eq!(settled(user, false), (false, false));
        assert_eq!(settled(b"not json", false), (false, false));
    }
}
