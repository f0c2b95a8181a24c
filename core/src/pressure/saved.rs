//! A pressure session's members in a checkpoint: version 5 writes them all (`rebaseFirst`,
//! `keptNode`, `keptShown`, `shownNext`, `keptBare`, `bareNext`, `compactReserve`,
//! `notInLog`, `restorePrior`, `agent`, `model`, `compactions`, `lastCompaction`,
//! `compactNext`, `anchorEnvelope` and `rebaseEnvelope` are members version 5 gained later: a
//! checkpoint without them restores with
//! the base at scale 1, the summary priced with what was kept, nothing shown, the prior at
//! every compaction, no reserve, every envelope part measured, the instance's prior, no names,
//! no compaction counted, no envelope grown since the last reading — readers that predate them ignore them); versions
//! 4 to 1 restore what they carried (4: `rebased` starts as if no compaction had been seen, the
//! base learnt from the next reading; 3: no calibration sums; 2: no anchor, so no projection
//! until the next sample; 1: the breakdown only, envelope and surface).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::session::{Compacted, Compactions, Envelope, Kept, Levels, Pending, Rebase, Session};
use super::surface::{Node, RestoreError, Surface};
use crate::frame::Trigger;
use crate::state::checkpoint::{CheckpointError, Member, Members, field};

/// What a pressure session's members hold as they are read.
#[derive(Default)]
pub(crate) struct Fields {
    any: bool,
    cursor: Option<u64>,
    partial: Option<bool>,
    floor: Option<u64>,
    system: Option<u64>,
    tools: Option<u64>,
    capacity: Option<u64>,
    pressure: Option<u64>,
    anchor: Option<u64>,
    est_growth: u64,
    provider_growth: u64,
    replaced: Option<bool>,
    /// `rebase`: `[base, restore, kept]`.
    rebase: (Option<u64>, Option<u64>, Option<u64>),
    /// `rebaseFirst`: `[reading, anchor]`.
    first: Option<(u64, u64)>,
    /// `keptNode`, `keptShown`, `shownNext`.
    kept_node: Option<u64>,
    kept_shown: bool,
    shown_next: bool,
    /// `keptExpected`, `expectedNext`.
    kept_expected: u64,
    expected_next: Option<u64>,
    /// `keptBare`, `bareNext` (written only when true).
    kept_bare: bool,
    bare_next: bool,
    /// `compactLevels`: `[auto, agent]`.
    levels: (Option<u64>, Option<u64>),
    /// `compactReserve`.
    reserve: Option<u64>,
    /// `restorePrior`.
    prior: Option<u64>,
    /// `notInLog`: `[system, tools]`.
    not_in_log: (bool, bool),
    /// `agent`, `model`.
    agent: Option<String>,
    model: Option<String>,
    /// `compactions`, `lastCompaction`: `[trigger, before, after]`, `compactNext`: `[trigger,
    /// before]`.
    compactions: u64,
    last_compaction: Option<(Option<String>, Option<u64>, Option<u64>)>,
    compact_next: Option<(Option<String>, Option<u64>)>,
    /// `anchorEnvelope`, `rebaseEnvelope`.
    anchor_envelope: Option<u64>,
    rebase_envelope: Option<u64>,
    surface: Option<Result<Surface, RestoreError>>,
}

/// The surface: `[[seq, tokens], …]` read straight into a [`Surface`] sized for it.
struct Nodes(Surface);

impl<'de> Visitor<'de> for Nodes {
    type Value = Result<Surface, RestoreError>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`surface`, an array of [seq, tokens] pairs of integers ≥ 0")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut s = self.0;
        let mut failed = None;
        while let Some((seq_no, tokens)) = seq.next_element::<(u64, u64)>()? {
            if failed.is_none()
                && let Err(e) = s.push_restored(Node {
                    seq: seq_no,
                    tokens,
                })
            {
                failed = Some(e);
            }
        }
        Ok(match failed {
            Some(e) => Err(e),
            None => s.restored().map(|()| s),
        })
    }
}

