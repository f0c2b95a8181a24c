//! Target `surface_ranges`: the surface fold against contract §3's rule, and generated sessions
//! through the pressure view.

use agent_fold_core::testing::{Node, Plan, Replaces, Surface};
use agent_fold_core::{Config, Processor, View};
use arbitrary::{Arbitrary, Unstructured};
use serde_json::Value;

use super::pressure::{check_figures, pressure_sessions};
use super::{
    assert_look_back_matches, assert_round_trip, check_pressure_invocation, inputs, materialise,
    show,
};
use crate::{Drawn, GenRecord, GenSession, SeqPick};

/// Whether a derived record is a `context/error`.
fn is_error(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| v["type"] == "context/error")
}

/// A raw surface edit for [`Surface::plan`] / [`Surface::commit`].
#[derive(Arbitrary, Debug, Clone)]
pub(super) enum RawOp {
    Append {
        gap: u8,
        tokens: u32,
    },
    Replace {
        from: SeqPick,
        to: SeqPick,
        gap: u8,
        tokens: u32,
    },
}

/// A raw surface session: whether it is partial, its first seq, its edits.
#[derive(Arbitrary, Debug, Clone)]
pub(super) struct RawSurface {
    pub partial: bool,
    pub first_seq: u16,
    pub ops: Vec<RawOp>,
}

/// An edit as contract §3 words it, on the surface's positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Append,
    /// Replace the nodes at `start..end` with the new node.
    Splice {
        start: usize,
        end: usize,
    },
    /// Remove the nodes at `..end` and put the new node in front.
    FrontCut {
        end: usize,
    },
}

/// contract §3's compaction rule, written from the text: the edit a span should get.
fn model_plan(nodes: &[Node], floor: Option<u64>, span: Replaces, partial: bool) -> Option<Edit> {
    let pos = |seq: u64| nodes.iter().position(|n| n.seq == seq);
    let below = |seq: u64| floor.is_none_or(|f| seq < f);
    match (pos(span.from_seq), pos(span.to_seq)) {
        (Some(a), Some(b)) if a <= b => Some(Edit::Splice {
            start: a,
            end: b + 1,
        }),
        (None, Some(b)) if partial && below(span.from_seq) => Some(Edit::FrontCut { end: b + 1 }),
        (None, None)
            if partial
                && below(span.from_seq)
                && below(span.to_seq)
                && span.from_seq <= span.to_seq =>
        {
            Some(Edit::FrontCut { end: 0 })
        }
        _ => None,
    }
}

/// The kind of a core plan, to compare with the model's.
fn kind(p: &Plan) -> u8 {
    match p {
        Plan::Append => 0,
        Plan::Splice { .. } => 1,
        Plan::FrontCut { .. } => 2,
    }
}

fn model_kind(e: &Edit) -> u8 {
    match e {
        Edit::Append => 0,
        Edit::Splice { .. } => 1,
        Edit::FrontCut { .. } => 2,
    }
}

fn check_raw_surface(data: &[u8]) {
    let Ok(raw) = RawSurface::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut surface = Surface::default();
    let mut model: Vec<Node> = Vec::new();
    let mut floor: Option<u64> = None;
    let mut seen: Vec<u64> = Vec::new();
    let mut next = if raw.partial {
        raw.first_seq as u64 + 1
    } else {
        0
    };
    for op in &raw.ops {
        let (span, gap, tokens) = match op {
            RawOp::Append { gap, tokens } => (None, *gap, *tokens),
            RawOp::Replace {
                from,
                to,
                gap,
                tokens,
            } => (
                Some(Replaces {
                    from_seq: from.pick(&seen),
                    to_seq: to.pick(&seen),
                }),
                *gap,
                *tokens,
            ),
        };
        let seq = next + gap as u64;
        next = seq + 1;
        let before = surface.clone();
        let plan = surface.plan(span, raw.partial);
        assert_eq!(surface, before, "plan changed the surface");
        let want = match span {
            None => Some(Edit::Append),
            Some(s) => model_plan(&model, floor, s, raw.partial),
        };
        assert_eq!(
            plan.as_ref().ok().map(kind),
            want.as_ref().map(model_kind),
            "plan for {span:?} over {model:?}"
        );
        let Some(want) = want else { continue };
        let Ok(plan) = plan else { continue };
        let node = Node {
            seq,
            tokens: tokens as u64,
        };
        surface.commit(plan, node);
        floor.get_or_insert(seq);
        match want {
            Edit::Append => model.push(node),
            Edit::Splice { start, end } => {
                model.splice(start..end, [node]);
            }
            Edit::FrontCut { end } => {
                model.splice(..end, [node]);
            }
        }
        seen.push(seq);
        assert_eq!(surface.nodes().collect::<Vec<_>>(), model, "surface nodes");
        assert_eq!(surface.floor(), floor, "floor");
        let sum: u128 = model.iter().map(|n| n.tokens as u128).sum();
        assert_eq!(
            surface.total() as u128,
            sum,
            "messageTokens ≠ Σ surface nodes"
        );
        assert_eq!(
            Surface::from_nodes(surface.nodes(), surface.floor()).as_ref(),
            Some(&surface),
            "a surface rebuilt from its nodes differs"
        );
    }
}

