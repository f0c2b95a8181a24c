//! The hostile-use reproducers of `serve` (shared/repro/serve, D1–D10), each a bounded,
//! loopback-only regression test that ends by itself: stuck SSE clients, huge frames and
//! records, more sessions than are kept, half-open and idle sockets, a rebinding Host or
//! Origin, devices, FIFOs and files that are not WebAssembly, an over-long session key; and
//! `/metrics`, `/healthz`, SIGTERM.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::{Server, TIMEOUT, append, frame, refused, sample, scratch};
use super::{p, write};
use crate::records::pressure_line;

/// A pressure record of `pad` bytes more than its figures.
fn fat(session: usize, seq: u64, pad: usize) -> String {
    let fields = json!({"pressureTokens": 1, "projectedTokens": 1, "capacity": 1000,
                        "contextOccupancy": 0.001, "pad": "x".repeat(pad)});
    pressure_line(&format!("s{session}"), seq, fields)
}

/// A connection that sends `request` and then never reads.
fn stuck(port: u16, request: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    s
}

#[test]
fn fifty_stuck_sse_clients_hold_no_copy_of_the_board() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    // 2,000 records of 12 KB over 1,000 sessions: a 12 MB board.
    let n = 2000;
    let text: String = (0..n).map(|i| fat(i % 1000, i as u64, 12_000)).collect();
    write(&mut s, &text);
    let state = s.wait_state("every record", |st| st["status"]["records"] == n);
    let run = state["id"]
        .as_str()
        .unwrap()
        .split_once('-')
        .unwrap()
        .1
        .to_owned();
    // One page reads the board whole, so its rows and its bytes (made once, shared by every
    // page) are in `before`: what is measured is what each further page costs.
    let board = s.events(None).next_of("board");
    assert_eq!(board.json()["rows"].as_array().map(Vec::len), Some(1000));
    // What the board says it holds counts the latest records (12 MB), their rows (each
    // carries its record) and the board they are encoded in, which pages share.
    let held = sample(&s.metrics(), "agent_fold_serve_board_bytes", &[]);
    assert!(held >= (3 * 1000 * 12_000) as f64, "board_bytes {held}");
    std::thread::sleep(Duration::from_millis(500));
    let before = s.rss();
    // Half resume from versions of their own (each a delta of its own but for the bound), half
    // start anew (the board).
    let clients: Vec<TcpStream> = (0..50)
        .map(|i| {
            let resume = match i % 2 {
                0 => format!("Last-Event-ID: {}-{run}\r\n", 1 + i * 30),
                _ => String::new(),
            };
            let req = format!(
                "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{resume}\r\n",
                s.port
            );
            stuck(s.port, &req)
        })
        .collect();
    let deadline = Instant::now() + TIMEOUT;
    while sample(&s.metrics(), "agent_fold_serve_sse_clients", &[]) < 50.0 {
        assert!(Instant::now() < deadline, "50 clients never connected");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Time for the server to fill every socket it can.
    std::thread::sleep(Duration::from_secs(3));
    let after = s.rss();
    let grown = after.saturating_sub(before);
    // A copy of the board each is 50 × 12 MB, a delta of its own each (up to 256 KB) 12.5 MB;
    // what a connection holds is its task, hyper's buffers and a reference to the shared board.
    assert!(
        grown < 50 * (64 << 10),
        "RSS grew by {} KB for 50 stuck clients ({before} -> {after})",
        grown >> 10
    );
    // The server still answers at once.
    assert_eq!(s.get("/healthz").status, 200);
    drop(clients);
    let deadline = Instant::now() + TIMEOUT;
    while sample(&s.metrics(), "agent_fold_serve_sse_clients", &[]) > 0.0 {
        assert!(
            Instant::now() < deadline,
            "closed clients are still counted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn huge_frames_and_records_are_not_kept_whole() {
    let dir = scratch("bigframes");
    let log = dir.join("log.jsonl");
    let pad = "p".repeat(256 << 10);
    let mut text = String::new();
    for session in 0..4 {
        text += &frame(
            &format!("s{session}"),
            0,
            "request/header",
            json!({"system": "x", "tools": [], "context_window": 200_000}),
        );
        for seq in 1..4 {
            text += &frame(
                &format!("s{session}"),
                seq,
                "thinking/tokens",
                json!({"estimated_tokens_delta": 5, "pad": pad}),
            );
        }
        text += &frame(
            &format!("s{session}"),
            9,
            "user/message",
            json!({"text": "hi"}),
        );
    }
    append(&log, text.as_bytes());
    let s = Server::start(&["--native", "--input", "agent-fold", log.to_str().unwrap()]);
    let state = s.wait_state("four folded lists", |st| {
        st["sessions"].as_array().is_some_and(|a| {
            a.len() == 4
                && a.iter()
                    .all(|x| x["folds"].as_array().is_some_and(|f| !f.is_empty()))
        })
    });
    let bytes = s.get("/state").body.len();
    assert!(
        bytes < 16 << 10,
        "/state is {bytes} bytes for 4 sessions of 1 MB frames"
    );
    assert!(state["sessions"][0]["folds"][0].get("pad").is_none());

    // A pressure record of a megabyte on stdin: refused with its size, not kept.
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    write(&mut s, &fat(0, 1, 1 << 20));
    write(&mut s, &p("ok", 1, 0.5));
    let state = s.wait_state("two records", |st| st["status"]["records"] == 2);
    assert_eq!(state["status"]["skipped"], 1);
    let why = state["status"]["lastSkipped"].as_str().unwrap();
    assert!(why.contains("over the limit of 16384"), "{why}");
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn sessions_past_the_cap_are_forgotten_and_a_live_page_is_told() {
    let mut s = Server::start_with(&["--max-sessions", "1000", "-"], &[], Stdio::piped());
    let mut events = s.events(None);
    events.next_of("board");
    let text: String = (0..1010).map(|i| p(&format!("sess-{i}"), 1, 0.1)).collect();
    write(&mut s, &text);
    let state = s.wait_state("1,010 records", |st| st["status"]["records"] == 1010);
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1000);
    // What the page holds, as it applies each message: a board replaces its rows, a delta
    // adds its rows and drops the ones gone.
    let mut held = std::collections::BTreeSet::new();
    while held.len() != 1000 || held.contains("sess-9") || !held.contains("sess-1009") {
        let v = events.next().json();
        if !v["gone"].is_array() {
            held.clear();
        }
        for r in v["rows"].as_array().unwrap() {
            held.insert(r["session"].as_str().unwrap().to_owned());
        }
        for g in v["gone"].as_array().into_iter().flatten() {
            held.remove(g.as_str().unwrap());
        }
    }
    let forgotten: Vec<String> = (0..1010)
        .map(|i| format!("sess-{i}"))
        .filter(|id| !held.contains(id))
        .collect();
    let want: Vec<String> = (0..10).map(|i| format!("sess-{i}")).collect();
    assert_eq!(
        forgotten, want,
        "the idlest (here the first seen) go first, and the page is told"
    );
    let m = s.metrics();
    assert_eq!(sample(&m, "agent_fold_serve_sessions", &[]), 1000.0);
    assert_eq!(
        sample(&m, "agent_fold_serve_sessions_evicted_total", &[]),
        10.0
    );
}

/// Whether the server closed `s` (read gives end of file or an error) within `within`.
fn closed(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or an error page before the close is fine too: keep reading.
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn half_open_and_idle_connections_time_out_and_the_cap_holds() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    let s = Server::start(&[
        "--native",
        "--max-connections",
        "6",
        "--header-timeout",
        "1",
        example,
    ]);
    let port = s.port;
    // Three that send nothing, three that send a header line now and then (slowloris).
    let mut idle: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let mut slow: Vec<TcpStream> = (0..3)
        .map(|_| {
            stuck(
                port,
                &format!("GET /state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"),
            )
        })
        .collect();
    // The cap is reached: one more is closed at once, before the timeout could.
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(
        closed(&mut extra, Duration::from_millis(900)),
        "a connection over the cap is closed"
    );
    for (i, c) in slow.iter_mut().enumerate() {
        let _ = c.write_all(format!("X-Slow-{i}: 1\r\n").as_bytes());
    }
    for c in idle.iter_mut().chain(slow.iter_mut()) {
        assert!(
            closed(c, Duration::from_secs(10)),
            "the header-read timeout closes it"
        );
    }
    let m = s.metrics();
    assert!(
        sample(
            &m,
            "agent_fold_serve_refusals_total",
            &[("reason", "connection_cap")]
        ) >= 1.0
    );
    assert_eq!(s.get("/state").status, 200, "the page is served again");
    // A connection kept alive after a response, then silent, is closed too.
    let mut kept = stuck(
        port,
        &format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    );
    assert!(
        closed(&mut kept, Duration::from_secs(10)),
        "an idle keep-alive is closed"
    );
}

#[test]
fn a_rebinding_host_or_origin_is_refused_and_an_allowed_proxy_name_served() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    let s = Server::start(&["--native", "--allow-host", "meter.example", example]);
    let port = s.port;
    let req = |head: &str| s.raw(&format!("{head}\r\nConnection: close\r\n\r\n"));
    for bad in [
        "GET /state HTTP/1.1\r\nHost: attacker.test".to_owned(),
        format!("GET /state HTTP/1.1\r\nHost: attacker.test:{port}"),
        format!("GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://attacker.test"),
        format!("GET http://evil.example/state HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        format!(
            "GET /state HTTP/1.1\r\nHost: 127.0.0.1:{}",
            port.wrapping_add(1)
        ),
        // Issue 55: an empty Host, and a second one beside a good one, were served.
        "GET /state HTTP/1.1\r\nHost:".to_owned(),
        format!("GET /state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: attacker.test"),
        format!("GET /state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}"),
    ] {
        let r = req(&bad);
        assert!(r.starts_with("HTTP/1.1 403"), "{bad:?}: {r}");
        assert!(
            !r.contains("sessions"),
            "{bad:?}: nothing of the state leaks: {r}"
        );
    }
    for good in [
        format!("GET /state HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        format!("GET /state HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:{port}"),
        "GET /state HTTP/1.1\r\nHost: meter.example\r\nOrigin: https://meter.example".to_owned(),
    ] {
        let r = req(&good);
        assert!(r.starts_with("HTTP/1.1 200"), "{good:?}: {r}");
    }
    let m = s.metrics();
    assert_eq!(
        sample(&m, "agent_fold_serve_refusals_total", &[("reason", "host")]),
        7.0
    );
    assert_eq!(
        sample(
            &m,
            "agent_fold_serve_refusals_total",
            &[("reason", "origin")]
        ),
        1.0
    );
}

#[test]
fn devices_fifos_and_files_that_are_not_webassembly_are_refused_before_the_url() {
    let dir = scratch("refusals");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path it is given, which lives until the call ends.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let garbage = dir.join("garbage.wasm");
    std::fs::write(&garbage, b"\0asm\x01\0\0\0garbage").unwrap();
    let passwd = dir.join("passwd");
    std::fs::write(&passwd, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let (fifo_s, garbage_s, passwd_s) = (
        fifo.to_str().unwrap(),
        garbage.to_str().unwrap(),
        passwd.to_str().unwrap(),
    );
    for (args, says) in [
        (
            &["--native", "/dev/zero"][..],
            "/dev/zero is not a regular file",
        ),
        (&["--native", fifo_s], "is not a regular file"),
        (&["--wasm", "/dev/zero", example], "is not a regular file"),
        (&["--wasm", passwd_s, example], "is not WebAssembly"),
        (&["--wasm", garbage_s, example], "does not load"),
    ] {
        let (code, err) = refused(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("root:x"),
            "{args:?}: the file's text is not copied: {err}"
        );
    }
    // `run` refuses a device, and reads a FIFO as a stream.
    let out = super::harness::command()
        .args(["run", "--native", "/dev/zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a regular file"));
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let text = std::fs::read(example).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .unwrap()
                .write_all(&text)
                .unwrap();
        })
    };
    let out = super::harness::command()
        .args(["run", "--native", fifo_s])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    writer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a FIFO: read as a stream"));
    assert!(!out.stdout.is_empty());
}