impl Session {
    pub(crate) fn write_members(&self, w: &mut Members) {
        w.opt_uint("cursor", self.cursor);
        w.bool("partial", self.partial);
        w.opt_uint("floor", self.surface.floor());
        w.opt_uint("systemTokens", self.envelope.system);
        w.opt_uint("toolsTokens", self.envelope.tools);
        let [system, tools] = self.envelope.not_in_log;
        w.raw("notInLog", &format!("[{system},{tools}]"));
        w.opt_uint("capacity", self.envelope.capacity);
        w.opt_uint("pressureTokens", self.pressure);
        w.opt_uint("anchorTokens", self.anchor);
        if self.anchor_envelope.is_some() {
            w.opt_uint("anchorEnvelope", self.anchor_envelope);
        }
        if self.rebase.envelope.is_some() {
            w.opt_uint("rebaseEnvelope", self.rebase.envelope);
        }
        w.uint("estGrowth", self.est_growth);
        w.uint("providerGrowth", self.provider_growth);
        w.bool("replacedSinceSample", self.replaced);
        let r = &self.rebase;
        let kept = r.kept.map(|k| k.total);
        w.raw("rebase", &field::nullable(&[r.base, r.restore, kept]));
        match r.first {
            Some((reading, anchor)) => w.raw("rebaseFirst", &format!("[{reading},{anchor}]")),
            None => w.raw("rebaseFirst", "null"),
        }
        w.opt_uint("keptNode", r.kept.map(|k| k.node));
        w.bool("keptShown", r.kept.is_some_and(|k| k.shown));
        w.bool("shownNext", r.shown_next);
        if let Some(k) = r.kept.filter(|k| k.expected > 0) {
            w.uint("keptExpected", k.expected);
        }
        w.opt_uint("expectedNext", r.expected_next);
        if r.kept.is_some_and(|k| k.bare) {
            w.bool("keptBare", true);
        }
        if r.bare_next {
            w.bool("bareNext", true);
        }
        let l = &self.levels;
        w.raw("compactLevels", &field::nullable(&[l.auto, l.agent]));
        w.opt_uint("compactReserve", l.reserve);
        w.opt_uint("restorePrior", r.prior);
        w.opt_str("agent", self.names.agent.as_deref());
        w.opt_str("model", self.names.model.as_deref());
        let c = &self.compactions;
        if c.count > 0 {
            w.uint("compactions", c.count);
        }
        let trigger =
            |t: Option<Trigger>| t.map_or("null".to_owned(), |t| format!("\"{}\"", t.word()));
        if let Some(l) = c.last {
            let [before, after] =
                [l.before, l.after].map(|n| n.map_or("null".to_owned(), |n| n.to_string()));
            w.raw(
                "lastCompaction",
                &format!("[{},{before},{after}]", trigger(l.trigger)),
            );
        }
        if let Some(n) = c.next {
            let before = n.before.map_or("null".to_owned(), |n| n.to_string());
            w.raw("compactNext", &format!("[{},{before}]", trigger(n.trigger)));
        }
        let mut nodes = String::with_capacity(self.surface.len() * 12 + 2);
        nodes.push('[');
        for (i, n) in self.surface.nodes().enumerate() {
            if i > 0 {
                nodes.push(',');
            }
            nodes.push_str(&format!("[{},{}]", n.seq, n.tokens));
        }
        nodes.push(']');
        w.raw("surface", &nodes);
    }

    /// Reads member `m`; `Ok(false)` when it is none of a pressure session's.
    pub(crate) fn read_member<'de, A: MapAccess<'de>>(
        b: &mut Fields,
        m: Member<'_, A>,
    ) -> Result<bool, A::Error> {
        match m.name {
            "cursor" => b.cursor = m.read()?,
            "floor" => b.floor = m.read()?,
            "systemTokens" => b.system = m.read()?,
            "toolsTokens" => b.tools = m.read()?,
            "notInLog" => b.not_in_log = m.read()?,
            "capacity" => b.capacity = m.read()?,
            "partial" => b.partial = Some(m.read()?),
            "pressureTokens" => b.pressure = m.read()?,
            "anchorTokens" => b.anchor = m.read()?,
            "estGrowth" => b.est_growth = m.read()?,
            "providerGrowth" => b.provider_growth = m.read()?,
            "replacedSinceSample" => b.replaced = Some(m.read()?),
            "rebase" => b.rebase = m.read()?,
            "rebaseFirst" => b.first = m.read()?,
            "keptNode" => b.kept_node = m.read()?,
            "keptShown" => b.kept_shown = m.read()?,
            "shownNext" => b.shown_next = m.read()?,
            "keptExpected" => b.kept_expected = m.read()?,
            "expectedNext" => b.expected_next = m.read()?,
            "keptBare" => b.kept_bare = m.read()?,
            "bareNext" => b.bare_next = m.read()?,
            "compactLevels" => b.levels = m.read()?,
            "compactReserve" => b.reserve = m.read()?,
            "restorePrior" => b.prior = m.read()?,
            "agent" => b.agent = m.read()?,
            "model" => b.model = m.read()?,
            "compactions" => b.compactions = m.read()?,
            "anchorEnvelope" => b.anchor_envelope = m.read()?,
            "rebaseEnvelope" => b.rebase_envelope = m.read()?,
            "lastCompaction" => b.last_compaction = m.read()?,
            "compactNext" => b.compact_next = m.read()?,
            "surface" => {
                // Borrowed first, to size the surface exactly (a node is a `[`, and at least six
                // bytes): no doubling growth over a million nodes.
                let bad = || {
                    de::Error::custom(
                        "`surface` must be an array of [seq, tokens] pairs of integers ≥ 0",
                    )
                };
                let raw: &'de RawValue = m.map.next_value().map_err(|_: A::Error| bad())?;
                let text = raw.get();
                let nodes = text
                    .bytes()
                    .filter(|&c| c == b'[')
                    .count()
                    .saturating_sub(1);
                let seed = Nodes(Surface::with_capacity(nodes.min(text.len() / 6)));
                let mut de = serde_json::Deserializer::from_str(text);
                b.surface = Some(de.deserialize_seq(seed).map_err(|_| bad())?)
            }
            _ => return Ok(false),
        }
        b.any = true;
        Ok(true)
    }

