//! contract §6 invariants 6–8 of the pressure view over generated sessions (`GenSession`, the
//! generator the fuzz targets share): valid and invalid replacement spans, re-deliveries,
//! frames with no seq, sub-agent frames, sessions that start mid-stream.
//!
//! Besides the invariants, every frame's records are compared with a small reference model of
//! contract §3 written here from the spec's words, independently of the core's code.

use std::collections::{BTreeMap, HashMap};

use crate::common::pressure::*;
use agent_fold::module::native_process;
use agent_fold::record::Rec;
use agent_fold::testing::jsonl;
use agent_fold_core::Processor;
use agent_fold_testkit::{Drawn, GenSession};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

const P: &[(&str, &str)] = &[("emit", "pressure"), ("capacity", "100000")];
const SEEDS: u64 = 300;
/// Steps per generated session.
const OPS: usize = 40;

fn generated(seed: u64) -> (GenSession, Vec<Rec>) {
    let g = gen_session(seed, OPS);
    let recs = gen_records(&g);
    (g, recs)
}

/// The generated logs of the seeds in `seeds`.
fn logs(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (u64, Vec<Rec>)> {
    seeds.map(|seed| (seed, generated(seed).1))
}

fn one(p: &mut Processor, r: &Rec) -> Vec<Rec> {
    native_process(p, std::slice::from_ref(r), 0).unwrap()
}

fn seq_of(r: &Rec) -> Option<u64> {
    serde_json::from_slice::<Value>(&r.value)
        .ok()?
        .get("seq")?
        .as_u64()
}

// ---------------------------------------------------------------------------------------------
// The reference model: contract §3, read literally.

/// contract §3's estimate, read literally (the test kit's naive reference, not the core's scan).
fn model_estimate(raw: &str) -> u64 {
    agent_fold_testkit::reference::estimate(raw)
}

#[derive(Clone, Default)]
struct MSession {
    cursor: u64,
    partial: bool,
    system: Option<u64>,
    tools: Option<u64>,
    capacity: Option<u64>,
    /// (seq, tokens)
    nodes: Vec<(u64, u64)>,
    /// The seq of the first node the session saw.
    first_node: Option<u64>,
    pressure: Option<u64>,
    anchor: Option<u64>,
    /// Calibration (contract §3): each clean sample interval's estimated and provider growth.
    clean: Vec<(u64, u64)>,
    /// A replacement since the last sample: the interval is not clean.
    replaced: bool,
    /// Every node's seq in the order they were made (removed ones too): what `anchor_seq`
    /// leaves out is counted in them (contract §3, sample).
    made: Vec<u64>,
    /// `rebased` (contract §3.4): the first reading and the surface it was anchored to; what
    /// the agent put back unseen at the last compaction, learnt from the reading after it;
    /// between a replacement and the next reading, the surface it left (`total`, its own
    /// node's tokens, whether its log shows what comes back); what the latest `compact/start`
    /// said of that.
    first: Option<(u64, u64)>,
    restore: Option<u64>,
    kept: Option<(u64, u64, bool, u64, bool)>,
    shown_next: bool,
    /// What the latest `compact/start` said the agent's rule puts back (`restore_tokens`), and
    /// whether it said nothing comes back beyond it (`restore_beyond: false`).
    expected_next: u64,
    bare_next: bool,
    /// Contract §3.5: the last automatic compaction's level, the agent's own threshold, and
    /// how far below its window it compacts.
    auto_compact: Option<u64>,
    agent_compact: Option<u64>,
    reserve: Option<u64>,
    /// The latest header to name system (resp. tools) named it `null`.
    system_null: bool,
    tools_null: bool,
    /// The model the latest header named.
    model: Option<String>,
    /// Contract §3.2: the envelope, where measured, at the latest sample and at the first.
    anchor_envelope: Option<u64>,
    first_envelope: Option<u64>,
    /// Contract §3.6: the compactions counted, the last one's trigger, size before and the
    /// first reading after; what the latest `compact/start` said of the next.
    compactions: u64,
    last: Option<(Option<String>, Option<u64>, Option<u64>)>,
    next: Option<(Option<String>, Option<u64>)>,
}

/// What the figures read besides a session: the params, as the contract words them.
#[derive(Clone, Copy)]
struct Rules {
    capacity: Option<u64>,
    fixed: bool,
    rebased: bool,
    restore_prior: u64,
    /// `compact_at`: `None` unset, `Some(None)` for `none`, `Some(Some(n))`.
    compact_at: Option<Option<u64>>,
    /// Claude Code input: the documented default is the window less 33,000.
    claude: bool,
    /// An agent's own log, adapted: no breakdown figure its log does not hold is 0.
    adapted: bool,
}

impl MSession {
    fn total(&self) -> u64 {
        self.nodes.iter().fold(0u64, |s, n| s.saturating_add(n.1))
    }

    /// N/D as contract §3 defines it (the test kit's reference, written from the text).
    fn ratio(&self, fixed: bool) -> (u128, u128) {
        let sum = |f: fn(&(u64, u64)) -> u64| self.clean.iter().map(f).fold(0, u64::saturating_add);
        agent_fold_testkit::reference::ratio(sum(|c| c.1), sum(|c| c.0), fixed)
    }

    /// Contract §3.1: the system prompt and tools, where the log measures both.
    fn measured(&self) -> Option<u64> {
        match (self.system, self.tools, self.system_null || self.tools_null) {
            (Some(a), Some(b), false) => Some(a + b),
            _ => None,
        }
    }

    /// What the first reading counted beyond the surface it was anchored to, at `scale`.
    fn base(&self, scale: impl Fn(i128) -> i128) -> u64 {
        let (r, a) = self.first.unwrap();
        (r as i128 - scale(a as i128)).max(0) as u64
    }

    fn figures(&self, rules: &Rules) -> Value {
        let (default_capacity, fixed) = (rules.capacity, rules.fixed);
        let total = self.total();
        let (n, d) = self.ratio(fixed);
        let scale = |t: i128| agent_fold_testkit::reference::scale(t, (n, d));
        let projected = match (self.pressure, self.anchor) {
            (Some(_), Some(_)) if rules.rebased && self.first.is_some() && self.kept.is_some() => {
                // The base: the first reading less its surface at the scale as it stands, never
                // under the envelope; the summary as prose (unscaled), what was kept verbatim
                // scaled; the larger of what joined since and what comes back unseen: nothing
                // where the log shows it, else the prior, halfway to what was learnt.
                let envelope = self
                    .system
                    .unwrap_or(0)
                    .saturating_add(self.tools.unwrap_or(0));
                let (kept, node, shown, expected, bare) = self.kept.unwrap();
                let base = self.base(scale).max(envelope);
                // What the agent's rule puts back, at the session's scale, and beyond it (unless
                // nothing comes back beyond it) the prior, halfway to what was learnt.
                let restore = match (shown, self.restore) {
                    (true, _) => 0,
                    (false, _) if bare => scale(expected as i128),
                    (false, Some(l)) => {
                        scale(expected as i128)
                            + (rules.restore_prior as u128 + l as u128).div_ceil(2) as i128
                    }
                    (false, None) => scale(expected as i128) + rules.restore_prior as i128,
                };
                let joined = scale(total.saturating_sub(kept) as i128);
                let grown = match (self.first_envelope, self.measured()) {
                    (Some(a), Some(b)) => b as i128 - a as i128,
                    _ => 0,
                };
                Some(
                    (base as i128
                        + scale(grown)
                        + node as i128
                        + scale((kept - node) as i128)
                        + joined.max(restore))
                    .clamp(0, u64::MAX as i128) as u64,
                )
            }
            (Some(p), Some(a)) => {
                // What changed since: the surface, and an envelope the log measures.
                let grown = match (self.anchor_envelope, self.measured()) {
                    (Some(x), Some(y)) => y as i128 - x as i128,
                    _ => 0,
                };
                Some(
                    (p as i128 + scale(total as i128 - a as i128 + grown))
                        .clamp(0, u64::MAX as i128) as u64,
                )
            }
            _ => None,
        };
        let milli = agent_fold_testkit::reference::scale(1000, (n, d));
        let scale_shown = if milli % 1000 == 0 {
            json!(milli / 1000)
        } else {
            json!(milli as f64 / 1000.0)
        };
        let capacity = self.capacity.or(default_capacity);
        let occupancy = match (projected.or(self.pressure), capacity) {
            (Some(u), Some(c)) => json!(u as f64 / c as f64),
            _ => Value::Null,
        };
        let compact_at = match rules.compact_at {
            Some(given) => given,
            None => self.auto_compact.or(self.agent_compact).or(
                match (self.reserve.or(rules.claude.then_some(33_000)), capacity) {
                    (Some(r), Some(c)) if c > r => Some(c - r),
                    _ => None,
                },
            ),
        };
        let until = match (compact_at, projected) {
            (Some(c), Some(p)) => Some(c.saturating_sub(p)),
            _ => None,
        };
        let env = |v: Option<u64>| {
            if self.partial || rules.adapted {
                v
            } else {
                Some(v.unwrap_or(0))
            }
        };
        let mut v = json!({
            "pressureTokens": self.pressure,
            "projectedTokens": projected,
            "capacity": capacity,
            "contextOccupancy": occupancy,
            "systemTokens": env(self.system.filter(|_| !self.system_null)),
            "toolsTokens": env(self.tools.filter(|_| !self.tools_null)),
            "messageTokens": (!self.partial).then_some(total),
            "estimateScale": scale_shown,
            "compactAtTokens": compact_at,
            "untilCompactTokens": until,
            "compactions": self.compactions,
            "partial": self.partial,
        });
        if let Some((trigger, before, after)) = &self.last {
            let m = v.as_object_mut().unwrap();
            m.insert("lastCompactTrigger".into(), json!(trigger));
            m.insert("lastCompactBeforeTokens".into(), json!(before));
            m.insert("lastCompactAfterTokens".into(), json!(after));
        }
        v
    }
}

struct Model {
    rules: Rules,
    sessions: HashMap<Vec<u8>, MSession>,
}

const NO_SEQ: &str = "the frame carries context (a message, header or usage) but no valid seq: it cannot be placed on the surface";
const BAD_SPAN: &str = "replacement span is malformed: `replaces` must be {\"from_seq\": integer ≥ 0, \"to_seq\": integer ≥ 0}";

fn error(key: &[u8], seq: Option<u64>, msg: &str) -> String {
    let mut m = Map::new();
    m.insert("type".into(), "context/error".into());
    m.insert("session".into(), String::from_utf8_lossy(key).into());
    m.insert("seq".into(), json!(seq));
    m.insert("error".into(), msg.into());
    m.insert("stateVersion".into(), 5.into());
    Value::Object(m).to_string()
}

fn int(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
}

impl Model {
    /// The model of an instance with these params (read as the contract's §4 words them).
    fn new(params: &[(&str, &str)]) -> Model {
        let get = |k: &str| params.iter().rev().find(|(n, _)| *n == k).map(|(_, v)| *v);
        let input = get("input").unwrap_or("agent-fold");
        let claude = matches!(input, "claude-code" | "claude-stream");
        let prior = match input {
            "claude-code" | "claude-stream" => 8_300,
            "codex" => 1_700,
            _ => 0,
        };
        let projection = get("projection").unwrap_or("rebased");
        Model {
            rules: Rules {
                capacity: get("capacity").map(|c| c.parse().unwrap()),
                fixed: projection == "fixed",
                rebased: projection == "rebased",
                restore_prior: get("compact_restore").map_or(prior, |r| r.parse().unwrap()),
                compact_at: get("compact_at").map(|c| match c {
                    "none" => None,
                    n => Some(n.parse().unwrap()),
                }),
                claude,
                adapted: input != "agent-fold",
            },
            sessions: HashMap::new(),
        }
    }

    /// The records one frame yields, as JSON text.
    fn frame(&mut self, key: Option<&[u8]>, value: &[u8]) -> Vec<String> {
        let (Ok(obj), Ok(raw)) = (
            serde_json::from_slice::<Map<String, Value>>(value),
            serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(value),
        ) else {
            return vec![]; // not an object: ignored
        };
        if obj
            .get("extras")
            .and_then(|e| e.get("parent_tool_use_id"))
            .is_some_and(Value::is_string)
        {
            return vec![]; // a sub-agent's
        }
        let key: Vec<u8> = match (key, obj.get("session_id").and_then(Value::as_str)) {
            (Some(k), _) => k.to_vec(),
            (None, Some(s)) => s.as_bytes().to_vec(),
            (None, None) => vec![],
        };
        let seq = int(obj.get("seq"));
        if let (Some(s), Some(seq)) = (self.sessions.get(&key), seq)
            && seq <= s.cursor
        {
            return vec![]; // a re-delivery
        }
        let kind = obj.get("type").and_then(Value::as_str);
        let header = kind == Some("request/header");
        let usage = obj.get("usage").filter(|u| u.is_object());
        let sample = match (kind, usage) {
            (Some("assistant/message"), Some(u)) => Some(
                [
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ]
                .iter()
                .map(|f| int(u.get(*f)).unwrap_or(0))
                .fold(0u64, u64::saturating_add),
            ),
            _ => None,
        };
        // `message_chars` n, an integer in 0..=2^53 (contract §3.1): ⌈n/4⌉ tokens beside the
        // message's estimate, a node even without a message.
        let measured = int(obj.get("message_chars")).filter(|n| *n <= 1 << 53);
        let message = match (
            raw.get("message").map(|m| model_estimate(m.get())),
            measured,
        ) {
            (None, None) => None,
            (m, n) => Some(m.unwrap_or(0) + n.map_or(0, |n| n.div_ceil(4))),
        };
        let replaces = obj.get("replaces").filter(|r| !r.is_null());
        let Some(seq) = seq else {
            let touches = header || sample.is_some() || message.is_some() || replaces.is_some();
            return if touches {
                vec![error(&key, None, NO_SEQ)]
            } else {
                vec![]
            };
        };
        let span = match replaces {
            None => None,
            Some(r) => match (int(r.get("from_seq")), int(r.get("to_seq"))) {
                (Some(a), Some(b)) if r.is_object() => Some((a, b)),
                _ => return vec![error(&key, Some(seq), BAD_SPAN)],
            },
        };
        let existed = self.sessions.get(&key).cloned();
        let mut s = existed.clone().unwrap_or(MSession {
            partial: seq != 0,
            ..MSession::default()
        });
        let before = existed.map(|e| e.figures(&self.rules));
        let node = (message.is_some() || span.is_some()).then(|| (seq, message.unwrap_or(0)));

        // Validate the span against the surface before anything changes.
        enum Edit {
            Append,
            Splice(usize, usize),
            Front(usize),
        }
        let edit = match span {
            None => Edit::Append,
            Some((a, b)) => {
                let at = |q: u64| s.nodes.iter().position(|n| n.0 == q);
                let unseen = |q: u64| s.first_node.is_none_or(|f| q < f);
                match (at(a), at(b)) {
                    (Some(i), Some(j)) if i <= j => Edit::Splice(i, j + 1),
                    (None, Some(j)) if s.partial && unseen(a) => Edit::Front(j + 1),
                    (None, None) if s.partial && unseen(a) && unseen(b) && a <= b => Edit::Front(0),
                    _ => {
                        let msg = format!(
                            "replacement span {a}..{b} is not in the surface: the log is corrupt"
                        );
                        return vec![error(&key, Some(seq), &msg)];
                    }
                }
            }
        };
        // Commit.
        if header {
            if let Some(r) = raw.get("system") {
                s.system_null = r.get() == "null";
                s.system = Some(model_estimate(r.get()));
            }
            if let Some(r) = raw.get("tools") {
                s.tools_null = r.get() == "null";
                s.tools = Some(model_estimate(r.get()));
            }
            // Another window or model forgets the level the last automatic compaction fired at
            // (contract §3.5).
            let model = obj
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty() && m.len() <= 128);
            let window = int(obj.get("context_window")).filter(|w| *w >= 1);
            if (window.is_some() && s.capacity.is_some() && window != s.capacity)
                || (model.is_some() && s.model.is_some() && model != s.model.as_deref())
            {
                s.auto_compact = None;
            }
            if let Some(m) = model {
                s.model = Some(m.to_owned());
            }
            if let Some(w) = window {
                s.capacity = Some(w);
            }
            if let Some(t) = int(obj.get("auto_compact_tokens")).filter(|t| *t >= 1) {
                s.agent_compact = Some(t);
            }
            if let Some(r) = int(obj.get("compact_reserve")) {
                s.reserve = Some(r);
            }
        }
        if kind == Some("compact/start") {
            let trigger = obj
                .get("trigger")
                .and_then(Value::as_str)
                .filter(|t| matches!(*t, "auto" | "manual"));
            let pre = int(obj.get("preTokens")).filter(|n| *n >= 1);
            if trigger == Some("auto")
                && let Some(n) = pre
            {
                s.auto_compact = Some(n);
            }
            s.next = Some((trigger.map(str::to_owned), pre));
            s.shown_next = obj.get("restore_shown") == Some(&Value::Bool(true));
            s.expected_next = int(obj.get("restore_tokens")).unwrap_or(0);
            s.bare_next = obj.get("restore_beyond") == Some(&Value::Bool(false));
        }
        if let Some(p) = sample {
            // What the request carried: the surface less the nodes above `anchor_seq`, when it
            // names an earlier frame and at most 256 nodes were made after it.
            let carried = match int(obj.get("anchor_seq")).filter(|a| *a < seq) {
                Some(a) if s.made.iter().filter(|m| **m > a).count() <= 256 => {
                    let after: u64 = s.nodes.iter().filter(|n| n.0 > a).map(|n| n.1).sum();
                    s.total() - after
                }
                _ => s.total(),
            };
            // `rebased` learns before the interval moves the calibration (contract §3.4).
            if !s.partial {
                let ratio = s.ratio(false);
                let scale = |t: i128| agent_fold_testkit::reference::scale(t, ratio);
                match (s.first, s.kept.take()) {
                    (None, _) => {
                        s.first = Some((p, carried));
                        s.first_envelope = s.measured();
                    }
                    (Some(_), Some((k, node, false, expected, _))) => {
                        // Beyond the figure's own terms: what joined before the request, or
                        // the rule's files when more.
                        let joined = scale(carried.saturating_sub(k) as i128);
                        let beyond = p as i128
                            - s.base(scale) as i128
                            - node as i128
                            - scale((k - node) as i128)
                            - joined.max(scale(expected as i128));
                        s.restore = Some(beyond.max(0) as u64);
                    }
                    (Some(_), _) => {}
                }
            }
            // The first reading of a complete session whose log measures its envelope is an
            // interval from an empty request (contract §3.3).
            if let (None, false, Some(e)) = (s.pressure, s.partial, s.measured()) {
                s.clean.push((e + carried, p));
            }
            if let (Some(previous), Some(anchor), false) = (s.pressure, s.anchor, s.replaced) {
                let grown = match (s.anchor_envelope, s.measured()) {
                    (Some(x), Some(y)) => y as i128 - x as i128,
                    _ => 0,
                };
                let est = carried as i128 - anchor as i128 + grown;
                if let (Ok(est @ 1..), Some(provider @ 1..)) =
                    (u64::try_from(est), p.checked_sub(previous))
                {
                    s.clean.push((est, provider));
                }
            }
            if let Some((_, _, after @ None)) = &mut s.last {
                *after = Some(p);
            }
            s.pressure = Some(p);
            s.anchor = Some(carried);
            s.anchor_envelope = s.measured();
            s.replaced = false;
        }
        if let Some(n) = node {
            s.first_node.get_or_insert(n.0);
            s.made.push(n.0);
            let rewrite = obj.get("rewrite") == Some(&Value::Bool(true));
            // A replacement is a compaction, counted (contract §3.6), unless it rewrites the
            // agent's own request list.
            let counted = match edit {
                Edit::Append => false,
                Edit::Splice(..) => !rewrite,
                Edit::Front(_) => true,
            };
            if counted {
                let (trigger, before) = s.next.take().unwrap_or_default();
                s.compactions += 1;
                s.last = Some((trigger, before.or(s.pressure), None));
            }
            match edit {
                Edit::Append => s.nodes.push(n),
                Edit::Splice(i, j) if rewrite => {
                    s.nodes.splice(i..j, [n]);
                }
                Edit::Splice(i, j) => {
                    s.nodes.splice(i..j, [n]);
                    s.replaced = true;
                    if s.first.is_some() {
                        s.kept = Some((
                            s.total(),
                            n.1.min(s.total()),
                            s.shown_next,
                            s.expected_next,
                            s.bare_next,
                        ));
                    }
                }
                Edit::Front(j) => {
                    s.nodes.splice(..j, [n]);
                    s.anchor = None;
                    s.replaced = true;
                }
            }
        }
        s.cursor = seq;
        let now = s.figures(&self.rules);
        self.sessions.insert(key.clone(), s);
        if before.as_ref() == Some(&now) {
            return vec![];
        }
        let mut m = Map::new();
        m.insert("type".into(), "context/pressure".into());
        m.insert("session".into(), String::from_utf8_lossy(&key).into());
        m.insert("seq".into(), seq.into());
        if let Some(t) = obj.get("timestamp").filter(|t| t.is_string()) {
            m.insert("timestamp".into(), t.clone());
        }
        for (k, v) in now.as_object().unwrap() {
            if k != "partial" {
                m.insert(k.clone(), v.clone());
            }
        }
        if now["partial"] == true {
            m.insert("partial".into(), true.into());
        }
        m.insert("stateVersion".into(), 5.into());
        vec![Value::Object(m).to_string()]
    }
}

