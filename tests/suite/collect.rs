//! `agent-fold collect`, the OTLP/HTTP logs receiver, started as a user starts it: requests shaped
//! exactly as agents' exporters send them (the events derived from real Claude Code and Codex
//! logs, protobuf and JSON, gzipped or not) become the records `input=otel` reads; every hostile
//! request (too large, a gzip bomb, no or a wrong token, malformed protobuf or JSON, an unknown
//! type or encoding, a thousand exporters at once) gets OTLP's status and moves nothing else;
//! and, against a live cluster when there is one, the records reach the topic keyed by session.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use agent_fold_core::{Emit, Processor, RecordIn};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message;
use serde_json::{Value, json};

use crate::common::real_data;
use crate::harness::{
    Response, Scratch, TIMEOUT, agent_fold, assert_otlp_counted, empty_records, post, proc_status,
    sample, scratch, succeeded,
};

/// A collector writing to `events.jsonl` in a scratch folder of its own, and where.
struct Writing {
    c: Collector,
    out: PathBuf,
    /// Its `--token-file`, when it was started with a token.
    token: PathBuf,
    /// Kept for as long as the output is read: dropped, the folder goes.
    _dir: Scratch,
}

impl Writing {
    /// In a scratch folder named `name`: with `token`, that token in a `--token-file` there;
    /// then `args`.
    fn start(name: &str, token: Option<&str>, args: &[&str]) -> Writing {
        let dir = scratch(name);
        let (out, token_file) = (dir.join("events.jsonl"), dir.join("token"));
        let mut all = vec!["--out", out.to_str().unwrap()];
        if let Some(t) = token {
            std::fs::write(&token_file, format!("{t}\n")).unwrap();
            all.extend(["--token-file", token_file.to_str().unwrap()]);
        }
        all.extend(args);
        let c = Collector::start(&all);
        Writing {
            c,
            out,
            token: token_file,
            _dir: dir,
        }
    }
}

/// A collector started as a user starts it; the port read from the line it prints.
struct Collector {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
}

