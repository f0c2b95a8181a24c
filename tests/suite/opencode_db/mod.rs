//! OpenCode's database (`opencode.db`, OpenCode ≥ 1.2) as OpenCode writes it: databases made
//! here with the schema OpenCode 1.18.33 creates (`sqlite3 opencode.db .schema` of one it
//! wrote in the lab) and rows of the shapes it writes, read by `run`, `inspect`, `accuracy`
//! and `serve` ([`serve`]) — each session's readings equal to its `opencode export`'s, one
//! adapter for both (docs/adapters.md, "OpenCode"); and the real OpenCode driven through the
//! lab when npm is there ([`lab`]).

mod lab;
mod serve;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use serde_json::{Value, json};

use crate::harness::{agent_fold, scratch, succeeded};

/// The tables read, as OpenCode 1.18.33 creates them (its other tables are not read).
pub(crate) const SCHEMA: &str = "
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer,
  `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `metadata` text,
  `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `agent` text, `model` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_compacting` integer,
  `time_archived` integer);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)
    REFERENCES `session`(`id`) ON DELETE CASCADE);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`)
    REFERENCES `message`(`id`) ON DELETE CASCADE);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
";

/// OpenCode's side: a connection writing the database as OpenCode does (WAL), with no busy
/// timeout — a reader that blocked it would fail its statement at once, `SQLITE_BUSY`.
pub(crate) struct Writer {
    pub conn: Connection,
    /// The next id's number and the clock, in milliseconds (OpenCode's ids sort by time).
    n: std::cell::Cell<u64>,
}

/// The time a row's `n` stands for.
fn at(n: u64) -> i64 {
    1_796_551_616_000 + n as i64 * 1_000
}

