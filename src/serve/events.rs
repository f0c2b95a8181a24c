//! The hub between a source and the page: each session's latest state, the status line, and a
//! bounded buffer of numbered events that `/events` streams as Server-Sent Events.
//!
//! Events are numbered from 1 in the order they happen; an SSE id is `<n>-<run>`, `run` naming
//! this server process, so an id from an earlier run is never mistaken for one of this run. A
//! client that resumes (`Last-Event-ID`) gets every buffered event after its id; one whose id
//! is older than the buffer, from another run, or absent gets one `snapshot` event instead
//! (each session's latest state, as of the snapshot's id) and continues from there.
//!
//! What holds, and why: each event is encoded once, as its whole SSE frame in shared [`Bytes`],
//! and a client takes the next one by its number ([`Hub::next_after`], constant time), so a
//! client that never reads holds a few shared frames, never a copy of the buffer; the snapshot
//! is encoded once per head and shared too. The buffer is bounded in events (`--buffer`) and in
//! bytes ([`BUFFER_BYTES`]); a session keeps its latest record (at most [`RECORD_BYTES`]) and
//! the few fields of its last folded frames the page shows; at most [`MAX_SESSIONS`] are kept.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

/// Sessions the page shows at most: beyond it, the one first seen longest ago goes.
pub const MAX_SESSIONS: usize = 1000;
/// Folded frames kept per session for its list.
const FRAMES_PER_SESSION: usize = 8;
/// The most bytes of one pressure record: a real one is under a kilobyte.
pub const RECORD_BYTES: usize = 16 << 10;
/// The most bytes of what a folded frame keeps (the fields the page shows).
const FRAME_BYTES: usize = 2 << 10;
/// The most bytes the event buffer holds, whatever `--buffer` says.
pub const BUFFER_BYTES: usize = 32 << 20;
/// The fields of a folded frame that the page shows: the rest is not kept.
const FRAME_FIELDS: [&str; 5] = [
    "type",
    "timestamp",
    "folded_from",
    "folded_frames",
    "estimated_tokens_delta",
];

/// What the status line says of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceState {
    /// Getting ready (connecting, waiting for the log's format).
    Starting,
    /// Records flow (or would, when there are any).
    Live,
    /// Something is wrong (a vanished file, a lost cluster); the server retries.
    Error,
    /// The source has ended (stdin closed); the last figures stay.
    Ended,
}

impl SourceState {
    pub const ALL: [SourceState; 4] = [
        SourceState::Starting,
        SourceState::Live,
        SourceState::Error,
        SourceState::Ended,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SourceState::Starting => "starting",
            SourceState::Live => "live",
            SourceState::Error => "error",
            SourceState::Ended => "ended",
        }
    }
}

/// The status line: the source, its state, and what was read of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub source: String,
    pub module: Option<String>,
    pub state: SourceState,
    pub message: String,
    /// Records (log lines, or pressure records on stdin or a topic) read.
    pub records: u64,
    /// Of those, records skipped: not what the source should carry.
    pub skipped: u64,
    #[serde(rename = "lastSkipped")]
    pub last_skipped: Option<String>,
}

/// One numbered event, encoded once as its SSE frame (`id`, `event`, one `data` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: u64,
    pub kind: &'static str,
    /// The whole frame, shared by every client that sends it.
    pub wire: Bytes,
}

impl Event {
    fn new(id: u64, sse_id: &str, kind: &'static str, data: &str) -> Event {
        let wire = format!("id: {sse_id}\nevent: {kind}\ndata: {data}\n\n");
        Event {
            id,
            kind,
            wire: Bytes::from(wire),
        }
    }

    /// The event's data: JSON on one line.
    pub fn data(&self) -> &str {
        let text = std::str::from_utf8(&self.wire).expect("encoded from a str");
        let start = text.find("\ndata: ").map_or(0, |i| i + "\ndata: ".len());
        &text[start..text.len() - 2]
    }
}

/// A session as the page shows it: its newest pressure record, a `context/error` newer than
/// that, and the shown fields of its latest folded frames, each kept encoded.
#[derive(Debug, Default)]
struct Card {
    seq: Option<u64>,
    pressure: Option<Arc<str>>,
    error: Option<Arc<str>>,
    frames: VecDeque<Arc<str>>,
}

impl Card {
    fn bytes(&self) -> usize {
        let one = |s: &Option<Arc<str>>| s.as_ref().map_or(0, |s| s.len());
        one(&self.pressure) + one(&self.error) + self.frames.iter().map(|f| f.len()).sum::<usize>()
    }
}

