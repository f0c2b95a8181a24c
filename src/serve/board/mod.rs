//! The fleet board: every session a source brings, its latest figures, a bounded history, the
//! alerts it fires, and the coalesced deltas each page gets.
//!
//! What holds, and why:
//! - **Coalesced.** Each change moves the board's version and names its session in a ring of
//!   changes. A page that has seen version `v` gets, at most every [`super::sse::MIN_INTERVAL`],
//!   the latest row of each session changed since `v` — never one message per record, and a
//!   slow page loses intermediate values, never the latest one. A page too far behind (past the
//!   ring, or more rows than a delta carries) gets the whole board instead.
//! - **Encoded once.** A session's row is encoded once per change, the whole board once per
//!   version, the delta from the version most pages are at once per version: pages share them.
//! - **Bounded.** At most `max_sessions` sessions and `history_points` history points in all
//!   (each session at most [`history::POINTS`]); past either, the session idle longest goes
//!   (a `gone` in the deltas). A session idle past `idle` leaves the live board but keeps its
//!   history until that room is needed.

pub(crate) mod alerts;
mod changes;
pub(crate) mod events;
pub(crate) mod history;
pub(crate) mod query;
pub(crate) mod row;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::watch;

pub(crate) use super::notifiers::alert::{Alert, AlertStatus};
use super::notifiers::outbox::Outbox;

use alerts::{Firing, Rule};
pub(crate) use changes::Changes;
pub(crate) use events::{Client, Next};
use history::History;
pub(crate) use row::{Folded, Latest, PressureRecord};

/// Changes remembered for pages that resume: a page further behind gets the whole board.
const CHANGES: usize = 65_536;
/// The most rows one delta carries: a page further behind gets the whole board.
pub(crate) const DELTA_ROWS: usize = 4_096;
/// The most bytes of rows a delta of one page's own carries (a delta most pages share is
/// encoded once): a page further behind gets the whole board, which every page shares, so a
/// page that never reads holds at most this of its own.
pub(crate) const DELTA_BYTES: usize = 256 << 10;
/// Folded frames kept per session for its list.
const FOLDS: usize = 8;
/// Values in a row's sparkline.
pub(crate) const SPARK: usize = 32;

/// What the status line says of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SourceState {
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
    pub(crate) const ALL: [SourceState; 4] = [
        SourceState::Starting,
        SourceState::Live,
        SourceState::Error,
        SourceState::Ended,
    ];

    pub(crate) fn name(self) -> &'static str {
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
pub(crate) struct Status {
    pub source: String,
    pub module: Option<String>,
    pub state: SourceState,
    pub message: String,
    /// Records (log lines, OTLP events, or pressure records on stdin or a topic) read.
    pub records: u64,
    /// Of those, records skipped: not what the source should carry.
    pub skipped: u64,
    #[serde(rename = "lastSkipped")]
    pub last_skipped: Option<String>,
    /// Why a followed log was last read again from its start (a file truncated, replaced,
    /// rewritten or back), when one was: its own sessions were rebuilt from it.
    pub reset: Option<String>,
}

/// How the board is bounded and what it alerts on.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// A session whose last activity is older than this leaves the live board.
    pub idle: Duration,
    /// Sessions kept at most, live or idle.
    pub max_sessions: usize,
    /// History points kept at most, over all sessions.
    pub history_points: usize,
    /// `--alert` rules.
    pub rules: Vec<Rule>,
    /// How far back a session's compactions count toward a `thrash` rule.
    pub thrash_window: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            idle: Duration::from_secs(30 * 60),
            max_sessions: 20_000,
            history_points: 4 << 20,
            rules: Vec::new(),
            thrash_window: Duration::from_secs(15 * 60),
        }
    }
}

