//! The relay's loop over the in-memory stand-ins, with the native library as the module (the
//! `.wasm` runs the same loop in tests/suite/relay.rs): offsets, gaps, restarts, commit-after-ack,
//! refusals, idle exit, stop, retries.

use std::time::Duration;

use super::memory::{Cluster, ClusterEvent};
use super::pump::{self, Control, Exit, Settings};
use crate::corpus::corpus;
use crate::module::{Build, Module};
use crate::record::Rec;
use agent_fold_core::{Config, View};

/// The relay's config: the pressure view with `extra` params.
pub(crate) fn params(extra: &[(&str, &str)]) -> Config {
    let mut c = Config::from_params(extra.iter().copied()).expect("params");
    c.view = View::Pressure;
    c
}

/// Fast settings: short waits, an idle exit.
pub(crate) fn settings() -> Settings {
    Settings::brisk(Duration::from_millis(60), 700)
}

pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// The module's records for `records` at once from offset `base`, after `history` (at offsets
/// from `history_base`) through look_back.
fn reference(p: &Config, history: Option<(&[Rec], i64)>, records: &[Rec], base: i64) -> Vec<Rec> {
    let mut m = Module::new(&Build::Native, p, history).expect("params");
    m.process(records, base).expect("no refusal")
}

/// Relays partition 0 of `cluster` until it ends; the native library as the module.
/// `n` corpus records of `seed`, the relay's default params, and what `run` makes of them.
fn one_partition(n: usize, seed: u64) -> (Vec<Rec>, Config, Vec<Rec>) {
    let records = corpus(n, seed);
    let p = params(&[]);
    let want = reference(&p, None, &records, 0);
    (records, p, want)
}

fn relay(cluster: &Cluster, p: &Config, s: &Settings) -> anyhow::Result<Exit> {
    relay_beside(cluster, p, s, &Control::new(&[0]), std::future::pending())
}

/// Relays partition 0 while `beside` runs (it must not end first): what the relay ended with.
/// Native instances with `p`.
fn native(p: &Config) -> pump::Make {
    let p = p.clone();
    std::sync::Arc::new(move || Module::new(&Build::Native, &p, None))
}

fn relay_beside(
    cluster: &Cluster,
    p: &Config,
    s: &Settings,
    ctl: &Control,
    beside: impl Future<Output = ()>,
) -> anyhow::Result<Exit> {
    let make = native(p);
    block_on(async {
        let mut connect = cluster.connect(0);
        tokio::select! {
            e = pump::run(&mut connect, &make, 0, s, ctl) => e,
            _ = beside => unreachable!("the relay ends first"),
        }
    })
}

/// Relays partition 0 with the faults set until a send or commit hangs (a kill) or it ends:
/// whether it was killed.
fn killed(c: &Cluster, p: &Config, s: &Settings) -> bool {
    let ctl = Control::new(&[0]);
    let make = native(p);
    let mut connect = c.connect(0);
    block_on(c.unless_killed(pump::run(&mut connect, &make, 0, s, &ctl))).is_none()
}

#[track_caller]
pub(crate) fn no_loss(expected: &[Rec], out: &[Rec]) -> usize {
    super::memory::duplicates(expected, out).unwrap_or_else(|e| panic!("{e}"))
}

#[track_caller]
pub(crate) fn commits_follow_acks(journal: &[ClusterEvent]) {
    super::memory::commits_follow_acks(journal).unwrap_or_else(|e| panic!("{e}"))
}

fn commits(c: &Cluster) -> Vec<i64> {
    c.state()
        .journal
        .iter()
        .filter_map(|e| match e {
            ClusterEvent::Committed { next, .. } => Some(*next),
            _ => None,
        })
        .collect()
}

/// Records as text lines, for readable failures.
pub(crate) fn text(records: &[Rec]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let k = r.key.as_deref().map(String::from_utf8_lossy);
            format!("{k:?} {}", String::from_utf8_lossy(&r.value))
        })
        .collect()
}

/// Asserts two record lists are equal, naming the first difference.
#[track_caller]
pub(crate) fn same(got: &[Rec], want: &[Rec], what: &str) {
    let (g, w) = (text(got), text(want));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!("{what}: record {i} differs:\n got {}\nwant {}", g[i], w[i]);
    }
    assert_eq!(g.len(), w.len(), "{what}: record counts differ");
}