struct Inner {
    /// The last event's number (0: none yet).
    head: u64,
    cap: usize,
    events: VecDeque<Event>,
    /// Bytes of the buffered events' frames.
    event_bytes: usize,
    cards: HashMap<String, Card>,
    /// The cards by when they were first seen: the oldest goes first.
    order: BTreeMap<u64, String>,
    seen: u64,
    status: Status,
    /// The status as the last `status` event told it.
    told: Status,
    /// The snapshot as of `head`, once a client asked for it.
    snapshot: Option<(u64, Bytes)>,
    /// The `/state` document as of `head`, once a client asked for it.
    state: Option<(u64, Bytes)>,
}

/// Figures of the hub, for `/metrics`: read without its lock.
#[derive(Debug, Default)]
pub struct Figures {
    /// `/events` clients connected now.
    pub clients: AtomicU64,
    /// Events published since the start.
    pub events: AtomicU64,
    /// Sessions forgotten to stay within [`MAX_SESSIONS`].
    pub evicted: AtomicU64,
    /// Snapshots written (for `/events` and `/state`): once per change at most, however many
    /// clients ask.
    pub snapshots: AtomicU64,
}

/// A gauge of clients: one more while it lives.
pub struct Client(Arc<Hub>);

impl Drop for Client {
    fn drop(&mut self) {
        self.0.figures.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Shared by the source (which writes) and every `/events` client (which read).
pub struct Hub {
    inner: Mutex<Inner>,
    head: watch::Sender<u64>,
    run: String,
    pub figures: Figures,
}

/// What a client that has seen up to some event gets next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The event after it.
    Event(Event),
    /// A snapshot as of `id` (its frame), for a client whose place is not in the buffer.
    Snapshot { id: u64, wire: Bytes },
    /// Nothing yet: the client is up to date.
    Wait,
}

/// What the hub holds, for `/metrics` and `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub status: Status,
    pub sessions: usize,
    pub events: usize,
    pub event_bytes: usize,
    pub session_bytes: usize,
}

impl Hub {
    /// A hub keeping the latest `cap` events, for a source described as `source`.
    pub fn new(cap: usize, source: &str, module: Option<String>) -> Arc<Hub> {
        let status = Status {
            source: source.to_owned(),
            module,
            state: SourceState::Starting,
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
                event_bytes: 0,
                cards: HashMap::new(),
                order: BTreeMap::new(),
                seen: 0,
                told: status.clone(),
                status,
                snapshot: None,
                state: None,
            }),
            head: watch::Sender::new(0),
            run: base36(nanos ^ u128::from(std::process::id())),
            figures: Figures::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind: keep serving it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a batch of changes under one lock; then a changed status becomes a `status`
    /// event and every waiting client wakes.
    pub fn batch<R>(&self, f: impl FnOnce(&mut Changes) -> R) -> R {
        let (r, head) = {
            let mut inner = self.lock();
            let mut changes = Changes {
                inner: &mut inner,
                hub: self,
            };
            let r = f(&mut changes);
            if inner.status != inner.told {
                inner.told = inner.status.clone();
                let data = json!(inner.status).to_string();
                self.push(&mut inner, "status", &data);
            }
            (r, inner.head)
        };
        self.head.send_replace(head);
        r
    }

    fn push(&self, inner: &mut Inner, kind: &'static str, data: &str) {
        inner.head += 1;
        let e = Event::new(inner.head, &self.event_id(inner.head), kind, data);
        inner.event_bytes += e.wire.len();
        inner.events.push_back(e);
        while inner.events.len() > inner.cap
            || (inner.event_bytes > BUFFER_BYTES && inner.events.len() > 1)
        {
            let old = inner.events.pop_front().expect("longer than one");
            inner.event_bytes -= old.wire.len();
        }
        self.figures.events.fetch_add(1, Ordering::Relaxed);
    }

    /// The status as it stands.
    pub fn status(&self) -> Status {
        self.lock().status.clone()
    }

