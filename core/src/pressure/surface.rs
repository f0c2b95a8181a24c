//! The surface fold: the ordered `{seq, tokens}` nodes the next request would carry.
//!
//! A total function, validate then commit: [`Surface::plan`] checks an edit against the
//! surface without touching it, [`Surface::commit`] applies a checked plan. A replacement span
//! that is not in the surface is log corruption, never a skippable event.
//!
//! Layout, about 16 bytes a node: nodes in columns by id, ids in seq order (the order they
//! came, each seq above the last), found by binary search over the seqs, which like the tokens
//! are kept as `u32` offsets while they fit ([`Column`]); the surface order is a deque of ids in
//! which a removed stretch becomes one dead run that jumps to the entry after it, so that a
//! frame's edit costs its lookups plus the nodes it removes, whatever the surface's length.
//! Removed nodes are swept out once they outnumber the live ones.

use std::collections::VecDeque;

use column::Column;

mod column;

/// One message on the surface: the frame's `seq` and its estimated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub seq: u64,
    pub tokens: u64,
}

/// What a compaction's `replaces` asks: replace the nodes `from_seq` through `to_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaces {
    pub from_seq: u64,
    pub to_seq: u64,
}

/// A checked edit, valid for the surface it was planned on until it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Append,
    /// Replace the nodes from id `first` through id `last`, in surface order.
    Splice {
        first: u32,
        last: u32,
    },
    /// Partial sessions: the span starts before the first node seen. Remove the nodes from the
    /// front through `last` (none when `None`) and put the new node in front; the nodes it
    /// removed were never all priced.
    FrontCut {
        last: Option<u32>,
    },
}

/// A span the surface refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "replacement span {}..{} is not in the surface: the log is corrupt",
    .0.from_seq,
    .0.to_seq
)]
pub struct Corrupt(pub Replaces);

/// In `order`: a dead run's first entry; the low bits are the position after the run.
const DEAD: u32 = 1 << 31;
/// In `pos`: the node was removed.
const GONE: u32 = u32::MAX;
/// The position of the front entry when the deque is rebuilt: room to put nodes in front.
const ORIGIN: u32 = 1 << 30;

#[derive(Debug, Clone)]
pub struct Surface {
    /// Per node id: its seq, tokens and position in `order` (`GONE` once removed). Ids ascend
    /// with seq — a new node's seq is above every earlier one's — so `seq` is sorted.
    seq: Column,
    tokens: Column,
    pos: Vec<u32>,
    /// Surface order: live ids, and dead runs. Entry `i` stands at position `origin + i`.
    order: VecDeque<u32>,
    origin: u32,
    live: usize,
    /// Σ tokens over the live nodes.
    total: u64,
    /// The seq of the first node this session ever saw: a partial session knows nothing below.
    floor: Option<u64>,
}

impl Default for Surface {
    fn default() -> Surface {
        Surface::with_capacity(0)
    }
}

impl PartialEq for Surface {
    fn eq(&self, other: &Surface) -> bool {
        self.total == other.total
            && self.floor == other.floor
            && self.live == other.live
            && self.nodes().eq(other.nodes())
    }
}

/// Why a restored surface is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestoreError {
    /// A seq stands twice: spans could not be placed.
    Repeated(u64),
    /// The tokens add up past 2^64.
    Overflow,
}

impl Surface {
    /// An empty surface with room for `n` nodes.
    pub(crate) fn with_capacity(n: usize) -> Surface {
        Surface {
            seq: Column::with_capacity(n, true),
            tokens: Column::with_capacity(n, false),
            pos: Vec::with_capacity(n),
            order: VecDeque::with_capacity(n),
            origin: ORIGIN,
            live: 0,
            total: 0,
            floor: None,
        }
    }

    /// Appends a node read from a checkpoint, in surface order; [`Surface::restored`] ends it.
    pub(crate) fn push_restored(&mut self, node: Node) -> Result<(), RestoreError> {
        self.total = self
            .total
            .checked_add(node.tokens)
            .ok_or(RestoreError::Overflow)?;
        let id = self.add(node);
        self.place_back(id);
        Ok(())
    }

    /// Ends a restore: numbers the nodes in seq order, refusing a seq that stands twice.
    pub(crate) fn restored(&mut self) -> Result<(), RestoreError> {
        self.reindex(true)
    }

    /// Renumbers the ids in seq order (ties in id order); `unique`: refuse a seq that stands
    /// twice, changing nothing. Nodes come in seq order but for a checkpoint's surface, whose
    /// nodes come in surface order.
    fn reindex(&mut self, unique: bool) -> Result<(), RestoreError> {
        let n = self.seq.len();
        if (1..n).all(|i| self.seq.get(i - 1) < self.seq.get(i)) {
            return Ok(());
        }
        let seq = |id: u32| self.seq.get(id as usize);
        let mut by_seq: Vec<u32> = (0..n as u32).collect();
        by_seq.sort_unstable_by_key(|&id| (seq(id), id));
        if unique && let Some(w) = by_seq.windows(2).find(|w| seq(w[0]) == seq(w[1])) {
            return Err(RestoreError::Repeated(seq(w[0])));
        }
        // Old id `by_seq[r]` becomes `r`.
        self.seq = self.seq.gather(by_seq.iter().copied(), true);
        self.tokens = self.tokens.gather(by_seq.iter().copied(), false);
        let pos: Vec<u32> = by_seq.iter().map(|&id| self.pos[id as usize]).collect();
        drop(by_seq);
        for (r, &p) in pos.iter().enumerate() {
            if p != GONE {
                self.order[(p - self.origin) as usize] = r as u32;
            }
        }
        self.pos = pos;
        Ok(())
    }

