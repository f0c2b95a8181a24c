//! The notices waiting for one alert receiver (`--alert-webhook`, `--alertmanager`; the "Alerts"
//! section of docs/serve.md).
//!
//! What holds:
//! - The board hands a notice over with [`Outbox::push`], which never waits: a burst (a
//!   restart's catch-up, a fleet crossing at once) waits here, not on the board.
//! - Nothing is dropped within the bound: [`QUEUE`] notices and [`BYTES`] of them (the record
//!   each carries counted), shared evenly by the lanes.
//! - A session's notices go in one lane (by its id's hash), and a lane is delivered in order,
//!   one request at a time: a session's firing never arrives after its resolution.
//! - Past the bound, notices are merged, never a session's latest: the oldest waiting notice of
//!   the incoming notice's session is folded into it (`merged` counts what it stands for), else
//!   the oldest of the session with the most waiting is folded into that session's next one.
//!   Only when every waiting notice is some session's only one is the incoming one dropped.
//!   Both are counted (`/metrics`) and said on stderr once per overflow.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::alert::Alert;

/// Notices waiting per receiver at most (over its lanes).
pub(crate) const QUEUE: usize = 16_384;
/// Their bytes at most: each notice counts its record and `OVERHEAD`.
pub(crate) const BYTES: usize = 32 << 20;
/// What a notice costs besides its record's bytes.
const OVERHEAD: usize = 256;
/// Notices one request carries at most.
pub(crate) const NOTICES_PER_POST: usize = 256;

/// What became of the notices handed to one receiver.
#[derive(Debug, Default)]
pub(crate) struct Outcomes {
    /// Delivered (a 2xx).
    pub delivered: AtomicU64,
    /// Given up on (after the attempts, or a final refusal).
    pub failed: AtomicU64,
    /// Past the bound: folded into a later notice of their session.
    pub merged: AtomicU64,
    /// Past the bound with nothing to merge: not sent.
    pub dropped: AtomicU64,
    /// Attempts tried again.
    pub retried: AtomicU64,
}

/// One receiver's waiting notices.
pub(crate) struct Outbox {
    lanes: Box<[Lane]>,
    hasher: RandomState,
    /// The receiver's name in notes (`webhook`, `alertmanager`).
    pub name: &'static str,
    pub outcomes: Arc<Outcomes>,
}

struct Lane {
    pending: Mutex<Pending>,
    wake: Notify,
}

#[derive(Default)]
struct Pending {
    queue: VecDeque<Alert>,
    bytes: usize,
    /// Notices waiting per session.
    waiting: HashMap<Arc<str>, usize>,
    /// Past the bound since the queue was last under half of it (said once per overflow).
    overflowing: bool,
}

fn cost(a: &Alert) -> usize {
    a.record.get().len() + a.session.len() + OVERHEAD
}

impl Pending {
    /// Takes the notice at `i` out of the queue.
    fn remove(&mut self, i: usize) -> Alert {
        let a = self.queue.remove(i).expect("an index in the queue");
        self.bytes -= cost(&a);
        if let Some(n) = self.waiting.get_mut(&a.session) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&a.session);
            }
        }
        a
    }

    /// Makes room by one merge; false when every waiting notice is its session's only one.
    fn merge_one(&mut self, incoming: &mut Alert) -> bool {
        if self.waiting.contains_key(&incoming.session) {
            let i = self
                .queue
                .iter()
                .position(|a| a.session == incoming.session)
                .expect("counted as waiting");
            let old = self.remove(i);
            incoming.merged += 1 + old.merged;
            return true;
        }
        let Some(most) = self
            .waiting
            .iter()
            .filter(|(_, n)| **n > 1)
            .max_by_key(|(_, n)| **n)
            .map(|(s, _)| Arc::clone(s))
        else {
            return false;
        };
        let i = self
            .queue
            .iter()
            .position(|a| a.session == most)
            .expect("counted as waiting");
        let old = self.remove(i);
        let next = self
            .queue
            .iter_mut()
            .skip(i)
            .find(|a| a.session == most)
            .expect("more than one waited");
        next.merged += 1 + old.merged;
        true
    }
}

impl Outbox {
    /// An outbox of `lanes` lanes (each delivered in order, one request at a time).
    pub(crate) fn new(name: &'static str, lanes: usize) -> Arc<Outbox> {
        Arc::new(Outbox {
            lanes: (0..lanes.max(1))
                .map(|_| Lane {
                    pending: Mutex::default(),
                    wake: Notify::new(),
                })
                .collect(),
            hasher: RandomState::new(),
            name,
            outcomes: Arc::default(),
        })
    }