#[test]
fn relays_everything_keyed_and_commits_the_end() {
    let (records, p, want) = one_partition(3000, 5);
    let c = Cluster::new(vec![records.clone()]);
    assert_eq!(relay(&c, &p, &settings()).unwrap(), Exit::Idle);
    let st = c.state();
    same(
        &st.out,
        &want,
        "the module's records, in order, keys included",
    );
    assert!(st.out.iter().all(|r| r.key.is_some()), "keyed by session");
    assert_eq!(st.committed[0], Some(3000));
    commits_follow_acks(&st.journal);
    drop(st);
    let cs = commits(&c);
    assert!(
        cs.len() >= 3000 / 700 && cs.windows(2).all(|w| w[0] < w[1]),
        "{cs:?}"
    );
}

#[test]
fn a_failed_flush_commits_nothing_and_the_retry_repeats_never_loses() {
    let (records, p, want) = one_partition(2500, 6);
    let c = Cluster::new(vec![records]);
    c.state().faults.fail_flushes = [1, 2].into();
    assert_eq!(relay(&c, &p, &settings()).unwrap(), Exit::Idle);
    let st = c.state();
    commits_follow_acks(&st.journal);
    // The failed rounds' records landed unacknowledged, and came again after the reopen.
    let dups = no_loss(&want, &st.out);
    assert!(dups > 0, "the unacknowledged rounds were produced twice");
    assert_eq!(st.opens, 3);
    assert_eq!(st.committed[0], Some(2500));
}

#[test]
fn a_gap_is_refetched_from_the_expected_offset() {
    let (records, p, want) = one_partition(3000, 7);
    let c = Cluster::new(vec![records]);
    c.state().faults.skip_once = [(0, 1234), (0, 1235), (0, 2999)].into();
    c.state().faults.fetch = Some(400);
    relay(&c, &p, &settings()).unwrap();
    let st = c.state();
    same(&st.out, &want, "nothing skipped, nothing twice");
    let seeks: Vec<_> = st
        .journal
        .iter()
        .filter_map(|e| match e {
            ClusterEvent::Seek { from, .. } => Some(*from),
            _ => None,
        })
        .collect();
    assert_eq!(seeks, [0, 1234, 2999]);
}

#[test]
fn an_offset_that_never_comes_stops_with_its_offset_committed_below_it() {
    // A record in the middle never comes, or the last one: only the partition's end tells.
    for (missing, why) in [(640, "(got 641"), (999, "(the partition ends at 1000")] {
        let c = Cluster::new(vec![corpus(1000, 8)]);
        c.state().faults.skip_always = [(0, missing)].into();
        let e = relay(&c, &params(&[]), &settings()).unwrap_err();
        let said = format!("{e:#}");
        assert!(
            said.contains(&format!("offset {missing} never came {why}")),
            "{said}"
        );
        assert_eq!(c.state().committed[0], Some(missing));
    }
}

#[test]
fn a_restart_rebuilds_through_look_back_from_before_the_committed_offset() {
    let records = corpus(3000, 9);
    let p = params(&[]);
    for (lookback, from) in [(1000u64, 800i64), (100_000, 0)] {
        let c = Cluster::new(vec![records.clone()]);
        c.state().committed[0] = Some(1800);
        let s = Settings {
            lookback,
            ..settings()
        };
        let ctl = Control::new(&[0]);
        let make = native(&p);
        block_on(pump::run(&mut c.connect(0), &make, 0, &s, &ctl)).unwrap();
        let st = c.state();
        assert_eq!(
            st.journal[..2],
            [
                ClusterEvent::Read {
                    partition: 0,
                    from,
                    to: 1800
                },
                ClusterEvent::Seek {
                    partition: 0,
                    from: 1800
                }
            ]
        );
        let history = &records[from as usize..1800];
        let want = reference(&p, Some((history, from)), &records[1800..], 1800);
        same(&st.out, &want, &format!("look-back {lookback}"));
    }
    // A look-back over the whole history gives what a relay that never stopped gives.
    let mut whole = Module::new(&Build::Native, &p, None).unwrap();
    whole.process(&records[..1800], 0).unwrap();
    let tail = whole.process(&records[1800..], 1800).unwrap();
    let resumed = reference(&p, Some((&records[..1800], 0)), &records[1800..], 1800);
    assert_eq!(tail, resumed);
}