/// A session as the board keeps it.
#[derive(Debug)]
struct Session {
    id: Arc<str>,
    agent: Option<Arc<str>>,
    model: Option<Arc<str>>,
    record: Option<Arc<RawValue>>,
    error: Option<Arc<RawValue>>,
    latest: Latest,
    seq: Option<u64>,
    /// Last activity: the latest record's stamp (never ahead of the clock), else when read.
    active: i64,
    /// When the latest record was read (ms since 1970).
    read_at: i64,
    live: bool,
    history: History,
    folds: VecDeque<Arc<RawValue>>,
    firing: Firing,
    /// When each firing rule crossed (rule, stamp in ms): an alert's start, for re-sends.
    fired_at: Vec<(u8, i64)>,
    /// When its latest compactions came (ms), the latest [`COMPACTIONS_KEPT`]: what a `thrash`
    /// rule counts.
    compacted_at: VecDeque<i64>,
    /// Where it stands in [`Inner::by_activity`].
    order: (i64, u64),
    /// The row encoded as of a version.
    row: Option<(u64, Arc<RawValue>)>,
    version: u64,
}

/// A row as the page gets it.
#[derive(Serialize)]
struct RowOut<'a> {
    session: &'a str,
    agent: Option<&'a str>,
    model: Option<&'a str>,
    live: bool,
    active: i64,
    #[serde(rename = "readAt")]
    read_at: i64,
    seq: Option<u64>,
    record: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    spark: Vec<Option<u64>>,
    alerts: Vec<&'a str>,
    folds: Vec<&'a RawValue>,
}

impl Session {
    fn row(&mut self, rules: &[Rule]) -> Arc<RawValue> {
        if let Some((v, row)) = &self.row
            && *v == self.version
        {
            return Arc::clone(row);
        }
        let out = RowOut {
            session: &self.id,
            agent: self.agent.as_deref(),
            model: self.model.as_deref(),
            live: self.live,
            active: self.active,
            read_at: self.read_at,
            seq: self.seq,
            record: self.record.as_deref(),
            error: self.error.as_deref(),
            spark: self.history.spark(SPARK),
            alerts: self.firing.iter().map(|i| rules[i].text.as_str()).collect(),
            folds: self.folds.iter().map(|f| &**f).collect(),
        };
        let text = serde_json::to_string(&out).expect("a row serialises");
        let row: Arc<RawValue> =
            Arc::from(RawValue::from_string(text).expect("JSON written above"));
        self.row = Some((self.version, Arc::clone(&row)));
        row
    }

    fn bytes(&self) -> usize {
        let raw = |r: &Option<Arc<RawValue>>| r.as_ref().map_or(0, |r| r.get().len());
        self.id.len()
            + raw(&self.record)
            + raw(&self.error)
            + self.folds.iter().map(|f| f.get().len()).sum::<usize>()
            + self.history.bytes()
            + self.row.as_ref().map_or(0, |(_, r)| r.get().len())
            + std::mem::size_of::<Session>()
    }
}

struct Inner {
    version: u64,
    sessions: HashMap<Arc<str>, Session>,
    /// Sessions by last activity, the idlest first: who goes when room is needed.
    by_activity: BTreeMap<(i64, u64), Arc<str>>,
    tiebreak: u64,
    /// `(version, session)` of each change, oldest first; a session no longer kept is `gone`.
    changes: VecDeque<(u64, Arc<str>)>,
    /// Versions up to this are not in `changes` any more (or were before a reset).
    floor: u64,
    status: Status,
    /// The version the status last changed at.
    status_version: u64,
    /// History points held, over all sessions.
    points: usize,
    /// The whole board as of a version.
    board: Option<(u64, Bytes)>,
    /// The delta from one version to another, shared by the pages that were at the first.
    delta: Option<(u64, u64, Bytes)>,
    /// The rules firing for sessions evicted while some fired, the latest [`FIRING_KEPT`]: a
    /// session that comes back does not alert again for a crossing it was alerted of.
    /// Each with the eviction's number, which `evicted_order` holds too.
    evicted_firing: HashMap<Arc<str>, (Firing, u64)>,
    evicted_order: VecDeque<(Arc<str>, u64)>,
    evictions: u64,
    /// Sessions whose log is being read again from its start ([`Changes::reread`]), with
    /// their alert state as it stood before: meanwhile their records move the state and page
    /// no one; at the end only what differs from this is said.
    rereading: HashMap<Arc<str>, Parked>,
}

/// A session's alert state set aside while its log is read again.
#[derive(Debug, Clone, Default)]
struct Parked {
    firing: Firing,
    /// When each firing rule's alert began (rule, ms).
    fired_at: Vec<(u8, i64)>,
}

