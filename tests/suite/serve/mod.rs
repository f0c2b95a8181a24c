//! `agent-fold serve` without a browser: the binary started as a user starts it, read over
//! plain HTTP and Server-Sent Events. The board first, then coalesced deltas at a bounded rate,
//! resume with Last-Event-ID (the rows changed since, or the whole board), bad records skipped
//! and counted, a followed log (a line written in two parts, folded frames, a vanished and a
//! rewritten file) and a directory of logs, every flag, the API, idle sessions, alerts and their
//! webhook, OTLP events in, and a Fluvio topic (a real local cluster when there is one; else
//! that part prints skipped).

mod alerting;
mod board;
mod fluvio;
use crate::harness;
mod hostile;

use std::io::Write;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::records::pressure_line;
use agent_fold::module::{Build, Module};
use harness::{
    Scratch, Server, append, frame, last_pressure, real_session, refused, row_of, scratch,
};
use serde_json::{Value, json};

fn p(session: &str, seq: u64, occupancy: f64) -> String {
    let fields = json!({"pressureTokens": 100, "projectedTokens": (occupancy * 1000.0) as u64,
                        "capacity": 1000, "contextOccupancy": occupancy, "systemTokens": 1,
                        "toolsTokens": 2, "messageTokens": 3, "estimateScale": 1,
                        "stateVersion": 4});
    pressure_line(session, seq, fields)
}

fn write(s: &mut Server, text: &str) {
    s.stdin().write_all(text.as_bytes()).unwrap();
    s.stdin().flush().unwrap();
}

/// The session's row in a state.
fn session<'a>(state: &'a Value, id: &str) -> Option<&'a Value> {
    row_of(&state["sessions"], id)
}

fn seq_of(state: &Value, id: &str) -> Option<u64> {
    session(state, id)?["record"]["seq"].as_u64()
}

/// The sessions a board event's rows name, sorted.
fn named(e: &harness::SseEvent) -> Vec<String> {
    let v = e.json();
    let mut s: Vec<String> = agent_fold_testkit::strings_of(&v["rows"], "session")
        .into_iter()
        .map(str::to_owned)
        .collect();
    s.sort();
    s
}

