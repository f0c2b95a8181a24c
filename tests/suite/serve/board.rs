//! The fleet board's server without a browser: a directory of logs followed file by file, the
//! API's rank, filter and refusals, sessions going idle, alerts once per crossing through the
//! webhook and `/metrics`, and agents' OTLP events straight onto the board (`serve --otlp`).

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_fold::record::Rec;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message;
use serde_json::{Value, json};

use super::{seq_of, session, write};
use crate::common::real_data;
use crate::harness::{self, Server, append, frame, last_pressure, post, sample, scratch};
use crate::records::pressure_line;
use agent_fold_testkit::alerts;
use agent_fold_testkit::webhook::Receiver;

/// A pressure record with the figures the board ranks and alerts on.
fn rec(session: &str, seq: u64, until: u64, occupancy: f64, names: (&str, &str)) -> String {
    let fields = json!({"pressureTokens": 1000, "projectedTokens": 1000, "capacity": 200000,
                        "contextOccupancy": occupancy, "compactAtTokens": 167000,
                        "untilCompactTokens": until, "agent": names.0, "model": names.1,
                        "stateVersion": 5});
    pressure_line(session, seq, fields)
}

fn json_body(r: &harness::Response) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {:?}", r.body))
}

/// `~/.claude/projects` and `~/.codex/sessions` as a user has them, and a file of frames: each
/// file is read in its own format, keyed by the session it names, and each session's row holds
/// the record `run` gives for that file alone.
#[test]
fn a_directory_of_logs_is_followed_file_by_file() {
    let (Some(cc), Some(codex)) = (
        real_data("claude-code/short.jsonl"),
        real_data("codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"),
    ) else {
        return;
    };
    let root = scratch("tree");
    let cc_dir = root.join("claude/projects/-home-me-project");
    let codex_dir = root.join("codex/sessions/2026/02/23");
    std::fs::create_dir_all(&cc_dir).unwrap();
    std::fs::create_dir_all(&codex_dir).unwrap();
    std::fs::copy(&cc, cc_dir.join("short.jsonl")).unwrap();
    std::fs::copy(&codex, codex_dir.join(codex.file_name().unwrap())).unwrap();
    let frames = frame(
        "f-1",
        0,
        "request/header",
        json!({"context_window": 1000, "agent": "mine"}),
    ) + &frame("f-1", 1, "user/message", json!({"message": "hello"}));
    append(&root.join("frames.jsonl"), frames.as_bytes());

    let expect = |path: &std::path::Path, input: &str| {
        let text = std::fs::read(path).unwrap();
        last_pressure(
            &agent_fold::testing::jsonl::records(&text),
            &[("input", input)],
        )
    };
    let want = [
        expect(&cc, "claude-code"),
        expect(&codex, "codex"),
        expect(&root.join("frames.jsonl"), "agent-fold"),
    ];
    let s = Server::start(&["--native", root.to_str().unwrap()]);
    let ids: Vec<String> = want
        .iter()
        .map(|w| w["session"].as_str().unwrap().to_owned())
        .collect();
    let state = s.wait_state("three sessions, each at its last record", |st| {
        want.iter()
            .zip(&ids)
            .all(|(w, id)| seq_of(st, id) == w["seq"].as_u64())
    });
    for (w, id) in want.iter().zip(&ids) {
        let row = session(&state, id).unwrap();
        assert_eq!(&row["record"], w, "{id}");
        assert_eq!(row["agent"], w["agent"]);
    }
    assert_eq!(session(&state, &ids[0]).unwrap()["agent"], "claude-code");
    assert_eq!(session(&state, &ids[1]).unwrap()["agent"], "codex");
    assert_eq!(session(&state, "f-1").unwrap()["agent"], "mine");
    let message = state["status"]["message"].as_str().unwrap();
    assert!(message.starts_with("following 3 logs"), "{message}");
    // A log that appears later is found and read.
    let later = frame("f-2", 0, "user/message", json!({"message": "late"}));
    append(
        &root.join("codex/sessions/2026/02/23/new.jsonl"),
        later.as_bytes(),
    );
    s.wait_state("the new log's session", |st| seq_of(st, "f-2") == Some(0));
}

