use serde_json::Value;

use super::row::NotARecord;
use super::*;

fn rec(session: &str, seq: u64, until: u64) -> Vec<u8> {
    format!(
        r#"{{"type":"context/pressure","session":"{session}","seq":{seq},"pressureTokens":{p},"projectedTokens":{p},"capacity":200000,"contextOccupancy":{o},"messageTokens":{seq},"compactAtTokens":167000,"untilCompactTokens":{until}}}"#,
        p = 167_000 - until,
        o = (167_000 - until) as f64 / 200_000.0
    )
    .into_bytes()
}

fn board(policy: Policy) -> Arc<Board> {
    Board::new(policy, "test", None, Vec::new())
}

/// A board with `rules` whose notices wait in the one-lane outbox returned.
fn alerting(policy: Policy) -> (Arc<Board>, Arc<Outbox>) {
    let outbox = Outbox::new("test", 1);
    let b = Board::new(policy, "test", None, vec![Arc::clone(&outbox)]);
    (b, outbox)
}

/// Parses, then applies, as the sources do.
fn apply(b: &mut Changes, bytes: &[u8]) -> Result<bool, NotARecord> {
    Ok(b.pressure(PressureRecord::parse(bytes)?))
}

/// The data of an SSE frame, as JSON.
fn data(wire: &Bytes) -> Value {
    let text = std::str::from_utf8(wire).unwrap();
    let data = text.split("\ndata: ").nth(1).unwrap().trim_end();
    serde_json::from_str(data).unwrap()
}

fn sessions(rows: &Value) -> Vec<String> {
    let mut s: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session"].as_str().unwrap().to_owned())
        .collect();
    s.sort();
    s
}

/// Many records of a few sessions come as one delta with each session's latest row: the
/// intermediate values are not sent, and pages at the same version share the frame.
#[test]
fn deltas_coalesce_to_the_latest_row_of_each_session() {
    let b = board(Policy::default());
    let Next::Board { version: v0, wire } = b.next_after(None) else {
        panic!("a new page gets the whole board")
    };
    assert_eq!(data(&wire)["rows"], serde_json::json!([]));
    b.batch(|c| {
        for seq in 1..=50 {
            apply(c, &rec("a", seq, 90_000 - seq * 100)).unwrap();
            apply(c, &rec("b", seq, 50_000)).unwrap();
        }
    });
    let (Next::Delta { version, wire }, Next::Delta { wire: again, .. }) =
        (b.next_after(Some(v0)), b.next_after(Some(v0)))
    else {
        panic!("a delta")
    };
    assert_eq!(wire.as_ptr(), again.as_ptr(), "one delta, shared");
    let d = data(&wire);
    assert_eq!(sessions(&d["rows"]), ["a", "b"], "one row a session");
    let a = d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session"] == "a")
        .unwrap();
    assert_eq!(a["seq"], 50, "the latest");
    assert_eq!(a["record"]["untilCompactTokens"], 85_000);
    assert_eq!(a["live"], true);
    assert_eq!(a["spark"].as_array().unwrap().len(), SPARK);
    assert_eq!(b.next_after(Some(version)), Next::Wait, "up to date");
    assert_eq!(b.parse_id(&b.event_id(version)), Some(version));
    assert_eq!(b.parse_id("4-elsewhere"), None);
    // A re-delivery changes nothing: no version, no message.
    assert_eq!(b.batch(|c| apply(c, &rec("a", 3, 1))), Ok(false));
    assert_eq!(b.next_after(Some(version)), Next::Wait);
}

