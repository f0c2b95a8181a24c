//! One session's context projection (SPEC §3): the envelope, the surface, the provider's sample
//! anchored to the surface its own request carried, the calibration learnt from the session's
//! own readings, and the figures derived from them.

use crate::config::Projection;
use crate::estimate::estimate;
use crate::frame::{Field, Frame, object_uints};
use crate::pressure::surface::{Corrupt, Node, Plan, Replaces, Surface};

/// The per-session state, everything a checkpoint carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Session {
    /// The last applied `seq`: frames at or below it are re-deliveries.
    pub cursor: Option<u64>,
    /// The session's first applied frame had `seq` > 0, or its state was evicted: nodes before
    /// what it saw are unknown.
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
    /// Σ estimated growth over clean sample intervals (calibration's denominator).
    pub est_growth: u64,
    /// Σ provider growth over the same intervals (calibration's numerator).
    pub provider_growth: u64,
    /// A replacement was applied since the latest sample: the next interval is not clean.
    pub replaced: bool,
}

/// What a session shows, as a `context/pressure` record carries it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Figures {
    pub pressure: Option<u64>,
    pub projected: Option<u64>,
    pub capacity: Option<u64>,
    pub occupancy: Option<f64>,
    pub system: Option<u64>,
    pub tools: Option<u64>,
    pub message: Option<u64>,
    /// `estimateScale` in thousandths.
    pub scale_milli: u64,
    pub partial: bool,
}

/// Why a frame could not be applied: a `context/error` record says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The frame would change a figure but has no valid `seq`.
    NoSeq,
    /// `replaces` is not `{"from_seq": int, "to_seq": int}`.
    BadSpan,
    Corrupt(Corrupt),
    /// The session key is over the limit: no state is kept for it.
    LongKey(usize),
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
            Refusal::LongKey(n) => write!(
                f,
                "the session key is {n} bytes, over the limit of {}: no state is kept for it",
                crate::record::MAX_KEY_LEN
            ),
        }
    }
}

/// What a frame asks of the projection, read and checked before anything changes.
pub(crate) struct Change {
    pub seq: u64,
    system: Option<u64>,
    tools: Option<u64>,
    capacity: Option<u64>,
    sample: Option<u64>,
    /// The node the frame adds, with the span it replaces, when it has a message or a span.
    node: Option<(Node, Option<Replaces>)>,
}

pub(crate) const HEADER: &str = "request/header";
pub(crate) const ASSISTANT: &str = "assistant/message";

/// The provider's prompt size from a `usage` object: `input_tokens` +
/// `cache_read_input_tokens` + `cache_creation_input_tokens`; missing or bad fields count 0.
pub fn usage_tokens(usage: &str) -> u64 {
    let fields = object_uints(
        usage,
        [
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ],
    )
    .unwrap_or_default();
    fields.iter().fold(0u64, |s, f| match f {
        Field::Valid(n) => s.saturating_add(*n),
        _ => s,
    })
}

fn replaces(raw: &str) -> Option<Replaces> {
    match object_uints(raw, ["from_seq", "to_seq"])? {
        [Field::Valid(from_seq), Field::Valid(to_seq)] => Some(Replaces { from_seq, to_seq }),
        _ => None,
    }
}

impl Change {
    /// Reads what a main frame would change. `Ok(None)`: nothing (it only moves the cursor).
    pub fn read(v: &Frame) -> Result<Option<Change>, Refusal> {
        let header = v.kind() == Some(HEADER);
        let sample = match (v.kind(), v.usage()) {
            (Some(ASSISTANT), Some(usage)) => Some(usage_tokens(usage)),
            _ => None,
        };
        let touches = header || sample.is_some() || v.message().is_some() || v.replaces().is_some();
        let Some(seq) = v.seq() else {
            return if touches {
                Err(Refusal::NoSeq)
            } else {
                Ok(None)
            };
        };
        let span = match v.replaces() {
            Some(raw) => Some(replaces(raw).ok_or(Refusal::BadSpan)?),
            None => None,
        };
        let node = (v.message().is_some() || span.is_some()).then(|| {
            let tokens = v.message().map_or(0, |m| estimate(m.as_bytes()));
            (Node { seq, tokens }, span)
        });
        let priced = |raw: Option<&str>| {
            header
                .then(|| raw.map(|s| estimate(s.as_bytes())))
                .flatten()
        };
        Ok(Some(Change {
            seq,
            system: priced(v.system()),
            tools: priced(v.tools()),
            capacity: header.then_some(v.context_window()).flatten(),
            sample,
            node,
        }))
    }
}