    fn lock(&self, lane: usize) -> MutexGuard<'_, Pending> {
        // Plain data: a panic elsewhere leaves it usable.
        self.lanes[lane]
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a notice over; never waits (see the module's notes for what happens past the
    /// bound).
    pub(crate) fn push(&self, mut alert: Alert) {
        let lane = (self.hasher.hash_one(&*alert.session) % self.lanes.len() as u64) as usize;
        let (most, most_bytes) = (QUEUE / self.lanes.len(), BYTES / self.lanes.len());
        let size = cost(&alert);
        let mut p = self.lock(lane);
        while !p.queue.is_empty() && (p.queue.len() >= most || p.bytes + size > most_bytes) {
            if !p.overflowing {
                p.overflowing = true;
                tracing::warn!(
                    receiver = self.name,
                    waiting = p.queue.len(),
                    bytes = p.bytes,
                    "alert notices for the {} wait past the bound ({QUEUE} notices, {} MiB): \
                     the oldest waiting notices of a session are merged into its later ones",
                    self.name,
                    BYTES >> 20
                );
            }
            if p.merge_one(&mut alert) {
                self.outcomes.merged.fetch_add(1, Ordering::Relaxed);
            } else {
                self.outcomes.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(receiver = self.name, session = %alert.session, rule = alert.rule,
                    "an alert notice was dropped: {} sessions' notices wait, one each", p.queue.len());
                return;
            }
        }
        p.bytes += size;
        *p.waiting.entry(Arc::clone(&alert.session)).or_default() += 1;
        p.queue.push_back(alert);
        drop(p);
        self.lanes[lane].wake.notify_one();
    }

    /// The next notices of `lane`, oldest first, at most [`NOTICES_PER_POST`]; waits for one.
    pub(crate) async fn next(&self, lane: usize) -> Vec<Alert> {
        loop {
            let batch = self.take(lane);
            if !batch.is_empty() {
                return batch;
            }
            self.lanes[lane].wake.notified().await;
        }
    }

    /// The notices of `lane` waiting now, oldest first, at most [`NOTICES_PER_POST`]; none may
    /// wait.
    pub(crate) fn take(&self, lane: usize) -> Vec<Alert> {
        let mut p = self.lock(lane);
        let n = p.queue.len().min(NOTICES_PER_POST);
        let batch: Vec<Alert> = (0..n).map(|_| p.remove(0)).collect();
        if p.queue.len() < QUEUE / self.lanes.len() / 2 {
            p.overflowing = false;
        }
        batch
    }

    /// Notices waiting now, over the lanes.
    pub(crate) fn waiting(&self) -> usize {
        (0..self.lanes.len())
            .map(|l| self.lock(l).queue.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(session: &str, seq: u64, record_bytes: usize) -> Alert {
        Alert::firing(
            session,
            seq,
            format!("{{\"pad\":\"{}\"}}", "x".repeat(record_bytes)),
        )
    }

    fn drain(o: &Outbox) -> Vec<Alert> {
        let mut all = Vec::new();
        while o.waiting() > 0 {
            all.extend(o.take(0));
        }
        all
    }

    /// Within the bound, every notice waits, in order, and comes out in batches of
    /// [`NOTICES_PER_POST`].
    #[test]
    fn within_the_bound_nothing_is_merged_and_order_holds() {
        let o = Outbox::new("test", 1);
        for seq in 0..(QUEUE as u64) {
            o.push(notice(&format!("s{}", seq % 7), seq, 10));
        }
        assert_eq!(o.take(0).len(), NOTICES_PER_POST);
        let rest = drain(&o);
        assert_eq!(rest.len(), QUEUE - NOTICES_PER_POST);
        assert!(rest.windows(2).all(|w| w[0].seq < w[1].seq));
        assert_eq!(o.outcomes.merged.load(Ordering::Relaxed), 0);
    }

    /// Past the bound a session's oldest waiting notice is merged into its new one, another's
    /// when it has none waiting; its latest is never the one that goes.
    #[test]
    fn past_the_bound_the_oldest_of_a_session_are_merged_never_its_latest() {
        let o = Outbox::new("test", 1);
        // The queue full: "busy" has half of it, the rest one notice per session.
        for seq in 0..(QUEUE as u64) {
            let s = if seq % 2 == 0 {
                "busy".to_owned()
            } else {
                format!("s{seq}")
            };
            o.push(notice(&s, seq, 10));
        }
        // Its own: the busy session's oldest goes into its new notice.
        o.push(notice("busy", 100_000, 10));
        // A new session: the busy session (the most waiting) gives up its oldest.
        o.push(notice("new", 100_001, 10));
        assert_eq!(o.outcomes.merged.load(Ordering::Relaxed), 2);
        let all = drain(&o);
        assert_eq!(all.len(), QUEUE);
        let busy: Vec<&Alert> = all.iter().filter(|a| &*a.session == "busy").collect();
        assert_eq!(busy.last().unwrap().seq, Some(100_000), "its latest kept");
        assert_eq!(busy.last().unwrap().merged, 1);
        assert_eq!(busy[0].seq, Some(4), "0 and 2 were merged away");
        assert_eq!(busy[0].merged, 1, "2 stands in 4");
        assert!(all.iter().any(|a| &*a.session == "new" && a.merged == 0));
        // Every single-notice session still has its one notice.
        assert_eq!(
            all.iter().filter(|a| a.session.starts_with('s')).count(),
            QUEUE / 2
        );
    }

    /// When every waiting notice is its session's only one, the incoming one is dropped and
    /// counted; the bytes bound holds as the count bound does.
    #[test]
    fn the_bytes_bound_holds_and_a_full_queue_of_singles_drops_and_counts() {
        let o = Outbox::new("test", 1);
        let big = 1 << 20;
        let fits = BYTES / (big + OVERHEAD + 8);
        for seq in 0..(fits as u64 + 5) {
            o.push(notice(&format!("s{seq}"), seq, big));
        }
        assert_eq!(o.waiting(), fits);
        assert_eq!(o.outcomes.dropped.load(Ordering::Relaxed), 5);
        let all = drain(&o);
        assert_eq!(all.last().unwrap().seq, Some(fits as u64 - 1));
    }
}