/// A page too far behind (older than the ring of changes, or more rows than a delta carries)
/// gets the whole board; so does one with an id of another run.
#[test]
fn a_page_far_behind_gets_the_whole_board() {
    let b = board(Policy::default());
    b.batch(|c| {
        for s in 0..(DELTA_ROWS + 10) {
            apply(c, &rec(&format!("s{s}"), 1, 100_000)).unwrap();
        }
    });
    assert!(
        matches!(b.next_after(Some(1)), Next::Board { .. }),
        "too many rows"
    );
    let Next::Board { version, wire } = b.next_after(Some(u64::MAX)) else {
        panic!("an id past the head")
    };
    assert_eq!(
        data(&wire)["rows"].as_array().unwrap().len(),
        DELTA_ROWS + 10
    );
    b.batch(|c| {
        for seq in 2..(CHANGES as u64 + 10) {
            apply(c, &rec("s1", seq, 100_000)).unwrap();
        }
    });
    assert!(
        matches!(b.next_after(Some(version)), Next::Board { .. }),
        "older than the ring of changes"
    );
    b.batch(|c| apply(c, &rec("s2", 2, 100_000)).unwrap());
    let boards = b.counters.boards.load(Ordering::Relaxed);
    let (Next::Board { wire: x, .. }, Next::Board { wire: y, .. }) =
        (b.next_after(None), b.next_after(None))
    else {
        panic!()
    };
    assert_eq!(x.as_ptr(), y.as_ptr(), "one board per version, shared");
    assert_eq!(b.counters.boards.load(Ordering::Relaxed), boards + 1);
}

/// Bounded: past `max_sessions` the idlest session goes, and pages are told it is gone.
#[test]
fn the_idlest_session_goes_past_the_bound_and_pages_hear_it() {
    let b = board(Policy {
        max_sessions: 3,
        ..Policy::default()
    });
    let stamped = |s: &str, sec: u64| {
        format!(
            r#"{{"type":"context/pressure","session":"{s}","seq":1,"timestamp":"2026-01-01T00:00:{sec:02}Z"}}"#
        )
    };
    b.batch(|c| {
        for (s, sec) in [("old", 1), ("mid", 5), ("new", 9)] {
            apply(c, stamped(s, sec).as_bytes()).unwrap();
        }
    });
    let v = b.held();
    assert_eq!(v.sessions, 3);
    let Next::Board { version, .. } = b.next_after(None) else {
        panic!()
    };
    b.batch(|c| apply(c, stamped("newest", 30).as_bytes()).unwrap());
    let Next::Delta { wire, .. } = b.next_after(Some(version)) else {
        panic!()
    };
    let d = data(&wire);
    assert_eq!(d["gone"], serde_json::json!(["old"]));
    assert_eq!(sessions(&d["rows"]), ["newest"]);
    assert_eq!(b.counters.evicted.load(Ordering::Relaxed), 1);
}

/// A session idle past the bound leaves the live board at the next sweep: its row says so,
/// the API's live rows leave it out, `all=1` keeps it.
#[test]
fn idle_sessions_leave_the_live_board_and_keep_their_history() {
    let b = board(Policy {
        idle: Duration::from_secs(60),
        ..Policy::default()
    });
    let old = r#"{"type":"context/pressure","session":"quiet","seq":1,"timestamp":"2020-01-01T00:00:00Z","projectedTokens":5}"#;
    b.batch(|c| {
        apply(c, old.as_bytes()).unwrap();
        apply(c, &rec("busy", 1, 10_000)).unwrap();
    });
    assert_eq!(b.held().live, 1, "an old stamp is not live activity");
    b.sweep();
    let live = b.query(&query::Query::default());
    assert_eq!((live.total, live.live, live.matched), (2, 1, 1));
    let all = b.query(&query::Query {
        all: true,
        ..query::Query::default()
    });
    assert_eq!(all.matched, 2);
    let d = b.session("quiet", None).unwrap();
    assert_eq!(d.history.points.len(), 1, "the history stays");
    let row: Value = serde_json::from_str(d.row.get()).unwrap();
    assert_eq!(row["live"], false);
}

