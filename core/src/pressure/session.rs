//! One session's context projection (contract §3): the envelope, the surface, the provider's
//! sample anchored to the surface its own request carried, the calibration learnt from the
//! session's own readings, the base and restore a compaction re-bases on, the level the agent
//! compacts at, and the figures derived from them.

use crate::config::{CompactAt, Projection};
use crate::frame::Trigger;
use crate::pressure::surface::{Plan, Surface};

pub(crate) use super::change::{Change, Names, Pending, Refusal};

/// The per-session state, everything a checkpoint carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Session {
    /// The last applied `seq`: frames at or below it are re-deliveries.
    pub cursor: Option<u64>,
    /// The session's first applied frame had `seq` > 0, or its state was evicted: nodes before
    /// what it saw are unknown.
    pub partial: bool,
    /// What the latest headers said of the request's envelope.
    pub envelope: Envelope,
    pub surface: Surface,
    /// The latest provider reading.
    pub pressure: Option<u64>,
    /// `messageTokens` just before the sampled message joined; `None`: no projection.
    pub anchor: Option<u64>,
    /// The envelope's estimate at the latest sample, where the log measures it (both system
    /// and tools named): a request that changed it since changed the context by as much.
    pub anchor_envelope: Option<u64>,
    /// Σ estimated growth over clean sample intervals (calibration's denominator).
    pub est_growth: u64,
    /// Σ provider growth over the same intervals (calibration's numerator).
    pub provider_growth: u64,
    /// A replacement was applied since the latest sample: the next interval is not clean.
    pub replaced: bool,
    /// What `rebased` keeps.
    pub rebase: Rebase,
    /// Where the agent compacts on its own, as the log said.
    pub levels: Levels,
    /// The agent and model the latest headers named.
    pub names: Names,
    /// The compactions the session's log showed.
    pub compactions: Compactions,
}

/// The compactions a session's log showed (contract §3.6): how many replacements were applied,
/// and the last one's trigger and size before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Compactions {
    pub count: u64,
    pub last: Option<Compacted>,
    /// What the latest `compact/start` said, until the replacement it announces.
    pub next: Option<Pending>,
}

/// One compaction as the records show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub trigger: Option<Trigger>,
    /// The size it began at: its `preTokens`, else the last reading before it.
    pub before: Option<u64>,
    /// The first reading after it; `None` until one comes.
    pub after: Option<u64>,
}

/// The request's envelope, as the latest `request/header` that named each part said (contract
/// §3.1): field by field, a header without one keeps the previous value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// `estimate(system)`.
    pub system: Option<u64>,
    /// `estimate(tools)`.
    pub tools: Option<u64>,
    /// `context_window`.
    pub capacity: Option<u64>,
    /// The latest header to name `system` (resp. `tools`) named it `null`: the log does not
    /// carry it, so its figure is unknown, not 0 (contract §3).
    pub not_in_log: [bool; 2],
}

/// What `rebased` keeps (contract §3.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rebase {
    /// What the session's first reading counted beyond its surface at scale 1 (system prompt,
    /// tools, what the agent adds unseen); `None` in a partial session.
    pub base: Option<u64>,
    /// That first reading and the `messageTokens` it was anchored to, so that the base is
    /// priced at the session's scale as it stands (a checkpoint from before it kept only
    /// `base`).
    pub first: Option<(u64, u64)>,
    /// The envelope's estimate at that first reading, where the log measures it.
    pub envelope: Option<u64>,
    /// What the agent put back unseen at the last compaction beyond what was there, learnt
    /// from the first reading after it; `None` until then (the prior stands).
    pub restore: Option<u64>,
    /// A replacement was applied since the latest sample: what it left.
    pub kept: Option<Kept>,
    /// The latest `compact/start` said the log writes what its compaction puts back.
    pub shown_next: bool,
    /// What the latest `compact/start` said the agent's own rule puts back unseen
    /// (`restore_tokens`, at scale 1); `None`: it said nothing, the prior stands alone.
    pub expected_next: Option<u64>,
    /// The latest `compact/start` said nothing comes back beyond `restore_tokens`
    /// (`restore_beyond: false`): no prior at its compaction.
    pub bare_next: bool,
    /// The prior the latest header to name one named (`compact_restore`: the session's agent's,
    /// with `input=otel`); `None`: the instance's.
    pub prior: Option<u64>,
}

/// What a replacement left on the surface, until the next sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// `messageTokens` right after it: its node and what it kept verbatim.
    pub total: u64,
    /// Its own node's tokens (the summary, priced as prose: unscaled).
    pub node: u64,
    /// Its `compact/start` said the log writes what comes back: nothing unseen is added.
    pub shown: bool,
    /// What its `compact/start` said the agent's rule puts back unseen, at scale 1.
    pub expected: u64,
    /// Its `compact/start` said nothing comes back beyond that: the prior adds nothing.
    pub bare: bool,
}

/// Where the agent compacts on its own, as the session's log says (contract §3.5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Levels {
    /// The level the session's last automatic compaction fired at.
    pub auto: Option<u64>,
    /// The agent's own threshold, as the latest header that named one said.
    pub agent: Option<u64>,
    /// How far below its window the agent compacts, as the latest header that named it said.
    pub reserve: Option<u64>,
}

/// What the figures read besides a session's state: the instance's params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    /// The window when no header names one.
    pub capacity: Option<u64>,
    pub projection: Projection,
    pub compact_at: CompactAt,
    /// What the agent puts back unseen at a compaction until the session learnt its own.
    pub restore_prior: u64,
    /// `restore_prior` was named by the param: it stands over a header's.
    pub restore_named: bool,
    /// Whether a session learns what its agent puts back from its own compactions.
    pub learn_restore: bool,
    /// The agent documents its threshold as the window less this (Claude Code: 33,000), until
    /// a header names the session's own.
    pub window_reserve: Option<u64>,
    /// Messages a session keeps on its surface (`max_nodes`, contract §3.7).
    pub max_nodes: usize,
}