#[test]
fn an_over_long_session_key_is_skipped_in_the_module_s_own_words() {
    let dir = scratch("bigsid");
    let log = dir.join("log.jsonl");
    let id = "k".repeat(2000);
    let text = frame(&id, 1, "user/message", json!({"text": "hi"}))
        + &frame(&id, 2, "user/message", json!({"text": "again"}));
    append(&log, text.as_bytes());
    let s = Server::start(&[
        "--native",
        "--input",
        "agent-fold",
        "-e",
        "capacity=1000",
        log.to_str().unwrap(),
    ]);
    let state = s.wait_state("two lines", |st| {
        st["status"]["records"] == 2 && st["status"]["skipped"] == 2
    });
    let why = state["status"]["lastSkipped"].as_str().unwrap();
    assert!(
        why.starts_with("the module said: the session key is 2000 bytes, over the limit of 1024"),
        "{why}"
    );
}

#[test]
fn metrics_and_health_tell_the_source_the_clients_and_sigterm_exits_0() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    write(
        &mut s,
        &(p("a", 1, 0.1) + &p("a", 2, 0.2) + "garbage\n" + &p("b", 1, 0.3)),
    );
    s.wait_state("four records", |st| st["status"]["records"] == 4);
    let (_one, _two) = (s.events(None), s.events(None));
    let m = s.metrics();
    assert_eq!(sample(&m, "agent_fold_serve_records_read_total", &[]), 4.0);
    assert_eq!(
        sample(&m, "agent_fold_serve_records_skipped_total", &[]),
        1.0
    );
    assert_eq!(sample(&m, "agent_fold_serve_sessions", &[]), 2.0);
    assert_eq!(sample(&m, "agent_fold_serve_sse_clients", &[]), 2.0);
    assert_eq!(
        sample(&m, "agent_fold_serve_source_state", &[("state", "live")]),
        1.0
    );
    assert_eq!(
        sample(&m, "agent_fold_serve_source_state", &[("state", "error")]),
        0.0
    );
    assert!(sample(&m, "agent_fold_serve_board_bytes", &[]) > 0.0);
    assert!(sample(&m, "agent_fold_serve_messages_total", &[]) >= 2.0);
    assert_eq!(sample(&m, "agent_fold_serve_live_sessions", &[]), 2.0);
    assert_eq!(
        sample(
            &m,
            "agent_fold_serve_live_sessions_by_occupancy",
            &[("band", "lt_50")]
        ),
        2.0
    );
    assert!(
        sample(&m, "agent_fold_serve_connections", &[]) >= 3.0,
        "two streams and this scrape"
    );
    let h = s.get("/healthz");
    assert_eq!(h.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&h.body).unwrap();
    assert_eq!(v["state"], "live");
    assert_eq!(
        s.stop(libc::SIGTERM),
        Some(0),
        "SIGTERM ends the server with 0"
    );
}

