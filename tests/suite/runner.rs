//! The `agent-fold run` command line, spawned as a user runs it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::harness::agent_fold;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");

/// Spawns the binary with these args, stdout piped.
fn spawn(args: &[&str], stdin: Stdio, stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_agent-fold"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("the agent-fold binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(serde_json::Value::String(l.into())))
        .collect()
}

#[test]
fn run_folds_the_bundled_example() {
    let out = agent_fold(&["run", EXAMPLE], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = lines(&out);
    // By hand from the example: six runs fold, four sub-agent frames are dropped.
    let folds: Vec<(String, u64, String, u64)> = got
        .iter()
        .filter(|v| v.get("folded_frames").is_some())
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_owned(),
                v["estimated_tokens_delta"].as_u64().unwrap(),
                v["folded_from"].as_str().unwrap().to_owned(),
                v["folded_frames"].as_u64().unwrap(),
            )
        })
        .collect();
    let t = |s: u32| format!("2026-11-29T10:00:{s:02}Z");
    assert_eq!(
        folds,
        [
            ("s-42-006".to_owned(), 12 + 30 + 25 + 41 + 8, t(2), 5),
            // each where its newest counter stood: s-77-003 is line 12, s-42-011 line 15
            ("s-77-003".to_owned(), 6 + 14, t(5), 2),
            ("s-42-011".to_owned(), 22 + 17 + 9, t(10), 3),
            // s-42-020 is unstamped: it ends the part s-42-018, s-42-019
            ("s-42-019".to_owned(), 11 + 7, t(19), 2),
            ("s-42-026".to_owned(), 40 + 55 + 12, t(31), 3),
            ("s-42-031".to_owned(), 9 + 31, t(37), 2),
        ]
    );
    assert_eq!(got.len(), 24);
    assert!(
        !got.iter().any(|v| v.get("extras").is_some()),
        "sub-agent frames are dropped"
    );
    // The malformed line passes unchanged.
    assert!(
        text(&out.stdout)
            .lines()
            .any(|l| l == r#"{"type":"user/message","id":"s-42-broken","message":{"content":"truncated by the relay"#)
    );
    assert_eq!(
        text(&out.stderr).trim_end(),
        "records in: 39, out: 24, counters folded away: 11, sub-agent frames dropped: 4, malformed dropped: 0"
    );

    // The native library, reading the example from stdin (`-`), says the same.
    let input = std::fs::read(EXAMPLE).unwrap();
    let native = agent_fold(&["run", "--native", "-"], Some(&input));
    assert!(native.status.success(), "{}", text(&native.stderr));
    assert_eq!(text(&native.stdout), text(&out.stdout));
    assert_eq!(text(&native.stderr), text(&out.stderr));
}

#[test]
fn malformed_fail_exits_non_zero_naming_the_offset() {
    // Line 28 (from 0) is cut short; with --batch 10 it is the 9th record of the third
    // invocation, and its offset is still 28.
    for mode in [&[][..], &["--native"][..]] {
        let mut args = vec!["run", "-e", "malformed=fail", "--batch", "10"];
        args.extend(mode);
        args.push(EXAMPLE);
        let out = agent_fold(&args, None);
        assert!(!out.status.success(), "{mode:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("Offset: 28") || err.contains("offset 28"),
            "{mode:?}: {err}"
        );
        assert!(err.contains("not a JSON object"), "{mode:?}: {err}");
    }
}

#[test]
fn lookback_lets_the_first_page_fold() {
    let dir = crate::harness::scratch("lookback");
    let (history, input) = (dir.join("history.jsonl"), dir.join("input.jsonl"));
    std::fs::write(
        &history,
        "{\"type\":\"user/message\",\"id\":\"h0\",\"session_id\":\"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        &input,
        concat!(
            "{\"type\":\"thinking/tokens\",\"id\":\"c1\",\"session_id\":\"x\",\"timestamp\":\"t1\",\"estimated_tokens_delta\":1}\n",
            "{\"type\":\"thinking/tokens\",\"id\":\"c2\",\"session_id\":\"x\",\"timestamp\":\"t2\",\"estimated_tokens_delta\":2}\n",
            "{\"type\":\"tool/result\",\"id\":\"r1\",\"session_id\":\"x\"}\n",
        ),
    )
    .unwrap();
    let (history, input) = (history.to_str().unwrap(), input.to_str().unwrap());
    let with = agent_fold(&["run", "--lookback", history, input], None);
    assert!(with.status.success(), "{}", text(&with.stderr));
    assert_eq!(
        text(&with.stdout),
        concat!(
            "{\"type\":\"thinking/tokens\",\"id\":\"c2\",\"session_id\":\"x\",\"timestamp\":\"t2\",\"estimated_tokens_delta\":3,\"folded_from\":\"t1\",\"folded_frames\":2}\n",
            "{\"type\":\"tool/result\",\"id\":\"r1\",\"session_id\":\"x\"}\n",
        )
    );
    // Without the history the page's leading counters are served as themselves.
    let without = agent_fold(&["run", "--native", input], None);
    assert!(without.status.success(), "{}", text(&without.stderr));
    assert_eq!(
        text(&without.stdout),
        std::fs::read_to_string(input).unwrap()
    );
}