/// What a session shows, as a `context/pressure` record carries it, but for the names
/// ([`Session::names`], which a record carries beside these).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Figures {
    /// `pressureTokens`, the last reading.
    pub pressure: Option<u64>,
    /// `projectedTokens`.
    pub projected: Option<u64>,
    /// `capacity`: the header's window, else the param's.
    pub capacity: Option<u64>,
    /// `estimateScale` in thousandths: what the estimates below are scaled by.
    pub scale_milli: u64,
    /// `systemTokens`, `toolsTokens`, `messageTokens`: the raw estimates.
    pub system: Option<u64>,
    pub tools: Option<u64>,
    pub message: Option<u64>,
    /// `compactAtTokens`.
    pub compact_at: Option<u64>,
    pub partial: bool,
    /// `compactions`, and the last one's `lastCompact…` members.
    pub compactions: u64,
    pub last_compaction: Option<Compacted>,
}

impl Envelope {
    /// The system prompt and tools estimated, where the log measures both.
    pub(crate) fn measured(&self) -> Option<u64> {
        match (self.system, self.tools, self.not_in_log) {
            (Some(s), Some(t), [false, false]) => Some(s.saturating_add(t)),
            _ => None,
        }
    }
}

/// How much a measured envelope grew from `then` to `now` (both measured), else 0.
fn envelope_delta(then: Option<u64>, now: Option<u64>) -> i128 {
    match (then, now) {
        (Some(a), Some(b)) => b as i128 - a as i128,
        _ => 0,
    }
}

impl Figures {
    /// `contextOccupancy`: the projection, else the last reading, of the capacity.
    pub(crate) fn occupancy(&self) -> Option<f64> {
        match (self.projected.or(self.pressure), self.capacity) {
            (Some(used), Some(cap)) if cap > 0 => Some(used as f64 / cap as f64),
            _ => None,
        }
    }

    /// `untilCompactTokens`: how far the projection is from the level the agent compacts at.
    pub(crate) fn until_compact(&self) -> Option<u64> {
        let (c, p) = (self.compact_at?, self.projected?);
        Some(c.saturating_sub(p))
    }
}

/// Below this much estimated growth a session is uncalibrated (scale 1).
pub(crate) const CALIBRATION_MIN: u64 = 1000;

/// The most nodes a sample's `anchor_seq` may leave out of its anchor: what one response
/// and its tool results add (contract §3, sample; §5: a frame's cost stays bounded).
pub(crate) const ANCHOR_NODES: usize = 256;

/// What a replacement left, priced: its own node as prose (unscaled: the estimate's "4 chars
/// ≈ 1 token" is a prose figure, and a session's scale is learnt mostly on code and JSON), what
/// it kept verbatim at the session's scale.
fn kept_price(kept: Kept, scale: impl Fn(u64) -> i128) -> i128 {
    kept.node as i128 + scale(kept.total - kept.node)
}

/// `d × n / d_` rounded to the nearest integer, halves away from zero, exactly.
fn scaled(d: i128, n: u64, den: u64) -> i128 {
    // Scale 1 (an uncalibrated session): `d` itself. A product within 64 bits is divided in
    // 64 bits, which wasm32 has natively (a 128-bit division is a library call there).
    if n == den {
        return d;
    }
    if let (Ok(a), Ok(n)) = (u32::try_from(d.unsigned_abs()), u32::try_from(n)) {
        let (m, den) = (a as u64 * n as u64, den);
        let (q, r) = (m / den, m % den);
        let q = if r >= den - r { q + 1 } else { q } as i128;
        return if d < 0 { -q } else { q };
    }
    let m = d.unsigned_abs() * n as u128;
    let (q, r) = (m / den as u128, m % den as u128);
    let q = if r >= den as u128 - r { q + 1 } else { q };
    if d < 0 { -(q as i128) } else { q as i128 }
}

impl Session {
    /// A session created by its first applied frame; `evicted`: its state was lost before.
    pub(crate) fn starting_at(seq: u64, evicted: bool) -> Session {
        Session {
            partial: seq != 0 || evicted,
            ..Session::default()
        }
    }

    /// Whether `seq` was applied already (or lies below what was).
    pub(crate) fn is_redelivery(&self, seq: u64) -> bool {
        self.cursor.is_some_and(|c| seq <= c)
    }

