use super::*;

fn rec(session: &str, seq: u64) -> Vec<u8> {
    format!(
        r#"{{"type":"context/pressure","session":"{session}","seq":{seq},"contextOccupancy":0.5}}"#
    )
    .into_bytes()
}

/// Parses, then applies, as the sources do.
fn apply(b: &mut Changes, bytes: &[u8]) -> Result<bool, String> {
    Ok(b.pressure(PressureRecord::parse(bytes)?))
}

/// A frame parsed, then applied when it is one the page shows.
fn frame(b: &mut Changes, key: Option<&[u8]>, bytes: &[u8]) -> bool {
    Folded::parse(key, bytes).map(|f| b.frame(f)).is_some()
}

/// Every event a client that has seen up to `after` is sent next, until it is up to date.
fn drain(hub: &Hub, mut after: Option<u64>) -> Vec<Next> {
    let mut out = Vec::new();
    loop {
        let next = hub.next_after(after);
        after = match &next {
            Next::Wait => return out,
            Next::Event(e) => Some(e.id),
            Next::Snapshot { id, .. } => Some(*id),
        };
        out.push(next);
    }
}

fn ids(next: &[Next]) -> Vec<u64> {
    next.iter()
        .map(|n| match n {
            Next::Event(e) => e.id,
            _ => panic!("a snapshot: {n:?}"),
        })
        .collect()
}

#[test]
fn resume_replays_the_buffer_or_snapshots() {
    let hub = Hub::new(3, "test", None);
    hub.batch(|b| {
        for seq in 1..=5 {
            assert_eq!(apply(b, &rec("a", seq)), Ok(true));
        }
    });
    // The status did not change: five pressure events, 1..=5, of which 3..=5 are kept.
    assert_eq!(ids(&drain(&hub, Some(3))), [4, 5]);
    assert_eq!(hub.next_after(Some(5)), Next::Wait, "up to date");
    // The buffer holds 3..=5: a client at 2 misses nothing, one at 1 missed event 2.
    assert_eq!(ids(&drain(&hub, Some(2))), [3, 4, 5]);
    for old in [None, Some(1), Some(0), Some(6)] {
        let Next::Snapshot { id, wire } = hub.next_after(old) else {
            panic!("{old:?}: a snapshot");
        };
        assert_eq!(id, 5);
        let text = std::str::from_utf8(&wire).unwrap();
        let data = text.split("\ndata: ").nth(1).unwrap().trim_end();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["sessions"][0]["pressure"]["seq"], 5);
        assert!(text.starts_with(&format!("id: {}\nevent: snapshot\n", hub.event_id(5))));
    }
    assert_eq!(hub.parse_id(&hub.event_id(4)), Some(4));
    assert_eq!(hub.parse_id("4-elsewhere"), None);
    assert_eq!(hub.parse_id("4"), None);
}

