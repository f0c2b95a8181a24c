//! The surface fold: the ordered `{seq, tokens}` nodes the next request would carry.
//!
//! A total function, validate then commit: [`Surface::plan`] checks an edit against the
//! surface without touching it, [`Surface::commit`] applies a checked plan. A replacement span
//! that is not in the surface is log corruption, never a skippable event.
//!
//! Nodes live in a slab, linked in surface order, found by seq through an index; each carries
//! an order key that rises along the list, so "A's node is not after B's" is one comparison.
//! A frame's edit costs O(1) plus the nodes it removes, whatever the surface's length.

use std::collections::HashMap;
use std::fmt;

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
    /// Replace the nodes from `first` through `last` (slab slots, in surface order).
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt(pub Replaces);

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "replacement span {}..{} is not in the surface: the log is corrupt",
            self.0.from_seq, self.0.to_seq
        )
    }
}

const NIL: u32 = u32::MAX;
/// The first node's order key: room to grow both ways.
const MID: u64 = 1 << 62;

#[derive(Debug, Clone)]
struct Slot {
    seq: u64,
    tokens: u64,
    order: u64,
    prev: u32,
    next: u32,
}

#[derive(Debug, Clone)]
pub struct Surface {
    slots: Vec<Slot>,
    /// seq → slot.
    index: HashMap<u64, u32>,
    head: u32,
    tail: u32,
    /// Free slots, linked through `next`.
    free: u32,
    len: usize,
    /// Σ tokens over the nodes.
    total: u64,
    /// The seq of the first node this session ever saw: a partial session knows nothing below.
    floor: Option<u64>,
}

impl Default for Surface {
    fn default() -> Surface {
        Surface {
            slots: Vec::new(),
            index: HashMap::new(),
            head: NIL,
            tail: NIL,
            free: NIL,
            len: 0,
            total: 0,
            floor: None,
        }
    }
}

