//! `agent-fold relay` without a cluster: the relay's own loop with the built `.wasm` in
//! fluvio-smartengine over the in-memory stand-ins (gaps, kills, an adapter whose re-delivery
//! rule rests on offsets), and the command line's refusals, signals, `--metrics` and logs,
//! spawned as a user runs it against a cluster that does not answer.
//! Against a live cluster: scripts/e2e-fluvio.sh.

use crate::harness;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Rec, owned, wasm};
use agent_fold::corpus::corpus;
use agent_fold::module::{Instance, Module};
use agent_fold::testing::logs;
use agent_fold::testing::relay::memory::{Cluster, commits_follow_acks, duplicates};
use agent_fold::testing::relay::pump::{self, Control, Exit, Settings};

fn settings() -> Settings {
    Settings::brisk(Duration::from_millis(100), 1000)
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Makes fresh instances of the `.wasm` in the engine, as the relay's pumps do.
fn fresh(params: &[(String, String)]) -> pump::Make {
    let params = params.to_vec();
    std::sync::Arc::new(move || {
        Ok(Module::Wasm(Box::new(Instance::new(
            wasm(),
            &params,
            None,
        )?)))
    })
}

/// What `agent-fold run --pressure-out` writes: one engine instance over the whole log.
fn reference(params: &[(String, String)], records: &[Rec]) -> Vec<Rec> {
    let mut i = Instance::new(wasm(), params, None).expect("the engine loads the module");
    i.run(records, 1000).expect("no refusal")
}

/// Relays partition 0 with the `.wasm`; with `kills`, each (sends, commits) countdown kills
/// the relay there (dropped mid-flight) and a new one starts.
fn relay(c: &Cluster, params: &[(String, String)], kills: &[(Option<usize>, Option<usize>)]) {
    let s = settings();
    let make = fresh(params);
    for &(sends, commits) in kills {
        (
            c.state().faults.hang_after_sends,
            c.state().faults.hang_after_commits,
        ) = (sends, commits);
        let ctl = Control::new(&[0]);
        let mut connect = c.connect(0);
        let ended = block_on(c.unless_killed(pump::run(&mut connect, &make, 0, &s, &ctl)));
        assert!(
            ended.is_none(),
            "the relay ended before the kill at {sends:?}/{commits:?}"
        );
    }
    let ctl = Control::new(&[0]);
    let exit = block_on(pump::run(&mut c.connect(0), &make, 0, &s, &ctl));
    assert_eq!(exit.expect("the relay ends well"), Exit::Idle);
}

#[test]
fn the_wasm_relay_gives_what_run_gives_through_gaps_and_kills_losing_nothing() {
    let records = corpus(6000, 21);
    let params = owned(&[("emit", "pressure"), ("capacity", "200000")]);
    let want = reference(&params, &records);
    let c = Cluster::new(vec![records]);
    c.state().faults.skip_once = [(0, 777), (0, 4242)].into();
    c.state().faults.fetch = Some(900);
    relay(
        &c,
        &params,
        &[(Some(150), None), (None, Some(1)), (Some(600), None)],
    );
    let st = c.state();
    commits_follow_acks(&st.journal).unwrap();
    let dups = duplicates(&want, &st.out).unwrap();
    assert!(dups > 0, "kills repeat records");
    assert_eq!(st.out.len(), want.len() + dups);
    assert!(st.out.iter().all(|r| r.key.is_some()), "keyed by session");
    assert_eq!(st.committed[0], Some(6000));
}

/// A partition that has run for months: its offsets start past 2^31 (here past 2^40), where a
/// look-back record's offset delta cannot reach. Each restart rebuilds through `look_back`,
/// and the relay answers as one at offset 0 does, through kills, nothing lost, nothing doubled
/// beyond the kills' repeats; the adapter's re-delivery rule (offsets) holds there too.
#[test]
fn a_partition_past_offset_2_pow_31_restarts_as_one_at_0_does() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapt/codex.jsonl");
    let lines = logs::read_records(&path).unwrap();
    let big_kills: &[(Option<usize>, Option<usize>)] =
        &[(Some(5), None), (None, Some(2)), (Some(40), None)];
    let small_kills: &[(Option<usize>, Option<usize>)] = &[(Some(2), None), (None, Some(2))];
    for (records, params, fetch, kills) in [
        (
            corpus(3000, 5),
            owned(&[("emit", "pressure"), ("capacity", "200000")]),
            97,
            big_kills,
        ),
        (
            lines,
            owned(&[("emit", "pressure"), ("input", "codex")]),
            7,
            small_kills,
        ),
    ] {
        let want = reference(&params, &records);
        let n = records.len() as i64;
        // Past 2^40, and not a round figure (Fluvio's encoder happens to write 2^40 itself
        // as a small delta).
        let base = (1i64 << 40) + 0x1234_5678;
        let c = Cluster::from_offset(vec![records], base);
        c.state().faults.fetch = Some(fetch);
        relay(&c, &params, kills);
        let st = c.state();
        commits_follow_acks(&st.journal).unwrap();
        let dups = duplicates(&want, &st.out).unwrap();
        assert_eq!(st.out.len(), want.len() + dups, "nothing lost");
        assert_eq!(st.committed[0], Some(base + n));
    }
}

