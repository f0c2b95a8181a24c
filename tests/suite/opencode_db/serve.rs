//! `serve` following OpenCode's database while a writer (OpenCode's side: [`Writer`], WAL, no
//! busy timeout) appends to it: a completed step on the board within 2 s, the writer never
//! told the database is busy (a write transaction held across the server's polls, a burst of
//! commits), the database deleted, back and replaced under it, a damaged one refused beside
//! logs followed on.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Writer, two_sessions};
use crate::harness::{Server, frame, row_of, scratch};

/// The reading on the board for `session`.
fn reading(state: &Value, session: &str) -> Option<u64> {
    row_of(&state["sessions"], session)?["record"]["pressureTokens"].as_u64()
}

/// How long after `since` the board first shows `session` at `tokens` (polled every 10 ms).
fn shown_after(s: &Server, session: &str, tokens: u64, since: Instant) -> Duration {
    s.wait_state(&format!("{session} at {tokens}"), |st| {
        reading(st, session) == Some(tokens)
    });
    since.elapsed()
}

#[test]
fn serve_follows_a_database_as_its_writer_appends() {
    let dir = scratch("opencode-db-follow");
    let db = dir.join("opencode.db");
    let w = Writer::create(&db);
    let a = "ses_0001live";
    w.session(a);
    let u = w.user(a, "Please read notes.txt.");
    w.assistant(a, &u, (8_000, 2_000));
    // The directory holding the database, as a user names OpenCode's data directory.
    let s = Server::start(&["-e", "capacity=200000", dir.to_str().unwrap()]);
    let state = s.wait_state("the first step", |st| reading(st, a) == Some(10_000));
    assert_eq!(row_of(&state["sessions"], a).unwrap()["agent"], "opencode");

    let mut slowest = Duration::ZERO;
    for turn in 1..=3u64 {
        let u = w.user(a, "Once more.");
        let id = w.running(a, &u, (0, 0));
        // Still running: not read (its tokens come when it completes).
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(reading(&s.state(), a), Some(10_000 + (turn - 1) * 5_000));
        let t0 = Instant::now();
        w.complete(&id, &u, (10_000 + turn * 5_000, 0));
        slowest = slowest.max(shown_after(&s, a, 10_000 + turn * 5_000, t0));
    }
    println!("a completed step on the board after {slowest:?} at most (3 turns)");
    assert!(slowest < Duration::from_secs(2), "{slowest:?}");

    // A write transaction held across the server's polls: it reads the last committed state,
    // the writer (no busy timeout) is never refused, and its commit shows.
    w.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let u = w.user(a, "Inside a transaction.");
    w.assistant(a, &u, (70_000, 0));
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        reading(&s.state(), a),
        Some(25_000),
        "uncommitted rows unseen"
    );
    w.conn.execute_batch("COMMIT").unwrap();
    let t0 = Instant::now();
    let committed = shown_after(&s, a, 70_000, t0);
    println!("a transaction's steps on the board {committed:?} after its commit");
    assert!(committed < Duration::from_secs(2), "{committed:?}");
    // A burst of commits while the server reads: none refused busy.
    let t0 = Instant::now();
    let mut commits = 0;
    while t0.elapsed() < Duration::from_secs(2) {
        let u = w.user(a, "Quick.");
        w.assistant(a, &u, (70_000 + commits, 0));
        commits += 1;
    }
    let (busy, _, _): (i64, i64, i64) = w
        .conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(busy, 0);
    let last = 70_000 + commits - 1;
    s.wait_state("the burst's last step", |st| reading(st, a) == Some(last));
    println!("{commits} commits in 2 s beside the server, none refused");
    assert!(!s.stderr().contains("busy"), "{}", s.stderr());
    // Followed a few rows at a time or read whole: the same figures.
    let run = super::pressure_of(&dir, &db, &["--session", a]);
    let state = s.state();
    let board = &row_of(&state["sessions"], a).unwrap()["record"];
    assert_eq!(
        board,
        run.last().unwrap(),
        "the board's last record is run's"
    );
}

#[test]
fn a_database_deleted_back_and_replaced_under_serve() {
    let dir = scratch("opencode-db-replace");
    let db = dir.join("opencode.db");
    let (w, [a, b]) = two_sessions(&db);
    drop(w);
    let s = Server::start(&["-e", "capacity=200000", db.to_str().unwrap()]);
    s.wait_state("both sessions", |st| {
        reading(st, a) == Some(2_000) && reading(st, b) == Some(42_000)
    });

    // Deleted (with its WAL): said, the last figures kept, no file held open.
    for f in ["opencode.db", "opencode.db-wal", "opencode.db-shm"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.stderr().contains("opencode.db vanished") {
        assert!(Instant::now() < deadline, "not said: {}", s.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        reading(&s.state(), b),
        Some(42_000),
        "the last figures stay"
    );
    let fds = std::fs::read_dir(format!("/proc/{}/fd", s.pid())).unwrap();
    let held: Vec<String> = fds
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.display().to_string())
        .filter(|p| p.contains("opencode.db"))
        .collect();
    assert!(held.is_empty(), "a deleted database held open: {held:?}");

    // Back, another database: read from its start.
    let w = Writer::create(&db);
    let c = "ses_0003cccc";
    w.session(c);
    let u = w.user(c, "A new start.");
    w.assistant(c, &u, (5_000, 0));
    let state = s.wait_state("the new database", |st| reading(st, c) == Some(5_000));
    let why = state["status"]["reset"].as_str().unwrap_or_default();
    assert!(why.contains("came back"), "{state:#}");
    drop(w);

    // Replaced by a rename over it: read again from its start, its sessions alone.
    let next = dir.join("next.db");
    let w = Writer::create(&next);
    let d = "ses_0004dddd";
    w.session(d);
    let u = w.user(d, "Replaced.");
    w.assistant(d, &u, (6_000, 0));
    w.conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(w);
    std::fs::rename(&next, &db).unwrap();
    let _ = std::fs::remove_file(dir.join("opencode.db-wal"));
    let _ = std::fs::remove_file(dir.join("opencode.db-shm"));
    let state = s.wait_state("the replacing database", |st| {
        reading(st, d) == Some(6_000) && reading(st, c).is_none()
    });
    let why = state["status"]["reset"].as_str().unwrap_or_default();
    assert!(why.contains("replaced"), "{state:#}");
}

#[test]
fn a_corrupt_database_is_refused_and_the_other_logs_followed() {
    let dir = scratch("opencode-db-corrupt-serve");
    let good = dir.join("good.sqlite-copy");
    let (w, _) = two_sessions(&good);
    w.conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(w);
    let data = dir.join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let mut bytes = std::fs::read(&good).unwrap();
    for b in bytes.iter_mut().skip(100) {
        *b = 0x5a;
    }
    std::fs::remove_file(&good).unwrap();
    std::fs::write(data.join("opencode.db"), &bytes).unwrap();
    let log = dir.join("frames.jsonl");
    std::fs::write(
        &log,
        frame("s-1", 0, "request/header", json!({"context_window": 1000}))
            + &frame("s-1", 1, "user/message", json!({"message": "hello"})),
    )
    .unwrap();
    let s = Server::start(&[dir.to_str().unwrap()]);
    let state = s.wait_state("s-1 and the refusal", |st| {
        row_of(&st["sessions"], "s-1").is_some()
            && st["status"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("damaged"))
    });
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1);
    std::thread::sleep(Duration::from_secs(2));
    let said = s.stderr();
    assert_eq!(
        said.matches("damaged one").count(),
        1,
        "said once, not at every poll: {said}"
    );
    assert!(s.get("/state").status == 200);
}