/// Alerts fire once per crossing, name the rule in the row while firing, and reach the
/// receivers' outboxes in order; a resolution carries when its alert began.
#[test]
fn alerts_fire_once_per_crossing_and_resolve_with_their_start() {
    let (b, outbox) = alerting(Policy {
        rules: vec![Rule::parse("until<20000").unwrap()],
        ..Policy::default()
    });
    let mut waiting = std::collections::VecDeque::new();
    let mut rx = || -> Result<Alert, ()> {
        waiting.extend(outbox.take(0));
        waiting.pop_front().ok_or(())
    };
    b.batch(|c| {
        for (seq, until) in [(1, 50_000), (2, 19_000), (3, 19_500), (4, 15_000)] {
            apply(c, &rec("a", seq, until)).unwrap();
        }
    });
    let alert = rx().unwrap();
    assert_eq!(
        (alert.rule.as_str(), &*alert.session, alert.seq),
        ("until<20000", "a", Some(2))
    );
    assert!(rx().is_err(), "once for the crossing");
    assert_eq!(b.held().firing, [1]);
    let row: Value = serde_json::from_str(b.session("a", None).unwrap().row.get()).unwrap();
    assert_eq!(row["alerts"], serde_json::json!(["until<20000"]));
    let began = alert.since;
    // Clear it (a compaction), cross again, three sessions at once.
    b.batch(|c| {
        apply(c, &rec("a", 5, 120_000)).unwrap();
        apply(c, &rec("a", 6, 10_000)).unwrap();
        apply(c, &rec("b", 1, 1_000)).unwrap();
        apply(c, &rec("c", 1, 1_000)).unwrap();
    });
    assert_eq!(b.counters.alerts[0].load(Ordering::Relaxed), 4);
    // The crossing back resolved a's alert: that notice and a's next crossing fill the queue.
    let resolved = rx().unwrap();
    assert_eq!(
        (resolved.status, &*resolved.session, resolved.seq),
        (AlertStatus::Resolved, "a", Some(5))
    );
    assert_eq!(resolved.since, began, "it ends the alert that began then");
    let again = rx().unwrap();
    assert_eq!((again.status, again.seq), (AlertStatus::Firing, Some(6)));
    let others: Vec<_> = std::iter::from_fn(|| rx().ok()).collect();
    assert_eq!(
        others.iter().map(|a| &*a.session).collect::<Vec<_>>(),
        ["b", "c"]
    );
    // What Alertmanager is sent again: the three firing now.
    let mut firing: Vec<_> = b
        .firing_alerts()
        .into_iter()
        .map(|a| (a.session.to_string(), a.seq, a.status))
        .collect();
    firing.sort();
    assert_eq!(
        firing,
        [
            ("a".to_owned(), Some(6), AlertStatus::Firing),
            ("b".to_owned(), Some(1), AlertStatus::Firing),
            ("c".to_owned(), Some(1), AlertStatus::Firing)
        ]
    );
}

/// A topic's recent history read again at the start (catching up) rebuilds the alert state
/// and sends no notice; what comes after it alerts as ever.
#[test]
fn catching_up_rebuilds_the_alert_state_and_pages_no_one() {
    let (b, outbox) = alerting(Policy {
        rules: vec![Rule::parse("until<20000").unwrap()],
        ..Policy::default()
    });
    b.batch(|c| {
        c.catching_up(true);
        apply(c, &rec("a", 1, 50_000)).unwrap();
        apply(c, &rec("a", 2, 10_000)).unwrap();
        apply(c, &rec("b", 1, 10_000)).unwrap();
        c.catching_up(false);
        apply(c, &rec("b", 2, 9_000)).unwrap();
        apply(c, &rec("c", 1, 9_000)).unwrap();
    });
    assert_eq!(b.counters.alerts_caught_up.load(Ordering::Relaxed), 2);
    assert_eq!(b.held().firing, [3]);
    let sent: Vec<_> = outbox.take(0).into_iter().map(|a| a.session).collect();
    assert_eq!(sent, [Arc::from("c")], "b still firing is the same alert");
    assert_eq!(b.firing_alerts().len(), 3, "all three are sent again");
}

