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

mod document;
mod follower;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, ffi};

use crate::record::Rec;

use document::{Documents, with_ids};
pub(crate) use follower::Follower;

/// The database's file name in OpenCode's data directory (`$XDG_DATA_HOME/opencode/`).
pub(crate) const FILE_NAME: &str = "opencode.db";

/// How long a read waits for a lock before it fails (SQLite's busy handler retries within it).
const BUSY_TIMEOUT: Duration = Duration::from_millis(1_000);

/// Message rows listed per statement: a database of any size is listed in steps.
const LIST_ROWS: i64 = 4_096;

/// Listed messages waiting to be read at most: past it, rows are listed again only once the
/// waiting ones are read.
const PENDING_MAX: usize = 65_536;

/// Why a database cannot be read, in words a person can act on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
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

/// One message row.
struct Message {
    session: String,
    data: Vec<u8>,
}

/// An OpenCode database, open read-only.
pub(crate) struct Db {
    conn: Connection,
    path: PathBuf,
}

impl Db {
    /// Opens the database read-only and checks that it is OpenCode's: a file that is not an
    /// SQLite database (or a damaged one) and one without the tables read are refused in
    /// words, before anything is read.
    pub(crate) fn open(path: &Path) -> Result<Db, DbError> {
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
    pub(crate) fn data_version(&self) -> Result<i64, DbError> {
        self.conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(|e| self.error(e))
    }

    /// The sessions, in id order (OpenCode's ids sort by time).
    pub(crate) fn sessions(&self) -> Result<Vec<String>, DbError> {
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
    pub(crate) fn session_documents(
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

    /// Every session's documents ([`Db::session_documents`]), or those of `only`, as records
    /// keyed by their session (the record key is the session id: contract §1).
    pub(crate) fn records(&self, only: Option<&str>, max: usize) -> Result<Vec<Rec>, DbError> {
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
