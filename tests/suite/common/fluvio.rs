//! The local Fluvio cluster the live tests share, driven with the `fluvio` CLI: a test takes its
//! turn, asks whether a cluster answers (else it prints why it skips), and makes topics of its
//! own that are deleted when it ends.

use std::io::Write;
use std::process::{Command, Stdio};

/// The tests take turns on the one local cluster: its SC can stall a topic's creation for a
/// minute while another test deletes and recreates a topic under a live consumer.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn turn() -> std::sync::MutexGuard<'static, ()> {
    CLUSTER.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `fluvio` CLI against the local cluster; `None` when it fails or is missing.
pub(crate) fn fluvio(args: &[&str], stdin: Option<&str>) -> Option<String> {
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
pub(crate) fn cluster() -> bool {
    let up = fluvio(&["topic", "list"], None).is_some();
    if !up {
        println!("skipped: no local Fluvio cluster (`fluvio topic list` fails)");
    }
    up
}

/// Creates a topic, trying again when the SC does not answer: right after another test's topic
/// was deleted under a live consumer, the local SC can leave a creation unanswered for a minute
/// (its log: "trying to update replica … that doesn't exist").
pub(crate) fn create_topic(name: &str) -> bool {
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

/// The cluster for one test: its turn held and a topic of its own named for `name`; `None`,
/// having printed why it is skipped, when there is no local cluster.
pub(crate) fn live(name: &str) -> Option<(std::sync::MutexGuard<'static, ()>, Topic)> {
    let turn = turn();
    cluster().then(|| (turn, Topic::new(name)))
}

/// A topic made for one test, deleted when dropped.
pub(crate) struct Topic(pub String);

impl Topic {
    pub(crate) fn new(name: &str) -> Topic {
        let t = Topic(format!("agent-fold-test-{name}-{}", std::process::id()));
        let _ = fluvio(&["topic", "delete", &t.0], None);
        assert!(create_topic(&t.0), "topic create {}", t.0);
        t
    }

    /// Every record of the topic so far, from the beginning, as `key\tvalue` lines.
    pub(crate) fn keyed_records(&self) -> String {
        let all = [
            "-B",
            "-d",
            "--maxbytes",
            "100000000",
            "-F",
            "{{key}}\t{{value}}",
        ];
        let args: Vec<&str> = ["consume", &self.0].into_iter().chain(all).collect();
        fluvio(&args, None).unwrap_or_else(|| panic!("consume {}", self.0))
    }

    pub(crate) fn produce(&self, lines: &str) {
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
