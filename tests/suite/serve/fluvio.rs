//! `agent-fold serve --topic`: a real local Fluvio cluster when `fluvio topic list` works (else
//! these print skipped), driven with the `fluvio` CLI; and a profile whose cluster is not there.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;

use super::harness::{Server, scratch};
use super::{p, seq_of};
use crate::common::fluvio::{Topic, cluster, create_topic, fluvio, live, turn};
use crate::records::pressure_line;

/// A Fluvio profile file whose cluster is at `endpoint`.
fn profile(dir: &Path, endpoint: &str) -> String {
    let path = dir.join("fluvio-config");
    let text = format!(
        "version = \"2.0\"\ncurrent_profile = \"t\"\n\n[profile.t]\ncluster = \"t\"\n\n\
         [cluster.t]\nendpoint = \"{endpoint}\"\nuse_spu_local_address = false\n\n\
         [cluster.t.tls]\ntls_policy = \"disabled\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_topic_is_consumed_and_a_lost_topic_is_reported_and_recovered() {
    let Some((_turn, topic)) = live("live") else {
        return;
    };
    topic.produce(&(p("a", 1, 0.1) + "not a record\n"));
    let s = Server::start(&["--topic", &topic.0]);
    let state = s.wait_state("a at seq 1", |st| seq_of(st, "a") == Some(1));
    assert_eq!(state["status"]["state"], "live");
    assert_eq!(
        state["status"]["source"],
        format!("Fluvio topic {}", topic.0)
    );
    assert_eq!(
        (
            state["status"]["records"].as_u64(),
            state["status"]["skipped"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let mut events = s.events(state["id"].as_str());
    topic.produce(&p("a", 2, 0.2));
    let (row, _) = events.next_row("a", |r| r["seq"] == 2);
    assert_eq!(row["record"]["seq"], 2, "live over SSE");

    // The topic goes away: the page says so, and the server keeps serving.
    assert!(fluvio(&["topic", "delete", &topic.0], None).is_some());
    let status = events.next_status(|st| st["state"] == "error");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("was deleted") || message.contains("no topic"),
        "{status}"
    );
    assert_eq!(s.get("/").status, 200);
    // It comes back: consumed again from its start.
    assert!(fluvio(&["topic", "create", &topic.0], None).is_some());
    topic.produce(&p("b", 1, 0.3));
    let state = s.wait_state("b from the new topic", |st| seq_of(st, "b") == Some(1));
    assert_eq!(state["status"]["state"], "live");
}

#[test]
fn an_unreachable_cluster_is_reported_and_a_cluster_that_comes_is_used() {
    let _turn = turn();
    let dir = scratch("cluster");
    // A port with nobody on it, to be the cluster's later.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = profile(&dir, &format!("127.0.0.1:{port}"));
    let name = format!("agent-fold-serve-proxy-{}", std::process::id());
    let s = Server::start_with(
        &["--topic", &name],
        &[("FLV_PROFILE_PATH", &config)],
        Stdio::null(),
    );
    let state = s.wait_state("an error", |st| st["status"]["state"] == "error");
    let message = state["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot reach the Fluvio cluster"),
        "{message}"
    );
    assert_eq!(s.get("/").status, 200, "the page is served all the same");

    if !cluster() {
        return;
    }
    // The cluster "comes up" at that address: a proxy to the local one's SC.
    let topic = Topic(name);
    assert!(create_topic(&topic.0), "topic create {}", topic.0);
    topic.produce(&p("c", 1, 0.4));
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is still free");
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(sc) = TcpStream::connect("127.0.0.1:9003") else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), sc.try_clone().unwrap()),
                (sc, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    let state = s.wait_state("c, once the cluster answers", |st| {
        seq_of(st, "c") == Some(1)
    });
    assert_eq!(state["status"]["state"], "live");
}

/// A pressure record with `untilCompactTokens`, unstamped (so never older than `--idle`).
fn until(session: &str, seq: u64, until: u64) -> String {
    let fields = serde_json::json!({"pressureTokens": 167_000 - until, "capacity": 200000,
                                    "compactAtTokens": 167000, "untilCompactTokens": until,
                                    "stateVersion": 5});
    pressure_line(session, seq, fields)
}

/// A board restarted on a topic reads each partition from its end less `--look-back`: what lies
/// before is not read, what it re-reads rebuilds the alert state and pages no one; a crossing
/// after it pages as ever.
#[test]
fn a_restart_reads_a_bounded_look_back_and_pages_no_one_for_it() {
    let Some((_turn, topic)) = live("lookback") else {
        return;
    };
    let early: String = (1..=30).map(|n| until("early", n, 90_000)).collect();
    topic.produce(&(early + &until("x", 1, 50_000) + &until("x", 2, 10_000)));
    let hook = agent_fold_testkit::webhook::Receiver::start(false).unwrap();
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let s = Server::start(&[
        "--topic",
        &topic.0,
        "--look-back",
        "2",
        "--alert",
        "until<20000",
        "--alert-webhook",
        &url,
    ]);
    let state = s.wait_state("x caught up", |st| {
        seq_of(st, "x") == Some(2)
            && !st["status"]["message"]
                .as_str()
                .unwrap()
                .contains("catching")
    });
    assert!(
        seq_of(&state, "early").is_none(),
        "before the look-back: not read"
    );
    assert_eq!(state["status"]["records"], 2);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        hook.bodies().is_empty(),
        "history pages no one: {:?}",
        hook.bodies()
    );
    let m = s.metrics();
    assert_eq!(
        crate::harness::sample(&m, "agent_fold_serve_alerts_caught_up_total", &[]),
        1.0
    );
    topic.produce(&(until("y", 1, 60_000) + &until("y", 2, 5_000)));
    s.wait_state("y", |st| seq_of(st, "y") == Some(2));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while hook.bodies().is_empty() {
        assert!(std::time::Instant::now() < deadline, "y's crossing paged");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sessions: Vec<String> = hook
        .bodies()
        .iter()
        .map(|b| b["session"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sessions, ["y"]);
}
