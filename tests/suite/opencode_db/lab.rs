//! The real OpenCode (the lab's pinned release, `lab/package-lock.json`) against the lab's
//! local stand-in for its model API: `serve` follows the database OpenCode writes while it
//! writes it; each turn's reading is on the board within 2 s of the turn's end; OpenCode never
//! says its database is busy; the session read from the database equals its `opencode
//! export`. It needs Node.js, npm and the registry: without them it says so and passes
//! (under `CI=true` it fails: [`crate::common::skip`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_fold_lab::agents::{Agent, Session};
use agent_fold_lab::install::{self, Releases};
use agent_fold_lab::model::Model;
use agent_fold_lab::scenario::{self, Action, Scenario};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::pressure_of;
use crate::common::skip;
use crate::harness::{Server, row_of, scratch};

/// The last reading OpenCode recorded in `session` (its last assistant message with tokens:
/// input + cache read + cache write), read as any reader would.
fn recorded(db: &std::path::Path, session: &str) -> Option<u64> {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    let mut st = c
        .prepare("SELECT data FROM message WHERE session_id = ?1 ORDER BY id DESC")
        .ok()?;
    let rows: Vec<String> = st
        .query_map([session], |r| r.get(0))
        .ok()?
        .flatten()
        .collect();
    rows.iter().find_map(|d| {
        let v: Value = serde_json::from_str(d).ok()?;
        let t = &v["tokens"];
        let n =
            t["input"].as_u64()? + t["cache"]["read"].as_u64()? + t["cache"]["write"].as_u64()?;
        (v["role"] == "assistant" && v["summary"] != true && n > 0).then_some(n)
    })
}