impl Collector {
    fn start(args: &[&str]) -> Collector {
        let mut child = crate::harness::command()
            .arg("collect")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agent-fold collect");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let keep = Arc::clone(&stderr);
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap().parse::<u16>().unwrap());
                }
                keep.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let port = rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("collect printed no address: {}", stderr.lock().unwrap())
        });
        Collector {
            child,
            port,
            stderr,
        }
    }

    fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> Response {
        post(self.port, "/v1/logs", headers, body)
    }

    fn get(&self, path: &str) -> Response {
        self.get_with(path, &[])
    }

    /// A GET of `path` with `headers` beside `Host`.
    fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: x\r\n");
        for (name, value) in headers {
            head += &format!("{name}: {value}\r\n");
        }
        write!(s, "{head}Connection: close\r\n\r\n").unwrap();
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut text).unwrap();
        let text = String::from_utf8_lossy(&text);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        Response {
            status: head.split_whitespace().nth(1).unwrap().parse().unwrap(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    fn metrics(&self) -> prometheus_parse::Scrape {
        let text = String::from_utf8(self.get("/metrics").body).unwrap();
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The JSON lines of a file.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The derived export of a real log: its OTLP/JSON requests and the records they make.
fn export(rel: &str) -> Option<(Vec<Value>, Vec<Value>)> {
    let text = std::fs::read_to_string(real_data(rel)?).unwrap();
    let events = agent_fold_testkit::otel::derive(&text);
    Some((
        agent_fold_testkit::otel::export_requests(&events),
        agent_fold_testkit::otel::collector_records(&events),
    ))
}

/// Posts each body as an exporter would: protobuf for the even ones, JSON for the odd, every
/// third gzipped; each answered 200 in its own encoding, with no partial success.
fn send_all(c: &Collector, bodies: &[Value]) {
    for (i, body) in bodies.iter().enumerate() {
        let (ctype, bytes) = match i % 2 {
            0 => {
                let req: ExportLogsServiceRequest = serde_json::from_value(body.clone()).unwrap();
                ("application/x-protobuf", req.encode_to_vec())
            }
            _ => ("application/json", body.to_string().into_bytes()),
        };
        let gz = i % 3 == 0;
        let bytes = if gz { gzip(&bytes) } else { bytes };
        let mut headers = vec![("Content-Type", ctype)];
        if gz {
            headers.push(("Content-Encoding", "gzip"));
        }
        let r = c.post(&headers, &bytes);
        assert_eq!(
            r.status,
            200,
            "request {i}: {}",
            String::from_utf8_lossy(&r.body)
        );
        if ctype == "application/x-protobuf" {
            let answer = ExportLogsServiceResponse::decode(&r.body[..]).unwrap();
            assert_eq!(answer.partial_success, None, "request {i}");
        } else {
            assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), json!({}));
        }
    }
}

/// Every shared real Claude Code and Codex session exported as its exporter would: the file
/// holds exactly the records the reference receiver makes of the same requests (the testkit's,
/// written apart from the collector) — the records docs/accuracy.md's telemetry table runs —
/// and `run -e input=otel` reads it.
#[test]
fn exporters_requests_become_the_records_input_otel_reads() {
    let Some(root) = real_data("") else { return };
    let mut logs: Vec<String> = Vec::new();
    for agent in ["claude-code", "codex"] {
        for e in std::fs::read_dir(root.join(agent)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                logs.push(format!(
                    "{agent}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    logs.sort();
    assert!(logs.len() >= 9, "{logs:?}");
    let Writing { c, out, _dir, .. } = Writing::start("collect-out", None, &[]);
    let (mut want, mut requests, mut sessions) = (Vec::new(), 0, Vec::new());
    for log in &logs {
        let (bodies, records) = export(log).unwrap();
        if records.is_empty() {
            continue;
        }
        send_all(&c, &bodies);
        requests += bodies.len();
        sessions.push(records[0]["session"].clone());
        want.extend(records);
    }
    let got = lines(&out);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "record {i}");
    }
    assert_otlp_counted(&c.metrics(), "agent_fold_collect", want.len(), requests);
    // The file is what the module reads.
    let out = out.to_str().unwrap();
    let run = [
        "run",
        "--native",
        "-e",
        "input=otel",
        "-e",
        "emit=pressure",
        out,
    ];
    let run = succeeded(agent_fold(&run, None));
    let records: Vec<Value> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for id in &sessions {
        let last = records.iter().rev().find(|r| &r["session"] == id).unwrap();
        assert_eq!(last["type"], "context/pressure", "{last}");
        assert!(last["pressureTokens"].as_u64().unwrap() > 1000, "{last}");
    }
}

/// What a collector refuses moves nothing: the file is as it was, the written count too.
struct Unmoved<'a> {
    c: &'a Collector,
    out: PathBuf,
    bytes: u64,
}

impl<'a> Unmoved<'a> {
    fn new(c: &'a Collector, out: &Path) -> Unmoved<'a> {
        let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
        Unmoved {
            c,
            out: out.to_owned(),
            bytes,
        }
    }

    /// The request is answered `status`, its body says `says`, and nothing was written.
    fn refused(&self, headers: &[(&str, &str)], body: &[u8], status: u16, says: &str) {
        let r = self.c.post(headers, body);
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert_eq!(r.status, status, "{headers:?}: {text}");
        if !says.is_empty() {
            let said = match r.headers.iter().find(|(k, _)| k == "content-type") {
                Some((_, t)) if t == "application/x-protobuf" => {
                    let st = agent_fold::testing::otlp::RpcStatus::decode(&r.body[..]).unwrap();
                    st.message
                }
                _ => serde_json::from_slice::<Value>(&r.body).unwrap()["message"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            };
            assert!(said.contains(says), "{headers:?}: {said}");
        }
        assert_eq!(
            std::fs::metadata(&self.out).map_or(0, |m| m.len()),
            self.bytes,
            "a refused request wrote nothing"
        );
    }
}

#[test]
fn hostile_requests_get_otlp_s_status_and_move_nothing() {
    let args = ["--max-body", "65536", "--max-inflated", "262144"];
    let Writing { c, out, _dir, .. } =
        Writing::start("collect-hostile", Some("s3cret-token"), &args);
    let ok_auth = ("Authorization", "Bearer s3cret-token");
    let json = ("Content-Type", "application/json");
    let pb = ("Content-Type", "application/x-protobuf");
    let event = json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
        "scopeLogs":[{"logRecords":[{"timeUnixNano":"1764748800000000000","body":{"stringValue":"claude_code.user_prompt"},
        "attributes":[{"key":"session.id","value":{"stringValue":"s-1"}},{"key":"prompt_length","value":{"intValue":"12"}}]}]}]}]})
    .to_string();
    let n = Unmoved::new(&c, &out);
    // No token, a wrong one, another scheme: 401, said in words.
    n.refused(&[json], event.as_bytes(), 401, "bearer token");
    n.refused(
        &[json, ("Authorization", "Bearer nope")],
        event.as_bytes(),
        401,
        "bearer token",
    );
    n.refused(
        &[json, ("Authorization", "Basic czNjcmV0")],
        event.as_bytes(),
        401,
        "",
    );
    // Not OTLP: an unknown type or encoding is 415, in the request's encoding when known.
    n.refused(
        &[("Content-Type", "text/plain"), ok_auth],
        b"hello",
        415,
        "text/plain",
    );
    n.refused(
        &[json, ok_auth, ("Content-Encoding", "br")],
        event.as_bytes(),
        415,
        "br",
    );
    // Malformed: 400 with where it broke.
    n.refused(&[json, ok_auth], b"{\"resourceLogs\":[{", 400, "line 1");
    n.refused(
        &[pb, ok_auth],
        b"\x0a\xff\xff\xff\xff\x0f",
        400,
        "ExportLogsServiceRequest",
    );
    n.refused(
        &[json, ok_auth, ("Content-Encoding", "gzip")],
        b"not gzip at all",
        400,
        "inflate",
    );
    // Too large as sent (declared, or not) and once inflated: 413, a bomb before it inflates.
    let big = vec![b' '; 70_000];
    n.refused(&[json, ok_auth], &big, 413, "over 65536 bytes");
    let bomb = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; 32 << 20]).unwrap();
        e.finish().unwrap()
    };
    assert!(bomb.len() < 65536, "a 32 MiB bomb in {} bytes", bomb.len());
    let before = proc_status(c.child.id(), "VmHWM:");
    n.refused(
        &[pb, ok_auth, ("Content-Encoding", "gzip")],
        &bomb,
        413,
        "inflates past 262144",
    );
    // Cut where it passes the limit: 32 MiB inflated would raise the peak by as much.
    let grown = proc_status(c.child.id(), "VmHWM:").saturating_sub(before);
    assert!(
        grown < 8 << 20,
        "the bomb raised the peak RSS by {} KiB",
        grown >> 10
    );
    // And the right request: one record written; sent again (an exporter that lost the
    // answer), answered and not written twice.
    let r = c.post(&[json, ok_auth], event.as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(lines(&out).len(), 1);
    let again = c.post(&[json, ok_auth], event.as_bytes());
    assert_eq!(again.status, 200);
    assert_eq!(lines(&out).len(), 1, "a repeated request is written once");
    // A record of no session is counted and named in OTLP's partial success.
    let stray = event.replace("session.id", "user.id");
    let r = c.post(&[json, ok_auth], stray.as_bytes());
    assert_eq!(r.status, 200);
    let answer: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        answer["partialSuccess"]["rejectedLogRecords"], "1",
        "{answer}"
    );
    assert_eq!(lines(&out).len(), 1);
    let m = c.metrics();
    for (status, n) in [
        ("401", 3.0),
        ("415", 2.0),
        ("400", 3.0),
        ("413", 2.0),
        ("200", 3.0),
    ] {
        assert_eq!(
            sample(
                &m,
                "agent_fold_collect_otlp_requests_total",
                &[("status", status)]
            ),
            n,
            "{status}"
        );
    }
    assert_eq!(
        sample(
            &m,
            "agent_fold_collect_otlp_events_refused_total",
            &[("reason", "no_session")]
        ),
        1.0
    );
    assert_eq!(c.get("/healthz").status, 200);
}