#[test]
fn clients_share_each_frame_and_the_snapshot_instead_of_copying_them() {
    let hub = Hub::new(100, "test", None);
    hub.batch(|b| apply(b, &rec("a", 1)).unwrap());
    let (Next::Event(one), Next::Event(two)) = (hub.next_after(Some(0)), hub.next_after(Some(0)))
    else {
        panic!("event 1 twice")
    };
    assert_eq!(one.wire.as_ptr(), two.wire.as_ptr(), "one frame, shared");
    let snap = |hub: &Hub| match hub.next_after(None) {
        Next::Snapshot { wire, .. } => wire,
        n => panic!("{n:?}"),
    };
    let (a, b) = (snap(&hub), snap(&hub));
    assert_eq!(a.as_ptr(), b.as_ptr(), "one snapshot per head, shared");
    hub.batch(|b| apply(b, &rec("a", 2)).unwrap());
    let c = snap(&hub);
    assert_ne!(a, c, "a new head, a new snapshot");
    assert!(std::str::from_utf8(&c).unwrap().contains(r#""seq":2"#));
}

#[test]
fn the_buffer_is_bounded_in_bytes_and_records_in_size() {
    let hub = Hub::new(1_000_000, "test", None);
    // Records near the size limit, many more than BUFFER_BYTES holds.
    let pad = "x".repeat(RECORD_BYTES - 200);
    let n = 3 * BUFFER_BYTES / RECORD_BYTES;
    hub.batch(|b| {
        for seq in 0..n as u64 {
            let r = format!(
                r#"{{"type":"context/pressure","session":"s{}","seq":{seq},"pad":"{pad}"}}"#,
                seq % 7
            );
            assert_eq!(apply(b, r.as_bytes()), Ok(true));
        }
    });
    let held = hub.held();
    assert!(held.event_bytes <= BUFFER_BYTES, "{held:?}");
    assert!(held.events < n / 2, "older events went: {held:?}");
    assert_eq!(held.sessions, 7);
    assert!(held.session_bytes <= 7 * RECORD_BYTES, "{held:?}");
    // A client far behind gets a snapshot, not the lost events.
    assert!(matches!(hub.next_after(Some(1)), Next::Snapshot { .. }));
    let huge = format!(
        r#"{{"type":"context/pressure","session":"s","pad":"{}"}}"#,
        "y".repeat(RECORD_BYTES)
    );
    let err = hub.batch(|b| apply(b, huge.as_bytes())).unwrap_err();
    assert!(err.contains("over the limit of 16384"), "{err}");
}

#[test]
fn sessions_past_the_cap_are_forgotten_oldest_first_and_the_pages_told() {
    let hub = Hub::new(10_000, "test", None);
    hub.batch(|b| {
        for i in 0..MAX_SESSIONS + 5 {
            apply(b, &rec(&format!("s{i}"), 1)).unwrap();
        }
    });
    let state: Value = serde_json::from_slice(&hub.state()).unwrap();
    let sessions = agent_fold_testkit::strings_of(&state["sessions"], "session");
    assert_eq!(sessions.len(), MAX_SESSIONS);
    assert_eq!(
        sessions[0],
        format!("s{}", MAX_SESSIONS + 4),
        "newest first"
    );
    assert_eq!(*sessions.last().unwrap(), "s5", "s0..s4 went");
    let forgot: Vec<String> = drain(&hub, Some(0))
        .iter()
        .filter_map(|n| match n {
            Next::Event(e) if e.kind == "forget" => {
                let v: Value = serde_json::from_str(e.data()).unwrap();
                Some(v["session"].as_str().unwrap().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(forgot, ["s0", "s1", "s2", "s3", "s4"]);
    assert_eq!(hub.figures.evicted.load(Ordering::Relaxed), 5);
}

#[test]
fn records_are_checked_and_sessions_ordered_newest_first() {
    let hub = Hub::new(100, "test", None);
    hub.batch(|b| {
        assert!(apply(b, b"not json").is_err());
        assert!(apply(b, b"[1]").is_err());
        assert!(apply(b, br#"{"type":"user/message","session":"a"}"#).is_err());
        assert!(apply(b, br#"{"type":"context/pressure"}"#).is_err());
        assert_eq!(apply(b, &rec("a", 7)), Ok(true));
        assert_eq!(apply(b, &rec("b", 1)), Ok(true));
        assert_eq!(apply(b, &rec("a", 6)), Ok(false), "older seq");
        let err = br#"{"type":"context/error","session":"a","seq":7,"error":"x"}"#;
        assert_eq!(apply(b, err), Ok(true), "same seq: the error about it");
        let folded =
            br#"{"type":"thinking/tokens","folded_frames":3,"pad":"lots","timestamp":"t"}"#;
        assert!(frame(b, Some(b"b"), folded));
        assert!(!frame(
            b,
            Some(b"b"),
            br#"{"type":"thinking/tokens","folded_frames":1}"#
        ));
        assert!(!frame(b, Some(b"b"), br#"{"type":"user/message"}"#));
    });
    let state: Value = serde_json::from_slice(&hub.state()).unwrap();
    let order = agent_fold_testkit::strings_of(&state["sessions"], "session");
    assert_eq!(order, ["b", "a"]);
    assert_eq!(state["sessions"][1]["error"]["error"], "x");
    assert_eq!(state["sessions"][1]["pressure"]["seq"], 7);
    assert_eq!(
        state["sessions"][0]["frames"][0],
        json!({"type": "thinking/tokens", "folded_frames": 3, "timestamp": "t"}),
        "a folded frame keeps the fields the page shows"
    );
}

#[test]
fn the_module_s_error_about_a_record_without_a_session_is_the_skip_reason() {
    let hub = Hub::new(100, "test", None);
    let err = br#"{"type":"context/error","session":null,"seq":null,"error":"the session key is 2000 bytes, over the limit of 1024: no state is kept for it"}"#;
    let why = hub.batch(|b| apply(b, err)).unwrap_err();
    assert_eq!(
        why,
        "the module said: the session key is 2000 bytes, over the limit of 1024: no state is kept for it"
    );
}

#[test]
fn a_status_change_is_an_event() {
    let hub = Hub::new(100, "test", None);
    hub.batch(|b| b.status(SourceState::Live, "following"));
    hub.batch(|b| b.status(SourceState::Live, "following"));
    let events = drain(&hub, Some(0));
    assert_eq!(events.len(), 1, "an unchanged status is no news");
    let Next::Event(e) = &events[0] else { panic!() };
    assert_eq!(e.kind, "status");
    assert!(e.data().contains(r#""state":"live""#));
}

#[test]
fn the_state_document_is_written_once_per_change_however_many_ask() {
    let hub = Hub::new(100, "test", None);
    let built = || hub.figures.snapshots.load(Ordering::Relaxed);
    hub.batch(|b| apply(b, &rec("a", 1)).unwrap());
    let first = hub.state();
    for _ in 0..10 {
        assert_eq!(hub.state(), first);
    }
    assert_eq!(built(), 1, "ten more asks, no change: the same document");
    hub.batch(|b| apply(b, &rec("a", 2)).unwrap());
    let second = hub.state();
    assert_ne!(second, first);
    assert_eq!(built(), 2);
    // A status change is a change too.
    hub.batch(|b| b.status(SourceState::Ended, "done"));
    assert_ne!(hub.state(), second);
    assert_eq!(built(), 3);
}