/// Below this much estimated growth a session is uncalibrated (scale 1).
pub(crate) const CALIBRATION_MIN: u64 = 1000;

/// `d × n / d_` rounded to the nearest integer, halves away from zero, exactly.
fn scaled(d: i128, n: u64, den: u64) -> i128 {
    let m = d.unsigned_abs() * n as u128;
    let (q, r) = (m / den as u128, m % den as u128);
    let q = if r >= den as u128 - r { q + 1 } else { q };
    if d < 0 { -(q as i128) } else { q as i128 }
}

impl Session {
    /// A session created by its first applied frame; `evicted`: its state was lost before.
    pub fn starting_at(seq: u64, evicted: bool) -> Session {
        Session {
            partial: seq != 0 || evicted,
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
        if let Some(now) = c.sample {
            let before_join = self.surface.total();
            if let (Some(previous), Some(anchor), false) =
                (self.pressure, self.anchor, self.replaced)
            {
                // A clean interval: what the estimate saw grow against what the provider did.
                let d_est = before_join as i128 - anchor as i128;
                let d_provider = now as i128 - previous as i128;
                if d_est > 0 && d_provider > 0 {
                    self.est_growth = self.est_growth.saturating_add(d_est as u64);
                    self.provider_growth = self.provider_growth.saturating_add(d_provider as u64);
                }
            }
            self.pressure = Some(now);
            self.anchor = Some(before_join);
            self.replaced = false;
        }
        if let (Some(plan), Some((node, _))) = (plan, c.node) {
            self.surface.commit(plan, node);
            match plan {
                Plan::Append => {}
                Plan::Splice { .. } => self.replaced = true,
                Plan::FrontCut { .. } => {
                    // It removed nodes this session never priced: no honest projection until
                    // the next sample.
                    self.anchor = None;
                    self.replaced = true;
                }
            }
        }
        self.cursor = Some(c.seq);
        Ok(())
    }

    /// The calibration ratio N/D: clamped to [1/4, 4]; 1/1 while uncalibrated or `fixed`.
    pub fn ratio(&self, projection: Projection) -> (u64, u64) {
        let (n, d) = (self.provider_growth, self.est_growth);
        if projection == Projection::Fixed || d < CALIBRATION_MIN {
            return (1, 1);
        }
        if n as u128 > 4 * d as u128 {
            (4, 1)
        } else if 4 * n as u128 > d as u128 {
            (n, d)
        } else {
            (1, 4)
        }
    }

    pub fn figures(&self, default_capacity: Option<u64>, projection: Projection) -> Figures {
        let total = self.surface.total();
        let (n, d) = self.ratio(projection);
        let projected = match (self.pressure, self.anchor) {
            (Some(p), Some(a)) => {
                let v = p as i128 + scaled(total as i128 - a as i128, n, d);
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
            scale_milli: scaled(1000, n, d) as u64,
            partial: self.partial,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_rounds_halves_away_from_zero() {
        assert_eq!(scaled(5, 1, 2), 3);
        assert_eq!(scaled(-5, 1, 2), -3);
        assert_eq!(scaled(4, 1, 2), 2);
        assert_eq!(scaled(7, 3, 2), 11); // 10.5
        assert_eq!(scaled(-7, 3, 2), -11);
        assert_eq!(
            scaled(u64::MAX as i128, u64::MAX, u64::MAX),
            u64::MAX as i128
        );
        assert_eq!(scaled(1000, 1344, 1000), 1344);
    }

    #[test]
    fn the_ratio_is_clamped_and_waits_for_enough_growth() {
        let s = |n, d| Session {
            provider_growth: n,
            est_growth: d,
            ..Session::default()
        };
        assert_eq!(s(5000, 999).ratio(Projection::Calibrated), (1, 1));
        assert_eq!(s(1500, 1000).ratio(Projection::Calibrated), (1500, 1000));
        assert_eq!(s(1500, 1000).ratio(Projection::Fixed), (1, 1));
        assert_eq!(s(9000, 1000).ratio(Projection::Calibrated), (4, 1));
        assert_eq!(s(4000, 1000).ratio(Projection::Calibrated), (4000, 1000));
        assert_eq!(s(100, 1000).ratio(Projection::Calibrated), (1, 4));
        assert_eq!(s(250, 1000).ratio(Projection::Calibrated), (1, 4));
        assert_eq!(s(251, 1000).ratio(Projection::Calibrated), (251, 1000));
    }
}
