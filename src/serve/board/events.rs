//! The board as Server-Sent Events (docs/serve.md, "The page"): event ids of this run, the
//! whole board for a page that is new or too far behind, else the rows changed since the
//! version it has seen, coalesced; and the count of pages listening.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::watch;

use super::{Board, DELTA_BYTES, DELTA_ROWS, Inner, Status, now_ms};

/// A gauge of clients: one more while it lives.
pub(crate) struct Client(Arc<Board>);

impl Drop for Client {
    fn drop(&mut self) {
        self.0.counters.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a page that has seen up to some version gets next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// The rows changed since, as an SSE frame, and the version it brings the page to.
    Delta { version: u64, wire: Bytes },
    /// The whole board.
    Board { version: u64, wire: Bytes },
    /// Nothing yet: the page is up to date.
    Wait,
}

#[derive(Serialize)]
struct BoardOut<'a> {
    v: u64,
    now: i64,
    status: &'a Status,
    rows: Vec<Arc<RawValue>>,
}

#[derive(Serialize)]
struct DeltaOut<'a> {
    v: u64,
    now: i64,
    rows: Vec<Arc<RawValue>>,
    gone: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Status>,
}

impl Board {
    /// The SSE id of version `v` in this run.
    pub(crate) fn event_id(&self, v: u64) -> String {
        format!("{v}-{}", self.run)
    }

    /// A version of this run, from an SSE id; `None` for anything else.
    pub(crate) fn parse_id(&self, id: &str) -> Option<u64> {
        let (n, run) = id.trim().split_once('-')?;
        (run == self.run).then(|| n.parse().ok()).flatten()
    }

    /// What a page that has seen up to version `after` gets next (`None`: nothing yet).
    pub(crate) fn next_after(&self, after: Option<u64>) -> Next {
        let mut inner = self.lock();
        let head = inner.version;
        let from = match after {
            Some(v) if v == head => return Next::Wait,
            Some(v) if v < head && v >= inner.floor => v,
            _ => return self.whole(&mut inner),
        };
        if let Some((a, b, wire)) = &inner.delta
            && (*a, *b) == (from, head)
        {
            return Next::Delta {
                version: head,
                wire: wire.clone(),
            };
        }
        let start = inner.changes.partition_point(|(v, _)| *v <= from);
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        for (_, id) in inner.changes.range(start..) {
            if seen.insert(Arc::clone(id)) {
                ids.push(Arc::clone(id));
                if ids.len() > DELTA_ROWS {
                    return self.whole(&mut inner);
                }
            }
        }
        let mut rows = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        let mut bytes = 0;
        let rules = &self.policy.rules;
        for id in &ids {
            match inner.sessions.get_mut(id) {
                Some(s) => {
                    let row = s.row(rules);
                    bytes += row.get().len();
                    rows.push(row);
                }
                None => {
                    bytes += id.len() + 3;
                    gone.push(Arc::clone(id));
                }
            }
            if bytes > DELTA_BYTES {
                return self.whole(&mut inner);
            }
        }
        let gone: Vec<&str> = gone.iter().map(|id| &**id).collect();
        let out = DeltaOut {
            v: head,
            now: now_ms(),
            rows,
            gone,
            status: (inner.status_version > from).then_some(&inner.status),
        };
        let data = serde_json::to_string(&out).expect("a delta serialises");
        let wire = self.frame(head, "delta", &data);
        inner.delta = Some((from, head, wire.clone()));
        Next::Delta {
            version: head,
            wire,
        }
    }

    /// The whole board as an SSE frame, encoded once per version.
    fn whole(&self, inner: &mut Inner) -> Next {
        let head = inner.version;
        if let Some((v, wire)) = &inner.board
            && *v == head
        {
            return Next::Board {
                version: head,
                wire: wire.clone(),
            };
        }
        self.counters.boards.fetch_add(1, Ordering::Relaxed);
        let rules = &self.policy.rules;
        let rows = inner.sessions.values_mut().map(|s| s.row(rules)).collect();
        let out = BoardOut {
            v: head,
            now: now_ms(),
            status: &inner.status,
            rows,
        };
        let data = serde_json::to_string(&out).expect("a board serialises");
        let wire = self.frame(head, "board", &data);
        inner.board = Some((head, wire.clone()));
        Next::Board {
            version: head,
            wire,
        }
    }

    fn frame(&self, v: u64, kind: &str, data: &str) -> Bytes {
        Bytes::from(format!(
            "id: {}\nevent: {kind}\ndata: {data}\n\n",
            self.event_id(v)
        ))
    }

    /// Counts a client of `/events` while the returned guard lives.
    pub(crate) fn client(self: &Arc<Board>) -> Client {
        self.counters.clients.fetch_add(1, Ordering::Relaxed);
        Client(Arc::clone(self))
    }

    /// Wakes when the version moves.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.head.subscribe()
    }
}