fn assert_model_agrees(params: &[(&str, &str)], recs: &[Rec], what: &str) {
    let mut p = processor(params);
    let mut m = Model::new(params);
    for (i, r) in recs.iter().enumerate() {
        let got = lines(&one(&mut p, r));
        let want = m.frame(r.key.as_deref(), &r.value);
        assert_eq!(
            got,
            want,
            "{what}, frame {i}: {}",
            String::from_utf8_lossy(&r.value)
        );
    }
}

#[test]
fn the_records_match_a_reference_model_of_the_spec() {
    for (seed, recs) in logs(0..SEEDS) {
        assert_model_agrees(P, &recs, &format!("seed {seed}"));
    }
    let example = jsonl::records(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/agent-session.jsonl"
        ))
        .unwrap(),
    );
    assert_model_agrees(P, &example, "the example");
    assert_model_agrees(&[("emit", "pressure")], &example, "the example, no param");
    // Sessions long enough to calibrate, at ratios inside and beyond the clamp, with
    // compactions between samples: under every projection method, and with a restore prior
    // that matters and a threshold from the param.
    let with = |more: &[(&'static str, &'static str)]| -> Vec<(&str, &str)> {
        P.iter().chain(more).copied().collect()
    };
    let methods = [
        with(&[("projection", "fixed")]),
        with(&[("projection", "calibrated")]),
        with(&[("compact_restore", "1500"), ("compact_at", "90000")]),
    ];
    for seed in 0..40 {
        let recs = calibrating(seed);
        assert_model_agrees(P, &recs, &format!("calibrating seed {seed}"));
        for method in &methods {
            assert_model_agrees(
                method,
                &recs,
                &format!("calibrating seed {seed}, {method:?}"),
            );
        }
    }
}