#[test]
fn the_board_comes_first_then_coalesced_deltas_resume_after_last_event_id() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    let mut first = s.events(None);
    let board = first.next();
    assert_eq!(
        board.kind, "board",
        "a new page starts with the whole board"
    );
    assert_eq!(
        board.retry,
        Some(1000),
        "and is told to reconnect within a second"
    );
    let id = board.id.clone().unwrap();
    assert!(id.contains('-'), "ids are <v>-<run>: {id}");
    assert_eq!(board.json()["rows"], json!([]));

    // Forty records of two sessions at once: the page gets each session's latest row, once.
    let burst: String = (1..=20)
        .flat_map(|seq| [p("a", seq, 0.1), p("b", seq, 0.2)])
        .collect();
    write(&mut s, &burst);
    let mut deltas = Vec::new();
    loop {
        let e = first.next_of("delta");
        let rows = named(&e);
        let mut unique = rows.clone();
        unique.dedup();
        assert_eq!(rows, unique, "a session once in a delta: {}", e.data);
        deltas.push(e.clone());
        let at_20 = |id: &str| {
            deltas
                .iter()
                .any(|d| row_of(&d.json()["rows"], id).is_some_and(|r| r["seq"] == 20))
        };
        if at_20("a") && at_20("b") {
            break;
        }
    }
    assert!(
        deltas.len() < 10,
        "40 records came as {} messages, not one each",
        deltas.len()
    );
    let last = deltas.last().unwrap().clone();
    assert!(last.n() > board.n());

    // Resume after it, then only b changes: exactly b's new row, no board.
    let mut resumed = s.events(last.id.as_deref());
    let mut by_query = s.events_at(
        &format!("/events?last_event_id={}", last.id.clone().unwrap()),
        None,
    );
    write(&mut s, &p("b", 21, 0.3));
    for stream in [&mut resumed, &mut by_query] {
        let e = stream.next();
        assert_eq!(
            e.kind, "delta",
            "a page that resumes gets what changed, not the board"
        );
        assert_eq!(named(&e), ["b"]);
        assert_eq!(e.json()["rows"][0]["record"]["seq"], 21);
    }

    // A human rate: records for two seconds at 200 a second reach a page as at most ten
    // messages a second.
    let started = Instant::now();
    let mut seq = 22;
    while started.elapsed() < Duration::from_secs(2) {
        write(&mut s, &p("a", seq, 0.5));
        seq += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent = seq - 22;
    let mut messages = 0;
    loop {
        let (row, _) = resumed.next_row("a", |_| true);
        messages += 1;
        if row["seq"] == seq - 1 {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    assert!(
        f64::from(messages) <= 10.0 * secs + 2.0,
        "{sent} records in {secs:.1} s came as {messages} messages"
    );

    // An id of another server run, or garbage: the board.
    for other in ["3-elsewhere", "nonsense"] {
        assert_eq!(s.events(Some(other)).next().kind, "board");
    }
}

#[test]
fn bad_records_on_stdin_are_skipped_and_counted() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    let mut events = s.events(None);
    events.next_of("board");
    let (a5, a3) = (p("a", 5, 0.5), p("a", 3, 0.9));
    let lines = [
        "garbage",
        "[1,2]",
        r#"{"type":"user/message","session":"a","seq":1}"#,
        r#"{"type":"context/pressure","seq":1}"#,
        a5.trim_end(),
        a3.trim_end(),
        "",
        r#"{"type":"context/error","session":"a","seq":6,"error":"replacement span 2..4 is not in the surface: the log is corrupt","stateVersion":4}"#,
    ];
    write(&mut s, &lines.join("\n"));
    // The last line has no newline: it counts when stdin closes.
    s.close_stdin();
    let state = s.wait_state("stdin closed", |st| st["status"]["state"] == "ended");
    let status = &state["status"];
    assert_eq!(status["records"], 7, "every non-empty line read");
    assert_eq!(status["skipped"], 4, "the four that are no pressure record");
    assert_eq!(
        status["lastSkipped"],
        "a pressure record without a session string"
    );
    assert!(status["message"].as_str().unwrap().contains("stdin closed"));
    let a = session(&state, "a").unwrap();
    assert_eq!(
        a["record"]["seq"], 5,
        "the older seq 3 did not turn back time"
    );
    assert_eq!(a["error"]["seq"], 6);
    // What the page was told: the row with both, and the counts (in one delta or more).
    let (mut row, mut status) = (None, None);
    while row.is_none() || status.is_none() {
        let v = events.next().json();
        if let Some(r) = row_of(&v["rows"], "a").filter(|r| r["error"]["seq"] == 6) {
            row = Some(r.clone());
        }
        if v["status"]["state"] == "ended" {
            status = Some(v["status"].clone());
        }
    }
    assert_eq!(row.unwrap()["record"]["seq"], 5);
    assert_eq!(status.unwrap()["skipped"], 4);
    assert!(s.alive(), "the server keeps serving after stdin ends");
    assert_eq!(s.get("/").status, 200);
}

fn counter(id: &str, second: u64, delta: u64) -> String {
    json!({"type": "thinking/tokens", "session_id": "s-1", "id": id,
           "timestamp": format!("2026-11-29T10:01:{second:02}Z"), "estimated_tokens_delta": delta})
    .to_string()
        + "\n"
}

#[test]
fn a_followed_log_updates_live_a_half_line_waits_and_runs_fold() {
    let dir = scratch("follow");
    let log = dir.join("session.jsonl");
    let mut text = frame(
        "s-1",
        0,
        "request/header",
        json!({"system": "be brief", "tools": [], "context_window": 1000}),
    ) + &frame("s-1", 1, "user/message", json!({"message": "hello"}))
        + &frame(
            "s-1",
            2,
            "assistant/message",
            json!({"message": "hi", "usage": {"input_tokens": 200}}),
        );
    append(&log, text.as_bytes());
    let s = Server::start(&["--input", "agent-fold", log.to_str().unwrap()]);
    let state = s.wait_state("seq 2", |st| seq_of(st, "s-1") == Some(2));
    assert_eq!(
        session(&state, "s-1").unwrap()["record"],
        last_pressure(&agent_fold::testing::jsonl::records(text.as_bytes()), &[])
    );
    assert_eq!(state["status"]["state"], "live");
    assert_eq!(state["status"]["message"], "following (agent-fold)");
    assert_eq!(state["status"]["records"], 3);
    let mut events = s.events(state["id"].as_str());

    // Half a line: nothing happens until its newline comes.
    let next = frame(
        "s-1",
        3,
        "user/message",
        json!({"message": "a longer question, written in two parts"}),
    );
    let (head, tail) = next.split_at(next.len() / 2);
    append(&log, head.as_bytes());
    std::thread::sleep(Duration::from_millis(600));
    let state = s.state();
    assert_eq!(state["status"]["records"], 3, "half a line is not a line");
    assert_eq!(seq_of(&state, "s-1"), Some(2));
    append(&log, tail.as_bytes());
    text += &next;
    let (row, _) = events.next_row("s-1", |r| r["seq"] == 3);
    assert_eq!(
        row["record"],
        last_pressure(&agent_fold::testing::jsonl::records(text.as_bytes()), &[]),
        "the whole line, once"
    );
    let state = s.wait_state("4 lines", |st| st["status"]["records"] == 4);
    assert_eq!(seq_of(&state, "s-1"), Some(3));

    // Three counters at once: the frames view folds them into one frame for the list.
    let counters = counter("t1", 1, 5) + &counter("t2", 2, 7) + &counter("t3", 3, 3);
    append(&log, counters.as_bytes());
    let (row, _) = events.next_row("s-1", |r| {
        r["folds"].as_array().is_some_and(|f| !f.is_empty())
    });
    let f = &row["folds"][0];
    assert_eq!(f["folded_frames"], 3);
    assert_eq!(f["estimated_tokens_delta"], 15);
    assert_eq!(f["folded_from"], "2026-11-29T10:01:01Z");
    assert_eq!(
        f["timestamp"], "2026-11-29T10:01:03Z",
        "the newest counter's frame"
    );
    let mut fields: Vec<&String> = f.as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "estimated_tokens_delta",
            "folded_frames",
            "folded_from",
            "timestamp",
            "type"
        ],
        "only what the page shows of a folded frame is kept and sent"
    );
    let state = s.wait_state("the folded frame kept", |st| {
        session(st, "s-1").is_some_and(|x| x["folds"].as_array().is_some_and(|a| a.len() == 1))
    });
    assert_eq!(state["status"]["skipped"], 0);
}