/// Invocations of a few records (look-back fed fetch by fetch, live rounds cut by bytes), with
/// small fetches and restarts: the same records as one invocation over the whole log.
#[test]
fn invocations_cut_by_bytes_through_restarts_give_what_one_invocation_gives() {
    let (records, p, want) = one_partition(3000, 12);
    let sizes: Vec<usize> = records.iter().map(Rec::bytes).collect();
    let max = 4 * sizes.iter().sum::<usize>() / sizes.len();
    assert!(sizes.iter().any(|s| *s > max), "some records go alone");
    let c = Cluster::new(vec![records]);
    c.state().faults.fetch = Some(97);
    let s = Settings {
        invocation_bytes: max,
        ..settings()
    };
    // A fetch is a round of invocations of a few records, settled by one commit: the kills
    // come after 1,000 records or so, then each look-back (the whole log before the commit)
    // takes ten fetches or more.
    for commits in [10, 7] {
        c.state().faults.hang_after_commits = Some(commits);
        assert!(killed(&c, &p, &s), "killed after {commits} commits");
    }
    assert_eq!(relay(&c, &p, &s).unwrap(), Exit::Idle);
    let st = c.state();
    let reads = st
        .journal
        .iter()
        .filter(|e| matches!(e, ClusterEvent::Read { .. }))
        .count();
    assert!(
        reads >= 2 * 1000 / 97,
        "both restarts rebuilt through look-back fetch by fetch ({reads} reads)"
    );
    let dups = no_loss(&want, &st.out);
    assert!(
        dups > 0,
        "the kills between ack and commit repeated records"
    );
}

#[test]
fn kills_between_produce_and_commit_repeat_records_and_lose_none() {
    let (records, p, want) = one_partition(4000, 10);
    let c = Cluster::new(vec![records]);
    let s = settings();
    // Killed while sending, after an acknowledgement before its commit, while sending again.
    for (sends, commits) in [(Some(37), None), (None, Some(2)), (Some(1), None)] {
        c.state().faults.hang_after_sends = sends;
        c.state().faults.hang_after_commits = commits;
        assert!(
            killed(&c, &p, &s),
            "killed after {sends:?} sends, {commits:?} commits"
        );
    }
    assert_eq!(relay(&c, &p, &s).unwrap(), Exit::Idle);
    let st = c.state();
    commits_follow_acks(&st.journal);
    let dups = no_loss(&want, &st.out);
    assert!(
        dups > 0,
        "a kill between produce and commit repeats records"
    );
    assert_eq!(st.committed[0], Some(4000));
}

#[test]
fn malformed_fail_stops_naming_the_offset_with_nothing_committed_past_it() {
    let records = corpus(3000, 11);
    let bad =
        crate::corpus::first_malformed(&records).expect("the corpus has malformed records") as i64;
    let p = params(&[("malformed", "fail")]);
    for batch in [700, bad as usize] {
        let c = Cluster::new(vec![records.clone()]);
        let s = Settings {
            batch,
            ..settings()
        };
        let e = relay(&c, &p, &s).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains(&format!("refused the record at offset {bad}")),
            "{text}"
        );
        let st = c.state();
        assert_eq!(st.committed[0], Some(bad), "batch {batch}");
        same(
            &st.out,
            &reference(&params(&[]), None, &records[..bad as usize], 0),
            "before the refusal",
        );
        commits_follow_acks(&st.journal);
    }
}

#[test]
fn idle_exit_waits_for_a_live_producer_to_stop() {
    let records = corpus(1500, 12);
    let p = params(&[]);
    let want = reference(&p, None, &records, 0);
    let c = Cluster::new(vec![Vec::new()]);
    let s = Settings {
        idle_exit: Some(Duration::from_millis(150)),
        ..settings()
    };
    let started = std::time::Instant::now();
    let produce = async {
        for chunk in records.chunks(100) {
            tokio::time::sleep(Duration::from_millis(40)).await;
            c.append(0, chunk.iter().cloned());
        }
        std::future::pending::<()>().await
    };
    let exit = relay_beside(&c, &p, &s, &Control::new(&[0]), produce);
    assert_eq!(exit.unwrap(), Exit::Idle);
    assert!(started.elapsed() >= Duration::from_millis(15 * 40 + 150));
    same(&c.state().out, &want, "live");
    // Nothing at all: idle after the idle time.
    let empty = Cluster::new(vec![Vec::new()]);
    assert_eq!(relay(&empty, &p, &s).unwrap(), Exit::Idle);
}