/// A session whose provider readings grow `ratio` times faster than the estimate (tenths,
/// from 1/10 to 6: inside and beyond the [1/4, 4] clamp), with compactions between some
/// samples, long enough for calibration to kick in.
fn calibrating(seed: u64) -> Vec<Rec> {
    let bytes = agent_fold_testkit::seeded_bytes(seed, 4096);
    let mut at = 0;
    let mut draw = |n: u64| {
        at += 1;
        bytes[at % bytes.len()] as u64 % n
    };
    let ratio_tenths = 1 + draw(60);
    let (mut seq, mut pressure, mut nodes) = (0u64, 2000u64, Vec::new());
    let mut recs = Vec::new();
    let mut push = |v: Value| recs.push(Rec::new(Some(b"c"), v.to_string().as_bytes()));
    for _ in 0..60 {
        let tokens = 20 + draw(200) as usize;
        push(json!({"type": "user/message", "seq": seq, "message": "a".repeat(4 * tokens - 2)}));
        nodes.push(seq);
        seq += 1;
        if draw(7) == 0 && nodes.len() > 2 {
            let from = nodes[draw(nodes.len() as u64) as usize];
            let to = *nodes.last().unwrap();
            push(
                json!({"type": "user/message", "seq": seq, "message": "summary", "replaces": {"from_seq": from, "to_seq": to}}),
            );
            let i = nodes.iter().position(|n| *n == from).unwrap();
            nodes.truncate(i);
            nodes.push(seq);
            seq += 1;
        }
        pressure += tokens as u64 * ratio_tenths / 10 + draw(30);
        push(json!({"type": "assistant/message", "seq": seq, "usage": {"input_tokens": pressure}}));
        seq += 1;
    }
    recs
}