/// A scratch directory `name` with a log of session `s-1`: a header (a window of 1,000) and
/// a user message.
fn hello_log(name: &str) -> (Scratch, std::path::PathBuf) {
    let dir = scratch(name);
    let log = dir.join("log.jsonl");
    let text = frame("s-1", 0, "request/header", json!({"context_window": 1000}))
        + &frame("s-1", 1, "user/message", json!({"message": "hello"}));
    append(&log, text.as_bytes());
    (dir, log)
}

#[test]
fn bad_lines_of_a_log_are_skipped_and_counted() {
    let good = frame("s-1", 0, "request/header", json!({"context_window": 1000}))
        + "this is not JSON\n"
        + &frame("s-1", 1, "user/message", json!({"message": "hello"}));
    for (params, why) in [
        (vec![], "line 2: not a JSON object"),
        // The invocation fails as a whole; line by line, only the bad line is lost.
        (vec!["-e", "malformed=fail"], "line 2: not a JSON object"),
    ] {
        let dir = scratch(&format!("bad-{}", params.len()));
        let log = dir.join("log.jsonl");
        append(&log, good.as_bytes());
        let mut args = vec!["--native"];
        args.extend(&params);
        args.push(log.to_str().unwrap());
        let s = Server::start(&args);
        let state = s.wait_state("seq 1", |st| seq_of(st, "s-1") == Some(1));
        assert_eq!(state["status"]["records"], 3);
        assert_eq!(state["status"]["skipped"], 1, "{params:?}");
        let last = state["status"]["lastSkipped"].as_str().unwrap();
        assert!(last.starts_with(why), "{params:?}: {last}");
        assert_eq!(state["status"]["module"], "native library");
    }
}