fn pressure_config(p: u8) -> Config {
    Config {
        view: View::Pressure,
        capacity: (p & 2 != 0).then_some(200_000),
        ..Config::default()
    }
}

fn check_gen_session(p: u8, data: &[u8]) {
    let Ok(gs) = GenSession::from_bytes(data) else {
        return;
    };
    let config = pressure_config(p);
    let recs = gs.records();
    let records = inputs(&recs);

    // A: in the invocations the session's cuts make; each invocation delivered twice.
    let mut a = Processor::new(&config);
    let mut out_a: Vec<GenRecord> = Vec::new();
    for b in gs.batches(recs.len()) {
        let page = &records[b];
        let out = a.process(page).expect("malformed=pass never fails");
        let cp = a.checkpoint();
        check_pressure_invocation(page, &out, &cp, &config);
        let emitted = materialise(page, &out);
        let again = a.process(page).expect("malformed=pass never fails");
        assert_eq!(
            a.checkpoint(),
            cp,
            "re-delivering an invocation changed the state"
        );
        for r in materialise(page, &again) {
            assert!(
                emitted.contains(&r) && is_error(&r.1),
                "re-delivery emitted a new record: {}",
                show(&r.1)
            );
        }
        assert_round_trip(&config, &cp);
        out_a.extend(emitted);
    }

    assert_look_back_matches(&config, &records, &gs.batches(recs.len()));

    // B: one frame per invocation, checking state after every frame.
    let mut b = Processor::new(&config);
    let mut out_b: Vec<GenRecord> = Vec::new();
    let mut latest: Option<Value> = None;
    for r in &records {
        let page = std::slice::from_ref(r);
        let before = b.checkpoint();
        let out = b.process(page).expect("malformed=pass never fails");
        let after = b.checkpoint();
        assert!(out.len() <= 1, "one frame, at most one record");
        for rec in check_pressure_invocation(page, &out, &after, &config) {
            if rec["type"] == "context/error" {
                assert_eq!(after, before, "a refused frame changed the state: {rec}");
            } else {
                latest = Some(rec);
            }
        }
        // Figures stand between records: the last record still describes the state.
        if let (Some(rec), Some(s)) = (&latest, pressure_sessions(&after).get(&b"s"[..])) {
            check_figures(rec, s, &config);
        }
        out_b.extend(materialise(page, &out));
    }
    assert_eq!(
        out_a, out_b,
        "batch cuts changed the pressure view's records"
    );
    assert_eq!(
        a.checkpoint(),
        b.checkpoint(),
        "batch cuts changed the state"
    );

    // Every earlier frame, delivered again: nothing new, nothing changed.
    let cp = b.checkpoint();
    let again = b.process(&records).expect("malformed=pass never fails");
    assert_eq!(
        b.checkpoint(),
        cp,
        "re-delivering the log changed the state"
    );
    for r in materialise(&records, &again) {
        assert!(
            out_b.contains(&r) && is_error(&r.1),
            "re-delivery emitted a new record: {}",
            show(&r.1)
        );
    }
}

/// `surface_ranges`: byte 0 bit 0 chooses raw [`Surface::plan`]/[`Surface::commit`] ops
/// (checked against contract §3's rule written from the text, Σ tokens after every edit) or a
/// [`GenSession`] through the pressure view (bit 1: a default capacity), where:
/// `messageTokens` = Σ surface nodes and `projectedTokens` follows from the checkpoint after
/// every frame; a refused frame (`context/error`) leaves the checkpoint byte-identical;
/// re-delivery is a no-op (no new record, same checkpoint); one frame per invocation and the
/// session's own cuts give the same records and state; checkpoints round-trip; `look_back`
/// over the first invocation leaves the state `process` leaves.
pub fn check_surface_ranges(data: &[u8]) {
    let Some((&p, rest)) = data.split_first() else {
        return;
    };
    if p & 1 == 0 {
        check_gen_session(p, rest);
    } else {
        check_raw_surface(rest);
    }
}