#[test]
fn batch_1_folds_nothing() {
    let out = agent_fold(&["run", "--native", "--batch", "1", EXAMPLE], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Never hold back: one record per invocation serves every counter as itself; only the
    // sub-agent frames (the lines with extras) go.
    let expected: String = std::fs::read_to_string(EXAMPLE)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("parent_tool_use_id"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(text(&out.stdout), expected);
    assert!(text(&out.stderr).contains("out: 35, counters folded away: 0"));
}

#[test]
fn a_bad_param_exits_non_zero_naming_it() {
    // In the engine (its `init` refuses it) and natively.
    for (mode, kv, name) in [
        (None, "emit=both", "`emit`"),
        (Some("--native"), "colour=blue", "`colour`"),
    ] {
        let mut args = vec!["run"];
        args.extend(mode);
        args.extend(["-e", kv, EXAMPLE]);
        let out = agent_fold(&args, None);
        assert!(!out.status.success(), "{kv}");
        assert!(
            text(&out.stderr).contains(name),
            "{kv}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{kv}");
    }
    let out = agent_fold(&["run", "--native", "-e", "max_sessions=0", EXAMPLE], None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("`max_sessions`"),
        "{}",
        text(&out.stderr)
    );
}

/// Lines of a child's stdout as they come, from a thread: `recv_timeout` tells whether one
/// came while its input was still open.
fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// Spawns `run` with these args, stdout piped, stdin as given.
fn spawn_run(args: &[&str], stdin: Stdio) -> std::process::Child {
    spawn(args, stdin, Stdio::null())
}

/// A user message of session `s` as a frame line.
fn message(seq: u64) -> String {
    let message = serde_json::json!({"role": "user", "content": format!("line {seq}")});
    crate::harness::frame(
        "s",
        seq,
        "user/message",
        serde_json::json!({ "message": message }),
    )
}

/// `tail -f log | agent-fold run -`: each line's answer comes while the writer keeps the pipe
/// open (before: nothing until stdin closed), in the frames view and on --pressure-out.
#[test]
fn run_on_stdin_answers_each_line_while_the_writer_keeps_the_pipe_open() {
    let dir = crate::harness::scratch("stream");
    let pressure = dir.join("pressure.jsonl");
    let mut child = spawn_run(
        &[
            "run",
            "--native",
            "--pressure-out",
            pressure.to_str().unwrap(),
            "-e",
            "capacity=200000",
            "-",
        ],
        Stdio::piped(),
    );
    let rx = stdout_lines(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    for seq in 0..3 {
        stdin.write_all(message(seq).as_bytes()).unwrap();
        stdin.flush().unwrap();
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no answer to line {seq} while the pipe is open"));
        let v: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert_eq!(v["seq"], seq, "{got}");
        let written = std::fs::read_to_string(&pressure).unwrap_or_default();
        assert_eq!(
            written.lines().count() as u64,
            seq + 1,
            "--pressure-out is written as it goes: {written}"
        );
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// A FIFO is read as a stream too: a writer that holds it open gets each line answered.
#[cfg(unix)]
#[test]
fn run_on_a_fifo_answers_each_line_while_its_writer_holds_it() {
    let dir = crate::harness::scratch("fifo");
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let mut child = spawn_run(&["run", "--native", fifo.to_str().unwrap()], Stdio::null());
    let rx = stdout_lines(&mut child);
    // Opening for writing waits for the reader: the runner has opened it.
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    for seq in 0..3 {
        w.write_all(message(seq).as_bytes()).unwrap();
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no answer to line {seq} while the FIFO is open"));
        assert!(got.contains(&format!("\"seq\":{seq}")), "{got}");
    }
    drop(w);
    assert!(child.wait().unwrap().success());
}