/// `serve -` holds a line that never ends no longer than the follower would (contract: memory
/// stays bounded whatever is written): 256 MiB without a newline, and the server's peak
/// memory grows by less than four times the 32 MiB line limit; the line is skipped, said, and what comes
/// after its newline is read.
#[test]
fn a_line_on_stdin_that_never_ends_is_skipped_within_the_line_limit() {
    let mut s = Server::start_with(&["-"], &[], std::process::Stdio::piped());
    write(&mut s, &p("a", 1, 0.1));
    s.wait_state("the first record", |st| st["status"]["records"] == 1);
    let before = s.peak_rss();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..256 {
        s.stdin().write_all(&chunk).unwrap();
    }
    s.stdin().flush().unwrap();
    write(&mut s, &format!("\n{}", p("b", 1, 0.2)));
    let state = s.wait_state("the record after the long line", |st| {
        st["sessions"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["session"] == "b"))
    });
    let grown = s.peak_rss().saturating_sub(before);
    assert!(
        grown < 128 << 20,
        "peak RSS grew by {} MiB for one 256 MiB line",
        grown >> 20
    );
    let status = &state["status"];
    assert_eq!(status["skipped"], 1, "{status}");
    assert!(
        status["lastSkipped"]
            .as_str()
            .is_some_and(|w| w.contains("on stdin: skipped up to its end")),
        "{status}"
    );
    assert!(s.alive());
}

