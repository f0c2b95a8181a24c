//! `agent-fold serve --topic`: a real local Fluvio cluster when `fluvio topic list` works (else
//! these print skipped), driven with the `fluvio` CLI; and a profile whose cluster is not there.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};

use super::harness::{Server, scratch};
use super::{p, seq_of};

/// The tests take turns on the one local cluster: its SC can stall a topic's creation for a
/// minute while another test deletes and recreates a topic under a live consumer.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    CLUSTER.lock().unwrap_or_else(|p| p.into_inner())
}

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

/// The `fluvio` CLI against the local cluster; `None` when it fails or is missing.
fn fluvio(args: &[&str], stdin: Option<&str>) -> Option<String> {
    let mut child = Command::new("fluvio")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    if let Some(text) = stdin {
        child.stdin.take()?.write_all(text.as_bytes()).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        eprintln!(
            "fluvio {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A local cluster to talk to, or `None` after printing why not.
fn cluster() -> bool {
    let up = fluvio(&["topic", "list"], None).is_some();
    if !up {
        println!("skipped: no local Fluvio cluster (`fluvio topic list` fails)");
    }
    up
}

/// Creates a topic, trying again when the SC does not answer: right after another test's topic
/// was deleted under a live consumer, the local SC can leave a creation unanswered for a minute
/// (its log: "trying to update replica … that doesn't exist").
fn create_topic(name: &str) -> bool {
    (0..4).any(|attempt| {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_secs(2));
            let _ = fluvio(&["topic", "delete", name], None);
        }
        // `fluvio` waits 60 s for an answer; coreutils' `timeout` waits 15.
        Command::new("timeout")
            .args(["15", "fluvio", "topic", "create", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// A topic made for one test, deleted when dropped.
struct Topic(String);

impl Topic {
    fn new(name: &str) -> Topic {
        let t = Topic(format!("agent-fold-serve-{name}-{}", std::process::id()));
        let _ = fluvio(&["topic", "delete", &t.0], None);
        assert!(create_topic(&t.0), "topic create {}", t.0);
        t
    }

    fn produce(&self, lines: &str) {
        assert!(
            fluvio(&["produce", &self.0], Some(lines)).is_some(),
            "produce to {}",
            self.0
        );
    }
}

impl Drop for Topic {
    fn drop(&mut self) {
        let _ = fluvio(&["topic", "delete", &self.0], None);
    }
}

#[test]
fn a_topic_is_consumed_and_a_lost_topic_is_reported_and_recovered() {
    let _turn = turn();
    if !cluster() {
        return;
    }
    let topic = Topic::new("live");
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
    assert_eq!(events.next_of("pressure").json()["seq"], 2, "live over SSE");

    // The topic goes away: the page says so, and the server keeps serving.
    assert!(fluvio(&["topic", "delete", &topic.0], None).is_some());
    let status = loop {
        let st = events.next_of("status").json();
        if st["state"] == "error" {
            break st;
        }
    };
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
    let _ = std::fs::remove_dir_all(&dir);
}