// ---------------------------------------------------------------------------------------------
// The invariants, frame by frame.

/// Invariant 6, and the records' promise: after every frame, the last record of the session
/// shows the state's figures — `messageTokens` (when not partial) is Σ the checkpoint's surface,
/// `projectedTokens` is `max(0, pressure + Σ surface − anchor)`, or re-based after a compaction,
/// and never negative — and no record repeats the figures of the one before it.
#[test]
fn message_tokens_are_the_surface_sum_and_projections_never_negative() {
    let mut checked = 0;
    for (seed, recs) in logs(0..SEEDS) {
        let mut p = processor(P);
        let mut last: Option<Value> = None;
        for (i, r) in recs.iter().enumerate() {
            for o in one(&mut p, r) {
                let v = json(&o);
                if v["type"] == "context/pressure" {
                    if let Some(l) = &last {
                        let figures = |v: &Value| {
                            let mut v = v.clone();
                            let m = v.as_object_mut().unwrap();
                            m.remove("seq");
                            m.remove("timestamp");
                            v
                        };
                        assert_ne!(figures(l), figures(&v), "seed {seed} frame {i}: no change");
                    }
                    last = Some(v);
                }
            }
            let Some(s) = session_checkpoint(&p, "s") else {
                assert!(last.is_none());
                continue;
            };
            let l = last.as_ref().expect("a session has a first record");
            let sum = surface_sum(&s);
            let at = format!("seed {seed} frame {i}");
            if s["partial"] == true {
                assert!(l["messageTokens"].is_null(), "{at}");
                assert_eq!(l["partial"], true, "{at}");
            } else {
                assert_eq!(l["messageTokens"], sum, "{at}");
                assert!(l.get("partial").is_none(), "{at}");
            }
            // Between a compaction and the next reading `rebased` re-bases (contract §3.4; the
            // agent-fold input's restore prior is 0), at the session's scale (§3.3: measured
            // content can make one calibrate).
            let ratio = agent_fold_testkit::reference::ratio(
                s["providerGrowth"].as_u64().unwrap(),
                s["estGrowth"].as_u64().unwrap(),
                false,
            );
            let scale = |t: i128| agent_fold_testkit::reference::scale(t, ratio);
            let envelope =
                s["systemTokens"].as_u64().unwrap_or(0) + s["toolsTokens"].as_u64().unwrap_or(0);
            let first = s["rebaseFirst"].as_array().map(|f| {
                let (r, a) = (f[0].as_u64().unwrap(), f[1].as_u64().unwrap());
                ((r as i128 - scale(a as i128)).max(0) as u64).max(envelope)
            });
            let kept_node = s["keptNode"].as_u64().unwrap_or(0);
            let rebase = (first, s["rebase"][2].as_u64());
            // Halfway from the prior (0 here) to what was learnt; nothing where the log shows it.
            let restore = match (s["keptShown"] == true, s["keptBare"] == true) {
                (true, _) => 0,
                (false, true) => scale(s["keptExpected"].as_u64().unwrap_or(0) as i128),
                (false, false) => {
                    scale(s["keptExpected"].as_u64().unwrap_or(0) as i128)
                        + s["rebase"][1].as_u64().unwrap_or(0).div_ceil(2) as i128
                }
            };
            // An envelope the log measures (neither part named `null`) that grew since the
            // reading (or, re-based, since the first) grew the context as much (contract §3.2).
            let measured = (s["notInLog"] == json!([false, false]))
                .then(|| Some(s["systemTokens"].as_u64()? + s["toolsTokens"].as_u64()?))
                .flatten();
            let grown = |then: &Value| match (then.as_u64(), measured) {
                (Some(a), Some(b)) => b as i128 - a as i128,
                _ => 0,
            };
            let projected = match (
                s["pressureTokens"].as_u64(),
                s["anchorTokens"].as_u64(),
                rebase,
            ) {
                (Some(_), Some(_), (Some(b), Some(k))) => {
                    let left = kept_node as i128 + scale(k as i128 - kept_node as i128);
                    json!(
                        b as i128
                            + scale(grown(&s["rebaseEnvelope"]))
                            + left
                            + scale(sum as i128 - k as i128).max(restore)
                    )
                }
                (Some(pr), Some(a), _) => {
                    json!(
                        (pr as i128 + scale(sum as i128 - a as i128 + grown(&s["anchorEnvelope"])))
                            .max(0)
                    )
                }
                _ => Value::Null,
            };
            assert_eq!(l["projectedTokens"], projected, "{at}");
            assert!(
                l["projectedTokens"].is_null() || l["projectedTokens"].is_u64(),
                "{at}"
            );
            assert_eq!(l["pressureTokens"], s["pressureTokens"], "{at}");
            checked += 1;
        }
    }
    eprintln!("{checked} frames checked");
    assert!(checked > 5 * SEEDS as usize, "{checked} frames checked");
}