/// Issue 55: a record with a number out of `f64`'s range in any field (anyone who can produce
/// to the topic can write one) was answered on `/api` and `/events`, then the next `/state`
/// panicked ("number out of range") and the release build aborted, the fleet's board gone.
/// Now every route answers, the record kept as it came (contract §5: huge numbers pass
/// unchanged), and the server lives on.
#[test]
fn a_number_out_of_range_in_a_record_takes_no_route_down() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    write(
        &mut s,
        concat!(
            r#"{"type":"context/pressure","session":"x","seq":0,"pressureTokens":1e999}"#,
            "\n",
            r#"{"type":"context/pressure","session":"y","seq":0,"note":1e999,"untilCompactTokens":-1e999}"#,
            "\n",
        ),
    );
    // Both applied (read raw: `1e999` is valid JSON, but no `f64` for a `serde_json::Value`).
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let r = s.raw(&format!(
            "GET /state HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            s.port
        ));
        if r.contains("\"records\":2") {
            break;
        }
        assert!(s.alive(), "the server died: {r}");
        assert!(Instant::now() < deadline, "both records applied: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..2 {
        for path in [
            "/api/sessions",
            "/state",
            "/api/sessions/x",
            "/metrics",
            "/healthz",
        ] {
            let r = s.raw(&format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                s.port
            ));
            assert!(r.starts_with("HTTP/1.1 200"), "{path}: {r}");
            if path == "/state" {
                assert!(r.contains("1e999"), "kept as it came: {r}");
            }
        }
        assert!(s.alive(), "the server lives on");
    }
    let board = s.events(None).next_of("board");
    assert!(board.data.contains("1e999"), "{}", board.data);
    assert!(s.alive());
}