/// A session evicted while an alert fires and then back is not alerted again for the same
/// crossing: the board remembers what fired for the sessions it let go; a new crossing alerts.
#[test]
fn a_session_back_after_eviction_is_not_alerted_twice_for_one_crossing() {
    let b = Board::new(
        Policy {
            rules: vec![Rule::parse("until<20000").unwrap()],
            max_sessions: 1,
            ..Policy::default()
        },
        "test",
        None,
        Vec::new(),
    );
    let alerts = || b.counters.alerts[0].load(Ordering::Relaxed);
    b.batch(|c| apply(c, &rec("a", 1, 10_000)).unwrap());
    assert_eq!(alerts(), 1);
    b.batch(|c| apply(c, &rec("b", 1, 50_000)).unwrap());
    assert_eq!(b.counters.evicted.load(Ordering::Relaxed), 1, "a went");
    b.batch(|c| apply(c, &rec("a", 2, 9_000)).unwrap());
    assert_eq!(alerts(), 1, "a is still across the same crossing");
    let row: Value = serde_json::from_str(b.session("a", None).unwrap().row.get()).unwrap();
    assert_eq!(row["alerts"], serde_json::json!(["until<20000"]));
    b.batch(|c| {
        apply(c, &rec("a", 3, 100_000)).unwrap();
        apply(c, &rec("a", 4, 5_000)).unwrap();
    });
    assert_eq!(alerts(), 2, "a new crossing alerts");
}

/// The history the detail draws: every record's figures, the compaction marked, `after` for
/// what a page lacks.
#[test]
fn a_session_s_history_is_served_whole_or_after_a_seq() {
    let b = board(Policy::default());
    b.batch(|c| {
        for seq in 1..=10 {
            apply(c, &rec("a", seq, 100_000 - seq * 1000)).unwrap();
        }
        // The surface shrank: a compaction.
        let compacted = r#"{"type":"context/pressure","session":"a","seq":11,"pressureTokens":57000,"projectedTokens":40000,"messageTokens":2}"#;
        apply(c, compacted.as_bytes()).unwrap();
    });
    let all = b.session("a", None).unwrap().history.points;
    assert_eq!(all.len(), 11);
    assert_eq!(all.last().unwrap().5, 1, "marked a compaction");
    let after = b.session("a", Some(9)).unwrap().history.points;
    assert_eq!(after.iter().map(|p| p.0).collect::<Vec<_>>(), [10, 11]);
    assert!(b.session("nobody", None).is_none());
}