    /// A surface of `nodes` in this order, with `floor`; `None` when a seq stands twice or the
    /// tokens add up past 2^64.
    pub fn from_nodes(
        nodes: impl IntoIterator<Item = Node>,
        floor: Option<u64>,
    ) -> Option<Surface> {
        let mut s = Surface::default();
        for n in nodes {
            s.push_restored(n).ok()?;
        }
        s.restored().ok()?;
        s.floor = floor;
        Some(s)
    }

    /// Sets the floor a checkpoint carried.
    pub(crate) fn set_floor(&mut self, floor: Option<u64>) {
        self.floor = floor;
    }

    /// The live ids, in surface order.
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut p = self.origin;
        let end = self.origin + self.order.len() as u32;
        std::iter::from_fn(move || {
            while p < end {
                let e = self.order[(p - self.origin) as usize];
                if e & DEAD != 0 {
                    p = e & !DEAD;
                    continue;
                }
                p += 1;
                return Some(e);
            }
            None
        })
    }

    /// The nodes, in surface order.
    pub fn nodes(&self) -> impl Iterator<Item = Node> + '_ {
        self.ids().map(|id| Node {
            seq: self.seq.get(id as usize),
            tokens: self.tokens.get(id as usize),
        })
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// `messageTokens`: Σ over the nodes.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn floor(&self) -> Option<u64> {
        self.floor
    }

    /// Σ tokens of the live nodes whose seq is above `seq`; `None` when more than `most`
    /// nodes (live or removed) were made after it, so that the answer costs at most `most`
    /// steps whatever the surface's length (contract §5).
    pub fn tokens_after(&self, seq: u64, most: usize) -> Option<u64> {
        // Ids ascend with seq: the nodes above `seq` are the last ids.
        let first = match self.seq.binary_search(seq) {
            Ok(i) => (i..self.seq.len())
                .find(|&i| self.seq.get(i) != seq)
                .unwrap_or(self.seq.len()),
            Err(i) => i,
        };
        if self.seq.len() - first > most {
            return None;
        }
        Some(
            (first..self.seq.len())
                .filter(|&id| self.pos[id] != GONE)
                .map(|id| self.tokens.get(id))
                .sum(),
        )
    }

    /// The live node of `seq`.
    fn find(&self, seq: u64) -> Option<u32> {
        let at = self.seq.binary_search(seq).ok()?;
        // A seq stands once but where `commit` was given one out of order; then any live one.
        let first = (0..at)
            .rev()
            .find(|&i| self.seq.get(i) != seq)
            .map_or(0, |i| i + 1);
        (first..self.seq.len())
            .take_while(|&i| self.seq.get(i) == seq)
            .find(|&i| self.pos[i] != GONE)
            .map(|i| i as u32)
    }

    /// Checks an edit: `None` appends, `Some(span)` replaces. `partial` allows a span that
    /// starts below the first node this session saw.
    pub fn plan(&self, span: Option<Replaces>, partial: bool) -> Result<Plan, Corrupt> {
        let Some(span) = span else {
            return Ok(Plan::Append);
        };
        let unseen = |seq: u64| self.floor.is_none_or(|f| seq < f);
        match (self.find(span.from_seq), self.find(span.to_seq)) {
            (Some(first), Some(last)) if self.pos[first as usize] <= self.pos[last as usize] => {
                Ok(Plan::Splice { first, last })
            }
            (None, to) if partial && unseen(span.from_seq) => match to {
                Some(last) => Ok(Plan::FrontCut { last: Some(last) }),
                None if unseen(span.to_seq) && span.from_seq <= span.to_seq => {
                    Ok(Plan::FrontCut { last: None })
                }
                None => Err(Corrupt(span)),
            },
            _ => Err(Corrupt(span)),
        }
    }

    /// Applies a plan [`Surface::plan`] returned for this very surface.
    pub fn commit(&mut self, plan: Plan, node: Node) {
        if self.floor.is_none() {
            self.floor = Some(node.seq);
        }
        // The nodes always add up within a u64 (`total` is exact): what a span removes is part
        // of `total`, and a new node keeps only the tokens that still fit.
        let start = match plan {
            Plan::Append => None,
            Plan::Splice { first, last } => Some(self.remove_through(first, last)),
            Plan::FrontCut { last: Some(last) } => {
                let head = self.order[0];
                Some(self.remove_through(head, last))
            }
            Plan::FrontCut { last: None } => None,
        };
        let node = Node {
            tokens: node.tokens.min(u64::MAX - self.total),
            ..node
        };
        self.total += node.tokens;
        let n = self.seq.len();
        let ascending = n == 0 || self.seq.get(n - 1) < node.seq;
        let id = self.add(node);
        match (plan, start) {
            (_, Some(p)) => self.place_at(id, p),
            (Plan::FrontCut { .. }, None) => self.place_front(id),
            _ => self.place_back(id),
        }
        if !ascending {
            // Sessions never do this (a node's seq is above the cursor); the API allows it.
            let _ = self.reindex(false);
        }
        self.sweep_if_due();
    }

    /// Sweeps once removed nodes outnumber the live ones (amortised), or when the deque has no
    /// room left in front.
    fn sweep_if_due(&mut self) {
        if self.seq.len() > 2 * self.live + 64 || self.origin == 0 {
            self.sweep();
        }
    }

    /// Drops nodes from the front (surface order: the oldest, or what replaced them) until at
    /// most `keep` stay, and returns the tokens they had. The floor moves above every seq it
    /// dropped, so that a later span from one of them is a partial session's front cut
    /// (contract §3.7). Each node is dropped once: amortised O(1) a node.
    pub fn trim_front(&mut self, keep: usize) -> u64 {
        let mut dropped = 0;
        while self.live > keep {
            self.skip_dead_front();
            let id = self.order.pop_front().expect("a live node is in the order") as usize;
            self.origin += 1;
            let (seq, tokens) = (self.seq.get(id), self.tokens.get(id));
            dropped += tokens;
            self.total -= tokens;
            self.pos[id] = GONE;
            self.live -= 1;
            let above = seq.saturating_add(1);
            self.floor = Some(self.floor.map_or(above, |f| f.max(above)));
        }
        // `FrontCut` reads the front entry as a live id.
        self.skip_dead_front();
        self.sweep_if_due();
        dropped
    }

    /// Pops a dead run standing at the front of the order (and the stale entries it jumps).
    fn skip_dead_front(&mut self) {
        while let Some(&e) = self.order.front()
            && e & DEAD != 0
        {
            let next = e & !DEAD;
            while self.origin < next {
                self.order.pop_front();
                self.origin += 1;
            }
        }
    }

    /// A new node's id.
    fn add(&mut self, node: Node) -> u32 {
        self.seq.push(node.seq);
        self.tokens.push(node.tokens);
        self.pos.push(GONE);
        self.live += 1;
        (self.seq.len() - 1) as u32
    }

    fn place_back(&mut self, id: u32) {
        self.pos[id as usize] = self.origin + self.order.len() as u32;
        self.order.push_back(id);
    }

    fn place_front(&mut self, id: u32) {
        self.origin -= 1;
        self.pos[id as usize] = self.origin;
        self.order.push_front(id);
    }

    fn place_at(&mut self, id: u32, p: u32) {
        self.pos[id as usize] = p;
        self.order[(p - self.origin) as usize] = id;
    }

    /// Removes the live nodes from `first` through `last` in surface order (dead runs between
    /// are jumped, not walked) and leaves the stretch after `first`'s position one dead run.
    /// Returns `first`'s position, where the new node goes.
    fn remove_through(&mut self, first: u32, last: u32) -> u32 {
        let start = self.pos[first as usize];
        let end = self.pos[last as usize];
        let mut p = start;
        loop {
            let e = self.order[(p - self.origin) as usize];
            if e & DEAD != 0 {
                p = e & !DEAD;
                continue;
            }
            let id = e as usize;
            self.total -= self.tokens.get(id);
            self.pos[id] = GONE;
            self.live -= 1;
            if p == end {
                break;
            }
            p += 1;
        }
        if end > start {
            let after = end + 1;
            let next = match self.order.get((after - self.origin) as usize) {
                Some(&e) if e & DEAD != 0 => e & !DEAD,
                _ => after,
            };
            self.order[(start + 1 - self.origin) as usize] = DEAD | next;
        }
        start
    }

    /// Drops removed nodes and dead runs, renumbering what is left in seq order (amortised:
    /// it runs once removed nodes outnumber live ones).
    fn sweep(&mut self) {
        let kept: Vec<u32> = (0..self.pos.len() as u32)
            .filter(|&id| self.pos[id as usize] != GONE)
            .collect();
        let mut renumber = vec![GONE; self.pos.len()];
        for (new, &old) in kept.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
        let mut order = VecDeque::with_capacity(kept.len());
        let mut pos = vec![GONE; kept.len()];
        for old in self.ids() {
            let new = renumber[old as usize];
            pos[new as usize] = ORIGIN + order.len() as u32;
            order.push_back(new);
        }
        self.seq = self.seq.gather(kept.iter().copied(), true);
        self.tokens = self.tokens.gather(kept.iter().copied(), false);
        self.pos = pos;
        self.order = order;
        self.origin = ORIGIN;
    }
}

#[cfg(test)]
mod tests;