/// Which sessions a log's re-read concerns: these, or every session on the board (a file
/// naming more sessions than are tracked per file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sessions {
    These(Vec<Arc<str>>),
    All,
}

/// Things that happen to a followed log's files, said once each on stderr and counted in
/// `/metrics` (`log_events_total{event}`; docs/serve.md, "Sources").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogEvent {
    Truncated,
    Replaced,
    Rewritten,
    CameBack,
    Vanished,
    Unreadable,
    Readable,
}

impl LogEvent {
    pub(crate) const ALL: [LogEvent; 7] = [
        LogEvent::Truncated,
        LogEvent::Replaced,
        LogEvent::Rewritten,
        LogEvent::CameBack,
        LogEvent::Vanished,
        LogEvent::Unreadable,
        LogEvent::Readable,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            LogEvent::Truncated => "truncated",
            LogEvent::Replaced => "replaced",
            LogEvent::Rewritten => "rewritten",
            LogEvent::CameBack => "came_back",
            LogEvent::Vanished => "vanished",
            LogEvent::Unreadable => "unreadable",
            LogEvent::Readable => "readable",
        }
    }
}

/// Evicted sessions whose firing rules are remembered (about 100 bytes each).
const FIRING_KEPT: usize = 65_536;
/// What one remembered evicted session holds besides its id: its entry in `evicted_firing`
/// and in `evicted_order`.
const FIRED_ENTRY_BYTES: usize =
    std::mem::size_of::<(Arc<str>, (Firing, u64))>() + std::mem::size_of::<(Arc<str>, u64)>();

/// Figures of the board, for `/metrics`: read without its lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// `/events` clients connected now.
    pub clients: AtomicU64,
    /// Messages sent to pages.
    pub messages: AtomicU64,
    /// Whole boards encoded (once per version at most, however many pages ask).
    pub boards: AtomicU64,
    /// Sessions dropped to keep within the bounds.
    pub evicted: AtomicU64,
    /// Alerts fired, per rule.
    pub alerts: Vec<AtomicU64>,
    /// Crossings read while catching up with a topic's recent history: the alert state
    /// follows them, no notice is sent (Alertmanager gets the firing ones re-sent).
    pub alerts_caught_up: AtomicU64,
    /// Crossings in records older than `idle`: the alert state follows them, nobody is paged.
    pub alerts_old: AtomicU64,
    /// Crossings read while a log is read again from its start: the state follows them; at
    /// the re-read's end only what differs from before is sent.
    pub alerts_reread: AtomicU64,
    /// A followed log's files truncated, replaced, … per [`LogEvent`].
    pub log_events: [AtomicU64; 7],
    /// Compactions seen happening (a session's `compactions` grew), by agent and trigger, at
    /// most [`COMPACTION_AGENTS`] agents (the rest counted as `other`).
    pub compactions: Mutex<BTreeMap<(String, &'static str), u64>>,
}

/// A session's compaction times kept for a `thrash` rule.
pub(crate) const COMPACTIONS_KEPT: usize = 16;
/// Agents the compaction counters name; a record's `agent` beyond them counts as `other`.
pub(crate) const COMPACTION_AGENTS: usize = 32;

impl Counters {
    /// `n` compactions of `agent`'s session, set off by `trigger` (the last one's).
    pub(crate) fn compacted(
        &self,
        agent: Option<&str>,
        trigger: Option<agent_fold_core::Trigger>,
        n: u64,
    ) {
        let mut m = self.compactions.lock().unwrap_or_else(|e| e.into_inner());
        let agent = agent.unwrap_or("unknown");
        let known = m.keys().any(|(a, _)| a == agent);
        let agents = m
            .keys()
            .map(|(a, _)| a)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let agent = if known || agents < COMPACTION_AGENTS {
            agent
        } else {
            "other"
        };
        let trigger = trigger.map_or("unknown", agent_fold_core::Trigger::word);
        let count = m.entry((agent.to_owned(), trigger)).or_default();
        *count = count.saturating_add(n);
    }
}