#[test]
fn stop_ends_after_the_round_in_hand_flushed_and_committed() {
    let records = corpus(3000, 13);
    let p = params(&[]);
    let c = Cluster::new(vec![records.clone()]);
    let s = Settings {
        idle_exit: None,
        batch: 100,
        ..settings()
    };
    let ctl = Control::new(&[0]);
    let stop = async {
        while c.state().committed[0].unwrap_or(0) < 1000 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        ctl.stop();
        std::future::pending::<()>().await
    };
    let exit = relay_beside(&c, &p, &s, &ctl, stop);
    assert_eq!(exit.unwrap(), Exit::Stopped);
    let st = c.state();
    let done = st.committed[0].unwrap();
    assert!((1000..3000).contains(&done), "{done}");
    assert!(st.pending.is_empty(), "nothing sent without a flush");
    commits_follow_acks(&st.journal);
    same(
        &st.out,
        &reference(&p, None, &records[..done as usize], 0),
        "until stopped",
    );
}

/// Rounds are settled (flushed, acknowledged, committed) every `commit_every` while records
/// keep coming, and at once when the stream pauses or the relay stops.
#[test]
fn rounds_settle_every_commit_every_on_a_pause_and_on_stop() {
    let (records, p, want) = one_partition(3000, 15);
    let backlog = || {
        let c = Cluster::new(vec![records.clone()]);
        c.state().faults.fetch = Some(100);
        c
    };
    let commits = |c: &Cluster| -> Vec<i64> {
        let st = c.state();
        commits_follow_acks(&st.journal);
        st.journal
            .iter()
            .filter_map(|e| match e {
                ClusterEvent::Committed { next, .. } => Some(*next),
                _ => None,
            })
            .collect()
    };
    // Every round settled: a commit a fetch.
    let c = backlog();
    assert_eq!(relay(&c, &p, &settings()).unwrap(), Exit::Idle);
    assert_eq!(commits(&c), (1..=30).map(|i| i * 100).collect::<Vec<i64>>());
    // Settled hourly: the backlog comes without a pause, so one commit, at its end.
    let hourly = Settings {
        commit_every: Duration::from_secs(3600),
        ..settings()
    };
    let c = backlog();
    assert_eq!(relay(&c, &p, &hourly).unwrap(), Exit::Idle);
    assert_eq!(commits(&c), [3000]);
    same(&c.state().out, &want, "settled hourly");
    // Caught up with the partition's end: settled at once, not after the wait that tells a
    // pause (the stream's next poll waits 2 s for records that never come).
    let s = Settings {
        wait: Duration::from_secs(2),
        idle_exit: None,
        ..hourly.clone()
    };
    let c = backlog();
    let ctl = Control::new(&[0]);
    let began = std::time::Instant::now();
    let watch = async {
        while commits(&c).is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let at = began.elapsed();
        ctl.stop();
        assert!(at < s.wait, "the first commit came {at:?} after the start");
        std::future::pending::<()>().await
    };
    assert_eq!(
        relay_beside(&c, &p, &s, &ctl, watch).unwrap(),
        Exit::Stopped
    );
    assert_eq!(commits(&c), [3000]);
    // Stopped in the backlog: what was relayed is settled before the exit.
    let c = backlog();
    let ctl = Control::new(&[0]);
    let stop = async {
        while c
            .state()
            .journal
            .iter()
            .filter(|e| **e == ClusterEvent::Sent)
            .count()
            < 300
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        ctl.stop();
        std::future::pending::<()>().await
    };
    let s = Settings {
        idle_exit: None,
        ..hourly
    };
    assert_eq!(relay_beside(&c, &p, &s, &ctl, stop).unwrap(), Exit::Stopped);
    let done = commits(&c);
    assert!(matches!(done[..], [d] if d > 0 && d < 3000), "{done:?}");
    let st = c.state();
    assert!(st.pending.is_empty(), "nothing sent without a flush");
    same(
        &st.out,
        &reference(&p, None, &records[..done[0] as usize], 0),
        "until stopped",
    );
}