/// A signal during a restart's look-back (a rolling restart, a history of 100,000 records)
/// ends the relay between two `look_back` calls, not after the whole replay: the reads stop
/// at once, nothing is produced or committed, and the relay ends as stopped.
#[test]
fn a_stop_during_the_look_back_ends_the_relay_between_two_calls() {
    let records = corpus(20_000, 3);
    let params = owned(&[("emit", "pressure"), ("capacity", "200000")]);
    let c = Cluster::new(vec![records]);
    c.state().committed[0] = Some(20_000);
    c.state().faults.fetch = Some(50);
    let reads = |c: &Cluster| {
        c.state()
            .journal
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    agent_fold::testing::relay::memory::ClusterEvent::Read { .. }
                )
            })
            .count()
    };
    let s = settings();
    let make = fresh(&params);
    let ctl = Control::new(&[0]);
    let mut conn = c.connect(0);
    let (exit, reads_at_stop) = block_on(async {
        let stopper = async {
            while reads(&c) < 10 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            ctl.stop();
            reads(&c)
        };
        tokio::join!(pump::run(&mut conn, &make, 0, &s, &ctl), stopper)
    });
    assert_eq!(exit.expect("a stop is no failure"), Exit::Stopped);
    let after = reads(&c) - reads_at_stop;
    assert!(
        after <= 1,
        "{after} look-back reads after the stop (of the 400 a whole replay takes)"
    );
    let st = c.state();
    assert!(st.out.is_empty(), "nothing relayed");
    assert_eq!(st.committed[0], Some(20_000), "the commit untouched");
}

#[test]
fn an_adapter_relayed_through_kills_applies_no_line_twice() {
    // The adapter numbers a session's frames by the lines' offsets: a line at or below the
    // last one applied is a re-delivery. Kills make the relay read lines again.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapt/codex.jsonl");
    let records = logs::read_records(&path).unwrap();
    assert!(records.len() > 20, "{}", records.len());
    let params = owned(&[("emit", "pressure"), ("input", "codex")]);
    let want = reference(&params, &records);
    assert!(!want.is_empty());
    let c = Cluster::new(vec![records]);
    c.state().faults.fetch = Some(7);
    relay(&c, &params, &[(Some(2), None), (None, Some(2))]);
    let st = c.state();
    let dups = duplicates(&want, &st.out).unwrap();
    assert_eq!(st.out.len(), want.len() + dups);
}

/// A restart's look-back of 420 MB (before: one `look_back` call, and the engine's 1 GB store
/// trapped from 400 MB on) is fed fetch by fetch, each cut to `invocation_bytes`: the relay
/// rebuilds the state and answers the records after the commit as one instance that saw all.
#[test]
fn a_look_back_larger_than_the_engines_store_rebuilds_in_bounded_calls() {
    let big = "x".repeat(1 << 20);
    let frame = |session: usize, seq: usize, body: &str| {
        let line = format!(
            r#"{{"type":"user/message","session_id":"s{session}","seq":{seq},"message":{{"role":"user","content":"{body}"}},"usage":{{"input_tokens":{}}}}}"#,
            1000 + seq
        );
        Rec::new(Some(format!("s{session}").as_bytes()), line.as_bytes())
    };
    let history: Vec<Rec> = (0..420).map(|i| frame(i % 7, i / 7, &big)).collect();
    let tail: Vec<Rec> = (0..14).map(|i| frame(i % 7, 60 + i / 7, "hi")).collect();
    let params = owned(&[("emit", "pressure"), ("capacity", "200000")]);
    let mut whole = Instance::new(wasm(), &params, None).expect("the engine loads the module");
    whole.run(&history, 16).expect("16 MiB invocations fit");
    let want = whole.process(&tail, 420).expect("no refusal");
    assert_eq!(want.len(), 14, "one pressure record a frame");

    let c = Cluster::new(vec![history.into_iter().chain(tail).collect()]);
    c.state().committed[0] = Some(420);
    c.state().faults.fetch = Some(40);
    let make = fresh(&params);
    let exit = block_on(pump::run(
        &mut c.connect(0),
        &make,
        0,
        &settings(),
        &Control::new(&[0]),
    ));
    assert_eq!(exit.expect("the relay rebuilds and ends well"), Exit::Idle);
    assert_eq!(c.state().out, want);
}