/// Shared by the sources (which write) and every page and API call (which read).
pub(crate) struct Board {
    inner: Mutex<Inner>,
    head: watch::Sender<u64>,
    run: String,
    policy: Policy,
    /// Where alert notices go (`--alert-webhook`, `--alertmanager`).
    receivers: Vec<Arc<Outbox>>,
    pub counters: Counters,
}

/// What the board holds, for `/metrics` and `/healthz`.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub status: Status,
    pub sessions: usize,
    pub live: usize,
    pub points: usize,
    pub bytes: usize,
    /// Live sessions by band (see [`Bands`]).
    pub bands: Bands,
    /// Sessions firing, per rule.
    pub firing: Vec<u64>,
}

/// Live sessions counted by how full and how close to compacting they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bands {
    /// `contextOccupancy` below 0.5, 0.5 to 0.75, 0.75 to 0.9, 0.9 and above, unknown.
    pub occupancy: [u64; 5],
    /// `untilCompactTokens` below 10,000, below 50,000, 50,000 and above, unknown.
    pub until: [u64; 4],
}

impl Bands {
    pub(crate) const OCCUPANCY: [&'static str; 5] =
        ["lt_50", "50_to_75", "75_to_90", "ge_90", "unknown"];
    pub(crate) const UNTIL: [&'static str; 4] = ["lt_10k", "10k_to_50k", "ge_50k", "unknown"];

    fn count(&mut self, l: &Latest) {
        let o = match l.occupancy {
            Some(o) if o < 0.5 => 0,
            Some(o) if o < 0.75 => 1,
            Some(o) if o < 0.9 => 2,
            Some(_) => 3,
            None => 4,
        };
        let u = match l.until {
            Some(u) if u < 10_000 => 0,
            Some(u) if u < 50_000 => 1,
            Some(_) => 2,
            None => 3,
        };
        self.occupancy[o] += 1;
        self.until[u] += 1;
    }
}

/// Milliseconds since 1970 now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Board {
    /// A board for a source described as `source`; each of `receivers` takes every alert
    /// notice, never waited for (an [`Outbox`] is bounded and merges past its bound).
    pub(crate) fn new(
        policy: Policy,
        source: &str,
        module: Option<String>,
        receivers: Vec<Arc<Outbox>>,
    ) -> Arc<Board> {
        let status = Status {
            source: source.to_owned(),
            module,
            state: SourceState::Starting,
            message: "starting".to_owned(),
            records: 0,
            skipped: 0,
            last_skipped: None,
            reset: None,
        };
        // Nanoseconds since 1970 in base 36: a new run, a new id space.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let counters = Counters {
            alerts: policy.rules.iter().map(|_| AtomicU64::new(0)).collect(),
            ..Counters::default()
        };
        Arc::new(Board {
            inner: Mutex::new(Inner {
                version: 0,
                sessions: HashMap::new(),
                by_activity: BTreeMap::new(),
                tiebreak: 0,
                changes: VecDeque::new(),
                floor: 0,
                status,
                status_version: 0,
                points: 0,
                board: None,
                delta: None,
                evicted_firing: HashMap::new(),
                evicted_order: VecDeque::new(),
                evictions: 0,
                rereading: HashMap::new(),
            }),
            head: watch::Sender::new(0),
            run: base36(nanos ^ u128::from(std::process::id())),
            policy,
            receivers,
            counters,
        })
    }

    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind: keep serving it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a batch of changes under one lock; then every waiting page wakes.
    pub(crate) fn batch<R>(&self, f: impl FnOnce(&mut Changes) -> R) -> R {
        let (r, head) = {
            let mut inner = self.lock();
            let before = inner.status.clone();
            let mut changes = Changes {
                inner: &mut inner,
                board: self,
                now: now_ms(),
                catching_up: false,
            };
            let r = f(&mut changes);
            if inner.status != before {
                inner.version += 1;
                inner.status_version = inner.version;
            }
            (r, inner.version)
        };
        self.head.send_if_modified(|h| {
            let moved = *h != head;
            *h = head;
            moved
        });
        r
    }

    /// Sessions idle past `idle` leave the live board (a change each); run every second or so.
    pub(crate) fn sweep(&self) {
        self.batch(|c| c.sweep());
    }