/// A thousand exporters at once, each on a connection of its own: every one is answered 200
/// (or, were the receiver busy for seconds, 503 with Retry-After, which OTLP retries), each
/// event written once, and the receiver still answers.
#[test]
fn a_thousand_concurrent_exporters_are_each_answered_once() {
    let Writing { c, out, _dir, .. } = Writing::start("collect-thousand", None, &[]);
    let c = Arc::new(c);
    let body = |i: usize| {
        json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"codex_cli_rs"}}]},
            "scopeLogs":[{"logRecords":[{"timeUnixNano":"1764748800000000000",
            "attributes":[{"key":"event.name","value":{"stringValue":"codex.user_prompt"}},
                          {"key":"conversation.id","value":{"stringValue":format!("c-{i}")}},
                          {"key":"prompt_length","value":{"stringValue":"40"}}]}]}]}]})
        .to_string()
    };
    let threads: Vec<_> = (0..1000)
        .map(|i| {
            let c = Arc::clone(&c);
            let b = body(i);
            std::thread::spawn(move || {
                let r = c.post(&[("Content-Type", "application/json")], b.as_bytes());
                let retry = r.headers.iter().any(|(k, _)| k == "retry-after");
                (r.status, retry)
            })
        })
        .collect();
    let answers: Vec<(u16, bool)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let busy = answers
        .iter()
        .filter(|(s, retry)| *s == 503 && *retry)
        .count();
    assert_eq!(
        ok + busy,
        1000,
        "each answered 200, or 503 with Retry-After: {answers:?}"
    );
    let got = lines(&out);
    assert_eq!(got.len(), ok, "each accepted event written once");
    let mut sessions: Vec<&str> = got.iter().map(|r| r["session"].as_str().unwrap()).collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), ok);
    assert_eq!(c.get("/healthz").status, 200);
}

