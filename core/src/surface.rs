//! The surface fold: the ordered `{seq, tokens}` nodes the next request would carry.
//!
//! A total function, validate then commit: [`Surface::plan`] checks an edit against the
//! surface without touching it, [`Surface::commit`] applies a checked plan. A replacement span
//! that is not in the surface is log corruption, never a skippable event.

use std::fmt;

/// One message on the surface: the frame's `seq` and its estimated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub seq: u64,
    pub tokens: u64,
}

/// What a replacement span asks: replace the nodes `from_seq` through `to_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from_seq: u64,
    pub to_seq: u64,
}

/// A checked edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Append,
    /// Replace the nodes at `start..end` with the new node.
    Splice {
        start: usize,
        end: usize,
    },
    /// Partial sessions: the span starts before the first node seen. Remove the nodes at
    /// `..end` and put the new node in front; the nodes it removed were never all priced.
    FrontCut {
        end: usize,
    },
}

/// A span the surface refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt(pub Span);

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "replacement span {}..{} is not in the surface: the log is corrupt",
            self.0.from_seq, self.0.to_seq
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surface {
    nodes: Vec<Node>,
    /// Σ tokens over `nodes`.
    total: u64,
    /// The seq of the first node this session ever saw: a partial session knows nothing below.
    floor: Option<u64>,
}

impl Surface {
    /// A surface restored from a checkpoint; `None` if its total does not fit a `u64`.
    pub fn from_nodes(nodes: Vec<Node>, floor: Option<u64>) -> Option<Surface> {
        let mut total: u64 = 0;
        for n in &nodes {
            total = total.checked_add(n.tokens)?;
        }
        Some(Surface {
            nodes,
            total,
            floor,
        })
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// `messageTokens`: Σ over the nodes.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn floor(&self) -> Option<u64> {
        self.floor
    }

    fn position(&self, seq: u64) -> Option<usize> {
        self.nodes.iter().position(|n| n.seq == seq)
    }

    /// Checks an edit: `None` appends, `Some(span)` replaces. `partial` allows a span that
    /// starts below the first node this session saw.
    pub fn plan(&self, span: Option<Span>, partial: bool) -> Result<Plan, Corrupt> {
        let Some(span) = span else {
            return Ok(Plan::Append);
        };
        let unseen = |seq: u64| self.floor.is_none_or(|f| seq < f);
        match (self.position(span.from_seq), self.position(span.to_seq)) {
            (Some(start), Some(end)) if start <= end => Ok(Plan::Splice {
                start,
                end: end + 1,
            }),
            (None, to) if partial && unseen(span.from_seq) => match to {
                Some(end) => Ok(Plan::FrontCut { end: end + 1 }),
                None if unseen(span.to_seq) && span.from_seq <= span.to_seq => {
                    Ok(Plan::FrontCut { end: 0 })
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
        // The nodes always add up within a u64 (`total` is exact): what a span removes is
        // part of `total`, and a new node keeps only the tokens that still fit. Saturating
        // the total instead left nodes adding up past 2^64 after a restored surface of
        // near-2^64 tokens took one more message: a checkpoint the module wrote and then
        // refused to restore (fuzz target `checkpoint_restore`), and a total that stopped
        // being Σ of the nodes once a span was replaced. Only absurd restored figures clip.
        let removed = |nodes: &[Node]| nodes.iter().map(|n| n.tokens).sum::<u64>();
        match plan {
            Plan::Append => {}
            Plan::Splice { start, end } => self.total -= removed(&self.nodes[start..end]),
            Plan::FrontCut { end } => self.total -= removed(&self.nodes[..end]),
        }
        let node = Node {
            tokens: node.tokens.min(u64::MAX - self.total),
            ..node
        };
        match plan {
            Plan::Append => self.nodes.push(node),
            Plan::Splice { start, end } => {
                self.nodes.splice(start..end, [node]);
            }
            Plan::FrontCut { end } => {
                self.nodes.splice(..end, [node]);
            }
        }
        self.total += node.tokens;
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

    fn span(from_seq: u64, to_seq: u64) -> Option<Span> {
        Some(Span { from_seq, to_seq })
    }

    #[test]
    fn replaces_a_span_with_its_node() {
        let mut s = surface(&[(0, 10), (2, 20), (5, 30), (7, 40)]);
        let p = s.plan(span(2, 5), false).unwrap();
        s.commit(p, Node { seq: 9, tokens: 3 });
        assert_eq!(s.total(), 53);
        let seqs: Vec<u64> = s.nodes().iter().map(|n| n.seq).collect();
        assert_eq!(seqs, [0, 9, 7]);
        // Surface order, not seq order: 9 stands before 7 now.
        assert!(s.plan(span(7, 9), false).is_err());
        assert!(s.plan(span(9, 7), false).is_ok());
    }

    #[test]
    fn refuses_spans_not_in_the_surface() {
        let s = surface(&[(0, 1), (3, 1)]);
        for (a, b) in [(1, 3), (0, 4), (3, 0), (u64::MAX, 0)] {
            assert_eq!(
                s.plan(span(a, b), false),
                Err(Corrupt(Span {
                    from_seq: a,
                    to_seq: b
                }))
            );
        }
        assert_eq!(
            Corrupt(Span {
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
        assert_eq!(s.plan(span(3, 12), true), Ok(Plan::FrontCut { end: 2 }));
        assert_eq!(s.plan(span(3, 5), true), Ok(Plan::FrontCut { end: 0 }));
        assert!(s.plan(span(5, 3), true).is_err());
        assert!(s.plan(span(3, 13), true).is_err());
        assert!(s.plan(span(11, 12), true).is_err());
        assert!(s.plan(span(3, 12), false).is_err());
        let mut s = s;
        s.commit(Plan::FrontCut { end: 2 }, Node { seq: 20, tokens: 5 });
        assert_eq!(
            s.nodes().iter().map(|n| n.seq).collect::<Vec<_>>(),
            [20, 14]
        );
        assert_eq!(s.total(), 9);
    }
}
