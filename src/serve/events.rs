//! The hub between a source and the page: each session's latest state, the status line, and a
//! bounded buffer of numbered events that `/events` streams as Server-Sent Events.
//!
//! Events are numbered from 1 in the order they happen; an SSE id is `<n>-<run>`, `run` naming
//! this server process, so an id from an earlier run is never mistaken for one of this run. A
//! client that resumes (`Last-Event-ID`) gets every buffered event after its id; one whose id
//! is older than the buffer, from another run, or absent gets one `snapshot` event instead
//! (each session's latest state, as of the snapshot's id) and continues from there.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::response::sse;
use futures_util::Stream;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

/// Sessions the page shows at most: beyond it, the one first seen longest ago goes.
const MAX_SESSIONS: usize = 1000;
/// Folded frames kept per session for its list.
const FRAMES_PER_SESSION: usize = 8;

/// What the status line says of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Getting ready (connecting, waiting for the log's format).
    Starting,
    /// Records flow (or would, when there are any).
    Live,
    /// Something is wrong (a vanished file, a lost cluster); the server retries.
    Error,
    /// The source has ended (stdin closed); the last figures stay.
    Ended,
}

/// The status line: the source, its state, and what was read of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub source: String,
    pub module: Option<String>,
    pub state: State,
    pub message: String,
    /// Records (log lines, or pressure records on stdin or a topic) read.
    pub records: u64,
    /// Of those, records skipped: not what the source should carry.
    pub skipped: u64,
    #[serde(rename = "lastSkipped")]
    pub last_skipped: Option<String>,
}

/// One numbered event, its data JSON on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: u64,
    pub kind: &'static str,
    pub data: String,
}

/// A session's latest state: its newest pressure record, a `context/error` newer than that,
/// and its latest folded frames.
#[derive(Debug, Default)]
struct Session {
    first_seen: u64,
    seq: Option<u64>,
    pressure: Option<Value>,
    error: Option<Value>,
    frames: VecDeque<Value>,
}

struct Inner {
    /// The last event's number (0: none yet).
    head: u64,
    cap: usize,
    events: VecDeque<Event>,
    sessions: HashMap<String, Session>,
    seen: u64,
    status: Status,
    /// The status as the last `status` event told it.
    told: Status,
}

/// Shared by the source (which writes) and every `/events` client (which read).
pub struct Hub {
    inner: Mutex<Inner>,
    head: watch::Sender<u64>,
    run: String,
}

impl Hub {
    /// A hub keeping the latest `cap` events, for a source described as `source`.
    pub fn new(cap: usize, source: &str, module: Option<String>) -> Arc<Hub> {
        let status = Status {
            source: source.to_owned(),
            module,
            state: State::Starting,
            message: "starting".to_owned(),
            records: 0,
            skipped: 0,
            last_skipped: None,
        };
        // Nanoseconds since 1970 in base 36: a new run, a new id space.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Arc::new(Hub {
            inner: Mutex::new(Inner {
                head: 0,
                cap: cap.max(1),
                events: VecDeque::new(),
                sessions: HashMap::new(),
                seen: 0,
                told: status.clone(),
                status,
            }),
            head: watch::Sender::new(0),
            run: base36(nanos ^ u128::from(std::process::id())),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind: keep serving it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a batch of changes under one lock; then a changed status becomes a `status`
    /// event and every waiting client wakes.
    pub fn batch<R>(&self, f: impl FnOnce(&mut Batch) -> R) -> R {
        let (r, head) = {
            let mut inner = self.lock();
            let r = f(&mut Batch(&mut inner));
            if inner.status != inner.told {
                inner.told = inner.status.clone();
                let data = json!(inner.status).to_string();
                inner.push("status", data);
            }
            (r, inner.head)
        };
        self.head.send_replace(head);
        r
    }

    /// The status as it stands.
    pub fn status(&self) -> Status {
        self.lock().status.clone()
    }

    /// The SSE id of event `n` in this run.
    pub fn event_id(&self, n: u64) -> String {
        format!("{n}-{}", self.run)
    }

    /// Event `n` of this run, from an SSE id; `None` for anything else.
    pub fn parse_id(&self, id: &str) -> Option<u64> {
        let (n, run) = id.trim().split_once('-')?;
        (run == self.run).then(|| n.parse().ok()).flatten()
    }

    /// What a client that has seen up to event `after` needs next: the buffered events after
    /// it, or (no id, an id before the buffer, or after the head) a snapshot as of the head.
    pub fn since(&self, after: Option<u64>) -> Vec<Event> {
        let inner = self.lock();
        let oldest = inner.events.front().map_or(inner.head + 1, |e| e.id);
        match after {
            Some(n) if n <= inner.head && n + 1 >= oldest => {
                inner.events.iter().filter(|e| e.id > n).cloned().collect()
            }
            _ => vec![Event {
                id: inner.head,
                kind: "snapshot",
                data: inner.snapshot().to_string(),
            }],
        }
    }

    /// Each session's latest state, newest first, and the status, with the id they are as of.
    pub fn state(&self) -> Value {
        let inner = self.lock();
        let mut v = inner.snapshot();
        v["id"] = json!(self.event_id(inner.head));
        v
    }

    /// A stream of the events after `last` (an SSE id), forever: what `/events` sends.
    pub fn stream(
        self: Arc<Hub>,
        last: Option<&str>,
    ) -> impl Stream<Item = Result<sse::Event, Infallible>> + use<> {
        let after = last.and_then(|id| self.parse_id(id));
        let rx = self.head.subscribe();
        let state = (self, rx, after, VecDeque::<Event>::new(), true);
        futures_util::stream::unfold(state, |(hub, mut rx, mut after, mut queue, first)| {
            async move {
                loop {
                    if let Some(e) = queue.pop_front() {
                        after = Some(e.id);
                        let mut out = sse::Event::default()
                            .id(hub.event_id(e.id))
                            .event(e.kind)
                            .data(e.data);
                        if first {
                            // EventSource waits about 3 s before reconnecting, unless told.
                            out = out.retry(Duration::from_secs(1));
                        }
                        return Some((Ok(out), (hub, rx, after, queue, false)));
                    }
                    // Seen before looking, so a publish after the look still wakes us.
                    rx.borrow_and_update();
                    queue.extend(hub.since(after));
                    if queue.is_empty() && rx.changed().await.is_err() {
                        return None;
                    }
                }
            }
        })
    }
}

impl Inner {
    fn push(&mut self, kind: &'static str, data: String) {
        self.head += 1;
        self.events.push_back(Event {
            id: self.head,
            kind,
            data,
        });
        while self.events.len() > self.cap {
            self.events.pop_front();
        }
    }

