//! The surface by hand: placement, replacement ranges good and bad, dead runs, sweeps.

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
    s.restored().unwrap();
    assert_eq!((seqs(&s), s.total()), (vec![5, 2, 9], 6));
    assert!(s.plan(span(5, 9), false).is_ok() && s.plan(span(9, 5), false).is_err());
    assert!(s.plan(span(2, 9), false).is_ok());
    assert_eq!(
        s.push_restored(Node {
            seq: 3,
            tokens: u64::MAX
        }),
        Err(RestoreError::Overflow)
    );
    let mut r = Surface::default();
    for seq in [4, 2, 4] {
        r.push_restored(Node { seq, tokens: 1 }).unwrap();
    }
    assert_eq!(r.restored(), Err(RestoreError::Repeated(4)));
}

#[test]
fn dead_runs_are_jumped_and_swept() {
    // Replace an early stretch again and again: each edit walks what it removes and one
    // jump over what earlier edits removed, and the sweep keeps the arrays near the nodes.
    let mut s = surface(&(0..1000).map(|q| (q, 1)).collect::<Vec<_>>());
    let mut model: Vec<u64> = (0..1000).collect();
    let mut next = 1000;
    for k in 0..450 {
        let (a, b) = (model[0], model[2]);
        let p = s.plan(span(a, b), false).unwrap();
        s.commit(
            p,
            Node {
                seq: next,
                tokens: 1,
            },
        );
        model.splice(0..3, [next]);
        next += 1;
        if k % 7 == 0 {
            s.commit(
                Plan::Append,
                Node {
                    seq: next,
                    tokens: 1,
                },
            );
            model.push(next);
            next += 1;
        }
        assert_eq!(seqs(&s), model);
        assert_eq!(s.total(), model.len() as u64);
        assert!(s.seq.len() <= 2 * s.live + 65, "swept");
    }
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

#[test]
fn a_seq_committed_out_of_order_is_still_found() {
    // Sessions never commit a seq below one they hold; the API allows it, and stays right.
    let mut s = surface(&[(5, 1), (9, 1)]);
    s.commit(Plan::Append, Node { seq: 7, tokens: 2 });
    assert_eq!(seqs(&s), [5, 9, 7]);
    let p = s.plan(span(9, 7), false).unwrap();
    s.commit(p, Node { seq: 3, tokens: 4 });
    assert_eq!((seqs(&s), s.total()), (vec![5, 3], 5));
    // The removed 9 stands beside a new one: the live one is found.
    s.commit(Plan::Append, Node { seq: 9, tokens: 1 });
    let p = s.plan(span(3, 9), false).unwrap();
    s.commit(p, Node { seq: 10, tokens: 1 });
    assert_eq!((seqs(&s), s.total()), (vec![5, 10], 2));
}

#[test]
fn tokens_after_a_seq_count_the_live_nodes_above_it_within_a_bound() {
    let mut s = surface(&[(0, 10), (2, 20), (5, 30), (7, 40)]);
    assert_eq!(s.tokens_after(7, 8), Some(0));
    assert_eq!(s.tokens_after(5, 8), Some(40));
    assert_eq!(s.tokens_after(4, 8), Some(70));
    assert_eq!(s.tokens_after(0, 8), Some(90));
    assert_eq!(s.tokens_after(0, 3), Some(90));
    assert_eq!(
        s.tokens_after(0, 2),
        None,
        "three nodes above 0: over the bound"
    );
    assert_eq!(s.tokens_after(u64::MAX, 0), Some(0));
    // A removed node above the seq is walked over, not counted.
    let p = s.plan(span(2, 5), false).unwrap();
    s.commit(p, Node { seq: 9, tokens: 3 });
    assert_eq!(s.tokens_after(5, 8), Some(43));
    assert_eq!(s.tokens_after(8, 8), Some(3));
    assert_eq!(Surface::default().tokens_after(3, 0), Some(0));
}

#[test]
fn trimming_the_front_keeps_the_newest_nodes_and_cuts_below_what_it_dropped() {
    // Random appends and replacements against a model, the surface trimmed to `keep` after
    // each edit: it is the model's last `keep` nodes, a span from a dropped seq is a front cut,
    // and the arrays stay near the live nodes.
    let keep = 50;
    let mut rng = crate::Rng::new(7);
    let mut s = Surface::default();
    let mut model: Vec<(u64, u64)> = Vec::new();
    let mut dropped_seqs: Vec<u64> = Vec::new();
    for seq in 0..5_000u64 {
        let tokens = rng.range(1, 100);
        let live: Vec<u64> = model.iter().map(|n| n.0).collect();
        let node = Node { seq, tokens };
        if live.len() > 4 && rng.chance(0.05) {
            // A short replacement inside what is live, or from a dropped seq through one of
            // the first live ones.
            let (from, a, b) = match dropped_seqs.last() {
                Some(&d) if rng.chance(0.3) => (d, 0, rng.range(0, 3) as usize),
                _ => {
                    let b = rng.range(1, live.len() as u64 - 1) as usize;
                    let a = b - rng.range(0, 3.min(b as u64)) as usize;
                    (live[a], a, b)
                }
            };
            let plan = s.plan(span(from, live[b]), true).unwrap();
            s.commit(plan, node);
            model.splice(a..=b, [(seq, tokens)]);
        } else {
            s.commit(Plan::Append, node);
            model.push((seq, tokens));
        }
        let cut = model.len().saturating_sub(keep);
        let gone: u64 = model[..cut].iter().map(|n| n.1).sum();
        dropped_seqs.extend(model.drain(..cut).map(|n| n.0));
        assert_eq!(s.trim_front(keep), gone);
        assert_eq!(
            s.nodes().map(|n| (n.seq, n.tokens)).collect::<Vec<_>>(),
            model
        );
        assert_eq!(s.total(), model.iter().map(|n| n.1).sum::<u64>());
        assert!(s.seq.len() <= 2 * s.live + 65, "swept");
    }
    assert!(dropped_seqs.len() > 4_000, "{} dropped", dropped_seqs.len());
}