#[test]
fn a_listener_beyond_loopback_needs_a_token_and_a_bad_flag_is_refused_first() {
    let dir = scratch("collect-flags");
    let empty = dir.join("empty");
    std::fs::write(&empty, "  \n").unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["--listen", "0.0.0.0:0", "--out", "-"],
            1,
            "beyond loopback",
        ),
        (
            &["--out", "-", "--token-file", empty.to_str().unwrap()],
            1,
            "holds nothing",
        ),
        (
            &["--out", "-", "--token-file", "/nonexistent/token"],
            1,
            "reading the token file",
        ),
        // Read before the listener starts (and again on SIGHUP): a device would never end.
        (
            &["--out", "-", "--token-file", "/dev/zero"],
            1,
            "is a device, not a regular file",
        ),
        (&["--topic", "Not_A_Topic"], 2, "no Fluvio topic name"),
        (&["--topic", "t", "--out", "-"], 2, "cannot be used with"),
        (&[], 2, "--topic"),
        (&["--out", "-", "--max-body", "10"], 2, "max-body"),
    ];
    for (args, code, says) in cases {
        let out = crate::harness::command()
            .arg("collect")
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says:?}: {err}");
    }
}

/// Against a live cluster: a derived Claude Code export through `collect --topic` reaches the
/// topic, each record keyed by its session, acknowledged before the exporter heard success; then
/// `agent-fold relay -e input=otel` makes of the topic the pressure records the module makes of
/// the same records natively.
#[test]
fn the_records_reach_a_topic_keyed_by_session_and_the_relay_adapts_them() {
    use crate::common::fluvio::{Topic, live};
    let Some((_turn, topic)) = live("collect") else {
        return;
    };
    let Some((bodies, records)) = export("claude-code/847ff7d2-4a55-44d7-a3f5-a3afd89f1ee1.jsonl")
    else {
        return;
    };
    let c = Collector::start(&["--topic", &topic.0]);
    send_all(&c, &bodies);
    // Every record was acknowledged before its request was answered: all there now.
    let consumed = topic.keyed_records();
    let got: Vec<(String, Value)> = consumed
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.to_owned(), serde_json::from_str(v).unwrap())
        })
        .collect();
    assert_eq!(got.len(), records.len(), "{}", c.stderr.lock().unwrap());
    for ((key, value), want) in got.iter().zip(&records) {
        assert_eq!(value, want);
        assert_eq!(key, want["session"].as_str().unwrap(), "keyed by session");
    }
    assert_eq!(c.get("/healthz").status, 200);

    // The relay over that topic, the OTel adapter in the engine.
    let sibling = Topic(format!("{}-pressure", topic.0));
    let wasm = agent_fold::module::default_wasm_path();
    let wasm = wasm.to_str().expect("a UTF-8 path");
    crate::harness::succeeded(crate::harness::agent_fold(
        &["relay", "--topic", &topic.0, "-e", "input=otel"]
            .into_iter()
            .chain(["--idle-exit", "5", "--wasm", wasm])
            .collect::<Vec<_>>(),
        None,
    ));
    let relayed = sibling.keyed_records();
    let values: Vec<Vec<u8>> = got
        .iter()
        .map(|(_, v)| v.to_string().into_bytes())
        .collect();
    let inputs: Vec<RecordIn> = got
        .iter()
        .zip(&values)
        .map(|((k, _), v)| RecordIn::new(Some(k.as_bytes()), v))
        .collect();
    let mut native = Processor::from_params([("input", "otel"), ("emit", "pressure")]).unwrap();
    let want: Vec<String> = native
        .process(&inputs)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Emit::New { key, value, .. } => Some(format!(
                "{}\t{}",
                String::from_utf8_lossy(&key),
                String::from_utf8_lossy(&value)
            )),
            _ => None,
        })
        .collect();
    let have: Vec<&str> = relayed.lines().collect();
    assert!(
        want.iter()
            .any(|l| l.contains("\"type\":\"context/pressure\"")),
        "the export gives pressure records"
    );
    assert_eq!(have, want, "the relay's records are the native module's");
    println!(
        "collect → {}: {} records keyed by session; relay -e input=otel → {}: {} records, = native",
        topic.0,
        got.len(),
        sibling.0,
        have.len()
    );
}