    fn snapshot(&self) -> Value {
        let mut sessions: Vec<(&String, &Session)> = self.sessions.iter().collect();
        sessions.sort_by_key(|(_, s)| std::cmp::Reverse(s.first_seen));
        let sessions: Vec<Value> = sessions
            .into_iter()
            .map(|(id, s)| {
                json!({"session": id, "pressure": s.pressure, "error": s.error,
                       "frames": s.frames})
            })
            .collect();
        json!({"sessions": sessions, "status": self.status})
    }

    fn session(&mut self, id: &str) -> &mut Session {
        if !self.sessions.contains_key(id) {
            if self.sessions.len() >= MAX_SESSIONS
                && let Some(old) = self
                    .sessions
                    .iter()
                    .min_by_key(|(_, s)| s.first_seen)
                    .map(|(k, _)| k.clone())
            {
                self.sessions.remove(&old);
            }
            self.seen += 1;
            let first_seen = self.seen;
            self.sessions.insert(
                id.to_owned(),
                Session {
                    first_seen,
                    ..Session::default()
                },
            );
        }
        self.sessions.get_mut(id).expect("inserted above")
    }
}

/// Changes to the hub under its lock: see [`Hub::batch`].
pub struct Batch<'a>(&'a mut Inner);

impl Batch<'_> {
    /// One record read from the source (a log line, a record on stdin or a topic).
    pub fn read(&mut self, n: u64) {
        self.0.status.records += n;
    }

    /// One record skipped, and why.
    pub fn skip(&mut self, why: String) {
        self.0.status.skipped += 1;
        self.0.status.last_skipped = Some(why);
    }

    /// Sets the status line.
    pub fn status(&mut self, state: State, message: impl Into<String>) {
        self.0.status.state = state;
        self.0.status.message = message.into();
    }

    /// Everything starts again (a rewritten or replaced log): sessions go, a `reset` tells
    /// the pages, and the counts restart.
    pub fn reset(&mut self, why: &str) {
        self.0.sessions.clear();
        self.0.status.records = 0;
        self.0.status.skipped = 0;
        self.0.status.last_skipped = None;
        self.0.push("reset", json!({"reason": why}).to_string());
    }

    /// A pressure record (`context/pressure` or `context/error`, SPEC §3): applied to its
    /// session and sent as a `pressure` event. Anything else is `Err(why)`, for the caller to
    /// count. One older than its session's latest (a re-delivery) is `Ok(false)`.
    pub fn pressure(&mut self, bytes: &[u8]) -> Result<bool, String> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|_| "not a pressure record: not JSON".to_owned())?;
        let Some(obj) = v.as_object() else {
            return Err("not a pressure record: not a JSON object".to_owned());
        };
        let kind = obj.get("type").and_then(Value::as_str);
        let is_error = match kind {
            Some("context/pressure") => false,
            Some("context/error") => true,
            Some(t) => return Err(format!("not a pressure record: type {t:?}")),
            None => return Err("not a pressure record: no type".to_owned()),
        };
        let Some(id) = obj.get("session").and_then(Value::as_str) else {
            return Err("a pressure record without a session string".to_owned());
        };
        let seq = obj.get("seq").and_then(Value::as_u64);
        let s = self.0.session(id);
        // The meter's own rule: a lower seq would turn back time; an equal one may be the
        // error about the frame the last figures came from.
        if let (Some(new), Some(old)) = (seq, s.seq)
            && new < old
        {
            return Ok(false);
        }
        if seq.is_some() {
            s.seq = seq;
        }
        if is_error {
            s.error = Some(v.clone());
        } else {
            s.pressure = Some(v.clone());
            s.error = None;
        }
        self.0.push("pressure", v.to_string());
        Ok(true)
    }

    /// A frame from the frames view: a folded one (`folded_frames` ≥ 2) joins its session's
    /// list and is sent as a `frame` event; others are no news here.
    pub fn frame(&mut self, key: Option<&[u8]>, bytes: &[u8]) -> bool {
        // Most frames fold nothing: those are not parsed at all.
        if !bytes.windows(15).any(|w| w == b"\"folded_frames\"") {
            return false;
        }
        let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(bytes) else {
            return false;
        };
        if frame
            .get("folded_frames")
            .and_then(Value::as_u64)
            .is_none_or(|n| n < 2)
        {
            return false;
        }
        let id = match key {
            Some(k) => String::from_utf8_lossy(k).into_owned(),
            None => frame
                .get("session_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        let frame = Value::Object(frame);
        let s = self.0.session(&id);
        s.frames.push_back(frame.clone());
        while s.frames.len() > FRAMES_PER_SESSION {
            s.frames.pop_front();
        }
        self.0
            .push("frame", json!({"session": id, "frame": frame}).to_string());
        true
    }
}

fn base36(mut n: u128) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(session: &str, seq: u64) -> Vec<u8> {
        format!(r#"{{"type":"context/pressure","session":"{session}","seq":{seq},"contextOccupancy":0.5}}"#)
            .into_bytes()
    }

    #[test]
    fn resume_replays_the_buffer_or_snapshots() {
        let hub = Hub::new(3, "test", None);
        hub.batch(|b| {
            for seq in 1..=5 {
                assert_eq!(b.pressure(&rec("a", seq)), Ok(true));
            }
        });
        // The status did not change: five pressure events, 1..=5, of which 3..=5 are kept.
        let ids: Vec<u64> = hub.since(Some(3)).iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 5]);
        assert!(hub.since(Some(5)).is_empty(), "up to date");
        // The buffer holds 3..=5: a client at 2 misses nothing, one at 1 missed event 2.
        assert_eq!(hub.since(Some(2)).len(), 3);
        for old in [None, Some(1), Some(0), Some(6)] {
            let snap = hub.since(old);
            assert_eq!(snap.len(), 1);
            assert_eq!((snap[0].kind, snap[0].id), ("snapshot", 5));
            let v: Value = serde_json::from_str(&snap[0].data).unwrap();
            assert_eq!(v["sessions"][0]["pressure"]["seq"], 5);
        }
        assert_eq!(hub.parse_id(&hub.event_id(4)), Some(4));
        assert_eq!(hub.parse_id("4-elsewhere"), None);
        assert_eq!(hub.parse_id("4"), None);
    }

    #[test]
    fn records_are_checked_and_sessions_ordered_newest_first() {
        let hub = Hub::new(100, "test", None);
        hub.batch(|b| {
            assert!(b.pressure(b"not json").is_err());
            assert!(b.pressure(b"[1]").is_err());
            assert!(
                b.pressure(br#"{"type":"user/message","session":"a"}"#)
                    .is_err()
            );
            assert!(b.pressure(br#"{"type":"context/pressure"}"#).is_err());
            assert_eq!(b.pressure(&rec("a", 7)), Ok(true));
            assert_eq!(b.pressure(&rec("b", 1)), Ok(true));
            assert_eq!(b.pressure(&rec("a", 6)), Ok(false), "older seq");
            let err = br#"{"type":"context/error","session":"a","seq":7,"error":"x"}"#;
            assert_eq!(b.pressure(err), Ok(true), "same seq: the error about it");
            assert!(b.frame(
                Some(b"b"),
                br#"{"type":"thinking/tokens","folded_frames":3}"#
            ));
            assert!(!b.frame(
                Some(b"b"),
                br#"{"type":"thinking/tokens","folded_frames":1}"#
            ));
            assert!(!b.frame(Some(b"b"), br#"{"type":"user/message"}"#));
        });
        let state = hub.state();
        let order = agent_fold_testkit::strings_of(&state["sessions"], "session");
        assert_eq!(order, ["b", "a"]);
        assert_eq!(state["sessions"][1]["error"]["error"], "x");
        assert_eq!(state["sessions"][1]["pressure"]["seq"], 7);
        assert_eq!(state["sessions"][0]["frames"][0]["folded_frames"], 3);
    }

    #[test]
    fn a_status_change_is_an_event() {
        let hub = Hub::new(100, "test", None);
        hub.batch(|b| b.status(State::Live, "following"));
        hub.batch(|b| b.status(State::Live, "following"));
        let events = hub.since(Some(0));
        assert_eq!(events.len(), 1, "an unchanged status is no news");
        assert_eq!(events[0].kind, "status");
        assert!(events[0].data.contains(r#""state":"live""#));
    }
}
