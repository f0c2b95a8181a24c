//! Alerts in production (docs/serve.md, "Alerts"): a fleet's burst delivers every crossing, a
//! crossing then a compaction fires then resolves on the webhook and on Alertmanager's v2 API
//! (held to its schema), and the receivers' outcomes are in `/metrics`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::write;
use crate::harness::{Server, sample};
use crate::records::pressure_line;
use agent_fold_testkit::alerts::{Crossings, Rule};
use agent_fold_testkit::webhook::Receiver;

fn rec(session: &str, seq: u64, until: u64) -> String {
    let fields = json!({"pressureTokens": 167_000 - until.min(167_000), "capacity": 200000,
                        "compactAtTokens": 167000, "untilCompactTokens": until,
                        "agent": "claude-code", "model": "claude-opus-4-6", "stateVersion": 5});
    pressure_line(session, seq, fields)
}

/// A board reading its standard input, alerting on `until<20000`, told by `args` where to.
fn alerting(args: &[&str]) -> Server {
    let all = [&["--alert", "until<20000"][..], args, &["-"]].concat();
    Server::start_with(&all, &[], Stdio::piped())
}

/// Waits until `f` holds, or fails saying what was seen.
fn wait_for(what: &str, secs: u64, f: impl Fn() -> bool, seen: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: {}", seen());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A restart's catch-up as the issue measured it: 10,000 sessions' records written at once.
/// Every crossing and every crossing back reaches the webhook — none dropped, none merged —
/// in order per session.
#[test]
fn a_fleet_s_burst_delivers_every_crossing() {
    let hook = Receiver::start(false).unwrap();
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let mut s = alerting(&["--alert-webhook", &url]);
    let mut want = Crossings::new(vec![Rule::parse("until<20000").unwrap()]);
    // A fixed walk per session about the threshold (an LCG: the same burst every run).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text = String::new();
    let mut records = 0;
    for i in 0..10_000 {
        let id = format!("s{i}");
        for seq in 0..(6 + i % 2) {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let until = (x >> 33) % 200_000;
            text += &rec(&id, seq, until);
            want.observe(&id, Some(until), None, None, None);
            records += 1;
        }
    }
    let (fired, resolved) = (
        want.total("until<20000"),
        want.total_resolved("until<20000"),
    );
    assert!(
        records == 65_000 && fired > 5_000 && resolved > 1_000,
        "a burst that crosses: {records} records, {fired} crossings, {resolved} back"
    );
    write(&mut s, &text);
    wait_for(
        "every notice delivered",
        120,
        || hook.bodies().len() as u64 >= fired + resolved,
        || format!("{} of {}", hook.bodies().len(), fired + resolved),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(hook.alerts(), want.counts(), "every crossing, once");
    assert_eq!(hook.notices("resolved"), want.resolutions());
    // Per session, in order: seqs only grow.
    let mut last: std::collections::HashMap<String, u64> = Default::default();
    for n in hook.bodies() {
        let (id, seq) = (n["session"].as_str().unwrap(), n["seq"].as_u64().unwrap());
        if let Some(before) = last.insert(id.to_owned(), seq) {
            assert!(seq > before, "{id}: {seq} after {before}");
        }
        assert!(n.get("merged").is_none(), "nothing merged: {n}");
    }
    let m = s.metrics();
    let notices = |o| webhook_notices(&m, o);
    assert_eq!(notices("delivered"), (fired + resolved) as f64);
    assert_eq!((notices("merged"), notices("dropped")), (0.0, 0.0));
}

/// The webhook's notices with `outcome` in a scrape of `/metrics`.
fn webhook_notices(m: &prometheus_parse::Scrape, outcome: &str) -> f64 {
    sample(
        m,
        "agent_fold_serve_alert_notices_total",
        &[("receiver", "webhook"), ("outcome", outcome)],
    )
}

/// A webhook receiver and an Alertmanager stand-in, and the URLs `serve` is given for each.
fn both_receivers() -> (Receiver, Receiver, String, String) {
    let hook = Receiver::start(false).unwrap();
    let am = Receiver::alertmanager().unwrap();
    let hook_url = format!("http://127.0.0.1:{}/hook", hook.port);
    let am_url = format!("http://127.0.0.1:{}/", am.port);
    (hook, am, hook_url, am_url)
}

/// A crossing then a compaction: a firing then a resolved notice on the webhook, and on
/// Alertmanager's endpoint the same alert (same labels) firing with an end ahead, then with its
/// end at the crossing back; every body is a valid v2 `postableAlerts`.
#[test]
fn a_crossing_then_a_compaction_fires_then_resolves_on_both_receivers() {
    let (hook, am, hook_url, am_url) = both_receivers();
    let mut s = alerting(&[
        "--alert-webhook",
        &hook_url,
        "--alertmanager",
        &am_url,
        "--external-url",
        "http://board.example:8080/",
    ]);
    write(&mut s, &(rec("a/b", 1, 50_000) + &rec("a/b", 2, 12_000)));
    wait_for(
        "the firing on both",
        30,
        || !hook.bodies().is_empty() && !am.bodies().is_empty(),
        || format!("{:?} {:?}", hook.bodies(), am.refused()),
    );
    write(&mut s, &rec("a/b", 3, 130_000));
    wait_for(
        "the resolution on both",
        30,
        || hook.bodies().len() >= 2 && am.bodies().len() >= 2,
        || format!("{:?} {:?} {:?}", hook.bodies(), am.bodies(), am.refused()),
    );
    assert_eq!(am.refused(), Vec::<String>::new(), "every body is v2");
    let h = hook.bodies();
    assert_eq!(
        h.iter()
            .map(|n| (n["status"].as_str().unwrap(), n["seq"].as_u64().unwrap()))
            .collect::<Vec<_>>(),
        [("firing", 2), ("resolved", 3)]
    );
    assert_eq!(
        h[0]["since"], h[1]["since"],
        "the resolution ends that alert"
    );
    let a = am.bodies();
    let (firing, resolved) = (&a[0], &a[1]);
    assert_eq!(firing["labels"], resolved["labels"], "one alert");
    assert_eq!(
        firing["labels"],
        json!({"alertname": "ContextCompactionNear", "rule": "until<20000", "session": "a/b",
               "agent": "claude-code", "model": "claude-opus-4-6"})
    );
    assert_eq!(
        firing["generatorURL"],
        "http://board.example:8080/#session=a%2Fb"
    );
    assert!(
        firing["annotations"]["summary"]
            .as_str()
            .unwrap()
            .contains("12000 tokens before the next automatic compaction")
    );
    let t = |v: &Value| agent_fold_core::time::parse(v.as_str().unwrap()).unwrap() / 1_000_000;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        t(&firing["endsAt"]) > now + 60_000,
        "a firing alert ends ahead, re-sent before"
    );
    assert!(t(&resolved["endsAt"]) <= now, "a resolved one has ended");
    assert_eq!(firing["startsAt"], resolved["startsAt"]);
    let m = s.metrics();
    assert_eq!(
        sample(
            &m,
            "agent_fold_serve_alert_notices_total",
            &[("receiver", "alertmanager"), ("outcome", "delivered")]
        ),
        2.0
    );
}

/// The schema check itself refuses what Alertmanager refuses, so the test above can fail.
#[test]
fn the_v2_check_refuses_what_alertmanager_refuses() {
    use agent_fold_testkit::webhook::check_v2_alerts as check;
    let good = json!([{"labels": {"alertname": "X"}, "startsAt": "2026-12-05T00:00:00Z",
                       "endsAt": "2026-12-05T01:04:00.5+01:00", "generatorURL": "http://h/#s"}]);
    assert_eq!(check("/api/v2/alerts", &good), Ok(()));
    for (path, bad) in [
        ("/api/v1/alerts", good.clone()),
        ("/api/v2/alerts", json!({"labels": {"a": "b"}})),
        ("/api/v2/alerts", json!([{"labels": {}}])),
        ("/api/v2/alerts", json!([{"labels": {"bad-name": "x"}}])),
        ("/api/v2/alerts", json!([{"labels": {"a": 1}}])),
        (
            "/api/v2/alerts",
            json!([{"labels": {"a": "b"}, "status": "firing"}]),
        ),
        (
            "/api/v2/alerts",
            json!([{"labels": {"a": "b"}, "startsAt": "2026-12-05 00:00:00"}]),
        ),
        (
            "/api/v2/alerts",
            json!([{"labels": {"a": "b"}, "startsAt": "2026-12-05T01:00:00Z",
                    "endsAt": "2026-12-05T00:00:00Z"}]),
        ),
    ] {
        assert!(check(path, &bad).is_err(), "{path} {bad}");
    }
}

/// A firing alert is sent again while it fires — the same alert (labels, start), its end moved
/// ahead — and not after its resolution.
#[test]
fn alertmanager_hears_a_firing_alert_again_until_it_resolves() {
    let am = Receiver::alertmanager().unwrap();
    let am_url = format!("http://127.0.0.1:{}", am.port);
    let mut s = alerting(&["--alertmanager", &am_url, "--resend", "0.3"]);
    write(&mut s, &(rec("x", 1, 40_000) + &rec("x", 2, 5_000)));
    wait_for(
        "three sends",
        30,
        || am.bodies().len() >= 3,
        || format!("{:?}", am.bodies()),
    );
    let sent = am.bodies();
    assert!(
        sent.iter()
            .all(|a| a["labels"] == sent[0]["labels"] && a["startsAt"] == sent[0]["startsAt"])
    );
    let ends: Vec<&str> = sent.iter().map(|a| a["endsAt"].as_str().unwrap()).collect();
    assert!(ends.windows(2).all(|w| w[0] <= w[1]), "{ends:?}");
    write(&mut s, &rec("x", 3, 150_000));
    wait_for(
        "the resolution",
        30,
        || {
            am.bodies().iter().any(|a| {
                a["annotations"]["summary"]
                    .as_str()
                    .unwrap()
                    .contains("back past")
            })
        },
        || format!("{:?}", am.bodies()),
    );
    let n = am.bodies().len();
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(am.bodies().len(), n, "nothing sent again once resolved");
    assert_eq!(am.refused(), Vec::<String>::new());
}

/// A receiver down for a while loses nothing: each lane tries again, backing off, for as long
/// as its notices wait (past the three tries that once gave them up), and once the receiver
/// is back every notice arrives, each session's once and in order, none counted failed.
/// `AGENT_FOLD_WEBHOOK_OUTAGE_SECS` holds the receiver down at least that long (the issue's
/// 30 s outage); by default it is down until the lanes have tried 16 times in all.
#[test]
fn notices_wait_out_a_receiver_s_outage() {
    let hook = Receiver::start(false).unwrap();
    hook.set_down(true);
    let url = format!("http://127.0.0.1:{}/hook", hook.port);
    let mut s = alerting(&["--alert-webhook", &url]);
    let sessions = 40;
    let text: String = (0..sessions)
        .map(|i| rec(&format!("s{i}"), 1, 50_000) + &rec(&format!("s{i}"), 2, 5_000))
        .collect();
    write(&mut s, &text);
    let started = Instant::now();
    let outage = std::env::var("AGENT_FOLD_WEBHOOK_OUTAGE_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    // Three tries per lane at most would turn away 12 connections, then give up.
    wait_for(
        "the lanes trying again while the receiver is down",
        60 + outage,
        || hook.turned_away() >= 16 && started.elapsed() >= Duration::from_secs(outage),
        || format!("{} connections turned away", hook.turned_away()),
    );
    hook.set_down(false);
    let back = Instant::now();
    wait_for(
        "every waiting notice delivered",
        60,
        || hook.bodies().len() >= sessions,
        || format!("{} of {sessions}", hook.bodies().len()),
    );
    eprintln!(
        "outage of {:.1} s ({} attempts turned away): every notice delivered {:.1} s after the \
         receiver came back",
        started.elapsed().as_secs_f64() - back.elapsed().as_secs_f64(),
        hook.turned_away(),
        back.elapsed().as_secs_f64()
    );
    let fired = hook.alerts();
    assert_eq!(fired["until<20000"].len(), sessions, "{fired:?}");
    assert!(fired["until<20000"].values().all(|n| *n == 1), "{fired:?}");
    let m = s.metrics();
    let notices = |o| webhook_notices(&m, o);
    assert_eq!(notices("delivered"), sessions as f64);
    assert_eq!(notices("failed"), 0.0);
}

/// A pressure record of session `c/1` stamped `ago` seconds back: what the meter shows, the
/// point, and the compactions so far with the last one's tokens before and after.
fn compacting(seq: u64, ago: u64, used: u64, compactions: u64, last: Option<(u64, u64)>) -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        - ago * 1_000_000_000;
    let mut fields = json!({"timestamp": agent_fold_core::time::format(stamp),
           "pressureTokens": used, "projectedTokens": used, "capacity": 200000,
           "compactAtTokens": 167000, "untilCompactTokens": 167_000u64.saturating_sub(used),
           "compactions": compactions,
           "agent": "codex", "model": "gpt-5.5", "stateVersion": 5});
    if let Some((before, after)) = last {
        fields["lastCompactTrigger"] = json!("auto");
        fields["lastCompactBeforeTokens"] = json!(before);
        fields["lastCompactAfterTokens"] = json!(after);
    }
    pressure_line("c/1", seq, fields)
}

/// The three ways compaction goes wrong (docs/serve.md, "Alerts"), each firing then resolving
/// on the webhook and on Alertmanager's v2 endpoint: past its point with no compaction, a
/// compaction that left too much and took off too little, and three within the thrash window —
/// cleared by a good compaction, and by the window passing. `/metrics` counts the compactions
/// by agent and trigger.
#[test]
fn compaction_going_wrong_fires_and_resolves_on_both_receivers() {
    let (hook, am, hook_url, am_url) = both_receivers();
    let all = [
        "--alert",
        "past>5%",
        "--alert",
        "after>0.6",
        "--alert",
        "reclaimed<10%",
        "--alert",
        "thrash>=3",
        "--thrash-window",
        "10m",
        "--alert-webhook",
        &hook_url,
        "--alertmanager",
        &am_url,
        "-",
    ];
    let mut s = Server::start_with(&all, &[], Stdio::piped());
    let steps = [
        compacting(1, 1800, 150_000, 0, None),
        // 7.8% past 167,000 and no compaction.
        compacting(2, 1740, 180_000, 0, None),
        // A compaction that left 85% of the window, taking off 5.6%: past clears (1.8%).
        compacting(3, 1680, 170_000, 1, Some((180_000, 170_000))),
        // A good one: 10% of the window left, 88% taken off.
        compacting(4, 1620, 20_000, 2, Some((171_000, 20_000))),
        // A third within ten minutes: thrash.
        compacting(5, 1560, 15_000, 3, Some((60_000, 15_000))),
        // Now, half an hour on: none within the window.
        compacting(6, 0, 30_000, 3, Some((60_000, 15_000))),
    ];
    write(&mut s, &steps.concat());
    let want = [
        ("firing", "past>5%", 2),
        ("firing", "after>0.6", 3),
        ("firing", "reclaimed<0.1", 3),
        ("resolved", "past>5%", 3),
        ("resolved", "after>0.6", 4),
        ("resolved", "reclaimed<0.1", 4),
        ("firing", "thrash>=3", 5),
        ("resolved", "thrash>=3", 6),
    ];
    wait_for(
        "every notice on both",
        30,
        || hook.bodies().len() >= want.len() && am.bodies().len() >= want.len(),
        || format!("{:?} {:?} {:?}", hook.bodies(), am.bodies(), am.refused()),
    );
    std::thread::sleep(Duration::from_millis(300));
    let mut got: Vec<_> = hook
        .bodies()
        .iter()
        .map(|n| {
            (
                n["status"].as_str().unwrap().to_owned(),
                n["rule"].as_str().unwrap().to_owned(),
                n["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort_by_key(|(status, rule, seq)| (*seq, status.clone(), rule.clone()));
    let mut want: Vec<_> = want
        .iter()
        .map(|(s, r, q)| (s.to_string(), r.to_string(), *q))
        .collect();
    want.sort_by_key(|(status, rule, seq)| (*seq, status.clone(), rule.clone()));
    assert_eq!(got, want, "each fires once and resolves once");

    assert_eq!(am.refused(), Vec::<String>::new(), "every body is v2");
    let names: std::collections::BTreeSet<_> = am
        .bodies()
        .iter()
        .map(|a| a["labels"]["alertname"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "CompactionLeftTooMuch",
            "CompactionReclaimedLittle",
            "CompactionThrash",
            "ContextCompactionOverdue"
        ]
    );
    let summary = |name: &str| {
        am.bodies()
            .iter()
            .find(|a| a["labels"]["alertname"] == name)
            .map(|a| a["annotations"]["summary"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert!(
        summary("ContextCompactionOverdue").contains("7.8% past the point it compacts at"),
        "{}",
        summary("ContextCompactionOverdue")
    );
    assert!(summary("CompactionLeftTooMuch").contains("left 85.0% of the window"));
    assert!(summary("CompactionThrash").contains("3 compactions within the thrash window"));
    // Each alert's resolution is the same alert (its labels) with its end passed.
    for name in [
        "ContextCompactionOverdue",
        "CompactionLeftTooMuch",
        "CompactionThrash",
    ] {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let t = |v: &Value| agent_fold_core::time::parse(v.as_str().unwrap()).unwrap() / 1_000_000;
        let last = am
            .bodies()
            .into_iter()
            .rfind(|a| a["labels"]["alertname"] == name)
            .unwrap();
        assert!(t(&last["endsAt"]) <= now, "{name} resolved: {last}");
    }
    let m = s.metrics();
    let compactions = sample(
        &m,
        "agent_fold_serve_compactions_total",
        &[("agent", "codex"), ("trigger", "auto")],
    );
    assert_eq!(compactions, 3.0, "three compactions seen happening");
}