/// One agent event, as an exporter posts it.
fn one_event(session: &str) -> Vec<u8> {
    json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
        "scopeLogs":[{"logRecords":[{"timeUnixNano":"1764748800000000000","body":{"stringValue":"claude_code.user_prompt"},
        "attributes":[{"key":"session.id","value":{"stringValue":session}},{"key":"prompt_length","value":{"intValue":"12"}}]}]}]}]})
    .to_string()
    .into_bytes()
}

/// What a body holds is bounded, not only its bytes: 16 million empty records in a 31 KB gzip,
/// one and eight at once, and a 2 MB body of a million, are refused before they are decoded,
/// the collector's peak staying under 200 MB, and a valid request after them is answered; a
/// body labelled gzip that is not gzip is a 400.
#[test]
fn a_small_body_of_many_records_costs_little() {
    let Writing { c, out, _dir, .. } = Writing::start("collect-many", None, &[]);
    let pb = ("Content-Type", "application/x-protobuf");
    let gz = ("Content-Encoding", "gzip");
    let bomb = gzip(&empty_records(16_000_000));
    assert!(bomb.len() < 40 << 10, "{} bytes", bomb.len());
    let r = c.post(&[pb, gz], &bomb);
    assert_eq!(r.status, 413, "{}", String::from_utf8_lossy(&r.body));
    let eight: Vec<_> = (0..8)
        .map(|_| {
            let (port, bomb) = (c.port, bomb.clone());
            std::thread::spawn(move || post(port, "/v1/logs", &[pb, gz], &bomb).status)
        })
        .collect();
    for t in eight {
        assert_eq!(t.join().unwrap(), 413);
    }
    let plain = empty_records(1_000_000);
    assert!(plain.len() < 2_100_000);
    assert_eq!(c.post(&[pb], &plain).status, 413);
    let peak = proc_status(c.child.id(), "VmHWM:");
    assert!(peak < 200 << 20, "peak RSS {} MB", peak >> 20);
    let ok = c.post(
        &[("Content-Type", "application/json")],
        &one_event("s-after"),
    );
    assert_eq!(ok.status, 200);
    assert_eq!(lines(&out).len(), 1);
    let mislabelled = c.post(
        &[("Content-Type", "application/json"), gz],
        &one_event("s-x"),
    );
    assert_eq!(
        mislabelled.status,
        400,
        "{}",
        String::from_utf8_lossy(&mislabelled.body)
    );
}

