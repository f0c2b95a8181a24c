//! `agent-fold serve` without a browser: the binary started as a user starts it, read over
//! plain HTTP and Server-Sent Events. SSE order and ids, resume with Last-Event-ID (within the
//! buffer, and older than it: a snapshot), bad records skipped and counted, a followed log
//! (a line written in two parts, folded frames, a vanished and a rewritten file), every flag,
//! and a Fluvio topic (a real local cluster when there is one; else that part prints skipped).

mod fluvio;
use crate::harness;
mod hostile;

use std::io::Write;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use agent_fold::module::{Module, Source};
use harness::{Server, append, frame, last_pressure, real_session, refused, scratch};
use serde_json::{Value, json};

fn p(session: &str, seq: u64, occupancy: f64) -> String {
    json!({"type": "context/pressure", "session": session, "seq": seq,
           "pressureTokens": 100, "projectedTokens": (occupancy * 1000.0) as u64,
           "capacity": 1000, "contextOccupancy": occupancy, "systemTokens": 1,
           "toolsTokens": 2, "messageTokens": 3, "estimateScale": 1, "stateVersion": 4})
    .to_string()
        + "\n"
}

fn write(s: &mut Server, text: &str) {
    s.stdin().write_all(text.as_bytes()).unwrap();
    s.stdin().flush().unwrap();
}

/// The session's entry in a state.
fn session<'a>(state: &'a Value, id: &str) -> Option<&'a Value> {
    state["sessions"]
        .as_array()?
        .iter()
        .find(|s| s["session"] == id)
}

fn seq_of(state: &Value, id: &str) -> Option<u64> {
    session(state, id)?["pressure"]["seq"].as_u64()
}

