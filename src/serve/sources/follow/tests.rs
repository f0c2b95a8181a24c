//! The follower over real files in scratch directories: growth, truncation, replacement,
//! rewrites in place, vanishing, directories of logs and their generations.

use agent_fold_testkit::append;

use super::*;

/// An empty scratch directory of the test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-fold-follow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lines a poll read: of the log, or of each format of a directory of logs.
fn values(p: &Polled) -> Vec<String> {
    p.lines
        .iter()
        .chain(p.by_file.iter().flat_map(|f| &f.lines))
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
        .collect()
}

#[test]
fn lines_count_once_complete_and_rewrites_start_again() {
    let dir = scratch("log");
    let log = dir.join("log.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut f = Follow::new(&log);
    assert!(f.poll().waiting.unwrap().contains("does not exist yet"));
    append(&log, b"{\"a\":1}\n{\"b\":");
    let p = f.poll();
    assert_eq!(values(&p), [r#"{"a":1}"#]);
    assert_eq!(p.problem, None);
    assert!(values(&f.poll()).is_empty(), "half a line waits");
    append(&log, b"2}\r\n\n");
    assert_eq!(values(&f.poll()), [r#"{"b":2}"#]);

    // Truncated, then longer than before: a new log.
    std::fs::write(&log, b"{\"c\":3}\n").unwrap();
    let p = f.poll();
    assert!(p.reset.as_deref().unwrap().contains("truncated"));
    assert_eq!(values(&p), [r#"{"c":3}"#]);
    std::fs::write(&log, b"{\"d\":4}\n{\"e\":5}\n").unwrap();
    let p = f.poll();
    assert!(p.reset.as_deref().unwrap().contains("rewritten"));
    assert_eq!(values(&p), [r#"{"d":4}"#, r#"{"e":5}"#]);

    // Gone: reported until it comes back, then read from its start.
    std::fs::remove_file(&log).unwrap();
    assert!(f.poll().problem.unwrap().contains("vanished"));
    assert!(f.poll().problem.unwrap().contains("vanished"));
    std::fs::write(&log, b"{\"f\":6}\n").unwrap();
    let p = f.poll();
    assert!(p.reset.as_deref().unwrap().contains("came back"));
    assert_eq!(
        (values(&p), p.problem),
        (vec![r#"{"f":6}"#.to_owned()], None)
    );

    // Replaced by another file at the same path.
    let other = dir.join("other.jsonl");
    std::fs::write(&other, b"{\"f\":6}\n{\"g\":7}\n").unwrap();
    std::fs::rename(&other, &log).unwrap();
    let p = f.poll();
    assert!(p.reset.as_deref().unwrap().contains("replaced"));
    assert_eq!(values(&p).len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_session_directory_merges_its_files_by_time() {
    let dir = scratch("dir");
    let session = dir.join("s1");
    std::fs::create_dir_all(session.join("subagents")).unwrap();
    let main = dir.join("s1.jsonl");
    append(&main, b"{\"n\":1,\"timestamp\":\"2026-01-01T00:00:01Z\"}\n");
    let mut f = Follow::new(&session);
    assert_eq!(values(&f.poll()).len(), 1);
    append(&main, b"{\"n\":3,\"timestamp\":\"2026-01-01T00:00:03Z\"}\n");
    append(
        &session.join("subagents/agent-a.jsonl"),
        b"{\"n\":2,\"timestamp\":\"2026-01-01T00:00:02Z\"}\n",
    );
    let ns: Vec<String> = values(&f.poll())
        .iter()
        .map(|v| v[5..6].to_owned())
        .collect();
    assert_eq!(ns, ["2", "3"], "a new sub-agent file joins, merged by time");
    std::fs::remove_file(session.join("subagents/agent-a.jsonl")).unwrap();
    assert!(f.poll().problem.unwrap().contains("agent-a.jsonl vanished"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn idle_files_are_not_opened_again_and_a_written_one_is() {
    let dir = scratch("idle");
    std::fs::create_dir_all(dir.join("many")).unwrap();
    let frame = |i: usize, seq: u64| {
        format!("{{\"type\":\"user/message\",\"session_id\":\"s{i}\",\"seq\":{seq}}}\n")
    };
    for i in 0..50 {
        append(
            &dir.join(format!("many/{i:02}.jsonl")),
            frame(i, 1).as_bytes(),
        );
    }
    let mut f = Follow::new(&dir.join("many"));
    assert_eq!(values(&f.poll()).len(), 50);
    let opened = f.opens();
    assert_eq!(opened, 50);
    for _ in 0..5 {
        assert!(values(&f.poll()).is_empty());
    }
    assert_eq!(f.opens(), opened, "five idle polls opened nothing");
    append(&dir.join("many/07.jsonl"), frame(7, 2).as_bytes());
    // Quiet files are looked at less often: within 32 polls the new line is read.
    let got: Vec<String> = (0..32).flat_map(|_| values(&f.poll())).collect();
    assert_eq!(got, [frame(7, 2).trim_end()]);
    assert_eq!(f.opens(), opened + 1, "only the file written to");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Polls until `f` holds of what was polled (at most 64 polls: a quiet file is looked at
/// every 32 at most), teaching the follower the sessions each file's lines named, as the
/// server does; every poll on the way is returned.
fn poll_until(f: &mut Follow, what: impl Fn(&Polled) -> bool) -> Vec<Polled> {
    let mut all = Vec::new();
    for _ in 0..64 {
        let p = f.poll();
        for fl in &p.by_file {
            let keys: Vec<String> = fl
                .lines
                .iter()
                .filter_map(|r| r.key.as_ref())
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            f.learned(Some(&fl.path), keys.iter().map(String::as_str));
        }
        let done = what(&p);
        all.push(p);
        if done {
            return all;
        }
    }
    panic!("not within 64 polls: {all:?}");
}

/// In a directory of logs a file truncated, vanished then back, or replaced is read again
/// alone: its own sessions are named for the re-read, its lines go to instances of a new
/// generation, the others' lines are not read again; each event is said once.
#[test]
fn a_file_of_a_tree_that_starts_again_is_read_again_alone() {
    let dir = scratch("tree-reread");
    std::fs::create_dir_all(dir.join("many")).unwrap();
    let frame = |i: usize, seq: u64| {
        format!("{{\"type\":\"user/message\",\"session_id\":\"s{i}\",\"seq\":{seq}}}\n")
    };
    let file = |i: usize| dir.join(format!("many/{i}.jsonl"));
    for i in 0..5 {
        append(&file(i), frame(i, 1).as_bytes());
    }
    let mut f = Follow::new(&dir.join("many"));
    let first = poll_until(&mut f, |p| p.by_file.len() == 5);
    let p = first.last().unwrap();
    assert!(p.by_file.iter().all(|fl| fl.generation == 0));
    assert!(p.rereads.is_empty());

    // Truncated (`: > 2.jsonl`): s2 alone is read again, and its re-read is over at once.
    std::fs::write(file(2), b"").unwrap();
    let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
    let p = polls.last().unwrap();
    assert_eq!(
        p.rereads,
        [(
            format!(
                "{} was truncated: read again from its start",
                file(2).display()
            ),
            Sessions::These(vec![Arc::from("s2")])
        )]
    );
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert_eq!(p.events[0].0, LogEvent::Truncated);
    let after = poll_until(&mut f, |p| !p.reread_done.is_empty());
    assert_eq!(
        after.last().unwrap().reread_done,
        [Sessions::These(vec![Arc::from("s2")])]
    );
    append(&file(2), frame(2, 2).as_bytes());
    let p = poll_until(&mut f, |p| !p.by_file.is_empty());
    let fl = &p.last().unwrap().by_file;
    assert_eq!(fl.len(), 1);
    assert_eq!((fl[0].path.clone(), fl[0].generation), (file(2), 1));
    assert!(
        p.iter()
            .all(|p| p.events.is_empty() && p.rereads.is_empty())
    );

    // Vanished: said once, its sessions kept; back: read again, alone.
    std::fs::remove_file(file(3)).unwrap();
    let polls = poll_until(&mut f, |p| !p.events.is_empty());
    assert_eq!(polls.last().unwrap().events[0].0, LogEvent::Vanished);
    assert!(polls.iter().all(|p| p.rereads.is_empty()));
    for _ in 0..40 {
        assert!(f.poll().events.is_empty(), "said once");
    }
    append(&file(3), frame(3, 1).as_bytes());
    let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
    let p = polls.last().unwrap();
    assert_eq!(p.events[0].0, LogEvent::CameBack);
    assert_eq!(p.rereads[0].1, Sessions::These(vec![Arc::from("s3")]));
    let p = poll_until(&mut f, |p| !p.by_file.is_empty());
    let fl = &p.last().unwrap().by_file;
    assert_eq!((fl[0].path.clone(), fl[0].lines.len()), (file(3), 1));
    assert_eq!(fl[0].generation, 2);

    // Replaced; generations stay within the bound: the smallest joins the re-read.
    for (round, i) in [0usize, 1, 4].into_iter().enumerate() {
        let other = dir.join("other.jsonl.tmp");
        std::fs::write(&other, frame(i, 1)).unwrap();
        std::fs::rename(&other, file(i)).unwrap();
        let polls = poll_until(&mut f, |p| !p.rereads.is_empty());
        let p = polls.last().unwrap();
        assert_eq!(p.events[0].0, LogEvent::Replaced, "round {round}");
        poll_until(&mut f, |p| !p.reread_done.is_empty());
        let in_use = f.generations();
        assert!(in_use.len() <= MAX_GENERATIONS, "{in_use:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file that cannot be read (here a FIFO put in its place: the tests run as root, whom
/// no mode stops) is said once and its sessions kept; once it can be read again, that is
/// said once too, and it is followed on from where it was.
#[test]
fn a_file_that_cannot_be_read_is_said_once_and_followed_again() {
    let dir = scratch("unreadable");
    let log = dir.join("log.jsonl");
    append(&log, b"{\"a\":1}\n");
    let mut f = Follow::new(&log);
    assert_eq!(values(&f.poll()), [r#"{"a":1}"#]);
    let kept = dir.join("kept.jsonl");
    std::fs::rename(&log, &kept).unwrap();
    let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path it is given, which lives until it ends.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0);
    let p = f.poll();
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert_eq!(p.events[0].0, LogEvent::Unreadable);
    assert!(p.problem.unwrap().contains("not a regular file"));
    for _ in 0..3 {
        let p = f.poll();
        assert!(p.events.is_empty() && p.problem.is_some(), "said once");
    }
    std::fs::remove_file(&log).unwrap();
    std::fs::rename(&kept, &log).unwrap();
    append(&log, b"{\"b\":2}\n");
    let p = f.poll();
    assert_eq!(p.events[0].0, LogEvent::Readable, "{:?}", p.events);
    assert_eq!(values(&p), [r#"{"b":2}"#], "followed on from where it was");
    assert_eq!(p.problem, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A document is read whole each time it changes, never as a reset; one that is not one
/// JSON object is said once per change and not read again until it changes.
#[test]
fn a_document_is_read_whole_per_change_and_a_broken_one_once() {
    let dir = scratch("doc");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session-x.json");
    std::fs::write(&path, "{\n  \"sessionId\": \"x\",\n  \"messages\": []\n}\n").unwrap();
    let mut f = Follow::new(&path);
    let p = f.poll();
    assert_eq!(p.lines.len(), 1, "the whole document, one record");
    assert!(p.lines[0].value.starts_with(b"{") && p.reset.is_none());
    assert!(f.poll().lines.is_empty(), "unchanged: nothing");
    std::fs::write(
        &path,
        "{\"sessionId\": \"x\", \"messages\": [{\"id\": \"a\"}]}",
    )
    .unwrap();
    let p = f.poll();
    assert_eq!(
        (p.lines.len(), p.reset.is_none()),
        (1, true),
        "rewritten: read again, no reset"
    );
    std::fs::write(&path, "{\"sessionId\": \"x\", \"mess").unwrap();
    let p = f.poll();
    assert!(p.lines.is_empty());
    assert!(
        p.skipped[0].contains("not one JSON object"),
        "{:?}",
        p.skipped
    );
    let opens = f.opens();
    assert!(f.poll().skipped.is_empty(), "said once");
    assert_eq!(f.opens(), opens, "and not read again until it changes");
    std::fs::write(&path, "[{\"sessionId\": \"x\"}]").unwrap();
    let p = f.poll();
    assert!(
        p.lines.is_empty() && p.skipped.is_empty(),
        "JSON of another shape: left alone"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_path_that_is_no_regular_file_cannot_be_followed() {
    let err = followable(Path::new("/dev/zero")).unwrap_err().to_string();
    assert!(err.contains("is not a regular file"), "{err}");
    assert!(
        followable(Path::new("/nonexistent/yet.jsonl")).is_ok(),
        "waited for"
    );
    let mut f = Follow::new(Path::new("/dev/null"));
    let p = f.poll();
    assert!(p.problem.unwrap().contains("not a regular file"));
    assert_eq!(f.opens(), 0, "a device is never opened");
}