/// Each completed assistant step of `session`: its reading and when OpenCode completed it
/// (`time.completed`, milliseconds since the epoch).
fn completed(db: &std::path::Path, session: &str) -> Vec<(u64, u128)> {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = c
        .prepare("SELECT data FROM message WHERE session_id = ?1 ORDER BY id")
        .unwrap();
    let rows: Vec<String> = st
        .query_map([session], |r| r.get(0))
        .unwrap()
        .flatten()
        .collect();
    rows.iter()
        .filter_map(|d| {
            let v: Value = serde_json::from_str(d).ok()?;
            let t = &v["tokens"];
            let n = t["input"].as_u64()?
                + t["cache"]["read"].as_u64()?
                + t["cache"]["write"].as_u64()?;
            let at = v["time"]["completed"].as_u64()?;
            (v["role"] == "assistant" && n > 0).then_some((n, u128::from(at)))
        })
        .collect()
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

#[test]
fn the_real_opencode_is_followed_as_it_writes_its_database() {
    let npm = std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !npm {
        return skip("OpenCode's database, written by OpenCode itself: no npm on PATH");
    }
    let installed = match install::install(Releases::Pinned, &|s| eprintln!("{s}")) {
        Ok(i) => i,
        Err(e) => return skip(&format!("the lab's agents do not install here: {e:#}")),
    };
    let agent = Agent::OpenCode;
    let plan = scenario::plan(Scenario::Basic, agent).expect("OpenCode has the basic scenario");
    let dir = scratch("opencode-lab");
    let work = dir.join("work");
    for (name, chars) in &plan.files {
        let path = work.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let line = "The lab keeps its notes short; this line is filler text.\n";
        std::fs::write(&path, line.repeat(chars / line.len() + 1)).unwrap();
    }
    std::fs::write(work.join("notes.txt"), "The answer is 42.\n").unwrap();
    let model = Arc::new(Model::new(
        plan.script.clone(),
        &work,
        &dir.join("requests.jsonl"),
    ));
    let serving = Arc::clone(&model);
    let stand_in =
        agent_fold_lab::http::Server::start(move |req| agent.serve(&serving, req)).unwrap();
    let mut session = Session::new(
        agent,
        &installed.bin(agent),
        &dir,
        &stand_in.url(),
        plan.settings.clone(),
        &install::lab_dir().join("cache"),
    )
    .unwrap();
    let turns: Vec<(&String, Option<&str>)> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Turn { prompt, model } => Some((prompt, model.as_deref())),
            _ => None,
        })
        .collect();
    session.turn(turns[0].0, turns[0].1).unwrap();
    let id = session.id.clone().unwrap();
    let db = session
        .logs()
        .unwrap()
        .pop()
        .expect("OpenCode wrote opencode.db");
    assert!(db.ends_with("opencode/opencode.db"), "{}", db.display());
    // The database's directory, as a user names OpenCode's data directory.
    let data = db.parent().unwrap().to_str().unwrap().to_owned();
    let s = Server::start(&["-e", "capacity=200000", &data]);
    let first = recorded(&db, &id).expect("a reading after the first turn");
    s.wait_state("the first turn", |st| {
        row_of(&st["sessions"], &id).is_some_and(|r| r["record"]["pressureTokens"] == first)
    });
    // While OpenCode runs: when the board first shows each reading, by the wall clock
    // OpenCode stamps its messages with.
    let seen: Mutex<BTreeMap<u64, u128>> = Mutex::new(BTreeMap::new());
    let done = AtomicBool::new(false);
    let mut slowest = Duration::ZERO;
    let started = now_ms();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let state = s.state();
                if let Some(t) = row_of(&state["sessions"], &id)
                    .and_then(|r| r["record"]["pressureTokens"].as_u64())
                {
                    seen.lock().unwrap().entry(t).or_insert_with(now_ms);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        for (prompt, on) in &turns[1..] {
            session.turn(prompt, *on).unwrap();
            let t0 = Instant::now();
            let last = recorded(&db, &id).unwrap();
            s.wait_state("the turn's reading", |st| {
                row_of(&st["sessions"], &id).is_some_and(|r| r["record"]["pressureTokens"] == last)
            });
            slowest = slowest.max(t0.elapsed());
        }
        done.store(true, Ordering::Relaxed);
    });
    let seen = seen.into_inner().unwrap();
    let lags: Vec<u128> = completed(&db, &id)
        .into_iter()
        .filter(|(_, at)| *at >= started)
        .filter_map(|(tokens, at)| Some(seen.get(&tokens)?.saturating_sub(at)))
        .collect();
    let version = installed.versions.get(&agent).cloned().unwrap_or_default();
    println!(
        "OpenCode {version}: {} steps seen on the board {lags:?} ms after OpenCode completed \
         them; each turn's last within {slowest:?} of the turn's end",
        lags.len()
    );
    assert!(!lags.is_empty(), "no step seen as it completed");
    assert!(lags.iter().all(|l| *l < 2_000), "{lags:?}");
    assert!(slowest < Duration::from_secs(2), "{slowest:?}");
    assert!(session.ran.iter().all(|r| r.ok), "{:?}", session.ran);
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let said = std::fs::read_to_string(e.path()).unwrap_or_default();
        for busy in ["database is locked", "SQLITE_BUSY", "database is busy"] {
            assert!(!said.contains(busy), "{}: {busy}", e.path().display());
        }
    }
    // Followed as it was written or read whole: the same figures.
    let from_db = pressure_of(&dir, &db, &["--session", &id]);
    let state = s.state();
    let board = &row_of(&state["sessions"], &id).unwrap()["record"];
    assert_eq!(
        board,
        from_db.last().unwrap(),
        "the board's last record is run's"
    );
    drop(s);
    // The database and the export of the same session: the same pressure records.
    let export = session.export().unwrap();
    let from_export = pressure_of(&dir, &export, &[]);
    assert!(!from_db.is_empty());
    assert_eq!(from_db, from_export);
    assert_eq!(
        from_db
            .iter()
            .rev()
            .find_map(|p| p["pressureTokens"].as_u64()),
        recorded(&db, &id),
        "the readings OpenCode recorded"
    );
}