#[test]
fn events_come_in_order_and_resume_after_last_event_id() {
    let mut s = Server::start_with(&["--buffer", "16", "-"], &[], Stdio::piped());
    let mut first = s.events(None);
    let snap = first.next();
    assert_eq!(snap.kind, "snapshot", "a new page starts with a snapshot");
    assert_eq!(
        snap.retry,
        Some(1000),
        "and is told to reconnect within a second"
    );
    let id = snap.id.clone().unwrap();
    assert!(id.contains('-'), "ids are <n>-<run>: {id}");

    let written = [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)];
    for (sess, seq) in written {
        write(&mut s, &p(sess, seq, 0.1 * seq as f64));
    }
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|e: &&harness::Event| e.kind == "pressure")
        .count()
        < 5
    {
        seen.push(first.next());
    }
    let order: Vec<(String, u64)> = seen
        .iter()
        .filter(|e| e.kind == "pressure")
        .map(|e| {
            let v = e.json();
            (
                v["session"].as_str().unwrap().to_owned(),
                v["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = written.iter().map(|(a, b)| (a.to_string(), *b)).collect();
    assert_eq!(order, want, "pressure events in the order the records came");
    let ns: Vec<u64> = seen.iter().map(|e| e.n()).collect();
    for w in ns.windows(2) {
        assert_eq!(w[1], w[0] + 1, "events are numbered one by one: {ns:?}");
    }
    assert_eq!(ns[0], snap.n() + 1, "the first event after the snapshot's");

    // Resume after the second pressure event: exactly what followed it, no snapshot.
    let second = seen.iter().filter(|e| e.kind == "pressure").nth(1).unwrap();
    let at = seen.iter().position(|e| e == second).unwrap();
    let mut resumed = s.events(second.id.as_deref());
    for want in &seen[at + 1..] {
        let got = resumed.next();
        assert_eq!(
            (&got.id, &got.kind, &got.data),
            (&want.id, &want.kind, &want.data)
        );
    }
    // Up to date: the next event is the next record.
    let last = s.wait_state("b at seq 2", |st| seq_of(st, "b") == Some(2))["id"]
        .as_str()
        .map(str::to_owned);
    let mut current = s.events(last.as_deref());
    let mut by_query = s.events_at(&format!("/events?last_event_id={}", last.unwrap()), None);
    write(&mut s, &p("b", 3, 0.3));
    for stream in [&mut current, &mut by_query] {
        let e = stream.next();
        assert_eq!(
            (e.kind.as_str(), e.json()["seq"].as_u64()),
            ("pressure", Some(3))
        );
    }

    // Forty more records overflow the buffer of 16: an id before it gets a snapshot.
    let more: String = (4..44).map(|seq| p("a", seq, 0.5)).collect();
    write(&mut s, &more);
    let state = s.wait_state("a at seq 43", |st| seq_of(st, "a") == Some(43));
    let mut late = s.events(second.id.as_deref());
    let snap = late.next();
    assert_eq!(
        snap.kind, "snapshot",
        "a resume older than the buffer gets a snapshot"
    );
    let data = snap.json();
    assert_eq!(
        data["sessions"], state["sessions"],
        "of each session's latest state"
    );
    assert_eq!(snap.id.as_deref(), state["id"].as_str(), "as of the head");
    let sessions = agent_fold_testkit::strings_of(&data["sessions"], "session");
    assert_eq!(sessions, ["b", "a"], "newest session first");
    write(&mut s, &p("b", 4, 0.4));
    let e = late.next_of("pressure");
    assert_eq!(e.json()["seq"], 4, "then it continues live");
    assert_eq!(e.n(), snap.n() + 1);

    // An id of another server run, or garbage: a snapshot too.
    for other in ["3-elsewhere", "nonsense"] {
        assert_eq!(s.events(Some(other)).next().kind, "snapshot");
    }
}

#[test]
fn bad_records_on_stdin_are_skipped_and_counted() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    let mut events = s.events(None);
    events.next_of("snapshot");
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
        a["pressure"]["seq"], 5,
        "the older seq 3 did not turn back time"
    );
    assert_eq!(a["error"]["seq"], 6);
    // What the page was told: the good records, the error, and the counts.
    let mut kinds = Vec::new();
    loop {
        let e = events.next();
        kinds.push(e.kind.clone());
        if e.kind == "status" && e.json()["state"] == "ended" {
            assert_eq!(e.json()["skipped"], 4);
            break;
        }
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "pressure").count(),
        2,
        "{kinds:?}"
    );
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
        session(&state, "s-1").unwrap()["pressure"],
        last_pressure(&agent_fold::jsonl::records(text.as_bytes()), &[])
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
    let e = events.next_of("pressure");
    assert_eq!(
        e.json(),
        last_pressure(&agent_fold::jsonl::records(text.as_bytes()), &[]),
        "the whole line, once"
    );
    let state = s.wait_state("4 lines", |st| st["status"]["records"] == 4);
    assert_eq!(seq_of(&state, "s-1"), Some(3));

    // Three counters at once: the frames view folds them into one frame for the list.
    let counters = counter("t1", 1, 5) + &counter("t2", 2, 7) + &counter("t3", 3, 3);
    append(&log, counters.as_bytes());
    let f = events.next_of("frame").json();
    assert_eq!(f["session"], "s-1");
    assert_eq!(f["frame"]["folded_frames"], 3);
    assert_eq!(f["frame"]["estimated_tokens_delta"], 15);
    assert_eq!(f["frame"]["folded_from"], "2026-11-29T10:01:01Z");
    assert_eq!(
        f["frame"]["timestamp"], "2026-11-29T10:01:03Z",
        "the newest counter's frame"
    );
    let mut fields: Vec<&String> = f["frame"].as_object().unwrap().keys().collect();
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
        session(st, "s-1").is_some_and(|x| x["frames"].as_array().is_some_and(|a| a.len() == 1))
    });
    assert_eq!(state["status"]["skipped"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scratch directory `name` with a log of session `s-1`: a header (a window of 1,000) and
/// a user message.
fn hello_log(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_vanished_log_is_reported_the_server_keeps_serving_and_recovers() {
    let (dir, log) = hello_log("vanish");
    let s = Server::start(&[log.to_str().unwrap()]);
    let state = s.wait_state("seq 1", |st| seq_of(st, "s-1") == Some(1));
    assert_eq!(
        state["status"]["message"], "following (agent-fold)",
        "auto: frames"
    );
    let mut events = s.events(state["id"].as_str());

    std::fs::remove_file(&log).unwrap();
    let status = events.next_of("status").json();
    assert_eq!(status["state"], "error");
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("vanished"), "{message}");
    // Still serving: the page, the script, the state (last figures kept), a new stream.
    assert_eq!(s.get("/").status, 200);
    assert_eq!(s.get("/context-meter.js").status, 200);
    assert_eq!(seq_of(&s.state(), "s-1"), Some(1), "the last figures stay");
    assert_eq!(s.events(None).next().kind, "snapshot");

    // It comes back (another log): the pages reset, and it is read from its start.
    let again = frame("s-1", 0, "request/header", json!({"context_window": 2000}))
        + &frame("s-2", 7, "user/message", json!({"message": "new"}));
    append(&log, again.as_bytes());
    let reset = events.next_of("reset").json();
    assert!(
        reset["reason"].as_str().unwrap().contains("came back"),
        "{reset}"
    );
    let state = s.wait_state("live again", |st| {
        st["status"]["state"] == "live" && seq_of(st, "s-2").is_some()
    });
    assert_eq!(state["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(state["status"]["records"], 2, "counted from the new start");

    // Truncated to less than was read: read again from its start too.
    std::fs::write(
        &log,
        frame("s-1", 0, "request/header", json!({"context_window": 5})),
    )
    .unwrap();
    let reset = events.next_of("reset").json();
    assert!(
        reset["reason"].as_str().unwrap().contains("truncated"),
        "{reset}"
    );
    s.wait_state("only s-1", |st| {
        st["sessions"].as_array().unwrap().len() == 1 && session(st, "s-1").is_some()
    });
    let _ = std::fs::remove_dir_all(&dir);
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
    let _ = std::fs::remove_dir_all(&dir);
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
        (&["--buffer", "0", "-"], 2, "buffer"),
        (&["--addr", "localhost", "-"], 2, "addr"),
        (&["--topic", "t", log], 2, "cannot be used with"),
        (
            &["--wasm", "x.wasm", "--native", log],
            2,
            "cannot be used with",
        ),
        (&[], 2, "SOURCE"),
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wasm_and_native_modules_fold_alike() {
    let (dir, log) = hello_log("modules");
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
            session(&state, "s-1").unwrap()["pressure"],
            last_pressure(&agent_fold::jsonl::records(text.as_bytes()), &[]),
            "{flags:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_claude_code_session_directory_is_adapted_by_the_module() {
    let Some(dir) = real_session() else { return };
    let dir = dir.as_path();
    let lines = agent_fold::logs::read_records(dir).unwrap();
    let mut m = Module::new(
        &Source::Native,
        &[
            ("input".into(), "claude-code".into()),
            ("capacity".into(), "200000".into()),
            ("emit".into(), "pressure".into()),
        ],
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
        assert_eq!(session(&state, &id).unwrap()["pressure"], last, "{flags:?}");
        assert_eq!(state["status"]["message"], "following (claude-code)");
        assert_eq!(state["status"]["skipped"], 0);
    }
}