    /// The status as it stands.
    pub(crate) fn status(&self) -> Status {
        self.lock().status.clone()
    }

    /// What the board holds now (one pass over the sessions).
    pub(crate) fn held(&self) -> Held {
        let inner = self.lock();
        let mut bands = Bands::default();
        let mut firing = vec![0; self.policy.rules.len()];
        let mut live = 0;
        let mut bytes = 0;
        for s in inner.sessions.values() {
            bytes += s.bytes();
            if s.live {
                live += 1;
                bands.count(&s.latest);
            }
            for i in s.firing.iter() {
                firing[i] += 1;
            }
        }
        // What pages share (the encoded board, the latest delta), the change log, and the
        // alert state of evicted sessions (each id's one allocation counted once).
        bytes += inner.board.as_ref().map_or(0, |(_, b)| b.len())
            + inner.delta.as_ref().map_or(0, |(_, _, d)| d.len())
            + inner.changes.len() * std::mem::size_of::<(u64, Arc<str>)>()
            + inner
                .evicted_firing
                .keys()
                .map(|id| id.len() + FIRED_ENTRY_BYTES)
                .sum::<usize>();
        Held {
            status: inner.status.clone(),
            sessions: inner.sessions.len(),
            live,
            points: inner.points,
            bytes,
            bands,
            firing,
        }
    }

    /// Every alert firing now, as a firing notice each (what `--alertmanager` sends again):
    /// its start the crossing's stamp, else the session's last activity.
    pub(crate) fn firing_alerts(&self) -> Vec<Alert> {
        let inner = self.lock();
        let now = now_ms();
        let mut out = Vec::new();
        for s in inner.sessions.values() {
            let Some(record) = &s.record else { continue };
            for i in s.firing.iter() {
                let rule = &self.policy.rules[i];
                let since = s
                    .fired_at
                    .iter()
                    .find(|(r, _)| usize::from(*r) == i)
                    .map_or(s.active, |(_, t)| *t);
                out.push(Alert {
                    status: AlertStatus::Firing,
                    rule: rule.text.clone(),
                    session: Arc::clone(&s.id),
                    agent: s.agent.clone(),
                    model: s.model.clone(),
                    value: rule.value(&s.latest).unwrap_or(f64::NAN),
                    threshold: rule.threshold,
                    seq: s.seq,
                    record: Arc::clone(record),
                    at: now,
                    since,
                    merged: 0,
                });
            }
        }
        out
    }

    /// The rows a query asks for (see [`query`]), with the version they are as of and the
    /// counts of sessions kept, live and matched.
    pub(crate) fn query(&self, q: &query::Query) -> query::Answer {
        let mut inner = self.lock();
        let rules = &self.policy.rules;
        let total = inner.sessions.len();
        let mut picked: Vec<&mut Session> = inner
            .sessions
            .values_mut()
            .filter(|s| q.all || s.live)
            .collect();
        let live = picked.iter().filter(|s| s.live).count();
        picked.retain(|s| q.matches(&s.id, s.agent.as_deref(), s.model.as_deref()));
        let matched = picked.len();
        picked.sort_by(|a, b| q.order(&a.key(), &b.key()));
        let rows = picked
            .into_iter()
            .skip(q.offset)
            .take(q.limit)
            .map(|s| s.row(rules))
            .collect();
        query::Answer {
            v: inner.version,
            total,
            live,
            matched,
            sessions: rows,
        }
    }

    /// One session's row and its history after `after` (all of it for `None`).
    pub(crate) fn session(&self, id: &str, after: Option<u64>) -> Option<query::Detail> {
        let mut inner = self.lock();
        let v = inner.version;
        let s = inner.sessions.get_mut(id)?;
        Some(query::Detail {
            v,
            row: s.row(&self.policy.rules),
            history: query::HistoryOut {
                points: s.history.shown(after),
            },
        })
    }
}

impl Session {
    fn key(&self) -> query::Key<'_> {
        query::Key {
            session: &self.id,
            agent: self.agent.as_deref(),
            model: self.model.as_deref(),
            latest: &self.latest,
            active: self.active,
        }
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