/// An applied frame of another session, so that session "s" is not the most recently used
/// one: a frame of "s" that changes nothing must not change that either.
fn other(i: usize) -> Rec {
    keyed(
        Some("o"),
        &format!(r#"{{"type":"tool/use","session_id":"o","seq":{i}}}"#),
    )
}

/// Invariant 7: a frame answered with a `context/error` leaves the checkpoint exactly as it
/// was (another session's recency included); the same frame delivered again gets the same
/// error.
#[test]
fn a_refused_frame_leaves_the_state_as_it_was() {
    let mut errors = 0;
    for (seed, recs) in logs(0..SEEDS) {
        let mut p = processor(P);
        for (i, r) in recs.iter().enumerate() {
            one(&mut p, &other(i));
            let before = p.checkpoint();
            let out = one(&mut p, r);
            if out.iter().any(|o| json(o)["type"] == "context/error") {
                errors += 1;
                assert_eq!(
                    out.len(),
                    1,
                    "seed {seed} frame {i}: one error, nothing else"
                );
                assert_eq!(p.checkpoint(), before, "seed {seed} frame {i}");
                assert_eq!(
                    lines(&one(&mut p, r)),
                    lines(&out),
                    "seed {seed} frame {i} again"
                );
                assert_eq!(p.checkpoint(), before, "seed {seed} frame {i} again");
            }
        }
    }
    eprintln!("{errors} errors");
    assert!(
        errors > SEEDS as usize,
        "the generator makes errors: {errors}"
    );
}

/// Re-delivering any earlier frame: a frame at or below the cursor emits nothing; one above
/// it (it was refused, or a sub-agent's) says what it said the first time. Either way the
/// state does not change.
#[test]
fn redelivering_an_earlier_frame_changes_nothing() {
    let mut redelivered = 0;
    for (seed, recs) in logs(0..SEEDS) {
        let mut p = processor(P);
        let mut first: Vec<Vec<String>> = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            first.push(lines(&one(&mut p, r)));
            one(&mut p, &other(i));
            // Every earlier frame at the end of every third session, a few along the way.
            let picks: Vec<usize> = if i + 1 == recs.len() && seed % 3 == 0 {
                (0..=i).collect()
            } else {
                vec![i / 2, i, (i * 7 + seed as usize) % (i + 1)]
            };
            let before = p.checkpoint();
            let cursor = session_checkpoint(&p, "s").and_then(|s| s["cursor"].as_u64());
            for j in picks {
                let out = lines(&one(&mut p, &recs[j]));
                let expect = match (seq_of(&recs[j]), cursor) {
                    (Some(q), Some(c)) if q <= c => vec![],
                    _ => first[j].clone(),
                };
                assert_eq!(out, expect, "seed {seed}: frame {j} again after frame {i}");
                assert_eq!(p.checkpoint(), before, "seed {seed}: frame {j} after {i}");
                redelivered += 1;
            }
        }
    }
    assert!(redelivered > 3 * OPS * SEEDS as usize, "{redelivered}");
}