/// A Codex rollout followed where Codex runs: `$CODEX_HOME/config.toml` names the limit the
/// rollout never does, and the session's point is that limit — the record the module gives
/// with `compact_at` set to it — where without the file it is the default.
#[test]
fn codex_s_configured_limit_is_the_point_serve_shows() {
    let rollout =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapt/codex.jsonl");
    let text = std::fs::read(&rollout).unwrap();
    let records = agent_fold::testing::jsonl::records(&text);
    let configured = last_pressure(&records, &[("input", "codex"), ("compact_at", "150000")]);
    let default = last_pressure(&records, &[("input", "codex")]);
    assert_ne!(
        default["compactAtTokens"], 150_000,
        "the default is not the limit"
    );
    let id = configured["session"].as_str().unwrap().to_owned();
    for (config, want) in [(true, &configured), (false, &default)] {
        let root = scratch("codex-home");
        let logs = root.join("sessions/2026/03/03");
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::copy(&rollout, logs.join("rollout-2026-03-03T10-00-00-x.jsonl")).unwrap();
        if config {
            std::fs::write(
                root.join("config.toml"),
                "model = \"gpt-5.3-codex\"\nmodel_auto_compact_token_limit = 150000\n",
            )
            .unwrap();
        }
        let s = Server::start_with(
            &["--native", logs.to_str().unwrap()],
            &[("CODEX_HOME", root.to_str().unwrap())],
            Stdio::null(),
        );
        let state = s.wait_state("the rollout's last record", |st| {
            seq_of(st, &id) == want["seq"].as_u64()
        });
        let row = session(&state, &id).unwrap();
        assert_eq!(&row["record"], want, "config.toml {config}");
        if config {
            assert_eq!(row["record"]["compactAtTokens"], 150_000);
        }
    }
}