#[test]
fn an_unreachable_cluster_is_retried_with_back_off_then_a_clear_error() {
    let p = params(&[]);
    let c = Cluster::new(vec![corpus(200, 14)]);
    c.state().faults.refuse_opens = 2;
    assert_eq!(relay(&c, &p, &settings()).unwrap(), Exit::Idle);
    assert_eq!(c.state().opens, 3);
    let c = Cluster::new(vec![corpus(200, 14)]);
    c.state().faults.refuse_opens = 100;
    let s = Settings {
        retries: 3,
        ..settings()
    };
    let e = relay(&c, &p, &s).unwrap_err();
    let text = format!("{e:#}");
    assert!(text.contains("failed 4 times in a row"), "{text}");
    assert!(text.contains("connection refused"), "{text}");
    assert_eq!(c.state().opens, 4);
}

#[test]
fn each_partition_has_its_own_instance_and_offsets() {
    // Sessions split across two partitions by key, as a keyed producer splits them.
    let records = corpus(3000, 15);
    let mut parts = vec![Vec::new(), Vec::new()];
    for r in &records {
        let k = r
            .key
            .as_ref()
            .map_or(0, |k| k.iter().map(|b| *b as usize).sum::<usize>());
        parts[k % 2].push(r.clone());
    }
    let p = params(&[]);
    let c = Cluster::new(parts.clone());
    let ctl = Control::new(&[0, 1]);
    let s = settings();
    let (a, b) = block_on(async {
        let (make0, make1) = (native(&p), native(&p));
        let (mut c0, mut c1) = (c.connect(0), c.connect(1));
        tokio::join!(
            pump::run(&mut c0, &make0, 0, &s, &ctl),
            pump::run(&mut c1, &make1, 1, &s, &ctl)
        )
    });
    assert_eq!((a.unwrap(), b.unwrap()), (Exit::Idle, Exit::Idle));
    let st = c.state();
    assert_eq!(
        st.committed,
        [Some(parts[0].len() as i64), Some(parts[1].len() as i64)]
    );
    let mut want = reference(&p, None, &parts[0], 0);
    want.extend(reference(&p, None, &parts[1], 0));
    assert_eq!(no_loss(&want, &st.out), 0);
    assert_eq!(st.out.len(), want.len());
    let stats = ctl.stats();
    assert_eq!(stats[&0].records_in + stats[&1].records_in, 3000);
}

#[test]
fn a_commit_below_the_first_stored_offset_resumes_at_it() {
    let records = corpus(500, 16);
    let p = params(&[]);
    let c = Cluster::new(vec![records.clone()]);
    c.state().first[0] = 100;
    c.state().committed[0] = Some(40);
    relay(&c, &p, &settings()).unwrap();
    let st = c.state();
    assert_eq!(
        st.journal[0],
        ClusterEvent::Seek {
            partition: 0,
            from: 100
        }
    );
    same(
        &st.out,
        &reference(&p, None, &records[100..], 100),
        "from the first stored",
    );
}

/// `agent-fold relay …` as the command line parses it.
fn args(line: &[&str]) -> Result<super::Args, clap::Error> {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        relay: super::Args,
    }
    Cli::try_parse_from(std::iter::once("relay").chain(line.iter().copied())).map(|c| c.relay)
}

#[test]
fn flags_parse_into_the_relay_settings() {
    let a = args(&["--topic", "agent-events"]).unwrap();
    assert_eq!(a.to(), "agent-events-pressure");
    assert_eq!(a.consumer, "agent-fold-relay");
    assert_eq!(a.select(3).unwrap(), [0, 1, 2]);
    let s = a.settings();
    assert_eq!((s.lookback, s.idle_exit, s.retries), (100_000, None, 8));
    assert_eq!(s.commit_every, Duration::from_secs(1));
    assert_eq!(a.config().unwrap(), params(&[]));

    let a = args(&[
        "--topic",
        "t",
        "--to",
        "t-meter",
        "--consumer",
        "relay-2",
        "--partition",
        "2",
        "--partition",
        "0",
        "--partition",
        "2",
        "--lookback",
        "500",
        "--idle-exit",
        "1.5",
        "--retries",
        "2",
        "--commit-every",
        "0.25",
        "-e",
        "capacity=200000",
        "-e",
        "emit=pressure",
        "--smartmodule",
        "af",
    ])
    .unwrap();
    assert_eq!(
        (a.to(), a.consumer.as_str()),
        ("t-meter".to_string(), "relay-2")
    );
    assert_eq!(a.select(3).unwrap(), [0, 2]);
    let e = a.select(2).unwrap_err().to_string();
    assert!(e.contains("--partition 2") && e.contains("0..2"), "{e}");
    let s = a.settings();
    assert_eq!(s.lookback, 500);
    assert_eq!(s.idle_exit, Some(Duration::from_millis(1500)));
    assert_eq!(s.retries, 2);
    assert_eq!(s.commit_every, Duration::from_millis(250));
    assert_eq!(a.config().unwrap(), params(&[("capacity", "200000")]));
    assert_eq!(a.smartmodule.as_deref(), Some("af"));
    assert_eq!(a.module_name(), "SmartModule af");
    let a = args(&["--topic", "t", "--wasm", "m.wasm"]).unwrap();
    assert_eq!(a.module_name(), "m.wasm");
}