/// Invariant 8's cousin: how the log is cut into invocations does not matter.
#[test]
fn any_batch_split_gives_the_same_records() {
    for seed in 0..SEEDS {
        let (g, recs) = generated(seed);
        let whole = lines(&native_run(P, &recs, 0));
        for batch in [1, 2, 5] {
            assert_eq!(
                lines(&native_run(P, &recs, batch)),
                whole,
                "seed {seed} batch {batch}"
            );
        }
        let mut p = processor(P);
        let mut out = Vec::new();
        for r in g.batches(recs.len()) {
            out.extend(lines(&native_process(&mut p, &recs[r], 0).unwrap()));
        }
        assert_eq!(out, whole, "seed {seed}, the generator's cuts");
    }
}

/// `look_back` over a prefix rebuilds the state that processing it would have built.
#[test]
fn look_back_rebuilds_the_state() {
    for (seed, recs) in logs(0..SEEDS / 3) {
        let mut per_frame: Vec<Vec<String>> = Vec::new();
        let mut p = processor(P);
        for r in &recs {
            per_frame.push(lines(&one(&mut p, r)));
        }
        for k in [0, recs.len() / 3, recs.len() / 2, recs.len()] {
            let mut q = processor(P);
            q.look_back(&inputs(&recs[..k]));
            let tail = lines(&native_run_on(&mut q, &recs[k..]));
            let expect: Vec<String> = per_frame[k..].iter().flatten().cloned().collect();
            assert_eq!(tail, expect, "seed {seed}, look-back of {k}");
        }
    }
}