impl Writer {
    /// Creates the database at `path` (WAL, OpenCode's tables).
    pub(crate) fn create(path: &Path) -> Writer {
        let conn = Connection::open(path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.execute_batch(SCHEMA).unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        Writer {
            conn,
            n: std::cell::Cell::new(1),
        }
    }

    fn next(&self) -> u64 {
        let n = self.n.get();
        self.n.set(n + 1);
        n
    }

    /// A session named `id` (`ses_…`).
    pub(crate) fn session(&self, id: &str) {
        let t = at(self.next());
        self.conn
            .execute(
                "INSERT INTO session (id, project_id, slug, directory, path, title, version, \
                 agent, model, time_created, time_updated) VALUES (?1, 'a211dc6c', 'silent-garden', \
                 '/work/proj', 'proj', 'A test session', '1.18.33', 'build', \
                 '{\"id\":\"test-model\",\"providerID\":\"test\"}', ?2, ?2)",
                params![id, t],
            )
            .unwrap();
    }

    fn message(&self, session: &str, data: &Value) -> String {
        let n = self.next();
        let id = format!("msg_{n:06}");
        self.conn
            .execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?3, ?4)",
                params![id, session, at(n), data.to_string()],
            )
            .unwrap();
        id
    }

    fn part(&self, session: &str, message: &str, data: &Value) {
        let n = self.next();
        self.conn
            .execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![
                    format!("prt_{n:06}"),
                    message,
                    session,
                    at(n),
                    data.to_string()
                ],
            )
            .unwrap();
    }

    /// A user's prompt: its message, then its text part (as OpenCode writes them, two rows).
    pub(crate) fn user(&self, session: &str, text: &str) -> String {
        let data = json!({"role": "user", "time": {"created": at(self.n.get())}, "agent": "build",
                          "model": {"providerID": "test", "modelID": "test-model"},
                          "summary": {"diffs": []}});
        let id = self.message(session, &data);
        self.part(session, &id, &json!({"type": "text", "text": text}));
        id
    }

    fn assistant_data(&self, parent: &str, prompt: (u64, u64), done: bool) -> Value {
        let (input, read) = prompt;
        let mut time = json!({"created": at(self.n.get())});
        if done {
            time["completed"] = json!(at(self.n.get()) + 500);
        }
        json!({"parentID": parent, "role": "assistant", "mode": "build", "agent": "build",
               "path": {"cwd": "/work/proj", "root": "/work/proj"}, "cost": 0,
               "tokens": {"total": input + read + 40, "input": input, "output": 40,
                          "reasoning": 0, "cache": {"write": 0, "read": read}},
               "modelID": "test-model", "providerID": "test", "time": time,
               "finish": "tool-calls"})
    }

    /// One step of the model's, done: its message (`prompt`: input and cache read tokens),
    /// then its parts — a step's start, a tool call with its output, its text, its finish.
    pub(crate) fn assistant(&self, session: &str, parent: &str, prompt: (u64, u64)) -> String {
        let id = self.running(session, parent, prompt);
        self.complete(&id, parent, prompt);
        id
    }

    /// A step still running: its message with no tokens yet, and its first parts.
    pub(crate) fn running(&self, session: &str, parent: &str, prompt: (u64, u64)) -> String {
        let mut data = self.assistant_data(parent, prompt, false);
        data["tokens"] = json!({"total": 0, "input": 0, "output": 0, "reasoning": 0,
                                "cache": {"write": 0, "read": 0}});
        let id = self.message(session, &data);
        self.part(
            session,
            &id,
            &json!({"snapshot": "776d0068", "type": "step-start"}),
        );
        self.part(
            session,
            &id,
            &json!({"type": "tool", "tool": "read", "callID": format!("call_{id}"),
                    "state": {"status": "completed", "input": {"filePath": "/work/proj/notes.txt"},
                              "output": "The answer is 42.\n".repeat(20), "title": "notes.txt",
                              "metadata": {}, "time": {"start": 1, "end": 2}}}),
        );
        self.part(
            session,
            &id,
            &json!({"type": "text", "text": "Read the notes.", "time": {"start": 1, "end": 2}}),
        );
        id
    }

    /// The step completes: its tokens and its finish.
    pub(crate) fn complete(&self, id: &str, parent: &str, prompt: (u64, u64)) {
        let data = self.assistant_data(parent, prompt, true);
        let session: String = self
            .conn
            .query_row("SELECT session_id FROM message WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        self.part(
            &session,
            id,
            &json!({"reason": "tool-calls", "snapshot": "776d0068", "type": "step-finish",
                    "tokens": data["tokens"], "cost": 0}),
        );
        self.conn
            .execute(
                "UPDATE message SET data = ?2, time_updated = ?3 WHERE id = ?1",
                params![id, data.to_string(), at(self.n.get())],
            )
            .unwrap();
    }

    /// OpenCode's compaction: a user message with a `compaction` part, the summary (an
    /// assistant message marked `summary`, its text the summary), the synthetic "Continue".
    pub(crate) fn compaction(&self, session: &str, auto: bool) -> String {
        let data = json!({"role": "user", "time": {"created": at(self.n.get())}, "agent": "build",
                          "model": {"providerID": "test", "modelID": "test-model"}});
        let user = self.message(session, &data);
        self.part(
            session,
            &user,
            &json!({"type": "compaction", "auto": auto, "overflow": false}),
        );
        let mut data = self.assistant_data(&user, (900, 0), true);
        data["mode"] = json!("compaction");
        data["agent"] = json!("compaction");
        data["summary"] = json!(true);
        let summary = self.message(session, &data);
        self.part(
            session,
            &summary,
            &json!({"type": "text", "text": "<analysis>The notes were read.</analysis>"}),
        );
        let data = json!({"role": "user", "time": {"created": at(self.n.get())}, "agent": "build",
                          "model": {"providerID": "test", "modelID": "test-model"}});
        let cont = self.message(session, &data);
        self.part(
            session,
            &cont,
            &json!({"type": "text", "metadata": {"compaction_continue": true}, "synthetic": true,
                    "text": "Continue if you have next steps."}),
        );
        cont
    }

    /// The session as `opencode export` prints it: its info, each message's data with its ids
    /// after, each part's data with its ids after.
    pub(crate) fn export(&self, session: &str) -> Value {
        let rows = |sql: &str, key: &str| -> Vec<(String, Value)> {
            let mut st = self.conn.prepare(sql).unwrap();
            st.query_map([key], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .unwrap()
            .map(|r| {
                let (id, data) = r.unwrap();
                (id, serde_json::from_str(&data).unwrap())
            })
            .collect()
        };
        let messages: Vec<Value> = rows(
            "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY id",
            session,
        )
        .into_iter()
        .map(|(id, mut info)| {
            info["id"] = json!(id);
            info["sessionID"] = json!(session);
            let parts: Vec<Value> = rows(
                "SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id",
                &id,
            )
            .into_iter()
            .map(|(pid, mut p)| {
                p["id"] = json!(pid);
                p["sessionID"] = json!(session);
                p["messageID"] = json!(id);
                p
            })
            .collect();
            json!({"info": info, "parts": parts})
        })
        .collect();
        json!({"info": {"id": session, "slug": "silent-garden", "version": "1.18.33",
                        "title": "A test session"},
               "messages": messages})
    }
}