    /// What the hub holds now.
    pub fn held(&self) -> Held {
        let inner = self.lock();
        Held {
            status: inner.status.clone(),
            sessions: inner.cards.len(),
            events: inner.events.len(),
            event_bytes: inner.event_bytes,
            session_bytes: inner.cards.values().map(Card::bytes).sum(),
        }
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

    /// What a client that has seen up to event `after` needs next: the one event after it,
    /// nothing (up to date), or (no id, an id before the buffer, or after the head) a snapshot.
    pub fn next_after(&self, after: Option<u64>) -> Next {
        let mut inner = self.lock();
        let oldest = inner.events.front().map_or(inner.head + 1, |e| e.id);
        match after {
            Some(n) if n == inner.head => Next::Wait,
            Some(n) if n < inner.head && n + 1 >= oldest => {
                Next::Event(inner.events[(n + 1 - oldest) as usize].clone())
            }
            _ => {
                let head = inner.head;
                let wire = match &inner.snapshot {
                    Some((at, wire)) if *at == head => wire.clone(),
                    _ => {
                        self.figures.snapshots.fetch_add(1, Ordering::Relaxed);
                        let data = inner.snapshot(None);
                        let e = Event::new(head, &self.event_id(head), "snapshot", &data);
                        inner.snapshot = Some((head, e.wire.clone()));
                        e.wire
                    }
                };
                Next::Snapshot { id: head, wire }
            }
        }
    }

    /// Each session's latest state, newest first, and the status, with the id they are as of:
    /// the `/state` document.
    /// Written once per change, however many clients ask (every change moves the head).
    pub fn state(&self) -> Bytes {
        let mut inner = self.lock();
        let head = inner.head;
        if let Some((at, doc)) = &inner.state
            && *at == head
        {
            return doc.clone();
        }
        self.figures.snapshots.fetch_add(1, Ordering::Relaxed);
        let doc = Bytes::from(inner.snapshot(Some(&self.event_id(head))));
        inner.state = Some((head, doc.clone()));
        doc
    }

    /// Counts a client of `/events` while the returned guard lives.
    pub fn client(self: &Arc<Hub>) -> Client {
        self.figures.clients.fetch_add(1, Ordering::Relaxed);
        Client(Arc::clone(self))
    }

    /// Wakes when the head moves.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.head.subscribe()
    }
}

impl Inner {
    /// The snapshot's JSON text, written from the records' own texts (each already JSON): no
    /// tree of them is built, so a snapshot costs its size once, whatever the records hold.
    fn snapshot(&self, id: Option<&str>) -> String {
        fn raw(s: &Option<Arc<str>>) -> &str {
            s.as_deref().unwrap_or("null")
        }
        let size: usize = self.cards.values().map(|c| c.bytes() + 64).sum();
        let mut out = String::with_capacity(size + 256);
        out.push_str("{\"sessions\":[");
        let cards = self
            .order
            .values()
            .rev()
            .filter_map(|id| Some((id, self.cards.get(id)?)));
        for (i, (id, card)) in cards.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"session\":");
            out.push_str(&Value::from(id.as_str()).to_string());
            out.push_str(",\"pressure\":");
            out.push_str(raw(&card.pressure));
            out.push_str(",\"error\":");
            out.push_str(raw(&card.error));
            out.push_str(",\"frames\":[");
            for (j, f) in card.frames.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push_str(f);
            }
            out.push_str("]}");
        }
        out.push_str("],\"status\":");
        out.push_str(&json!(self.status).to_string());
        if let Some(id) = id {
            out.push_str(",\"id\":");
            out.push_str(&Value::from(id).to_string());
        }
        out.push('}');
        out
    }
}

/// Changes to the hub under its lock: see [`Hub::batch`].
pub struct Changes<'a> {
    inner: &'a mut Inner,
    hub: &'a Hub,
}

impl Changes<'_> {
    /// One record read from the source (a log line, a record on stdin or a topic).
    pub fn read(&mut self, n: u64) {
        self.inner.status.records += n;
    }

    /// One record skipped, and why.
    pub fn skip(&mut self, why: String) {
        self.inner.status.skipped += 1;
        self.inner.status.last_skipped = Some(why);
    }

    /// Sets the status line.
    pub fn status(&mut self, state: SourceState, message: impl Into<String>) {
        self.inner.status.state = state;
        self.inner.status.message = message.into();
    }

    /// Everything starts again (a rewritten or replaced log): sessions go, a `reset` tells
    /// the pages, and the counts restart.
    pub fn reset(&mut self, why: &str) {
        self.inner.cards.clear();
        self.inner.order.clear();
        self.inner.status.records = 0;
        self.inner.status.skipped = 0;
        self.inner.status.last_skipped = None;
        let data = json!({"reason": why}).to_string();
        self.hub.push(self.inner, "reset", &data);
    }

    /// The card of session `id`, made when new: beyond [`MAX_SESSIONS`], the one first seen
    /// longest ago goes, and a `forget` event tells the pages.
    fn card(&mut self, id: &str) -> &mut Card {
        if !self.inner.cards.contains_key(id) {
            if self.inner.cards.len() >= MAX_SESSIONS
                && let Some((_, old)) = self.inner.order.pop_first()
            {
                self.inner.cards.remove(&old);
                self.hub.figures.evicted.fetch_add(1, Ordering::Relaxed);
                let data = json!({"session": old}).to_string();
                self.hub.push(self.inner, "forget", &data);
            }
            self.inner.seen += 1;
            let first_seen = self.inner.seen;
            self.inner.order.insert(first_seen, id.to_owned());
            self.inner.cards.insert(id.to_owned(), Card::default());
        }
        self.inner.cards.get_mut(id).expect("inserted above")
    }

    /// A pressure record (`context/pressure` or `context/error`, contract §3), parsed before
    /// the lock by [`PressureRecord::parse`]: applied to its session and sent as a `pressure` event.
    /// One older than its session's latest (a re-delivery) is `false`.
    pub fn pressure(&mut self, r: PressureRecord) -> bool {
        let s = self.card(&r.id);
        // The meter's own rule: a lower seq would turn back time; an equal one may be the
        // error about the frame the last figures came from.
        if let (Some(new), Some(old)) = (r.seq, s.seq)
            && new < old
        {
            return false;
        }
        if r.seq.is_some() {
            s.seq = r.seq;
        }
        if r.is_error {
            s.error = Some(Arc::clone(&r.text));
        } else {
            s.pressure = Some(Arc::clone(&r.text));
            s.error = None;
        }
        self.hub.push(self.inner, "pressure", &r.text);
        true
    }

    /// A folded frame ([`Folded::parse`]): joins its session's list and is sent as a `frame`
    /// event.
    pub fn frame(&mut self, f: Folded) {
        let s = self.card(&f.id);
        s.frames.push_back(f.shown);
        while s.frames.len() > FRAMES_PER_SESSION {
            s.frames.pop_front();
        }
        self.hub.push(self.inner, "frame", &f.event);
    }
}