    /// The session the members make (`None` when there were none: an entry whose frames
    /// never reached the view).
    pub(crate) fn from_fields(b: Fields, version: u64) -> Result<Option<Session>, CheckpointError> {
        if !b.any {
            return Ok(None);
        }
        let mut surface = match b.surface {
            Some(Ok(s)) => s,
            Some(Err(RestoreError::Repeated(seq))) => {
                return Err(CheckpointError::RepeatedNode(seq));
            }
            Some(Err(RestoreError::Overflow)) => return Err(CheckpointError::Overflow),
            None => {
                return Err(CheckpointError::Invalid(
                    "`surface` must be an array of [seq, tokens] pairs".into(),
                ));
            }
        };
        let mut s = Session {
            envelope: Envelope {
                system: b.system,
                tools: b.tools,
                capacity: None,
                not_in_log: [b.not_in_log.0, b.not_in_log.1],
            },
            ..Session::default()
        };
        if version >= 2 {
            surface.set_floor(b.floor);
            s.cursor = b.cursor;
            s.partial = b.partial.ok_or_else(|| {
                CheckpointError::Invalid("`partial` must be true or false".into())
            })?;
            s.envelope.capacity = b.capacity.filter(|c| *c > 0);
            s.pressure = b.pressure;
        }
        if version >= 3 {
            s.anchor = b.anchor;
            s.anchor_envelope = b.anchor_envelope;
        }
        // Before version 4 a replacement since the last sample cannot be ruled out: the first
        // interval after the restore is not counted.
        s.replaced = true;
        if version >= 4 {
            s.est_growth = b.est_growth;
            s.provider_growth = b.provider_growth;
            s.replaced = b.replaced.unwrap_or(false);
        }
        if version >= 5 {
            let (base, restore, kept) = b.rebase;
            let base = base.filter(|_| !s.partial);
            s.rebase = Rebase {
                base,
                first: b.first.filter(|_| base.is_some()),
                envelope: b.rebase_envelope,
                restore,
                kept: kept.filter(|_| base.is_some()).map(|total| Kept {
                    total,
                    node: b.kept_node.unwrap_or(0).min(total),
                    shown: b.kept_shown,
                    expected: b.kept_expected,
                    bare: b.kept_bare,
                }),
                shown_next: b.shown_next,
                expected_next: b.expected_next,
                bare_next: b.bare_next,
                prior: b.prior,
            };
            let named = |n: Option<String>| {
                n.filter(|n| !n.is_empty() && n.len() <= crate::frame::NAME_BYTES)
                    .map(std::sync::Arc::from)
            };
            s.names = super::session::Names {
                agent: named(b.agent),
                model: named(b.model),
            };
            let trigger = |t: Option<String>| t.as_deref().and_then(Trigger::named);
            s.compactions = Compactions {
                count: b.compactions,
                last: b.last_compaction.map(|(t, before, after)| Compacted {
                    trigger: trigger(t),
                    before,
                    after,
                }),
                next: b.compact_next.map(|(t, before)| Pending {
                    trigger: trigger(t),
                    before,
                }),
            };
            let (auto, agent) = b.levels;
            s.levels = Levels {
                auto: auto.filter(|n| *n >= 1),
                agent: agent.filter(|n| *n >= 1),
                reserve: b.reserve,
            };
        }
        // Every node was applied, so stands at or below the cursor: a frame above it can never
        // repeat a node's seq. Version 1 carried no cursor: its surface's highest seq is one.
        let highest = surface.nodes().map(|n| n.seq).max();
        match (version, s.cursor, highest) {
            (1, _, h) => s.cursor = h,
            (_, Some(c), Some(h)) if h > c => {
                return Err(CheckpointError::Invalid(format!(
                    "a surface node's seq {h} is above the cursor {c}"
                )));
            }
            (_, None, Some(_)) => {
                return Err(CheckpointError::Invalid(
                    "a surface without a cursor".into(),
                ));
            }
            _ => {}
        }
        s.surface = surface;
        Ok(Some(s))
    }
}