/// A database of two sessions: the first with three steps, a compaction and a step after;
/// the second with one step. Returns the writer and the sessions.
pub(crate) fn two_sessions(path: &Path) -> (Writer, [&'static str; 2]) {
    let w = Writer::create(path);
    let (a, b) = ("ses_0001aaaa", "ses_0002bbbb");
    w.session(a);
    let u = w.user(a, "Please read notes.txt.");
    w.assistant(a, &u, (8_000, 2_000));
    w.assistant(a, &u, (3_000, 12_000));
    let u = w.user(a, "Now the guide.");
    w.assistant(a, &u, (30_000, 0));
    let c = w.compaction(a, true);
    w.assistant(a, &c, (1_500, 500));
    w.session(b);
    let u = w.user(b, "Hello.");
    w.assistant(b, &u, (42_000, 0));
    (w, [a, b])
}

/// `agent-fold run --pressure-out` of `log` with `args`: the pressure records.
pub(crate) fn pressure_of(dir: &Path, log: &Path, args: &[&str]) -> Vec<Value> {
    let out = dir.join(format!(
        "{}.pressure.jsonl",
        log.file_name().unwrap().to_string_lossy()
    ));
    let mut all: Vec<&str> = vec!["run", "-e", "capacity=200000", "--pressure-out"];
    all.push(out.to_str().unwrap());
    all.extend(args);
    all.push(log.to_str().unwrap());
    succeeded(agent_fold(&all, None));
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The readings (`pressureTokens`, where a record has one) of a session's records.
fn readings(records: &[Value], session: &str) -> Vec<u64> {
    let mut r: Vec<u64> = records
        .iter()
        .filter(|p| p["session"] == session)
        .filter_map(|p| p["pressureTokens"].as_u64())
        .collect();
    r.dedup();
    r
}

fn export_file(dir: &Path, w: &Writer, session: &str) -> PathBuf {
    let path = dir.join(format!("{session}.json"));
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&w.export(session)).unwrap(),
    )
    .unwrap();
    path
}

/// Each session of the database reads as its export: the same pressure records, byte for
/// byte, through the one adapter; the summary message is a compaction (the projection falls
/// and the next reading re-bases on it).
#[test]
fn each_session_of_a_database_reads_as_its_export() {
    let dir = scratch("opencode-db-export");
    let db = dir.join("opencode.db");
    let (w, [a, b]) = two_sessions(&db);
    for s in [a, b] {
        let export = export_file(&dir, &w, s);
        let from_db = pressure_of(&dir, &db, &["--session", s]);
        let from_export = pressure_of(&dir, &export, &[]);
        assert!(!from_db.is_empty());
        assert_eq!(from_db, from_export, "session {s}");
        // Named or told: the same.
        let named = pressure_of(&dir, &db, &["--session", s, "--input", "opencode"]);
        assert_eq!(named, from_db);
    }
    let all = pressure_of(&dir, &db, &[]);
    assert_eq!(readings(&all, a), [10_000, 15_000, 30_000, 2_000]);
    assert_eq!(readings(&all, b), [42_000]);
    let projected: Vec<u64> = all
        .iter()
        .filter(|p| p["session"] == a)
        .filter_map(|p| p["projectedTokens"].as_u64())
        .collect();
    let top = projected.iter().position(|p| *p >= 30_000).unwrap();
    assert!(
        projected[top..].iter().any(|p| *p < 5_000),
        "the summary replaced the surface: {projected:?}"
    );
    // The directory holding it names it too.
    assert_eq!(
        pressure_of(&dir, &dir, &["--session", b]),
        pressure_of(&dir, &db, &["--session", b])
    );
}