#[test]
fn a_vanished_log_is_reported_the_server_keeps_serving_and_recovers() {
    let (_dir, log) = hello_log("vanish");
    let s = Server::start(&[log.to_str().unwrap()]);
    let state = s.wait_state("seq 1", |st| seq_of(st, "s-1") == Some(1));
    assert_eq!(
        state["status"]["message"], "following (agent-fold)",
        "auto: frames"
    );
    let mut events = s.events(state["id"].as_str());

    std::fs::remove_file(&log).unwrap();
    let status = events.next_status(|st| st["state"] == "error");
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("vanished"), "{message}");
    // Still serving: the page, the script, the state (last figures kept), a new stream.
    assert_eq!(s.get("/").status, 200);
    assert_eq!(s.get("/context-meter.js").status, 200);
    assert_eq!(seq_of(&s.state(), "s-1"), Some(1), "the last figures stay");
    assert_eq!(s.events(None).next().kind, "board");

    // It comes back (another log): read from its start, its session rebuilt from it (seq 0
    // stands, not taken for a re-delivery below the 1 it had), the pages told.
    let again = frame("s-1", 0, "request/header", json!({"context_window": 2000}))
        + &frame("s-2", 7, "user/message", json!({"message": "new"}));
    append(&log, again.as_bytes());
    let state = s.wait_state("live again", |st| {
        st["status"]["state"] == "live" && seq_of(st, "s-2").is_some()
    });
    let why = state["status"]["reset"].as_str().unwrap_or_default();
    assert!(why.contains("came back"), "{why}");
    assert_eq!(state["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(
        seq_of(&state, "s-1"),
        Some(0),
        "rebuilt from the log as it is now"
    );
    // The pages are told: a delta names s-1 (gone, or its row again).
    let told = (0..50).any(|_| {
        let d = events.next_of("delta").json();
        agent_fold_testkit::strings_of(&d["rows"], "session").contains(&"s-1")
            || d["gone"]
                .as_array()
                .is_some_and(|g| g.contains(&json!("s-1")))
    });
    assert!(told, "a delta names s-1");

    // Truncated to less than was read: read again from its start too.
    std::fs::write(
        &log,
        frame("s-1", 0, "request/header", json!({"context_window": 5})),
    )
    .unwrap();
    let state = s.wait_state("only s-1", |st| {
        st["sessions"].as_array().unwrap().len() == 1 && session(st, "s-1").is_some()
    });
    let why = state["status"]["reset"].as_str().unwrap_or_default();
    assert!(why.contains("truncated"), "{why}");
    let said = s.stderr();
    assert_eq!(
        said.matches("was truncated").count(),
        1,
        "said once: {said}"
    );
    assert_eq!(said.matches("came back").count(), 1, "said once: {said}");
}