/// A pressure record read off a source, parsed in the source's own thread: the hub's lock is
/// held only to apply it (`/events` and `/state` never wait behind a parse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressureRecord {
    id: String,
    seq: Option<u64>,
    is_error: bool,
    /// The record as the page gets it.
    text: Arc<str>,
}

impl PressureRecord {
    /// A `context/pressure` or `context/error` record with a session; anything else is
    /// `Err(why)`, for the caller to count.
    pub fn parse(bytes: &[u8]) -> Result<PressureRecord, String> {
        if bytes.len() > RECORD_BYTES {
            return Err(format!(
                "a pressure record of {} bytes, over the limit of {RECORD_BYTES}",
                bytes.len()
            ));
        }
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|_| "not a pressure record: not JSON".to_owned())?;
        let Some(obj) = v.as_object() else {
            return Err("not a pressure record: not a JSON object".to_owned());
        };
        let is_error = match obj.get("type").and_then(Value::as_str) {
            Some("context/pressure") => false,
            Some("context/error") => true,
            Some(t) => return Err(format!("not a pressure record: type {t:?}")),
            None => return Err("not a pressure record: no type".to_owned()),
        };
        let Some(id) = obj.get("session").and_then(Value::as_str) else {
            // The module's own error about a record it keeps no state for (an over-long key).
            if is_error && let Some(e) = obj.get("error").and_then(Value::as_str) {
                return Err(format!("the module said: {e}"));
            }
            return Err("a pressure record without a session string".to_owned());
        };
        Ok(PressureRecord {
            id: id.to_owned(),
            seq: obj.get("seq").and_then(Value::as_u64),
            is_error,
            text: Arc::from(v.to_string()),
        })
    }
}

/// A folded frame of the frames view (`folded_frames` ≥ 2), as the page shows it, parsed
/// before the lock; other frames are no news.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    id: String,
    /// The fields the page shows.
    shown: Arc<str>,
    /// The `frame` event's data.
    event: String,
}

impl Folded {
    pub fn parse(key: Option<&[u8]>, bytes: &[u8]) -> Option<Folded> {
        // Most frames fold nothing: those are not parsed at all.
        if !bytes.windows(15).any(|w| w == b"\"folded_frames\"") {
            return None;
        }
        let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(bytes) else {
            return None;
        };
        if frame
            .get("folded_frames")
            .and_then(Value::as_u64)
            .is_none_or(|n| n < 2)
        {
            return None;
        }
        let id = match key {
            Some(k) => String::from_utf8_lossy(k).into_owned(),
            None => frame
                .get("session_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        let shown: Map<String, Value> = FRAME_FIELDS
            .iter()
            .filter_map(|k| Some(((*k).to_owned(), frame.get(*k)?.clone())))
            .collect();
        let shown = Value::Object(shown);
        let text = shown.to_string();
        if text.len() > FRAME_BYTES || id.len() > agent_fold_core::MAX_KEY_LEN {
            return None;
        }
        let event = json!({"session": id, "frame": shown}).to_string();
        Some(Folded {
            id,
            shown: Arc::from(text),
            event,
        })
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
mod tests;