/// `inspect` and `accuracy` take the database and `--session`; a session it does not hold, or
/// `--session` with a log that is no database, is refused naming what there is.
#[test]
fn inspect_and_accuracy_read_a_database_by_session() {
    let dir = scratch("opencode-db-inspect");
    let db = dir.join("opencode.db");
    let (_w, [a, b]) = two_sessions(&db);
    let out = succeeded(agent_fold(
        &["inspect", "--json", db.to_str().unwrap()],
        None,
    ));
    let census: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = census.to_string();
    assert!(text.contains(a) && text.contains(b), "{census:#}");
    assert!(text.contains("opencode"), "{census:#}");
    assert!(!text.contains("sessions in one file"), "{census:#}");
    let out = succeeded(agent_fold(
        &["inspect", "--session", b, db.to_str().unwrap()],
        None,
    ));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(b) && !said.contains(a), "{said}");
    assert!(said.contains("readings: 1"), "{said}");

    let out = succeeded(agent_fold(
        &[
            "accuracy",
            "--session",
            a,
            "-e",
            "capacity=200000",
            db.to_str().unwrap(),
        ],
        None,
    ));
    assert!(!out.stdout.is_empty());

    for args in [
        vec!["run", "--session", "ses_nope", db.to_str().unwrap()],
        vec!["inspect", "--session", "ses_nope", db.to_str().unwrap()],
    ] {
        let out = agent_fold(&args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("holds no session ses_nope") && err.contains(a),
            "{err}"
        );
    }
    let log = dir.join("frames.jsonl");
    std::fs::write(
        &log,
        crate::harness::frame("s", 1, "user/message", json!({})),
    )
    .unwrap();
    let out = agent_fold(&["run", "--session", a, log.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("is not an OpenCode database"),
        "{err}"
    );
}

/// A damaged database (its header intact, its pages not) and a file that is no database are
/// refused in words, never read as lines.
#[test]
fn a_corrupt_database_is_refused_in_words() {
    let dir = scratch("opencode-db-corrupt");
    let good = dir.join("good.db");
    let (w, _) = two_sessions(&good);
    w.conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(w);
    let bad = dir.join("opencode.db");
    let mut bytes = std::fs::read(&good).unwrap();
    for b in bytes.iter_mut().skip(100) {
        *b = 0x5a;
    }
    std::fs::write(&bad, &bytes).unwrap();
    for cmd in [vec!["inspect"], vec!["run", "--pressure-out", "/dev/null"]] {
        let mut args = cmd.clone();
        args.push(bad.to_str().unwrap());
        let out = agent_fold(&args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd:?}");
        assert!(
            err.contains("is not an SQLite database, or a damaged one") && err.contains("refused"),
            "{cmd:?}: {err}"
        );
    }
    // A file named as a database that is none: refused as one, not read as lines.
    let named = dir.join("notes.db");
    std::fs::write(&named, "{\"a\":1}\n").unwrap();
    for cmd in ["inspect", "run"] {
        let out = agent_fold(&[cmd, named.to_str().unwrap()], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd}");
        assert!(err.contains("is not an SQLite database"), "{cmd}: {err}");
    }
    // An SQLite database of another program's.
    let other = dir.join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let out = agent_fold(&["inspect", other.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not OpenCode's") && err.contains("`session` table"),
        "{err}"
    );
}

/// The database is only read: no row, no checkpoint — the writer's WAL stays as it was.
#[test]
fn reading_a_database_writes_nothing() {
    let dir = scratch("opencode-db-readonly");
    let db = dir.join("opencode.db");
    let (w, [a, _]) = two_sessions(&db);
    let wal = dir.join("opencode.db-wal");
    let before = (
        std::fs::read(&db).unwrap(),
        std::fs::metadata(&wal).unwrap().len(),
    );
    pressure_of(&dir, &db, &[]);
    pressure_of(&dir, &db, &["--session", a]);
    succeeded(agent_fold(&["inspect", db.to_str().unwrap()], None));
    let after = (
        std::fs::read(&db).unwrap(),
        std::fs::metadata(&wal).unwrap().len(),
    );
    assert!(before == after, "the database or its WAL changed");
    // The writer goes on.
    w.user(a, "More.");
}