    /// Validates, then commits: on a refusal nothing changes.
    pub(crate) fn apply(
        &mut self,
        change: Option<&Change>,
        seq: u64,
        max_nodes: usize,
    ) -> Result<(), Refusal> {
        let Some(c) = change else {
            // As an inert change: the cursor moves, and a surface over the bound is trimmed.
            if self.surface.len() > max_nodes {
                self.trim(max_nodes);
            }
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
        for (i, named) in [c.system, c.tools].into_iter().enumerate() {
            if let Some(tokens) = named {
                let e = &mut self.envelope;
                *[&mut e.system, &mut e.tools][i] = tokens;
                e.not_in_log[i] = tokens.is_none();
            }
        }
        // The level the last automatic compaction fired at is the model's and the window's:
        // another model or window forgets it (contract §3.5).
        let other = |now: &Option<std::sync::Arc<str>>, named: &Option<std::sync::Arc<str>>| {
            named.is_some() && now.is_some() && named != now
        };
        if (c.capacity.is_some()
            && self.envelope.capacity.is_some()
            && c.capacity != self.envelope.capacity)
            || other(&self.names.model, &c.model)
        {
            self.levels.auto = None;
        }
        if c.capacity.is_some() {
            self.envelope.capacity = c.capacity;
        }
        if c.auto_compact.is_some() {
            self.levels.auto = c.auto_compact;
        }
        if c.agent_compact.is_some() {
            self.levels.agent = c.agent_compact;
        }
        if c.agent.is_some() {
            self.names.agent.clone_from(&c.agent);
        }
        if c.model.is_some() {
            self.names.model.clone_from(&c.model);
        }
        if c.reserve.is_some() {
            self.levels.reserve = c.reserve;
        }
        if c.restore_prior.is_some() {
            self.rebase.prior = c.restore_prior;
        }
        if c.compaction.is_some() {
            self.compactions.next = c.compaction;
        }
        if let Some(shown) = c.restore_shown {
            self.rebase.shown_next = shown;
            self.rebase.expected_next = c.restore_tokens;
            self.rebase.bare_next = c.restore_beyond == Some(false);
        }
        if let Some(now) = c.sample {
            // The surface the sampled request carried: as it stands, less what joined after the
            // frame its `anchor_seq` names (a response written before its reading).
            let total = self.surface.total();
            let carried = c
                .anchor_seq
                .and_then(|a| self.surface.tokens_after(a, ANCHOR_NODES))
                .map_or(total, |after| total - after);
            // `rebased` learns, before this interval moves the calibration: the first reading
            // this complete session sees, and after a compaction what the agent put back
            // unseen — what the reading counts beyond the base and what the compaction left.
            if !self.partial {
                let (n, d) = self.ratio(Projection::Calibrated);
                let scale = |t: u64| scaled(t as i128, n, d);
                match (self.rebase.base, self.rebase.kept.take()) {
                    (None, _) => {
                        self.rebase.base = Some(now.saturating_sub(carried));
                        self.rebase.first = Some((now, carried));
                        self.rebase.envelope = self.envelope.measured();
                    }
                    (Some(_), Some(kept)) if !kept.shown => {
                        // What came back beyond what the log showed joining before the
                        // request and what the agent's rule explains: the figure's own terms
                        // (contract §3.4), so that a log that shows its initial context joining
                        // again teaches nothing of it as unseen.
                        let joined = scale(carried.saturating_sub(kept.total));
                        let beyond = now as i128
                            - self.base(scale) as i128
                            - kept_price(kept, scale)
                            - joined.max(scale(kept.expected));
                        self.rebase.restore = Some(beyond.max(0) as u64);
                    }
                    (Some(_), _) => {}
                }
            }
            // The first reading of a complete session whose log measures its whole request
            // (the envelope named, not `null`) is an interval from an empty request: the
            // calibration starts from it (contract §3.3).
            if let (None, false, Some(envelope)) =
                (self.pressure, self.partial, self.envelope.measured())
            {
                self.est_growth = self.est_growth.saturating_add(envelope + carried);
                self.provider_growth = self.provider_growth.saturating_add(now);
            }
            if let (Some(previous), Some(anchor), false) =
                (self.pressure, self.anchor, self.replaced)
            {
                // A clean interval: what the estimate saw grow (the surface, and an envelope
                // the log measures) against what the provider did.
                let d_est = carried as i128 - anchor as i128
                    + envelope_delta(self.anchor_envelope, self.envelope.measured());
                let d_provider = now as i128 - previous as i128;
                if d_est > 0 && d_provider > 0 {
                    self.est_growth = self.est_growth.saturating_add(d_est as u64);
                    self.provider_growth = self.provider_growth.saturating_add(d_provider as u64);
                }
            }
            if let Some(last) = &mut self.compactions.last
                && last.after.is_none()
            {
                last.after = Some(now);
            }
            self.pressure = Some(now);
            self.anchor = Some(carried);
            self.anchor_envelope = self.envelope.measured();
            self.replaced = false;
        }
        if let (Some(plan), Some((node, _))) = (plan, c.node) {
            self.surface.commit(plan, node);
            let counted = match plan {
                Plan::Append => false,
                Plan::Splice { .. } => !c.rewrite,
                Plan::FrontCut { .. } => true,
            };
            if counted {
                self.count_compaction();
            }
            match plan {
                Plan::Append => {}
                // The agent's own requests rewritten: what changed is the surface's, priced as
                // any change since the reading (contract §3.1); no compaction.
                Plan::Splice { .. } if c.rewrite => {}
                Plan::Splice { .. } => {
                    self.replaced = true;
                    if self.rebase.base.is_some() {
                        self.rebase.kept = Some(Kept {
                            total: self.surface.total(),
                            node: node.tokens.min(self.surface.total()),
                            shown: self.rebase.shown_next,
                            expected: self.rebase.expected_next.unwrap_or(0),
                            bare: self.rebase.bare_next,
                        });
                    }
                }
                Plan::FrontCut { .. } => {
                    // It removed nodes this session never priced: no honest projection until
                    // the next sample.
                    self.anchor = None;
                    self.replaced = true;
                }
            }
        }
        if self.surface.len() > max_nodes {
            self.trim(max_nodes);
        }
        self.cursor = Some(c.seq);
        Ok(())
    }

    /// A replacement was applied: one more compaction, announced by the latest `compact/start`
    /// when one came since the last (contract §3.6).
    fn count_compaction(&mut self) {
        let c = &mut self.compactions;
        let said = c.next.take().unwrap_or_default();
        c.count = c.count.saturating_add(1);
        c.last = Some(Compacted {
            trigger: said.trigger,
            before: said.before.or(self.pressure),
            after: None,
        });
    }

    /// Past `max_nodes` the oldest nodes go and the session is partial from here (contract
    /// §3.7): what it drops was carried by the reading the projection stands on, so the anchor
    /// loses it too and what changed since is unchanged; without the whole surface there is no
    /// base to re-base on.
    fn trim(&mut self, max_nodes: usize) {
        let dropped = self.surface.trim_front(max_nodes);
        self.partial = true;
        self.anchor = self.anchor.map(|a| a.saturating_sub(dropped));
        self.rebase.base = None;
        self.rebase.first = None;
        self.rebase.kept = None;
    }

    /// The calibration ratio N/D: clamped to [1/4, 4]; 1/1 while uncalibrated or `fixed`.
    pub(crate) fn ratio(&self, projection: Projection) -> (u64, u64) {
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

    /// What the session's first reading counted beyond its surface, that surface priced at
    /// the session's scale as it stands (the first reading came before any calibration); a
    /// checkpoint from before kept only the base at scale 1.
    fn base(&self, scale: impl Fn(u64) -> i128) -> u64 {
        match self.rebase.first {
            Some((reading, anchor)) => (reading as i128 - scale(anchor)).max(0) as u64,
            None => self.rebase.base.unwrap_or(0),
        }
    }

    /// The base a re-based figure stands on: never under the envelope's own estimate, so that
    /// the figure never falls under the system prompt and tools (contract §3.4).
    fn floor(&self, base: u64) -> u64 {
        let e = &self.envelope;
        base.max(e.system.unwrap_or(0).saturating_add(e.tools.unwrap_or(0)))
    }

    /// What the agent puts back unseen at a compaction: nothing where the log writes it, else
    /// what its own rule puts back (`restore_tokens`, at the session's scale) and, beyond it
    /// (unless its `compact/start` said nothing comes back beyond), the prior, halfway to what
    /// the session's last compaction taught it (one compaction's lesson moves the next figure
    /// by half at most: contract §3.4).
    fn unseen_restore(&self, kept: Kept, params: &Params, scale: impl Fn(u64) -> i128) -> i128 {
        let prior = match self.rebase.prior {
            Some(p) if !params.restore_named => p,
            _ => params.restore_prior,
        };
        let beyond = match (kept.shown, self.rebase.restore) {
            (true, _) => return 0,
            (false, _) if kept.bare => 0,
            (false, Some(learnt)) if params.learn_restore => {
                ((prior as u128 + learnt as u128).div_ceil(2)) as u64
            }
            (false, _) => prior,
        };
        scale(kept.expected) + beyond as i128
    }

    /// What the session shows under the instance's params.
    pub(crate) fn figures(&self, params: &Params) -> Figures {
        let total = self.surface.total();
        let (n, d) = self.ratio(params.projection);
        let scale = |t: u64| scaled(t as i128, n, d);
        let projected = match (self.pressure, self.anchor) {
            (Some(p), Some(a)) => {
                let v = match (params.projection, self.rebase.base, self.rebase.kept) {
                    // Re-based: the base, what the compaction left (its summary as prose, what
                    // it kept verbatim scaled), and the larger of what joined since and what the
                    // agent puts back unseen (contract §3.4).
                    (Projection::Rebased, Some(_), Some(kept)) => {
                        let restore = self.unseen_restore(kept, params, scale);
                        let joined = scale(total.saturating_sub(kept.total));
                        let grown = envelope_delta(self.rebase.envelope, self.envelope.measured());
                        self.floor(self.base(scale)) as i128
                            + scaled(grown, n, d)
                            + kept_price(kept, scale)
                            + joined.max(restore)
                    }
                    // What changed since the reading: the surface, and an envelope the log
                    // measures (a model switched, tools added) (contract §3.2).
                    _ => {
                        let grown = envelope_delta(self.anchor_envelope, self.envelope.measured());
                        p as i128 + scaled(total as i128 - a as i128 + grown, n, d)
                    }
                };
                Some(v.clamp(0, u64::MAX as i128) as u64)
            }
            _ => None,
        };
        let capacity = self.envelope.capacity.or(params.capacity);
        let compact_at = match params.compact_at {
            CompactAt::Never => None,
            CompactAt::Tokens(t) => Some(t),
            CompactAt::Learnt => self.levels.auto.or(self.levels.agent).or_else(|| {
                let reserve = self.levels.reserve.or(params.window_reserve)?;
                capacity.filter(|c| *c > reserve).map(|c| c - reserve)
            }),
        };
        // Before any header the breakdown's envelope is 0 — but not in a partial session, nor
        // where a header said the log does not carry it: there it is unknown (contract §3).
        let envelope = |v: Option<u64>, not_in_log: bool| {
            if self.partial || not_in_log {
                v
            } else {
                Some(v.unwrap_or(0))
            }
        };
        let e = &self.envelope;
        Figures {
            pressure: self.pressure,
            projected,
            capacity,
            system: envelope(e.system, e.not_in_log[0]),
            tools: envelope(e.tools, e.not_in_log[1]),
            message: (!self.partial).then_some(total),
            scale_milli: scaled(1000, n, d) as u64,
            compact_at,
            partial: self.partial,
            compactions: self.compactions.count,
            last_compaction: self.compactions.last,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;
    use crate::pressure::surface::Node;

    /// Contract §3.6: every replacement is a compaction counted, described by its
    /// `compact/start` (else the last reading before it) and the first reading after; a
    /// rewrite of the agent's own request list is none, and projects as any change since the
    /// reading.
    #[test]
    fn compactions_are_counted_and_a_rewrite_is_none() {
        let params = Params {
            capacity: Some(100_000),
            projection: Projection::Rebased,
            compact_at: CompactAt::Learnt,
            restore_prior: 0,
            restore_named: false,
            learn_restore: true,
            window_reserve: None,
            max_nodes: 1000,
        };
        let mut s = Session::starting_at(0, false);
        let frames = [
            r#"{"type":"user/message","seq":0,"message":"a long message of some length"}"#,
            r#"{"type":"assistant/message","seq":1,"usage":{"input_tokens":5000}}"#,
            r#"{"type":"user/message","seq":2,"message":"more"}"#,
            r#"{"type":"compact/start","seq":3,"trigger":"manual","preTokens":5100}"#,
            r#"{"type":"user/message","seq":4,"message":"summary","replaces":{"from_seq":0,"to_seq":2}}"#,
        ];
        for f in frames {
            let v = Frame::parse(f.as_bytes()).unwrap();
            let c = Change::read(&v).unwrap();
            s.apply(c.as_ref(), v.seq().unwrap(), 1000).unwrap();
        }
        let f = s.figures(&params);
        assert_eq!(f.compactions, 1);
        let last = f.last_compaction.unwrap();
        assert_eq!(
            (last.trigger, last.before, last.after),
            (Some(Trigger::Manual), Some(5100), None)
        );
        let reading =
            Frame::parse(br#"{"type":"assistant/message","seq":5,"usage":{"input_tokens":900}}"#)
                .unwrap();
        s.apply(Change::read(&reading).unwrap().as_ref(), 5, 1000)
            .unwrap();
        assert_eq!(s.figures(&params).last_compaction.unwrap().after, Some(900));
        // A rewrite: the surface changes, the count does not, the projection follows it.
        let rewrite = Frame::parse(
            br#"{"type":"x/request","seq":6,"message_chars":4000,"replaces":{"from_seq":4,"to_seq":4},"rewrite":true}"#,
        )
        .unwrap();
        s.apply(Change::read(&rewrite).unwrap().as_ref(), 6, 1000)
            .unwrap();
        let f = s.figures(&params);
        assert_eq!(f.compactions, 1);
        assert_eq!(f.message, Some(1000));
        let summary = crate::estimate::estimate(br#""summary""#);
        assert_eq!(
            f.projected,
            Some(900 + 1000 - summary),
            "the reading and what changed since"
        );
    }

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

    /// Applies frames written as JSON to a session, as the view would (each must apply).
    fn feed(s: &mut Session, frames: &[String]) {
        for f in frames {
            let v = Frame::parse(f.as_bytes()).expect("a frame");
            let c = Change::read(&v).expect("a valid frame");
            s.apply(c.as_ref(), v.seq().unwrap(), usize::MAX)
                .expect("applies");
        }
    }

    /// A main frame: `seq`, type, and a message of exactly `tokens` estimated tokens.
    fn msg(seq: u64, kind: &str, tokens: u64) -> String {
        // `"` + 4·tokens − 2 chars + `"` prices at `tokens`.
        let text = "x".repeat(4 * tokens as usize - 2);
        format!(r#"{{"type":"{kind}","seq":{seq},"message":"{text}"}}"#)
    }

    fn reading(seq: u64, tokens: u64, prompt: u64) -> String {
        let text = "x".repeat(4 * tokens as usize - 2);
        format!(
            r#"{{"type":"assistant/message","seq":{seq},"message":"{text}","usage":{{"input_tokens":{prompt}}}}}"#
        )
    }

    fn summary(seq: u64, tokens: u64, from: u64, to: u64) -> String {
        let text = "x".repeat(4 * tokens as usize - 2);
        format!(
            r#"{{"type":"user/message","seq":{seq},"message":"{text}","replaces":{{"from_seq":{from},"to_seq":{to}}}}}"#
        )
    }

    fn params(projection: Projection) -> Params {
        Params {
            capacity: Some(200_000),
            projection,
            compact_at: CompactAt::Learnt,
            restore_prior: 1_000,
            restore_named: false,
            learn_restore: true,
            window_reserve: None,
            max_nodes: usize::MAX,
        }
    }

    fn projected(s: &Session, p: Projection) -> Option<u64> {
        s.figures(&params(p)).projected
    }

    /// A session from its start (seq 0) with `frames` applied.
    fn session_of(frames: &[String]) -> Session {
        let mut s = Session::starting_at(0, false);
        feed(&mut s, frames);
        s
    }

    /// A session whose first reading (6,000) prices its base at 5,000 and whose next clean
    /// interval reads 2,010 estimated tokens of growth as 4,020: a scale of 2.
    fn scaled_by_two() -> Session {
        let s = session_of(&[
            msg(0, "user/message", 1_000),
            reading(1, 10, 6_000),
            msg(2, "tool/result", 2_000),
            reading(3, 10, 10_020),
        ]);
        assert_eq!(s.ratio(Projection::Calibrated), (4_020, 2_010));
        s
    }

    /// The first reading (5,000, its surface 10) implies a base of 4,990; a compaction then
    /// shows base + the summary + the prior restore, where `calibrated` subtracts the priced
    /// span from the last reading.
    #[test]
    fn a_compaction_re_bases_on_the_first_reading() {
        let mut s = session_of(&[msg(0, "user/message", 10), reading(1, 20, 5_000)]);
        assert_eq!(s.rebase.base, Some(4_990));
        feed(&mut s, &[msg(2, "tool/result", 400), reading(3, 30, 5_700)]);
        let before = s.clone();
        for p in [Projection::Rebased, Projection::Calibrated] {
            assert_eq!(projected(&s, p), projected(&before, Projection::Calibrated));
        }
        feed(&mut s, &[summary(4, 50, 0, 3)]);
        assert_eq!(s.rebase.kept.map(|k| (k.total, k.node)), Some((50, 50)));
        assert_eq!(projected(&s, Projection::Rebased), Some(4_990 + 50 + 1_000));
        // calibrated: 5,700 + (50 − 430), its anchor, at scale 1 (420 of growth is too little).
        assert_eq!(projected(&s, Projection::Calibrated), Some(5_320));
        // What joins before the next reading counts toward the restore, not on top of it.
        feed(&mut s, &[msg(5, "claude-code/attachment", 600)]);
        assert_eq!(projected(&s, Projection::Rebased), Some(4_990 + 50 + 1_000));
        feed(&mut s, &[msg(6, "claude-code/attachment", 700)]);
        assert_eq!(projected(&s, Projection::Rebased), Some(4_990 + 50 + 1_300));
    }

    /// The first reading after a compaction teaches what the agent put back (here 2,000 beyond
    /// base and summary), half of which moves the next compaction's figure; every reading
    /// restarts the projection from itself, as in `calibrated`.
    #[test]
    fn the_restore_is_learnt_from_the_first_reading_after() {
        let mut s = session_of(&[
            msg(0, "user/message", 10),
            reading(1, 20, 5_000),
            summary(2, 50, 0, 1),
            reading(3, 25, 7_040),
        ]);
        assert_eq!((s.rebase.restore, s.rebase.kept), (Some(2_000), None));
        assert_eq!(
            projected(&s, Projection::Rebased),
            projected(&s, Projection::Calibrated)
        );
        // The next compaction: halfway from the prior (1,000) to what was learnt.
        feed(&mut s, &[msg(4, "user/message", 300), summary(5, 80, 2, 4)]);
        assert_eq!(projected(&s, Projection::Rebased), Some(4_990 + 80 + 1_500));
        let mut no_learning = params(Projection::Rebased);
        no_learning.learn_restore = false;
        assert_eq!(s.figures(&no_learning).projected, Some(4_990 + 80 + 1_000));
    }

    /// A `compact/start` that prices what the agent's own rule puts back (`restore_tokens`)
    /// adds it at the session's scale, the prior on top for the rest; what the next reading
    /// teaches is what came back beyond it.
    #[test]
    fn the_rule_s_restore_is_added_at_the_session_s_scale() {
        let mut s = scaled_by_two();
        let start = |seq: u64, tokens: u64| {
            format!(r#"{{"type":"compact/start","seq":{seq},"restore_tokens":{tokens}}}"#)
        };
        feed(&mut s, &[start(4, 700), summary(5, 50, 0, 3)]);
        let base = 6_000 - 2 * 1_000;
        assert_eq!(
            projected(&s, Projection::Rebased),
            Some(base + 50 + 1_400 + 1_000)
        );
        // The next reading: 3,000 came back beyond the base and summary, 1,400 of it the rule's.
        feed(&mut s, &[reading(6, 10, base + 50 + 3_000)]);
        assert_eq!(s.rebase.restore, Some(1_600));
        // The next compaction's rule prices nothing: the prior halfway to what was learnt.
        feed(&mut s, &[start(7, 0), summary(8, 30, 5, 6)]);
        assert_eq!(projected(&s, Projection::Rebased), Some(base + 30 + 1_300));
    }

    /// A `compact/start` that says nothing comes back beyond the rule's files
    /// (`restore_beyond: false`) adds no prior; what the log shows joining before the next
    /// reading is not learnt as what came back unseen (contract §3.4).
    #[test]
    fn a_bare_compaction_adds_no_prior_and_what_joined_is_not_learnt_as_unseen() {
        let mut s = scaled_by_two();
        let start = |seq: u64, beyond: &str| {
            format!(r#"{{"type":"compact/start","seq":{seq},"restore_tokens":700{beyond}}}"#)
        };
        let rebased = |s: &Session| projected(s, Projection::Rebased);
        feed(
            &mut s,
            &[start(4, r#","restore_beyond":false"#), summary(5, 50, 0, 3)],
        );
        let base = 6_000 - 2 * 1_000;
        assert_eq!(rebased(&s), Some(base + 50 + 1_400));
        // 1,500 estimated tokens join (3,000 at the session's scale): more than the rule's
        // 1,400, they stand instead of it.
        feed(&mut s, &[msg(6, "user/message", 1_500)]);
        assert_eq!(rebased(&s), Some(base + 50 + 3_000));
        // The reading counts 500 beyond the figure: that is learnt, not the 3,000 joined.
        feed(&mut s, &[reading(7, 10, base + 50 + 3_000 + 500)]);
        assert_eq!(s.rebase.restore, Some(500));
        // The next compaction may bring more back: the rule's files and, beyond them, the prior
        // halfway to what was learnt.
        feed(&mut s, &[start(8, ""), summary(9, 30, 5, 7)]);
        assert_eq!(rebased(&s), Some(base + 30 + 1_400 + 750));
    }

    #[test]
    fn a_figure_never_falls_under_the_base_and_partial_sessions_never_rebase() {
        // The readings price the estimate at a quarter (clamped): removing 5,000 estimated
        // tokens takes 1,250 off the last reading, under the 3,000 the first one implied.
        let s = session_of(&[
            reading(0, 1, 3_000),
            msg(1, "tool/result", 5_000),
            reading(2, 1, 4_000),
            summary(3, 1, 0, 2),
        ]);
        let mut p = params(Projection::Rebased);
        p.restore_prior = 0;
        // The base (3,000) and the summary's one token, as prose: unscaled.
        assert_eq!(s.figures(&p).projected, Some(3_001));
        assert_eq!(
            s.figures(&params(Projection::Calibrated)).projected,
            Some(2_750)
        );

        let mut partial = Session::starting_at(7, false);
        feed(
            &mut partial,
            &[msg(7, "user/message", 10), reading(8, 20, 5_000)],
        );
        assert_eq!(partial.rebase.base, None);
        feed(&mut partial, &[summary(9, 50, 7, 8)]);
        assert_eq!(
            projected(&partial, Projection::Rebased),
            projected(&partial, Projection::Calibrated)
        );
    }

    #[test]
    fn the_compaction_level_comes_from_the_param_the_session_or_the_agent() {
        let mut s = session_of(&[reading(0, 1, 50_000)]);
        let at = |s: &Session, compact_at, reserve| {
            let f = s.figures(&Params {
                compact_at,
                window_reserve: reserve,
                max_nodes: usize::MAX,
                ..params(Projection::Rebased)
            });
            (f.compact_at, f.until_compact())
        };
        assert_eq!(at(&s, CompactAt::Learnt, None), (None, None));
        // 50,000 read, then its own message (1) joined: 50,001 projected.
        assert_eq!(
            at(&s, CompactAt::Learnt, Some(33_000)),
            (Some(167_000), Some(116_999))
        );
        feed(
            &mut s,
            &[r#"{"type":"request/header","seq":1,"auto_compact_tokens":180000}"#.into()],
        );
        assert_eq!(at(&s, CompactAt::Learnt, Some(33_000)).0, Some(180_000));
        feed(
            &mut s,
            &[r#"{"type":"compact/start","seq":2,"trigger":"manual","preTokens":90000}"#.into()],
        );
        assert_eq!(at(&s, CompactAt::Learnt, Some(33_000)).0, Some(180_000));
        feed(
            &mut s,
            &[r#"{"type":"compact/start","seq":3,"trigger":"auto","preTokens":155241}"#.into()],
        );
        assert_eq!(at(&s, CompactAt::Learnt, Some(33_000)).0, Some(155_241));
        feed(
            &mut s,
            &[r#"{"type":"compact/start","seq":4,"trigger":"auto","preTokens":0}"#.into()],
        );
        assert_eq!(at(&s, CompactAt::Learnt, None).0, Some(155_241));
        assert_eq!(
            at(&s, CompactAt::Tokens(40_000), None),
            (Some(40_000), Some(0))
        );
        assert_eq!(at(&s, CompactAt::Never, Some(33_000)), (None, None));
    }

    /// A reading that names `anchor_seq` is anchored to the surface less what joined after that
    /// frame (Codex writes a response before its reading): the projection counts it as growth,
    /// and the calibration measures the interval from what each request carried.
    #[test]
    fn a_reading_is_anchored_to_what_its_request_carried() {
        let s = session_of(&[
            msg(0, "user/message", 100),
            msg(1, "assistant/reasoning", 30),
            msg(2, "tool/result", 70),
            r#"{"type":"assistant/message","seq":3,"anchor_seq":0,"usage":{"input_tokens":5000}}"#
                .into(),
        ]);
        assert_eq!((s.pressure, s.anchor), (Some(5_000), Some(100)));
        assert_eq!(s.rebase.first, Some((5_000, 100)));
        // Shown: the reading plus the 100 its request did not carry.
        assert_eq!(projected(&s, Projection::Calibrated), Some(5_100));
        // An anchor not below the frame's seq is no anchor; one that would leave out more
        // nodes than a response adds is not honoured either (contract §5).
        let mut t = s.clone();
        feed(
            &mut t,
            &[r#"{"type":"assistant/message","seq":4,"anchor_seq":4,"usage":{"input_tokens":6000}}"#.into()],
        );
        assert_eq!(t.anchor, Some(200));
        let mut u = Session::starting_at(0, false);
        let mut frames: Vec<String> = (0..=ANCHOR_NODES as u64 + 1)
            .map(|i| msg(i, "tool/result", 1))
            .collect();
        let last = ANCHOR_NODES as u64 + 2;
        frames.push(format!(
            r#"{{"type":"assistant/message","seq":{last},"anchor_seq":0,"usage":{{"input_tokens":9}}}}"#
        ));
        feed(&mut u, &frames);
        assert_eq!(u.anchor, Some(ANCHOR_NODES as u64 + 2));
    }

    /// Re-based: the base is re-priced at the session's scale as it stands; the summary is
    /// priced as prose (unscaled), what was kept verbatim at the scale; nothing unseen is added
    /// where the compaction's start says the log shows what comes back, and nothing is learnt.
    #[test]
    fn a_compaction_prices_its_summary_as_prose_and_adds_nothing_the_log_shows() {
        let mut s = scaled_by_two();
        feed(&mut s, &[msg(4, "user/message", 100)]);
        assert_eq!(s.ratio(Projection::Calibrated), (4_020, 2_010));
        feed(&mut s, &[summary(5, 50, 0, 3)]);
        let kept = s.rebase.kept.unwrap();
        assert_eq!((kept.total, kept.node, kept.shown), (150, 50, false));
        // 6,000 − 2 × 1,000 = 4,000; 50 as prose; the 100 kept × 2; the prior (1,000).
        assert_eq!(
            projected(&s, Projection::Rebased),
            Some(4_000 + 50 + 200 + 1_000)
        );

        let mut shown = session_of(&[
            msg(0, "user/message", 1_000),
            reading(1, 10, 6_000),
            r#"{"type":"compact/start","seq":2,"restore_shown":true}"#.into(),
            summary(3, 50, 0, 1),
            msg(4, "claude-code/attachment", 300),
        ]);
        assert!(shown.rebase.kept.unwrap().shown);
        // Scale 1: the base 5,000, the summary, what joined since; nothing unseen.
        assert_eq!(
            projected(&shown, Projection::Rebased),
            Some(5_000 + 50 + 300)
        );
        feed(&mut shown, &[reading(5, 10, 9_000)]);
        assert_eq!(
            shown.rebase.restore, None,
            "a shown compaction teaches nothing unseen"
        );
    }

    /// The tokens of the node a frame makes, or `None` when it makes none.
    fn node_tokens(frame: &str) -> Option<u64> {
        let v = Frame::parse(frame.as_bytes()).expect("a frame");
        Change::read(&v)
            .expect("a valid frame")
            .and_then(|c| c.node)
            .map(|(n, _)| n.tokens)
    }

    /// `message_chars` n: content the log measured but does not carry joins the surface as a
    /// node of ⌈n/4⌉ tokens, plus the estimate of a `message` beside it (contract §3.1).
    #[test]
    fn measured_content_joins_the_surface() {
        let chars = |n: &str| format!(r#"{{"type":"tool/result","seq":3,"message_chars":{n}}}"#);
        assert_eq!(node_tokens(&chars("10")), Some(3));
        assert_eq!(node_tokens(&chars("12")), Some(3));
        assert_eq!(node_tokens(&chars("0")), Some(0), "a node, of nothing");
        assert_eq!(node_tokens(&chars("9007199254740992")), Some(1 << 51));
        // `"xxxxxx"` is eight chars: two tokens, then ⌈10/4⌉.
        assert_eq!(
            node_tokens(r#"{"type":"user/message","seq":3,"message":"xxxxxx","message_chars":10}"#),
            Some(2 + 3)
        );
        let mut s = session_of(&[
            msg(0, "user/message", 10),
            r#"{"type":"user/message","seq":1,"message_chars":400}"#.into(),
        ]);
        assert_eq!(s.surface.total(), 110);
        assert_eq!(s.surface.nodes().map(|n| n.seq).collect::<Vec<_>>(), [0, 1]);
        // The sample is taken before the frame's own node joins (§3.2).
        feed(
            &mut s,
            &[r#"{"type":"assistant/message","seq":2,"message_chars":40,"usage":{"input_tokens":900}}"#.into()],
        );
        assert_eq!((s.pressure, s.anchor), (Some(900), Some(110)));
        assert_eq!(s.surface.total(), 120);
    }

    /// A `message_chars` that is not an integer in 0..=2^53 is ignored, as if absent: no node
    /// of its own, nothing added to a message's.
    #[test]
    fn a_bad_measure_is_ignored() {
        for bad in [
            "\"12\"",
            "-1",
            "1.5",
            "1e3",
            "9007199254740993",
            "null",
            "[4]",
        ] {
            let quiet = format!(r#"{{"type":"tool/result","seq":3,"message_chars":{bad}}}"#);
            assert_eq!(node_tokens(&quiet), None, "{bad}");
            let beside = format!(
                r#"{{"type":"user/message","seq":3,"message":"xxxxxx","message_chars":{bad}}}"#
            );
            assert_eq!(node_tokens(&beside), Some(2), "{bad}");
        }
    }

    /// A replacement whose size is measured (a compaction's known post-size,
    /// `message_chars` = tokens × 4) gets a node of that size, priced under `rebased` as
    /// prose, unscaled, like any replacement's own node (§3.4).
    #[test]
    fn a_measured_replacement_is_priced_as_prose() {
        let mut s = scaled_by_two();
        feed(
            &mut s,
            &[r#"{"type":"user/message","seq":4,"message_chars":2000,"replaces":{"from_seq":0,"to_seq":3}}"#.into()],
        );
        assert_eq!(s.ratio(Projection::Calibrated), (4_020, 2_010));
        let kept = s.rebase.kept.unwrap();
        assert_eq!((kept.total, kept.node), (500, 500));
        assert_eq!(
            s.surface.nodes().collect::<Vec<_>>(),
            [Node {
                seq: 4,
                tokens: 500
            }]
        );
        // The base (6,000 − 2 × 1,000), the node unscaled, the prior.
        assert_eq!(
            projected(&s, Projection::Rebased),
            Some(4_000 + 500 + 1_000)
        );
    }

    /// Validate, then commit, with a measure as with a message: a span not in the surface and a
    /// frame without a seq are refused, and the session is as it was.
    #[test]
    fn a_measured_frame_is_validated_before_it_commits() {
        let mut s = session_of(&[msg(0, "user/message", 10), reading(1, 5, 900)]);
        let before = s.clone();
        let corrupt = r#"{"type":"user/message","seq":2,"message_chars":80,"replaces":{"from_seq":7,"to_seq":9}}"#;
        let v = Frame::parse(corrupt.as_bytes()).unwrap();
        let c = Change::read(&v).unwrap();
        assert!(matches!(
            s.apply(c.as_ref(), 2, usize::MAX),
            Err(Refusal::Corrupt(_))
        ));
        assert_eq!(s, before);
        let unplaced = Frame::parse(br#"{"type":"user/message","message_chars":80}"#).unwrap();
        assert!(matches!(Change::read(&unplaced), Err(Refusal::NoSeq)));
    }

    #[test]
    fn a_header_may_say_the_log_carries_no_envelope_and_name_the_reserve() {
        let mut s = Session::starting_at(0, false);
        let p = params(Projection::Rebased);
        assert_eq!(
            (s.figures(&p).system, s.figures(&p).tools),
            (Some(0), Some(0))
        );
        feed(
            &mut s,
            &[r#"{"type":"request/header","seq":0,"system":null,"tools":null,"compact_reserve":45000,"context_window":200000}"#.into()],
        );
        let f = s.figures(&p);
        assert_eq!(
            (f.system, f.tools, f.compact_at),
            (None, None, Some(155_000))
        );
        feed(
            &mut s,
            &[r#"{"type":"request/header","seq":1,"tools":[{"name":"Read"}]}"#.into()],
        );
        let f = s.figures(&p);
        assert_eq!((f.system, f.tools), (None, Some(5)));
        assert_eq!(s.envelope.not_in_log, [true, false]);
    }
}