/// Ranked by how close each session is to compacting, sorted and filtered on request, a page at
/// a time; a parameter that does not read is refused in words, an unknown session is 404, and
/// a session's history comes whole or after a seq.
#[test]
fn the_api_ranks_filters_and_refuses_in_words() {
    let mut s = Server::start_with(&["-"], &[], Stdio::piped());
    let rows = [
        ("far", 90_000, 0.2, ("codex", "gpt-5")),
        ("near", 5_000, 0.8, ("claude-code", "claude-opus-4-6")),
        ("nearer", 1_000, 0.81, ("claude-code", "claude-sonnet-4-5")),
        ("a/b c%", 40_000, 0.5, ("codex", "gpt-5.5")),
    ];
    let mut text = String::new();
    for (id, until, occ, names) in rows {
        text += &rec(id, 1, until, occ, names);
    }
    text += &rec("near", 2, 4_000, 0.82, rows[1].3);
    write(&mut s, &text);
    s.wait_state("four sessions", |st| {
        seq_of(st, "near") == Some(2) && session(st, "far").is_some()
    });
    let order = |q: &str| -> Vec<String> {
        let r = s.get(&format!("/api/sessions{q}"));
        assert_eq!(r.status, 200, "{q}");
        agent_fold_testkit::strings_of(&json_body(&r)["sessions"], "session")
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(order(""), ["nearer", "near", "a/b c%", "far"]);
    assert_eq!(
        order("?sort=occupancy"),
        ["near", "nearer", "a/b c%", "far"]
    );
    assert_eq!(
        order("?sort=session&order=desc"),
        ["nearer", "near", "far", "a/b c%"]
    );
    assert_eq!(order("?q=OPUS"), ["near"]);
    assert_eq!(order("?q=%6Fpus"), ["near"], "percent-decoded");
    assert_eq!(order("?q=codex&sort=until"), ["a/b c%", "far"]);
    let page = json_body(&s.get("/api/sessions?limit=2&offset=1"));
    assert_eq!(
        (page["matched"].as_u64(), page["total"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(
        agent_fold_testkit::strings_of(&page["sessions"], "session"),
        ["near", "a/b c%"]
    );
    for (q, says) in [
        ("?sort=speed", "sort by one of"),
        ("?limit=0", "from 1 to"),
        ("?page=2", "not a parameter"),
    ] {
        let r = s.get(&format!("/api/sessions{q}"));
        assert_eq!(r.status, 400, "{q}");
        let why = json_body(&r)["error"].as_str().unwrap().to_owned();
        assert!(why.contains(says), "{q}: {why}");
    }
    let d = json_body(&s.get("/api/sessions/a%2Fb%20c%25"));
    assert_eq!(
        d["row"]["session"], "a/b c%",
        "a session id percent-encoded in the path"
    );
    let near = json_body(&s.get("/api/sessions/near"));
    let seqs: Vec<u64> = near["history"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2]);
    let after = json_body(&s.get("/api/sessions/near/history?after=1"));
    assert_eq!(after["points"].as_array().unwrap().len(), 1);
    assert_eq!(s.get("/api/sessions/nobody").status, 404);
    assert_eq!(s.get("/api/sessions/near/history?after=x").status, 400);
}

/// A session idle past `--idle` leaves the live board (its row says so), keeps its history, and
/// comes back when it speaks again.
#[test]
fn idle_sessions_leave_the_live_board_and_come_back() {
    let mut s = Server::start_with(&["--idle", "1", "-"], &[], Stdio::piped());
    write(&mut s, &rec("quiet", 1, 50_000, 0.3, ("codex", "gpt-5")));
    let mut events = s.events(None);
    let (row, _) = events.next_row("quiet", |r| r["live"] == true);
    assert_eq!(row["seq"], 1);
    let (row, _) = events.next_row("quiet", |r| r["live"] == false);
    assert_eq!(row["seq"], 1, "the same row, idle now");
    let live = json_body(&s.get("/api/sessions"));
    assert_eq!(
        (live["live"].as_u64(), live["matched"].as_u64()),
        (Some(0), Some(0))
    );
    let all = json_body(&s.get("/api/sessions?all=1"));
    assert_eq!(all["matched"], 1);
    assert_eq!(
        sample(&s.metrics(), "agent_fold_serve_live_sessions", &[]),
        0.0
    );
    write(&mut s, &rec("quiet", 2, 40_000, 0.4, ("codex", "gpt-5")));
    let (row, _) = events.next_row("quiet", |r| r["live"] == true);
    assert_eq!(row["seq"], 2);
    let history = json_body(&s.get("/api/sessions/quiet"))["history"]["points"].clone();
    assert_eq!(history.as_array().unwrap().len(), 2, "its history stayed");
}

/// Sessions cross rules many records over: each crossing alerts exactly once — the webhook gets
/// it (after one refusal, tried again), the row names the rules firing, `/metrics` counts them by
/// rule and the sessions per band, no per-session label.
#[test]
fn alerts_fire_once_per_crossing_through_the_webhook_and_the_metrics() {
    let hook = Receiver::start(true).unwrap();
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let mut s = Server::start_with(
        &[
            "--alert",
            "until<20000",
            "--alert",
            "occupancy>0.9",
            "--alert-webhook",
            &url,
            "-",
        ],
        &[],
        Stdio::piped(),
    );
    // Three sessions, wavering about the thresholds and compacting.
    let paths: [(&str, &[u64]); 3] = [
        (
            "a",
            &[
                50_000, 19_000, 19_500, 20_800, 15_000, 120_000, 10_000, 9_000,
            ],
        ),
        ("b", &[30_000, 25_000, 21_000, 20_000, 40_000]),
        ("c", &[19_999, 50_000, 19_000, 21_000, 19_000]),
    ];
    let occupancy = |until: u64| (167_000 - until.min(167_000)) as f64 / 170_000.0;
    let mut text = String::new();
    let rules = ["until<20000", "occupancy>0.9"].map(|r| alerts::Rule::parse(r).unwrap());
    let mut want = alerts::Crossings::new(rules.to_vec());
    for (id, untils) in paths {
        for (seq, until) in untils.iter().enumerate() {
            let occ = occupancy(*until);
            text += &rec(
                id,
                seq as u64,
                *until,
                occ,
                ("claude-code", "claude-opus-4-6"),
            );
            want.observe(id, Some(*until), Some(occ), None, None);
        }
    }
    let (want_until, want_occ) = (want.total("until<20000"), want.total("occupancy>0.9"));
    let resolved = want.total_resolved("until<20000") + want.total_resolved("occupancy>0.9");
    assert!(
        want_until >= 4 && want_occ >= 1,
        "the input crosses: {want_until}, {want_occ}"
    );
    write(&mut s, &text);
    let deadline = Instant::now() + Duration::from_secs(30);
    while (hook.bodies().len() as u64) < want_until + want_occ + resolved {
        assert!(
            Instant::now() < deadline,
            "alerts delivered: {:?}",
            hook.bodies()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        hook.alerts(),
        want.counts(),
        "each session's crossings, once each"
    );
    assert!(resolved >= 2, "the input crosses back: {resolved}");
    assert_eq!(
        hook.notices("resolved"),
        want.resolutions(),
        "each crossing back resolves the alert it ends, once"
    );
    let alerts = hook.bodies();
    let first = alerts.iter().find(|a| a["session"] == "a").unwrap();
    assert_eq!(
        (&first["agent"], &first["model"]),
        (&json!("claude-code"), &json!("claude-opus-4-6"))
    );
    assert!(first["record"]["untilCompactTokens"].as_u64().is_some());
    let m = s.metrics();
    let alerts_total = |rule| sample(&m, "agent_fold_serve_alerts_total", &[("rule", rule)]);
    assert_eq!(alerts_total("until<20000"), want_until as f64);
    assert_eq!(alerts_total("occupancy>0.9"), want_occ as f64);
    let posts = |o| {
        sample(
            &m,
            "agent_fold_serve_alert_notices_total",
            &[("receiver", "webhook"), ("outcome", o)],
        )
    };
    assert_eq!(
        posts("delivered"),
        (want_until + want_occ + resolved) as f64
    );
    assert!(
        sample(
            &m,
            "agent_fold_serve_alert_retries_total",
            &[("receiver", "webhook")]
        ) >= 1.0,
        "the first POST was refused and tried again"
    );
    // Now: a at 9,000 and c at 19,000 are under 20,000.
    let firing = sample(
        &m,
        "agent_fold_serve_sessions_alerting",
        &[("rule", "until<20000")],
    );
    assert_eq!(firing, 2.0);
    let state = s.state();
    assert_eq!(
        session(&state, "a").unwrap()["alerts"],
        json!(["until<20000", "occupancy>0.9"])
    );
    assert_eq!(session(&state, "b").unwrap()["alerts"], json!([]));
    let band = |b| {
        sample(
            &m,
            "agent_fold_serve_live_sessions_by_until_compact",
            &[("band", b)],
        )
    };
    // Now: a at 9,000; b at 40,000 and c at 19,000.
    assert_eq!(
        (band("lt_10k"), band("10k_to_50k"), band("ge_50k")),
        (1.0, 2.0, 0.0)
    );
    for f in &m.samples {
        assert!(
            f.labels.get("session").is_none(),
            "no per-session label: {}",
            f.metric
        );
    }
}

/// The records `run -e input=otel` makes of events: the board's figures for the same events.
fn otel_last(records: &[Value], id: &str) -> Value {
    let recs: Vec<Rec> = records
        .iter()
        .map(|r| Rec::new(None, r.to_string().as_bytes()))
        .collect();
    let mut m = agent_fold::module::Module::new(
        &agent_fold::module::Build::Native,
        &agent_fold_core::Config::from_params([("input", "otel"), ("emit", "pressure")]).unwrap(),
        None,
    )
    .unwrap();
    let out = m.process(&recs, 0).unwrap();
    out.iter()
        .rev()
        .map(|r| serde_json::from_slice::<Value>(&r.value).unwrap())
        .find(|v| v["session"] == id && v["type"] == "context/pressure")
        .expect("a pressure record of the session")
}

/// A Claude Code session as its OTLP exporter would send it (the events derived from a real
/// transcript, in the requests a batch processor makes, half protobuf and half JSON, some
/// gzipped) reaches the board with no other step: its row holds what `input=otel` makes of the
/// same events.
#[test]
fn an_agent_s_otlp_export_reaches_the_board() {
    let Some(path) = real_data("claude-code/847ff7d2-4a55-44d7-a3f5-a3afd89f1ee1.jsonl") else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let events = agent_fold_testkit::otel::derive(&text);
    let bodies = agent_fold_testkit::otel::export_requests(&events);
    let records = agent_fold_testkit::otel::collector_records(&events);
    let id = records[0]["session"].as_str().unwrap().to_owned();
    let want = otel_last(&records, &id);
    let s = Server::start(&["--native", "--otlp", "127.0.0.1:0"]);
    let port = s.otlp_port();
    for (i, body) in bodies.iter().enumerate() {
        let json = body.to_string().into_bytes();
        let (ctype, bytes) = if i % 2 == 0 {
            let req: ExportLogsServiceRequest = serde_json::from_value(body.clone()).unwrap();
            ("application/x-protobuf", req.encode_to_vec())
        } else {
            ("application/json", json)
        };
        let (bytes, gzip) = if i % 3 == 0 {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&bytes).unwrap();
            (e.finish().unwrap(), true)
        } else {
            (bytes, false)
        };
        let mut headers = vec![("Content-Type", ctype)];
        if gzip {
            headers.push(("Content-Encoding", "gzip"));
        }
        let r = post(port, "/v1/logs", &headers, &bytes);
        assert_eq!(
            r.status,
            200,
            "request {i}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let answered = r.headers.iter().find(|(k, _)| k == "content-type").unwrap();
        assert_eq!(answered.1, ctype, "answered in the request's encoding");
    }
    let state = s.wait_state("the session at its last record", |st| {
        seq_of(st, &id) == want["seq"].as_u64()
    });
    let row = session(&state, &id).unwrap();
    assert_eq!(row["record"], want);
    assert_eq!(row["agent"], "claude-code");
    assert!(
        row["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("claude-"))
    );
    harness::assert_otlp_counted(
        &s.metrics(),
        "agent_fold_serve",
        records.len(),
        bodies.len(),
    );
}

/// `serve --otlp` bounds what a body holds as `collect` does: 16 million empty records in a
/// 31 KB gzip (eight at once) are refused before they are decoded and the peak stays under
/// 200 MB; a body labelled gzip that is not is a 400; with eight connections dribbling their
/// bodies, a valid request is answered 200 within 1.5 s.
#[test]
fn the_otlp_intake_is_bounded_by_what_a_body_holds_and_slow_senders_wait_alone() {
    let s = Server::start(&["--native", "--otlp", "127.0.0.1:0"]);
    let port = s.otlp_port();
    let body = harness::empty_records(16_000_000);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&body).unwrap();
    let bomb = e.finish().unwrap();
    let headers = [
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "gzip"),
    ];
    let eight: Vec<_> = (0..8)
        .map(|_| {
            let bomb = bomb.clone();
            std::thread::spawn(move || post(port, "/v1/logs", &headers, &bomb).status)
        })
        .collect();
    for t in eight {
        assert_eq!(t.join().unwrap(), 413);
    }
    let peak = harness::proc_status(s.pid(), "VmHWM:");
    assert!(peak < 200 << 20, "peak RSS {} MB", peak >> 20);
    let json = ("Content-Type", "application/json");
    let not_gzip = post(
        port,
        "/v1/logs",
        &[json, ("Content-Encoding", "gzip")],
        b"{}",
    );
    assert_eq!(not_gzip.status, 400);
    let dribblers: Vec<std::net::TcpStream> = (0..8)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(
                c,
                "POST /v1/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
            )
            .unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    let ok = post(port, "/v1/logs", &[json], br#"{"resourceLogs":[]}"#);
    assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    drop(dribblers);
}

/// SIGTERM while 50 exporters upload to `serve --otlp`: no request is answered 500 (a batch is
/// finished, or answered so that the exporter sends it again).
#[test]
fn a_stop_during_otlp_uploads_answers_no_500() {
    let s = Server::start(&["--native", "--otlp", "127.0.0.1:0"]);
    let port = s.otlp_port();
    let threads: Vec<_> = (0..50)
        .map(|i| {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis((i % 10) as u64 * 5));
                let records: Vec<Value> = (0..200)
                    .map(|k| json!({"timeUnixNano":"1764748800000000000","body":{"stringValue":"claude_code.user_prompt"},
                        "attributes":[{"key":"session.id","value":{"stringValue":format!("s-{i}")}},
                                      {"key":"prompt_length","value":{"intValue":k.to_string()}}]}))
                    .collect();
                let body = json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
                    "scopeLogs":[{"logRecords":records}]}]})
                .to_string();
                let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return None;
                };
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let head = format!(
                    "POST /v1/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if c.write_all(head.as_bytes()).and_then(|()| c.write_all(body.as_bytes())).is_err() {
                    return None;
                }
                let mut text = Vec::new();
                let _ = std::io::Read::read_to_end(&mut c, &mut text);
                String::from_utf8_lossy(&text)
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse::<u16>().ok())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let answers: Vec<Option<u16>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(!answers.contains(&Some(500)), "{answers:?}");
    assert!(answers.contains(&Some(200)), "{answers:?}");
}