/// A slow sender costs only its own connection: with 8 and then 64 connections dribbling their
/// bodies a byte at a time, a valid request is answered 200 within 1.5 s, and each dribbler is
/// cut with 408 once its body is overdue.
#[test]
fn slow_senders_lock_no_one_out() {
    let Writing { c, _dir, .. } = Writing::start("collect-slow", None, &[]);
    for dribblers in [8, 64] {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads: Vec<_> = (0..dribblers)
            .map(|_| {
                let (port, stop) = (c.port, Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    write!(
                        s,
                        "POST /v1/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
                    )
                    .unwrap();
                    s.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
                    let mut answer = Vec::new();
                    let mut buf = [0u8; 4096];
                    let t0 = std::time::Instant::now();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && t0.elapsed() < std::time::Duration::from_secs(10)
                    {
                        match std::io::Read::read(&mut s, &mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                answer.extend_from_slice(&buf[..n]);
                                break;
                            }
                            Err(_) => {
                                if s.write_all(b" ").is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    String::from_utf8_lossy(&answer).into_owned()
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(500));
        let t0 = std::time::Instant::now();
        let ok = c.post(
            &[("Content-Type", "application/json")],
            &one_event(&format!("s-{dribblers}")),
        );
        let took = t0.elapsed();
        assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
        assert!(
            took < std::time::Duration::from_millis(1500),
            "{dribblers} dribblers: {took:?}"
        );
        let answers: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let cut = answers
            .iter()
            .filter(|a| a.starts_with("HTTP/1.1 408"))
            .count();
        assert_eq!(
            cut,
            dribblers,
            "each dribbler cut with 408: {:?}",
            &answers[..2]
        );
    }
}

/// A rotated token takes effect on SIGHUP; a file that no longer holds one keeps the token there
/// was; `/healthz` tells where the events go only to a request that carries the token.
#[test]
fn the_token_file_is_read_again_on_sighup() {
    let Writing { c, token, _dir, .. } = Writing::start("collect-hup", Some("first-token"), &[]);
    let hup = || {
        let ok = Command::new("kill")
            .args(["-HUP", &c.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    // What a request carrying `token` is answered.
    let with = |token: &str, session: &str| {
        let auth = format!("Bearer {token}");
        let headers = [
            ("Content-Type", "application/json"),
            ("Authorization", &auth[..]),
        ];
        c.post(&headers, &one_event(session)).status
    };
    assert_eq!(with("first-token", "a"), 200);
    std::fs::write(&token, "second-token\n").unwrap();
    hup();
    assert_eq!(with("first-token", "b"), 401);
    assert_eq!(with("second-token", "c"), 200);
    std::fs::write(&token, "").unwrap();
    hup();
    assert_eq!(with("second-token", "d"), 200);
    let notes = c.stderr.lock().unwrap().clone();
    assert!(notes.contains("the token stays as it was"), "{notes}");
    assert!(notes.contains("max_connections"), "{notes}");
    // stderr is a pipe here: no terminal escapes in the notes.
    assert!(!notes.contains('\x1b'), "{notes:?}");
    let open = String::from_utf8(c.get("/healthz").body).unwrap();
    assert!(!open.contains("events.jsonl"), "{open}");
    assert!(open.contains("live"), "{open}");
    let auth = [("Authorization", "Bearer second-token")];
    let told = String::from_utf8(c.get_with("/healthz", &auth).body).unwrap();
    assert!(told.contains("events.jsonl"), "{told}");
}

/// SIGTERM during 50 concurrent uploads: no request is answered 500, and every batch answered
/// 200 is in the output whole.
#[test]
fn a_stop_during_uploads_answers_no_500_and_keeps_every_acknowledged_batch() {
    let Writing { c, out, _dir, .. } = Writing::start("collect-stop", None, &[]);
    let batch = |i: usize| {
        let records: Vec<Value> = (0..200)
            .map(|k| json!({"timeUnixNano":"1764748800000000000","body":{"stringValue":"claude_code.user_prompt"},
                "attributes":[{"key":"session.id","value":{"stringValue":format!("s-{i}")}},
                              {"key":"prompt_length","value":{"intValue":k.to_string()}}]}))
            .collect();
        json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
            "scopeLogs":[{"logRecords":records}]}]})
        .to_string()
        .into_bytes()
    };
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let (port, body) = (c.port, batch(i));
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis((i % 10) as u64 * 5));
                let mut s = match std::net::TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => s,
                    Err(_) => return (i, None),
                };
                s.set_read_timeout(Some(TIMEOUT)).unwrap();
                let head = format!(
                    "POST /v1/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if s.write_all(head.as_bytes()).and_then(|()| s.write_all(&body)).is_err() {
                    return (i, None);
                }
                let mut text = Vec::new();
                let _ = std::io::Read::read_to_end(&mut s, &mut text);
                let status = String::from_utf8_lossy(&text)
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse::<u16>().ok());
                (i, status)
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let ok = Command::new("kill")
        .args(["-TERM", &c.child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let answers: Vec<(usize, Option<u16>)> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(answers.iter().all(|(_, s)| *s != Some(500)), "{answers:?}");
    let got = lines(&out);
    for (i, s) in &answers {
        if *s == Some(200) {
            let n = got
                .iter()
                .filter(|r| r["session"] == format!("s-{i}"))
                .count();
            assert_eq!(n, 200, "batch {i} answered 200 is whole");
        }
    }
    assert!(answers.iter().any(|(_, s)| *s == Some(200)), "{answers:?}");
}

/// Issue 55: OTLP/JSON's doubles written as proto3's JSON mapping allows — `"NaN"`,
/// `"Infinity"`, `"-Infinity"`, a number as a string — refused the whole batch with 400, where
/// the same values in protobuf are taken (a value that is no finite number reads as `null`).
/// Now JSON reads them as protobuf does; and a chunked body whose chunk size does not read is a
/// bad request (400), not a body too large (413).
#[test]
fn proto3_json_doubles_read_as_protobuf_and_bad_chunk_framing_is_400() {
    let Writing { c, out, _dir, .. } = Writing::start("collect-doubles", None, &[]);
    let event = |session: &str, value: Value| {
        json!({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
            "scopeLogs":[{"logRecords":[{"timeUnixNano":"1764748800000000000","body":{"stringValue":"claude_code.api_request"},
            "attributes":[{"key":"session.id","value":{"stringValue":session}},{"key":"cost_usd","value":{"doubleValue":value}}]}]}]}]})
        .to_string()
    };
    let cases = [
        ("nan", json!("NaN"), Value::Null),
        ("inf", json!("Infinity"), Value::Null),
        ("ninf", json!("-Infinity"), Value::Null),
        ("text", json!("2.5"), json!(2.5)),
        ("number", json!(0.25), json!(0.25)),
    ];
    for (session, value, _) in &cases {
        let r = c.post(
            &[("Content-Type", "application/json")],
            event(session, value.clone()).as_bytes(),
        );
        assert_eq!(
            r.status,
            200,
            "{session}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    // The same NaN in protobuf.
    let mut pb: ExportLogsServiceRequest =
        serde_json::from_str(&event("pb-nan", json!(1.0))).unwrap();
    pb.resource_logs[0].scope_logs[0].log_records[0].attributes[1].value =
        Some(opentelemetry_proto::tonic::common::v1::AnyValue {
            value: Some(
                opentelemetry_proto::tonic::common::v1::any_value::Value::DoubleValue(f64::NAN),
            ),
        });
    let r = c.post(
        &[("Content-Type", "application/x-protobuf")],
        &pb.encode_to_vec(),
    );
    assert_eq!(r.status, 200);
    let written = lines(&out);
    let cost = |session: &str| {
        written
            .iter()
            .find(|r| r["session"] == session)
            .map(|r| r["attributes"]["cost_usd"].clone())
    };
    for (session, _, want) in &cases {
        assert_eq!(cost(session).as_ref(), Some(want), "{session}");
    }
    assert_eq!(cost("pb-nan"), cost("nan"), "JSON reads as protobuf does");

    // A chunk size that does not read: 400.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let req = format!(
        "POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n",
        c.port
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
}