impl PartialEq for Surface {
    fn eq(&self, other: &Surface) -> bool {
        self.total == other.total
            && self.floor == other.floor
            && self.len == other.len
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
    /// Appends a node read from a checkpoint, in surface order.
    pub(crate) fn push_restored(&mut self, node: Node) -> Result<(), RestoreError> {
        if self.index.contains_key(&node.seq) {
            return Err(RestoreError::Repeated(node.seq));
        }
        self.total
            .checked_add(node.tokens)
            .ok_or(RestoreError::Overflow)?;
        let order = self.order_after_tail();
        self.link_after(self.tail, node, order);
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
        s.floor = floor;
        Some(s)
    }

    /// Sets the floor a checkpoint carried.
    pub(crate) fn set_floor(&mut self, floor: Option<u64>) {
        self.floor = floor;
    }

    /// The nodes, in surface order.
    pub fn nodes(&self) -> impl Iterator<Item = Node> + '_ {
        let mut at = if self.len == 0 { NIL } else { self.head };
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let s = &self.slots[at as usize];
            at = s.next;
            Some(Node {
                seq: s.seq,
                tokens: s.tokens,
            })
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `messageTokens`: Σ over the nodes.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn floor(&self) -> Option<u64> {
        self.floor
    }

    /// Checks an edit: `None` appends, `Some(span)` replaces. `partial` allows a span that
    /// starts below the first node this session saw.
    pub fn plan(&self, span: Option<Replaces>, partial: bool) -> Result<Plan, Corrupt> {
        let Some(span) = span else {
            return Ok(Plan::Append);
        };
        let unseen = |seq: u64| self.floor.is_none_or(|f| seq < f);
        let at = |seq: u64| self.index.get(&seq).copied();
        match (at(span.from_seq), at(span.to_seq)) {
            (Some(first), Some(last))
                if self.slots[first as usize].order <= self.slots[last as usize].order =>
            {
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
        match plan {
            Plan::Append => {
                let node = self.fit(node);
                let order = self.order_after_tail();
                self.link_after(self.tail, node, order);
            }
            Plan::Splice { first, last } => {
                let order = self.slots[first as usize].order;
                let before = self.slots[first as usize].prev;
                self.remove_through(first, last);
                let node = self.fit(node);
                self.link_after(before, node, order);
            }
            Plan::FrontCut { last } => {
                let order = match last {
                    Some(last) => {
                        let order = self.slots[self.head as usize].order;
                        self.remove_through(self.head, last);
                        order
                    }
                    None if self.head != NIL => self.slots[self.head as usize].order - 1,
                    None => MID,
                };
                let node = self.fit(node);
                self.link_after(NIL, node, order);
            }
        }
    }

    fn fit(&self, node: Node) -> Node {
        Node {
            tokens: node.tokens.min(u64::MAX - self.total),
            ..node
        }
    }

    fn order_after_tail(&self) -> u64 {
        if self.tail == NIL {
            MID
        } else {
            self.slots[self.tail as usize].order + 1
        }
    }

    /// Removes the nodes from `first` through `last`, in list order.
    fn remove_through(&mut self, first: u32, last: u32) {
        let before = self.slots[first as usize].prev;
        let after = self.slots[last as usize].next;
        let mut at = first;
        loop {
            let s = &self.slots[at as usize];
            let next = s.next;
            self.total -= s.tokens;
            self.index.remove(&s.seq);
            self.slots[at as usize].next = self.free;
            self.free = at;
            self.len -= 1;
            if at == last {
                break;
            }
            at = next;
        }
        match before {
            NIL => self.head = after,
            b => self.slots[b as usize].next = after,
        }
        match after {
            NIL => self.tail = before,
            a => self.slots[a as usize].prev = before,
        }
    }

    /// Links `node` after slot `prev` (at the front when `NIL`).
    fn link_after(&mut self, prev: u32, node: Node, order: u64) {
        let next = if prev == NIL {
            self.head
        } else {
            self.slots[prev as usize].next
        };
        let slot = Slot {
            seq: node.seq,
            tokens: node.tokens,
            order,
            prev,
            next,
        };
        let id = if self.free != NIL {
            let id = self.free;
            self.free = self.slots[id as usize].next;
            self.slots[id as usize] = slot;
            id
        } else {
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        match prev {
            NIL => self.head = id,
            p => self.slots[p as usize].next = id,
        }
        match next {
            NIL => self.tail = id,
            n => self.slots[n as usize].prev = id,
        }
        self.index.insert(node.seq, id);
        self.total += node.tokens;
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surface(seqs: &[(u64, u64)]) -> Surface {
        let mut s = Surface::default();
        for &(seq, tokens) in seqs {
            s.commit(Plan::Append, Node { seq, tokens });
        }
        s
    }

    fn span(from_seq: u64, to_seq: u64) -> Option<Replaces> {
        Some(Replaces { from_seq, to_seq })
    }

    fn seqs(s: &Surface) -> Vec<u64> {
        s.nodes().map(|n| n.seq).collect()
    }

    #[test]
    fn replaces_a_span_with_its_node() {
        let mut s = surface(&[(0, 10), (2, 20), (5, 30), (7, 40)]);
        let p = s.plan(span(2, 5), false).unwrap();
        s.commit(p, Node { seq: 9, tokens: 3 });
        assert_eq!(s.total(), 53);
        assert_eq!(seqs(&s), [0, 9, 7]);
        // Surface order, not seq order: 9 stands before 7 now.
        assert!(s.plan(span(7, 9), false).is_err());
        assert!(s.plan(span(9, 7), false).is_ok());
        let p = s.plan(span(0, 7), false).unwrap();
        s.commit(p, Node { seq: 10, tokens: 1 });
        assert_eq!((seqs(&s), s.total(), s.len()), (vec![10], 1, 1));
        s.commit(Plan::Append, Node { seq: 11, tokens: 2 });
        assert_eq!(seqs(&s), [10, 11]);
    }

    #[test]
    fn refuses_spans_not_in_the_surface() {
        let s = surface(&[(0, 1), (3, 1)]);
        for (a, b) in [(1, 3), (0, 4), (3, 0), (u64::MAX, 0)] {
            assert_eq!(
                s.plan(span(a, b), false),
                Err(Corrupt(Replaces {
                    from_seq: a,
                    to_seq: b
                }))
            );
        }
        assert_eq!(
            Corrupt(Replaces {
                from_seq: 12,
                to_seq: 40
            })
            .to_string(),
            "replacement span 12..40 is not in the surface: the log is corrupt"
        );
    }

    #[test]
    fn partial_sessions_may_cut_below_what_they_saw() {
        let s = surface(&[(10, 1), (12, 2), (14, 4)]);
        assert!(matches!(
            s.plan(span(3, 12), true),
            Ok(Plan::FrontCut { last: Some(_) })
        ));
        assert_eq!(s.plan(span(3, 5), true), Ok(Plan::FrontCut { last: None }));
        assert!(s.plan(span(5, 3), true).is_err());
        assert!(s.plan(span(3, 13), true).is_err());
        assert!(s.plan(span(11, 12), true).is_err());
        assert!(s.plan(span(3, 12), false).is_err());
        let mut s = s;
        let p = s.plan(span(3, 12), true).unwrap();
        s.commit(p, Node { seq: 20, tokens: 5 });
        assert_eq!(seqs(&s), [20, 14]);
        assert_eq!(s.total(), 9);
        let p = s.plan(span(4, 6), true).unwrap();
        s.commit(p, Node { seq: 21, tokens: 1 });
        assert_eq!(seqs(&s), [21, 20, 14]);
        assert!(s.plan(span(21, 14), false).is_ok() && s.plan(span(14, 21), false).is_err());
    }

    #[test]
    fn restored_nodes_keep_their_order_and_refuse_repeats() {
        let mut s = Surface::default();
        for (seq, tokens) in [(5, 1), (2, 2), (9, 3)] {
            s.push_restored(Node { seq, tokens }).unwrap();
        }
        assert_eq!((seqs(&s), s.total()), (vec![5, 2, 9], 6));
        assert!(s.plan(span(5, 9), false).is_ok() && s.plan(span(9, 5), false).is_err());
        assert_eq!(
            s.push_restored(Node { seq: 2, tokens: 0 }),
            Err(RestoreError::Repeated(2))
        );
        assert_eq!(
            s.push_restored(Node {
                seq: 3,
                tokens: u64::MAX
            }),
            Err(RestoreError::Overflow)
        );
    }

    #[test]
    fn a_long_surface_costs_nothing_per_refused_or_end_replacing_frame() {
        let mut s = Surface::default();
        for seq in 0..200_000 {
            s.commit(Plan::Append, Node { seq, tokens: 1 });
        }
        // Corrupt spans and "replace the last node" compactions: O(1) each, or this loop
        // would take minutes.
        for k in 0..200_000 {
            assert!(s.plan(span(k + 1, k), false).is_err());
        }
        for next in 200_000..400_000 {
            let p = s.plan(span(next - 1, next - 1), false).unwrap();
            s.commit(
                p,
                Node {
                    seq: next,
                    tokens: 1,
                },
            );
        }
        assert_eq!((s.len(), s.total()), (200_000, 200_000));
    }
}