fn native_run_on(p: &mut Processor, recs: &[Rec]) -> Vec<Rec> {
    native_process(p, recs, 0).unwrap()
}

/// Invariant 8: the library and the `.wasm` in Fluvio's engine agree, invocation cuts and all.
/// One engine instance serves every seed (compiling the module is the slow part): each seed's
/// session gets its own key, as sessions sharing a topic do.
#[test]
fn native_and_the_wasm_in_the_engine_agree() {
    let mut engine = agent_fold::module::Instance::new(wasm(), &owned(P), None).unwrap();
    let mut p = processor(P);
    let mut invocations = 0;
    for seed in (0..SEEDS).step_by(5) {
        let (g, recs) = generated(seed);
        // The generator's cuts, then invocations of 3, each pass under its own key.
        let cuts: Vec<_> = g.batches(recs.len());
        let threes: Vec<_> = (0..recs.len())
            .step_by(3)
            .map(|i| i..(i + 3).min(recs.len()))
            .collect();
        for (pass, ranges) in [("g", cuts), ("t", threes)] {
            let mut recs = recs.clone();
            for r in &mut recs {
                r.key = Some(format!("{pass}{seed}").into_bytes());
            }
            for r in ranges {
                let want = native_process(&mut p, &recs[r.clone()], invocations).unwrap();
                let got = engine.process(&recs[r], invocations).unwrap();
                assert_eq!(
                    lines(&got),
                    lines(&want),
                    "seed {seed}, invocation {invocations}"
                );
                assert_eq!(got, want, "seed {seed}, invocation {invocations}: keys");
                invocations += 1;
            }
        }
    }
    assert!(invocations > 60 * 14, "{invocations} invocations");
}