/// A log read again from its start: its sessions leave the board (pages told `gone`), the
/// others keep their rows and alert state; the re-read's records page no one, and at its end
/// only what differs from before is said — nothing for a log read again as it was, a firing
/// for a crossing it did not hold before, a resolution for an alert it no longer holds.
#[test]
fn a_log_read_again_changes_only_its_sessions_and_pages_only_what_differs() {
    let (b, outbox) = alerting(Policy {
        rules: vec![Rule::parse("until<20000").unwrap()],
        ..Policy::default()
    });
    let rx = || outbox.take(0);
    let log = |id: &str| vec![rec(id, 1, 50_000), rec(id, 2, 10_000), rec(id, 3, 9_000)];
    b.batch(|c| {
        for id in ["a", "b", "c"] {
            for r in log(id) {
                apply(c, &r).unwrap();
            }
        }
    });
    assert_eq!(rx().len(), 3, "each crossed once");
    let Next::Board { version, .. } = b.next_after(None) else {
        panic!()
    };
    let these = |ids: &[&str]| Sessions::These(ids.iter().map(|i| Arc::from(*i)).collect());
    b.batch(|c| c.reread(&these(&["a", "b", "c"]), "x was truncated"));
    let Next::Delta { wire, .. } = b.next_after(Some(version)) else {
        panic!("a delta")
    };
    assert_eq!(
        data(&wire)["gone"],
        serde_json::json!(["a", "b", "c"]),
        "{wire:?}"
    );
    assert_eq!(b.held().sessions, 0);
    // a: read again as it was; b: now ends below the threshold; c: its log now empty.
    b.batch(|c| {
        for r in log("a") {
            apply(c, &r).unwrap();
        }
        apply(c, &rec("b", 1, 50_000)).unwrap();
    });
    assert!(rx().is_empty(), "a re-read pages no one");
    assert_eq!(b.counters.alerts_reread.load(Ordering::Relaxed), 1);
    b.batch(|c| c.reread_done(&these(&["a", "b", "c"])));
    let said = rx();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        (&*said[0].session, said[0].status),
        ("b", AlertStatus::Resolved)
    );
    assert_eq!(b.held().firing, [1], "a fires still, the same alert");
    // c comes back later still below the threshold: the same alert, not paged again.
    b.batch(|c| apply(c, &rec("c", 9, 5_000)).unwrap());
    assert!(rx().is_empty());
    // A session untouched by a re-read keeps its row and state.
    b.batch(|c| {
        apply(c, &rec("d", 1, 5_000)).unwrap();
        c.reread(&these(&["a"]), "y was replaced");
    });
    assert_eq!(rx().len(), 1, "d crossed");
    let state = b.query(&query::Query {
        all: true,
        limit: usize::MAX,
        ..query::Query::default()
    });
    let ids: Vec<String> = state
        .sessions
        .iter()
        .map(|r| {
            serde_json::from_str::<Value>(r.get()).unwrap()["session"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(
        ids.contains(&"d".to_owned()) && !ids.contains(&"a".to_owned()),
        "{ids:?}"
    );
}

/// A record older than `idle` by its own stamp (a topic's history read again at a restart)
/// updates the board and its alert state but pages no one; a fresh crossing after it, once the
/// state has cleared, alerts as ever.
#[test]
fn an_old_record_updates_the_board_but_never_alerts() {
    let (b, outbox) = alerting(Policy {
        rules: vec![Rule::parse("until<20000").unwrap()],
        idle: Duration::from_secs(600),
        ..Policy::default()
    });
    let mut waiting = std::collections::VecDeque::new();
    let mut rx = || -> Result<Alert, ()> {
        waiting.extend(outbox.take(0));
        waiting.pop_front().ok_or(())
    };
    let stamped = |seq: u64, until: u64, stamp: &str| {
        let text = String::from_utf8(rec("a", seq, until)).unwrap();
        text.replacen("\"seq\"", &format!("\"timestamp\":\"{stamp}\",\"seq\""), 1)
            .into_bytes()
    };
    b.batch(|c| {
        apply(c, &stamped(1, 50_000, "2026-09-01T10:00:00Z")).unwrap();
        apply(c, &stamped(2, 10_000, "2026-09-01T10:05:00Z")).unwrap();
    });
    assert!(rx().is_err(), "an old crossing pages no one");
    assert_eq!(b.counters.alerts_old.load(Ordering::Relaxed), 1);
    assert_eq!(b.held().firing, [1], "the alert state follows it");
    let row: Value = serde_json::from_str(b.session("a", None).unwrap().row.get()).unwrap();
    assert_eq!(row["record"]["untilCompactTokens"], 10_000);
    // Still firing now: no new alert for the same crossing; cleared, then crossed now: alerted.
    b.batch(|c| {
        apply(c, &rec("a", 3, 9_000)).unwrap();
    });
    assert!(rx().is_err(), "the same crossing, still firing");
    b.batch(|c| {
        apply(c, &rec("a", 4, 120_000)).unwrap();
        apply(c, &rec("a", 5, 8_000)).unwrap();
    });
    let resolved = rx().unwrap();
    assert_eq!(
        (resolved.status, resolved.seq),
        (AlertStatus::Resolved, Some(4))
    );
    let fired = rx().unwrap();
    assert_eq!((fired.status, fired.seq), (AlertStatus::Firing, Some(5)));
}