#[test]
fn the_page_and_the_script_are_served_from_the_binary() {
    let dir = scratch("page");
    let log = dir.join("log.jsonl");
    let s = Server::start(&["--native", log.to_str().unwrap()]);
    let page = s.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("/serve/page.js") && html.contains("\"@agent-fold/context-meter\""));
    let script = String::from_utf8(s.get("/serve/page.js").body).unwrap();
    assert!(script.contains("new EventSource('/events')"));
    let js = s.get("/context-meter.js");
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    let file = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/context-meter.js")).unwrap();
    assert_eq!(js.body, file, "ui/context-meter.js as it is");
    assert_eq!(s.get("/nothing-here").status, 404);
    // The status starts as "starting" before the first look at the file: wait for what it
    // found.
    let state = s.wait_state("waiting for the file", |st| {
        st["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("does not exist yet"))
    });
    assert_eq!(state["status"]["state"], "starting", "{state:#}");
    // The file appears: read from its start.
    append(
        &log,
        frame("s-1", 0, "request/header", json!({"context_window": 10})).as_bytes(),
    );
    s.wait_state("the file read", |st| seq_of(st, "s-1") == Some(0));
}

#[test]
fn flags_are_checked_before_the_server_starts() {
    let dir = scratch("flags");
    let log = dir.join("log.jsonl");
    append(&log, b"");
    let log = log.to_str().unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["--input", "claude-code", "-"],
            1,
            "--input, -e, --wasm and --native",
        ),
        (
            &["-e", "capacity=5", "--topic", "t"],
            1,
            "carries pressure records already",
        ),
        (&["--native", "-"], 1, "shape the module"),
        (&["-e", "emit=frames", log], 1, "one instance of each view"),
        (
            &["--input", "codex", "-e", "input=codex", log],
            1,
            "choose one",
        ),
        (&["-e", "capacity=lots", log], 1, "capacity"),
        (&["-e", "nonsense", log], 2, "KEY=VALUE"),
        (
            &["--wasm", "/nonexistent/agent-fold.wasm", log],
            1,
            "cannot read the SmartModule",
        ),
        (
            &["--input", "yaml", log],
            2,
            "auto, agent-fold, claude-code",
        ),
        (&["--idle", "0", "-"], 2, "idle"),
        (&["--max-sessions", "0", "-"], 2, "max-sessions"),
        (&["--alert", "speed>3", "-"], 2, "is not one of until"),
        (&["--alert", "until<lots", "-"], 2, "is not a number"),
        (
            &[
                "--alert",
                "until<5",
                "--alert-webhook",
                "https://hooks.example/x",
                "-",
            ],
            2,
            "https is not supported",
        ),
        (
            &["--alert-webhook", "http://127.0.0.1:9/x", "-"],
            2,
            "--alert",
        ),
        (
            &[
                "--alert",
                "until<5",
                "--alertmanager",
                "https://am:9093",
                "-",
            ],
            2,
            "https is not supported",
        ),
        (&["--alertmanager", "http://am:9093", "-"], 2, "--alert"),
        (&["--resend", "30", "-"], 2, "--alertmanager"),
        (&["--look-back", "500", "-"], 1, "go with --topic"),
        (&["--since", "2h", "-"], 1, "go with --topic"),
        (&["--topic", "t", "--look-back", "lots"], 2, "or all"),
        (&["--topic", "t", "--since", "2 weeks"], 2, "90s, 30m"),
        (
            &["--token-file", "/nonexistent", "-"],
            1,
            "goes with --otlp",
        ),
        (&["--otlp", "0.0.0.0:0", "-"], 1, "beyond loopback"),
        (
            &["--otlp", "127.0.0.1:0", "-e", "input=codex", "-"],
            1,
            "input=otel",
        ),
        (&["--addr", "localhost", "-"], 2, "addr"),
        (&["--topic", "t", log], 2, "cannot be used with"),
        (
            &["--wasm", "x.wasm", "--native", log],
            2,
            "cannot be used with",
        ),
        // No source: every agent's home, and none here (HOME is the test's empty one).
        (&[], 1, "no agent's sessions on this machine"),
        (
            &["-e", "capacity=5", "-"],
            1,
            "carries pressure records already",
        ),
    ];
    for (args, code, says) in cases {
        let (got, stderr) = refused(args);
        assert_eq!(got, *code, "{args:?}: {stderr}");
        assert!(
            stderr.contains(says),
            "{args:?} should say {says:?}: {stderr}"
        );
    }
    // An address in use is refused with the address named.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let (code, stderr) = refused(&["--addr", &addr, "-"]);
    assert_eq!(code, 1);
    assert!(stderr.contains(&format!("listening on {addr}")), "{stderr}");
    // A free one is used, and the URL names it.
    drop(busy);
    let s = Server::start(&["--addr", &addr, "--native", log]);
    assert_eq!(s.url, format!("http://{addr}/"));
}