/// The generated sessions do reach what the properties are about.
#[test]
fn the_generator_reaches_every_case() {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, recs) in logs(0..SEEDS) {
        let mut p = processor(P);
        for r in &recs {
            for o in one(&mut p, r) {
                let v = json(&o);
                let case = match (v["type"].as_str(), v["error"].as_str()) {
                    (Some("context/error"), Some(e)) if e.contains("corrupt") => "corrupt span",
                    (Some("context/error"), Some(e)) if e.contains("malformed") => "bad span",
                    (Some("context/error"), _) => "no seq",
                    _ if v["partial"] == true && v["projectedTokens"].is_null() => {
                        if v["pressureTokens"].is_null() {
                            "partial"
                        } else {
                            "partial, projection dropped"
                        }
                    }
                    _ if v["partial"] == true => "partial, projected",
                    _ if v["projectedTokens"].is_u64() => "complete, projected",
                    _ => "complete",
                };
                *seen.entry(case).or_default() += 1;
            }
        }
    }
    for case in [
        "corrupt span",
        "bad span",
        "no seq",
        "partial",
        "partial, projection dropped",
        "partial, projected",
        "complete, projected",
        "complete",
    ] {
        assert!(
            seen.get(case).copied().unwrap_or(0) >= 5,
            "{case}: {seen:?}"
        );
    }
}

/// The estimate against the spec's definition (the model's, above) over generated JSON texts:
/// long plain runs, escapes (`\"`, `\\`, `\u4e2d`), 2-, 3- and 4-byte scalars, whitespace in
/// and out of strings, at every length and alignment.
#[test]
fn the_estimate_counts_what_the_spec_defines() {
    let bytes = agent_fold_testkit::seeded_bytes(0xe571_3a7e, 1 << 20);
    let mut b = bytes.iter().copied().cycle();
    let mut next = move |n: u8| b.next().unwrap() % n;
    let mut cases = 0;
    while cases < 20_000 {
        let mut s = String::new();
        for _ in 0..next(12) {
            match next(6) {
                0 => s.push_str([" ", "\n", "\t", "\r", "  "][next(5) as usize]),
                1 => s.push_str(["{", "}", "[", "]", ":", ","][next(6) as usize]),
                2 => s.push_str(["0", "-12", "3.5e7", "true", "null"][next(5) as usize]),
                _ => {
                    s.push('"');
                    for _ in 0..next(8) {
                        let run = next(40) as usize;
                        match next(9) {
                            0 => s.push_str(&"a".repeat(run)),
                            1 => s.push_str(&" ".repeat(run % 5)),
                            2 => s.push_str(&"中".repeat(run)),
                            3 => s.push_str(&"é".repeat(run % 7)),
                            4 => s.push_str(&"😀".repeat(run % 5)),
                            5 => s.push_str("\\\""),
                            6 => s.push_str("\\\\"),
                            7 => s.push_str("\\u4e2d"),
                            _ => s.push_str("\\n"),
                        }
                    }
                    s.push('"');
                }
            }
        }
        assert_eq!(
            agent_fold_core::estimate(s.as_bytes()),
            model_estimate(&s),
            "{s:?}"
        );
        cases += 1;
    }
}

/// `look_back` in the engine (a transform with `lookback`) rebuilds what the library's does.
#[test]
fn look_back_in_the_engine_matches_the_library() {
    let (mut history, mut rest) = (Vec::new(), Vec::new());
    for seed in (0..SEEDS).step_by(15) {
        let (_, mut recs) = generated(seed);
        for r in &mut recs {
            r.key = Some(format!("h{seed}").into_bytes());
        }
        let tail = recs.split_off(recs.len() / 2);
        history.extend(recs);
        rest.extend(tail);
    }
    let mut engine = agent_fold::module::Instance::new(
        wasm(),
        &owned(P),
        Some((&history, -(history.len() as i64))),
    )
    .unwrap();
    let mut p = processor(P);
    p.look_back(&inputs(&history));
    let want = native_on(&mut p, &rest, 7);
    assert!(want.len() > 20, "{} records", want.len());
    assert_eq!(lines(&engine.run(&rest, 7).unwrap()), lines(&want));
}