#[test]
fn malformed_fail_in_the_engine_stops_at_the_refused_offset() {
    let records = corpus(4000, 22);
    let bad =
        agent_fold::corpus::first_malformed(&records).expect("the corpus has malformed records");
    let params = owned(&[("emit", "pressure"), ("malformed", "fail")]);
    let c = Cluster::new(vec![records.clone()]);
    let ctl = Control::new(&[0]);
    let make = fresh(&params);
    let e = block_on(pump::run(&mut c.connect(0), &make, 0, &settings(), &ctl)).unwrap_err();
    let text = format!("{e:#}");
    assert!(
        text.contains(&format!("refused the record at offset {bad}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("Offset: {bad}")),
        "the engine's own words: {text}"
    );
    let st = c.state();
    assert_eq!(
        st.committed[0],
        Some(bad as i64),
        "nothing committed past it"
    );
    let before = reference(&owned(&[("emit", "pressure")]), &records[..bad]);
    assert_eq!(st.out, before);
}

fn agent_fold(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-fold"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the agent-fold binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_command_line_refuses_bad_params_and_files_before_connecting() {
    // A profile that points nowhere: a refusal must come before any connection attempt.
    let dir = crate::harness::scratch("relay-cli");
    let profile = dir.join("config");
    std::fs::write(&profile, profile_text("127.0.0.1:1")).unwrap();
    let env = [("FLV_PROFILE_PATH", profile.as_path())];
    let text = dir.join("text.wasm");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let garbage = dir.join("garbage.wasm");
    std::fs::write(&garbage, b"\0asm\x01\0\0\0garbage").unwrap();
    let (text, garbage) = (text.to_str().unwrap(), garbage.to_str().unwrap());
    for (args, says) in [
        (
            &["relay", "--topic", "t", "--to", "t"][..],
            "--to t names the event topic itself",
        ),
        (
            &["relay", "--topic", "t", "--wasm", "/dev/zero"],
            "is not a regular file",
        ),
        (
            &["relay", "--topic", "t", "--wasm", text],
            "is not WebAssembly",
        ),
        (
            &["relay", "--topic", "t", "--wasm", garbage],
            "does not load",
        ),
        (
            &["relay", "--topic", "t", "-e", "emit=frames"][..],
            "emit=frames is refused",
        ),
        (
            &["relay", "--topic", "t", "-e", "projection=maybe"],
            "agent-fold: bad value \"maybe\" for param `projection`",
        ),
        (
            &["relay", "--topic", "t", "--wasm", "/nonexistent/m.wasm"],
            "/nonexistent/m.wasm",
        ),
        (&["relay", "--topic", "T.x"], "no Fluvio topic name"),
        (
            &["relay", "--topic", "t", "--idle-exit", "0"],
            "positive number of seconds",
        ),
    ] {
        let o = agent_fold(args, &env);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("agent-fold: agent-fold:"), "{args:?}");
        assert!(
            !stderr(&o).contains("retrying"),
            "{args:?} tried to connect"
        );
        assert!(
            !stderr(&o).contains("root:x"),
            "{args:?}: the file's text is not shown"
        );
    }
}

fn profile_text(endpoint: &str) -> String {
    format!(
        "version = \"2.0\"\ncurrent_profile = \"t\"\n\n[profile.t]\ncluster = \"t\"\n\n\
         [cluster.t]\nendpoint = \"{endpoint}\"\nuse_spu_local_address = false\n\n\
         [cluster.t.tls]\ntls_policy = \"disabled\"\n"
    )
}

#[test]
fn an_unreachable_cluster_is_retried_with_back_off_then_a_clear_error() {
    let (dir, port) = unreachable("down");
    let profile = dir.join("config");
    let o = agent_fold(
        &["relay", "--topic", "agent-events", "--retries", "2"],
        &[("FLV_PROFILE_PATH", profile.as_path())],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot reach the Fluvio cluster at 127.0.0.1:{port}"
        )),
        "{err}"
    );
    assert!(
        err.contains("retrying in 500.0ms (attempt 1 of 3)"),
        "{err}"
    );
    assert!(err.contains("retrying in 1.0s (attempt 2 of 3)"), "{err}");
    assert!(err.contains("gave up after 3 attempts"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A profile of a cluster nothing answers at (a port bound, then released), in its own dir.
fn unreachable(name: &str) -> (crate::harness::Scratch, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = crate::harness::scratch(&format!("relay-{name}"));
    std::fs::write(
        dir.join("config"),
        profile_text(&format!("127.0.0.1:{port}")),
    )
    .unwrap();
    (dir, port)
}

/// The relay started against `profile_dir`'s profile, stderr piped; waits until its stderr has
/// said `ready` (the reader keeps the rest, until the relay closes it).
fn started(args: &[&str], profile_dir: &Path, ready: &str) -> (std::process::Child, Stderr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-fold"))
        .args(args)
        .env("FLV_PROFILE_PATH", profile_dir.join("config"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let err = Arc::new(Mutex::new(String::new()));
    let keep = Arc::clone(&err);
    let pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            keep.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !err.lock().unwrap().contains(ready) {
        let text = err.lock().unwrap().clone();
        assert!(Instant::now() < deadline, "never said {ready:?}: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, Stderr(err, Some(reader)))
}

/// A child's stderr as read so far; [`Stderr::all`] once it has exited.
struct Stderr(Arc<Mutex<String>>, Option<std::thread::JoinHandle<()>>);

impl Stderr {
    /// Everything, once the child has closed it.
    fn all(&mut self) -> String {
        if let Some(r) = self.1.take() {
            r.join().unwrap();
        }
        self.0.lock().unwrap().clone()
    }
}

/// Waits (60 s at most) for the child's exit code.
fn exit_code(child: &mut std::process::Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the relay did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigint_and_sigterm_during_the_connect_back_off_exit_0() {
    let (dir, _) = unreachable("signals");
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (mut child, mut err) = started(
            &["relay", "--topic", "agent-events", "--retries", "20"],
            &dir,
            "retrying in",
        );
        // SAFETY: kill sends a signal to the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let code = exit_code(&mut child);
        let text = err.all();
        assert_eq!(code, Some(0), "signal {signal}: {text}");
        assert!(text.contains("stopped before relaying"), "{text}");
    }
}

/// `GET path` on a loopback port: status and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

#[test]
fn metrics_and_health_answer_from_the_start_parsed_as_prometheus_text() {
    let (dir, _) = unreachable("metrics");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let (mut child, mut err) = started(
        &[
            "relay",
            "--topic",
            "agent-events",
            "--retries",
            "20",
            "--metrics",
            &addr,
        ],
        &dir,
        "retrying in",
    );
    let (status, body) = get(port, "/metrics");
    assert_eq!(status, 200, "{body}");
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let value = |name: &str, labels: &[(&str, &str)]| harness::sample(&scrape, name, labels);
    assert!(value("agent_fold_relay_connect_retries_total", &[]) >= 1.0);
    assert_eq!(
        value("agent_fold_relay_phase", &[("phase", "connecting")]),
        1.0
    );
    assert_eq!(
        value("agent_fold_relay_phase", &[("phase", "relaying")]),
        0.0
    );
    assert!(
        scrape
            .docs
            .contains_key("agent_fold_relay_records_in_total"),
        "every family is described, partitions or not: {:?}",
        scrape.docs.keys()
    );
    let (status, body) = get(port, "/healthz");
    assert_eq!(status, 503, "not healthy before it relays: {body}");
    assert!(body.contains("connecting"), "{body}");
    // A DNS-rebinding name is refused here too.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: attacker.test:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    // SAFETY: kill sends a signal to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let code = exit_code(&mut child);
    assert_eq!(code, Some(0), "{}", err.all());
}

#[test]
fn logs_are_lines_for_people_or_json_for_machines_filtered_by_rust_log() {
    let (dir, port) = unreachable("logs");
    let run = |extra: &[&str], rust_log: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-fold"));
        cmd.args(["relay", "--topic", "agent-events", "--retries", "1"])
            .args(extra)
            .env("FLV_PROFILE_PATH", dir.join("config"))
            .env_remove("RUST_LOG");
        if let Some(f) = rust_log {
            cmd.env("RUST_LOG", f);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let human = run(&[], None);
    let first = human.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "relay: cannot reach the Fluvio cluster at 127.0.0.1:{port}"
        )),
        "{human}"
    );
    let json = run(&["--log-format", "json"], None);
    let lines: Vec<serde_json::Value> = json
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let warn = lines.iter().find(|v| v["level"] == "WARN").expect(&json);
    assert!(
        warn["message"].as_str().unwrap().contains("retrying in"),
        "{warn}"
    );
    assert_eq!(warn["target"], "agent_fold::relay");
    assert!(warn["timestamp"].is_string());
    let quiet = run(&[], Some("error"));
    assert!(
        !quiet.contains("retrying in"),
        "RUST_LOG=error hides warnings: {quiet}"
    );
    assert!(
        quiet.contains("gave up after 2 attempts"),
        "the error itself stays: {quiet}"
    );
}