#[test]
fn wasm_and_native_modules_fold_alike() {
    let (_dir, log) = hello_log("modules");
    let reply = json!({"message": "hi", "usage": {"input_tokens": 50}});
    append(&log, frame("s-1", 2, "assistant/message", reply).as_bytes());
    let text = std::fs::read_to_string(&log).unwrap();
    let wasm = agent_fold::module::default_wasm_path();
    let mut runs = vec![(vec!["--native"], "native library".to_owned())];
    if wasm.is_file() {
        let shown = format!("SmartModule {} in fluvio-smartengine", wasm.display());
        runs.push((vec!["--wasm", wasm.to_str().unwrap()], shown));
    } else {
        println!(
            "skipped: the --wasm run (no build at {}; scripts/build-wasm.sh)",
            wasm.display()
        );
    }
    for (flags, module) in runs {
        let mut args = flags.clone();
        args.push(log.to_str().unwrap());
        let s = Server::start(&args);
        let state = s.wait_state("seq 2", |st| seq_of(st, "s-1") == Some(2));
        assert_eq!(state["status"]["module"], module.as_str());
        assert_eq!(
            session(&state, "s-1").unwrap()["record"],
            last_pressure(&agent_fold::testing::jsonl::records(text.as_bytes()), &[]),
            "{flags:?}"
        );
    }
}

#[test]
fn a_claude_code_session_directory_is_adapted_by_the_module() {
    let Some(dir) = real_session() else { return };
    let dir = dir.as_path();
    let lines = agent_fold::testing::logs::read_records(dir).unwrap();
    let mut m = Module::new(
        &Build::Native,
        &agent_fold_core::Config::from_params([
            ("input", "claude-code"),
            ("capacity", "200000"),
            ("emit", "pressure"),
        ])
        .unwrap(),
        None,
    )
    .unwrap();
    let mut expected = Vec::new();
    for (i, chunk) in lines.chunks(1000).enumerate() {
        expected.extend(m.process(chunk, (i * 1000) as i64).unwrap());
    }
    let last: Value = serde_json::from_slice(&expected.last().unwrap().value).unwrap();
    let id = last["session"].as_str().unwrap().to_owned();
    // Auto-detected, and with --input named: the same figures.
    for flags in [vec![], vec!["--input", "claude-code"]] {
        let mut args = flags.clone();
        args.extend(["-e", "capacity=200000", dir.to_str().unwrap()]);
        let s = Server::start(&args);
        let state = s.wait_state("the whole session", |st| {
            st["status"]["records"] == lines.len() && seq_of(st, &id) == last["seq"].as_u64()
        });
        let row = session(&state, &id).unwrap();
        assert_eq!(row["record"], last, "{flags:?}");
        assert_eq!(
            (&row["agent"], &row["model"]),
            (&last["agent"], &last["model"])
        );
        assert_eq!(row["agent"], "claude-code");
        assert_eq!(state["status"]["message"], "following (claude-code)");
        assert_eq!(state["status"]["skipped"], 0);
    }
}
