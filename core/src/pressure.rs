//! One session's context projection (SPEC §3): the envelope, the surface, the provider's
//! sample anchored to the surface its own request carried, and the figures derived from them.

use crate::estimate::estimate;
use crate::frame::{FrameView, Slot, object_u64s};
use crate::surface::{Corrupt, Node, Plan, Span, Surface};

/// The per-session state, everything a checkpoint carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Session {
    /// The last applied `seq`: frames at or below it are re-deliveries.
    pub cursor: Option<u64>,
    /// The session's first applied frame had `seq` > 0: nodes before it are unknown.
    pub partial: bool,
    /// `estimate(system)` of the latest header that had one.
    pub system: Option<u64>,
    /// `estimate(tools)` of the latest header that had one.
    pub tools: Option<u64>,
    /// The latest header's `context_window`.
    pub capacity: Option<u64>,
    pub surface: Surface,
    /// The latest provider reading.
    pub pressure: Option<u64>,
    /// `messageTokens` just before the sampled message joined; `None`: no projection.
    pub anchor: Option<u64>,
}

/// What a session shows, as a `context/pressure` record carries it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub pressure: Option<u64>,
    pub projected: Option<u64>,
    pub capacity: Option<u64>,
    pub occupancy: Option<f64>,
    pub system: Option<u64>,
    pub tools: Option<u64>,
    pub message: Option<u64>,
    pub partial: bool,
}

/// Why a frame could not be applied: a `context/error` record says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The frame would change a figure but has no valid `seq`.
    NoSeq,
    /// `replaces` is not `{"from_seq": int, "to_seq": int}`.
    BadSpan,
    Corrupt(Corrupt),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Refusal::NoSeq => f.write_str(
                "the frame carries context (a message, header or usage) but no valid seq: it cannot be placed on the surface",
            ),
            Refusal::BadSpan => f.write_str(
                "replacement span is malformed: `replaces` must be {\"from_seq\": integer ≥ 0, \"to_seq\": integer ≥ 0}",
            ),
            Refusal::Corrupt(c) => c.fmt(f),
        }
    }
}

/// What a frame asks of the projection, read and checked before anything changes.
pub struct Change {
    pub seq: u64,
    system: Option<u64>,
    tools: Option<u64>,
    capacity: Option<u64>,
    sample: Option<u64>,
    /// The node the frame adds, with the span it replaces, when it has a message or a span.
    node: Option<(Node, Option<Span>)>,
}

pub const HEADER: &str = "request/header";
pub const ASSISTANT: &str = "assistant/message";

/// `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`; bad fields count 0.
pub fn sample(usage: &str) -> u64 {
    let fields = object_u64s(
        usage,
        [
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ],
    )
    .unwrap_or_default();
    fields.iter().fold(0u64, |s, f| match f {
        Slot::Valid(n) => s.saturating_add(*n),
        _ => s,
    })
}

fn span(raw: &str) -> Option<Span> {
    match object_u64s(raw, ["from_seq", "to_seq"])? {
        [Slot::Valid(from_seq), Slot::Valid(to_seq)] => Some(Span { from_seq, to_seq }),
        _ => None,
    }
}

impl Change {
    /// Reads what a main frame would change. `Ok(None)`: nothing (it only moves the cursor).
    pub fn read(v: &FrameView) -> Result<Option<Change>, Refusal> {
        let header = v.kind.as_deref() == Some(HEADER);
        let sample = match (v.kind.as_deref(), v.usage) {
            (Some(ASSISTANT), Some(usage)) => Some(sample(usage)),
            _ => None,
        };
        let touches = header || sample.is_some() || v.message.is_some() || v.replaces.is_some();
        let Some(seq) = v.seq else {
            return if touches {
                Err(Refusal::NoSeq)
            } else {
                Ok(None)
            };
        };
        let replaces = match v.replaces {
            Some(raw) => Some(span(raw).ok_or(Refusal::BadSpan)?),
            None => None,
        };
        let node = (v.message.is_some() || replaces.is_some()).then(|| {
            let tokens = v.message.map_or(0, |m| estimate(m.as_bytes()));
            (Node { seq, tokens }, replaces)
        });
        Ok(Some(Change {
            seq,
            system: header
                .then(|| v.system.map(|s| estimate(s.as_bytes())))
                .flatten(),
            tools: header
                .then(|| v.tools.map(|t| estimate(t.as_bytes())))
                .flatten(),
            capacity: header.then_some(v.context_window).flatten(),
            sample,
            node,
        }))
    }
}

impl Session {
    /// A session created by its first applied frame.
    pub fn starting_at(seq: u64) -> Session {
        Session {
            partial: seq != 0,
            ..Session::default()
        }
    }

    /// Whether `seq` was applied already (or lies below what was).
    pub fn is_redelivery(&self, seq: u64) -> bool {
        self.cursor.is_some_and(|c| seq <= c)
    }

    /// Validates, then commits: on a refusal nothing changes.
    pub fn apply(&mut self, change: Option<&Change>, seq: u64) -> Result<(), Refusal> {
        let Some(c) = change else {
            self.cursor = Some(seq);
            return Ok(());
        };
        let plan = match &c.node {
            Some((_, span)) => Some(
                self.surface
                    .plan(*span, self.partial)
                    .map_err(Refusal::Corrupt)?,
            ),
            None => None,
        };
        // Commit.
        if c.system.is_some() {
            self.system = c.system;
        }
        if c.tools.is_some() {
            self.tools = c.tools;
        }
        if c.capacity.is_some() {
            self.capacity = c.capacity;
        }
        if c.sample.is_some() {
            self.pressure = c.sample;
            self.anchor = Some(self.surface.total());
        }
        if let (Some(plan), Some((node, _))) = (plan, c.node) {
            self.surface.commit(plan, node);
            if let Plan::FrontCut { .. } = plan {
                // It removed nodes this session never priced: no honest projection until
                // the next sample.
                self.anchor = None;
            }
        }
        self.cursor = Some(c.seq);
        Ok(())
    }

    pub fn figures(&self, default_capacity: Option<u64>) -> Figures {
        let total = self.surface.total();
        let projected = match (self.pressure, self.anchor) {
            (Some(p), Some(a)) => {
                let v = p as i128 + total as i128 - a as i128;
                Some(v.clamp(0, u64::MAX as i128) as u64)
            }
            _ => None,
        };
        let capacity = self.capacity.or(default_capacity);
        let occupancy = match (projected.or(self.pressure), capacity) {
            (Some(used), Some(cap)) if cap > 0 => Some(used as f64 / cap as f64),
            _ => None,
        };
        let envelope = |v: Option<u64>| {
            if self.partial {
                v
            } else {
                Some(v.unwrap_or(0))
            }
        };
        Figures {
            pressure: self.pressure,
            projected,
            capacity,
            occupancy,
            system: envelope(self.system),
            tools: envelope(self.tools),
            message: (!self.partial).then_some(total),
            partial: self.partial,
        }
    }
}