#[test]
fn bad_flags_are_refused_before_any_work() {
    let e = args(&["--topic", "t", "-e", "emit=frames"])
        .unwrap()
        .config()
        .unwrap_err();
    assert!(e.to_string().contains("emit=frames is refused"), "{e}");
    let e = args(&["--topic", "t", "-e", "colour=blue"])
        .unwrap()
        .config()
        .unwrap_err();
    assert!(e.to_string().contains("colour"), "{e}");
    let e = args(&["--topic", "t", "-e", "malformed=maybe"])
        .unwrap()
        .config()
        .unwrap_err();
    assert!(e.to_string().contains("malformed"), "{e}");
    for bad in [
        &["--topic", "Agent.Events"][..],
        &["--topic", "t", "--to", "t.pressure"],
        &["--topic", "t", "--idle-exit", "0"],
        &["--topic", "t", "--idle-exit", "soon"],
        &["--topic", "t", "--commit-every", "-1"],
        &["--topic", "t", "--smartmodule", "a", "--wasm", "b.wasm"],
        &["--topic", "t", "-e", "emit"],
        &["--to", "x"],
    ] {
        assert!(args(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn progress_and_summary_lines() {
    use std::collections::BTreeMap;
    let mut before = BTreeMap::new();
    before.insert(0, super::pump::Stats::default());
    let mut now = before.clone();
    assert_eq!(
        super::progress_line(&before, &now, Duration::from_secs(5)),
        None
    );
    let st = now.get_mut(&0).unwrap();
    (st.records_in, st.records_out, st.next, st.end, st.live) = (5000, 1000, 5000, 7000, true);
    let line = super::progress_line(&before, &now, Duration::from_secs(5)).unwrap();
    assert_eq!(line, "in 1000/s, out 200/s; partition 0 at 5000, lag 2000");
    // Two partitions relaying at once: the rate is over the span they cover together, not
    // over their busy times added up.
    let t = std::time::Instant::now();
    let ms = Duration::from_millis;
    let st = now.get_mut(&0).unwrap();
    (st.busy, st.relaying) = (ms(250), Some((t, t + ms(250))));
    let mut other = now[&0].clone();
    (other.busy, other.relaying) = (ms(400), Some((t + ms(100), t + ms(500))));
    now.insert(1, other);
    let sum = super::summary(&now, Duration::from_secs(3), &Ok(Exit::Idle));
    assert!(
        sum.starts_with("idle after 3.0 s: 10000 records in, 2000 out; 0.50 s relaying"),
        "{sum}"
    );
    assert!(sum.contains("20000 records/s"), "{sum}");
}

#[test]
fn the_sibling_topic_is_laid_out_as_the_event_topic_unless_the_flags_say_otherwise() {
    use super::cluster::Layout;
    let events = Layout {
        partitions: 2,
        replication: 3,
    };
    let a = args(&["--topic", "t"]).unwrap();
    assert_eq!(a.to_layout(events), events, "replication follows, not 1");
    let a = args(&["--topic", "t", "--to-partitions", "8"]).unwrap();
    assert_eq!(
        a.to_layout(events),
        Layout {
            partitions: 8,
            replication: 3
        }
    );
    let a = args(&["--topic", "t", "--to-replication", "1"]).unwrap();
    assert_eq!(a.to_layout(events).replication, 1);
    for bad in ["0", "-1", "many"] {
        assert!(
            args(&["--topic", "t", "--to-replication", bad]).is_err(),
            "{bad}"
        );
        assert!(
            args(&["--topic", "t", "--to-partitions", bad]).is_err(),
            "{bad}"
        );
    }
}