/// Issue 55: following a directory of 200 logs, truncating one (`: > s1.jsonl`, as log
/// rotation does) emptied the board and read every log again, and the webhook heard every
/// untouched session's alert a second time. Now the truncated log alone is read again: the
/// other 199 rows stay, no notice comes twice, and the event is said once on stderr and in
/// `/metrics`.
#[test]
fn truncating_one_of_200_followed_logs_leaves_the_others_and_pages_no_one_twice() {
    let hook = Receiver::start(false).unwrap();
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let root = scratch("tree-200");
    let n = 200;
    let log = |i: usize| root.join(format!("s{i}.jsonl"));
    // Each session past half its window of 1,000 tokens by a reading: an alert each.
    for i in 0..n {
        let id = format!("s{i}");
        let text = frame(&id, 0, "request/header", json!({"context_window": 1000}))
            + &frame(
                &id,
                1,
                "assistant/message",
                json!({"message": "hi", "usage": {"input_tokens": 600, "output_tokens": 5}}),
            );
        append(&log(i), text.as_bytes());
    }
    let s = Server::start(&[
        "--native",
        // The frames' stamps are of 2026-11-29: not history by --idle.
        "--idle",
        "31536000",
        "--alert",
        "occupancy>0.5",
        "--alert-webhook",
        &url,
        root.to_str().unwrap(),
    ]);
    let rows = |st: &Value| st["sessions"].as_array().map_or(0, Vec::len);
    s.wait_state("200 sessions", |st| rows(st) == n);
    let deadline = Instant::now() + Duration::from_secs(60);
    while hook.bodies().len() < n {
        assert!(Instant::now() < deadline, "{} notices", hook.bodies().len());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(log(1), b"").unwrap();
    s.wait_state("s1 gone", |st| session(st, "s1").is_none());
    // A line past the truncation in another log: once the board shows it, the poll that saw
    // the truncation and everything it read again are applied (one thread, in order).
    let more = frame("s0", 2, "user/message", json!({"message": "y"}));
    append(&log(0), more.as_bytes());
    let state = s.wait_state("s0's new line", |st| seq_of(st, "s0") == Some(2));
    assert_eq!(rows(&state), n - 1, "the other 199 rows stay");
    let m = s.wait_metrics("no notice waiting", |m| {
        sample(
            m,
            "agent_fold_serve_alert_notices_waiting",
            &[("receiver", "webhook")],
        ) == 0.0
    });
    let fired = hook.alerts();
    assert_eq!(fired["occupancy>0.5"].len(), n, "{fired:?}");
    assert!(
        fired["occupancy>0.5"].values().all(|k| *k == 1),
        "no notice twice: {fired:?}"
    );
    assert_eq!(hook.bodies().len(), n);
    assert_eq!(
        sample(
            &m,
            "agent_fold_serve_log_events_total",
            &[("event", "truncated")]
        ),
        1.0
    );
    let said = s.stderr().matches("was truncated").count();
    assert_eq!(said, 1, "said once: {}", s.stderr());
}
