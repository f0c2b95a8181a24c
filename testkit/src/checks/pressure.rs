//! The pressure view: records, figures and the checkpoint agree (contract §3, §6.6).

use std::collections::HashMap;

use agent_fold_core::{
    CompactAt, Config, Emit, Frame, Input, MAX_KEY_LEN, Projection, RecordIn, STATE_VERSION,
    session_key,
};
use serde_json::{Map, Value};

use super::show;
use crate::reference;

/// One session of a pressure checkpoint, as the figures need it.
#[derive(Debug, Clone)]
pub(super) struct CpSession {
    pub partial: bool,
    pub pressure: Option<u64>,
    pub anchor: Option<u64>,
    pub total: u128,
    pub est_growth: u64,
    pub provider_growth: u64,
    pub capacity: Option<u64>,
    /// `systemTokens` + `toolsTokens` of the checkpoint.
    pub envelope: u64,
    pub base: Option<u64>,
    /// The first reading and the surface it was anchored to (`rebaseFirst`).
    pub first: Option<(u64, u64)>,
    pub restore: Option<u64>,
    pub rebase_from: Option<u64>,
    /// The replacement's own node (`keptNode`) and whether its log shows what comes back.
    pub kept_node: u64,
    pub kept_shown: bool,
    pub kept_expected: u64,
    /// `keptBare`: its `compact/start` said nothing comes back beyond the rule's files.
    pub kept_bare: bool,
    pub auto_compact: Option<u64>,
    pub agent_compact: Option<u64>,
    pub reserve: Option<u64>,
    /// The prior a header named (`restorePrior`).
    pub restore_prior: Option<u64>,
    /// The envelope where measured (neither part `null`), and as it was at the latest sample
    /// (`anchorEnvelope`) and at the first reading (`rebaseEnvelope`): what grew since grew the
    /// context (§3.2).
    pub measured: Option<u64>,
    pub anchor_envelope: Option<u64>,
    pub rebase_envelope: Option<u64>,
}

pub(super) fn cp_key(obj: &Map<String, Value>) -> Vec<u8> {
    match (obj.get("session"), obj.get("sessionBytes")) {
        (Some(Value::String(s)), _) => s.as_bytes().to_vec(),
        (_, Some(Value::Array(b))) => b.iter().map(|b| b.as_u64().unwrap_or(0) as u8).collect(),
        _ => panic!("a written checkpoint session has no key: {obj:?}"),
    }
}

/// The sessions of a pressure checkpoint this build wrote that reached the view.
pub(super) fn pressure_sessions(checkpoint: &str) -> HashMap<Vec<u8>, CpSession> {
    let doc: Value = serde_json::from_str(checkpoint).expect("a written checkpoint is JSON");
    assert_eq!(
        doc["stateVersion"], STATE_VERSION,
        "checkpoints are written as stateVersion {STATE_VERSION}"
    );
    let mut map = HashMap::new();
    for s in doc["sessions"].as_array().expect("sessions") {
        let obj = s.as_object().expect("a session object");
        let Some(surface) = obj.get("surface") else {
            continue;
        };
        let total = surface
            .as_array()
            .expect("a surface")
            .iter()
            .map(|n| n[1].as_u64().expect("node tokens") as u128)
            .sum();
        map.insert(
            cp_key(obj),
            CpSession {
                partial: obj["partial"].as_bool().expect("partial"),
                pressure: obj["pressureTokens"].as_u64(),
                anchor: obj["anchorTokens"].as_u64(),
                total,
                est_growth: obj["estGrowth"].as_u64().expect("estGrowth"),
                provider_growth: obj["providerGrowth"].as_u64().expect("providerGrowth"),
                capacity: obj["capacity"].as_u64(),
                envelope: obj["systemTokens"].as_u64().unwrap_or(0)
                    + obj["toolsTokens"].as_u64().unwrap_or(0),
                base: obj["rebase"][0].as_u64(),
                first: obj["rebaseFirst"].as_array().map(|f| {
                    (
                        f[0].as_u64().expect("a reading"),
                        f[1].as_u64().expect("an anchor"),
                    )
                }),
                restore: obj["rebase"][1].as_u64(),
                rebase_from: obj["rebase"][2].as_u64(),
                kept_node: obj["keptNode"].as_u64().unwrap_or(0),
                kept_shown: obj["keptShown"] == true,
                kept_expected: obj.get("keptExpected").and_then(Value::as_u64).unwrap_or(0),
                kept_bare: obj.get("keptBare") == Some(&Value::Bool(true)),
                auto_compact: obj["compactLevels"][0].as_u64(),
                agent_compact: obj["compactLevels"][1].as_u64(),
                reserve: obj["compactReserve"].as_u64(),
                restore_prior: obj["restorePrior"].as_u64(),
                measured: (obj["notInLog"] == serde_json::json!([false, false]))
                    .then(|| Some(obj["systemTokens"].as_u64()? + obj["toolsTokens"].as_u64()?))
                    .flatten(),
                anchor_envelope: obj.get("anchorEnvelope").and_then(Value::as_u64),
                rebase_envelope: obj.get("rebaseEnvelope").and_then(Value::as_u64),
            },
        );
    }
    map
}

/// A `context/pressure` record's figures against its session's checkpoint (contract §6.6):
/// `messageTokens` = Σ surface node tokens (null when partial), `projectedTokens` =
/// max(0, pressure + scale(messageTokens − anchor)), null without a sample or anchor, re-based
/// between a compaction and the next reading under `rebased` (§3.4), with the scale and
/// `estimateScale` from the session's calibration sums (§3.3); the compaction level from the
/// param, the session or the agent (§3.5).
pub(super) fn check_figures(record: &Value, s: &CpSession, config: &Config) {
    let fixed = config.projection == Projection::Fixed;
    let total = u64::try_from(s.total).unwrap_or(u64::MAX);
    let message = if s.partial { Value::Null } else { total.into() };
    assert_eq!(
        record["messageTokens"], message,
        "messageTokens ≠ Σ surface nodes {total} (partial: {}): {record}",
        s.partial
    );
    let ratio = reference::ratio(s.provider_growth, s.est_growth, fixed);
    let scale = |t: u64| reference::scale(t as i128, ratio);
    let rebasing = config.projection == Projection::Rebased;
    // The base: the first reading less its surface at the scale as it stands (a checkpoint
    // without `rebaseFirst`: the base at scale 1), never under the envelope.
    let base = match s.first {
        Some((reading, anchor)) => s
            .base
            .map(|_| (reading as i128 - scale(anchor)).max(0) as u64),
        None => s.base,
    };
    let projected = match (s.pressure, s.anchor, base, s.rebase_from) {
        (Some(_), Some(_), Some(base), Some(kept)) if rebasing => {
            // The summary as prose (unscaled), what was kept verbatim scaled; the larger of
            // what joined since and what comes back unseen (nothing where the log shows it,
            // else the prior, halfway to what the session learnt).
            let base = base.max(s.envelope);
            let node = s.kept_node.min(kept);
            // A header's prior, unless the param named one (§3.4).
            let prior = match s.restore_prior {
                Some(p) if !config.restore_named => p,
                _ => config.compact_restore,
            } as u128;
            // What the agent's rule puts back (`restore_tokens`) at the session's scale, and
            // beyond it (unless its `compact/start` said `restore_beyond: false`) the prior,
            // halfway to what was learnt.
            let expected = scale(s.kept_expected);
            let restore = match (s.kept_shown, s.restore) {
                (true, _) => 0,
                (false, _) if s.kept_bare => expected,
                (false, Some(l)) if config.learn_restore => {
                    expected + (prior + l as u128).div_ceil(2) as i128
                }
                (false, _) => expected + prior as i128,
            };
            let grown = match (s.rebase_envelope, s.measured) {
                (Some(a), Some(b)) => b as i128 - a as i128,
                _ => 0,
            };
            let v = base as i128
                + reference::scale(grown, ratio)
                + node as i128
                + scale(kept - node)
                + scale(total.saturating_sub(kept)).max(restore);
            Value::from(v.clamp(0, u64::MAX as i128) as u64)
        }
        (Some(p), Some(a), ..) => {
            let grown = match (s.anchor_envelope, s.measured) {
                (Some(x), Some(y)) => y as i128 - x as i128,
                _ => 0,
            };
            let v = p as i128 + reference::scale(total as i128 - a as i128 + grown, ratio);
            Value::from(v.clamp(0, u64::MAX as i128) as u64)
        }
        _ => Value::Null,
    };
    if let (true, Some(base), Some(_)) = (rebasing, base, s.rebase_from) {
        let floor = base.max(s.envelope);
        assert!(
            projected.as_u64().is_none_or(|p| p >= floor),
            "a re-based figure under its base {base} or its envelope {}: {record}",
            s.envelope
        );
    }
    let capacity = s.capacity.or(config.capacity);
    let claude = matches!(config.input, Input::ClaudeCode | Input::ClaudeStream);
    let compact_at = match config.compact_at {
        CompactAt::Never => None,
        CompactAt::Tokens(t) => Some(t),
        CompactAt::Learnt => s.auto_compact.or(s.agent_compact).or(
            match (s.reserve.or(claude.then_some(33_000)), capacity) {
                (Some(r), Some(c)) if c > r => Some(c - r),
                _ => None,
            },
        ),
    };
    assert_eq!(
        record["compactAtTokens"],
        compact_at.map_or(Value::Null, Value::from),
        "compactAtTokens: {record}"
    );
    let until = match (compact_at, projected.as_u64()) {
        (Some(c), Some(p)) => Value::from(c.saturating_sub(p)),
        _ => Value::Null,
    };
    assert_eq!(
        record["untilCompactTokens"], until,
        "untilCompactTokens: {record}"
    );
    assert_eq!(
        record["projectedTokens"], projected,
        "projectedTokens: {record}"
    );
    assert_eq!(
        record["pressureTokens"],
        s.pressure.map_or(Value::Null, Value::from),
        "pressureTokens: {record}"
    );
    let milli = reference::scale(1000, ratio);
    let scale = record["estimateScale"]
        .as_f64()
        .expect("estimateScale is a number");
    assert!(
        (scale * 1000.0 - milli as f64).abs() < 1e-6,
        "estimateScale {scale} ≠ {milli}‰: {record}"
    );
    assert_eq!(
        record.get("partial").is_some(),
        s.partial,
        "partial flag: {record}"
    );
}

/// Checks one pressure-view invocation: only derived records, in input order, keyed by the
/// session of the frame they answer, well-formed; the last `context/pressure` record of each
/// session that still holds state agrees with the checkpoint written after the invocation.
/// Returns the parsed records.
pub fn check_pressure_invocation(
    records: &[RecordIn],
    out: &[Emit],
    checkpoint: &str,
    config: &Config,
) -> Vec<Value> {
    let sessions = pressure_sessions(checkpoint);
    let mut last_at = 0;
    let mut latest: HashMap<Vec<u8>, Value> = HashMap::new();
    let mut parsed = Vec::with_capacity(out.len());
    for e in out {
        let Emit::New { at, key, value } = e else {
            panic!("the pressure view passed an input record through: {e:?}")
        };
        assert!(
            *at < records.len() && *at >= last_at,
            "record order: at {at}"
        );
        last_at = *at;
        let Some(v) = Frame::parse(records[*at].value) else {
            panic!("a derived record answers a malformed record")
        };
        assert!(
            !v.is_subagent(),
            "a derived record answers a sub-agent frame"
        );
        assert_eq!(
            key.as_slice(),
            &*session_key(records[*at].key, Some(&v)),
            "a derived record's key is its session"
        );
        let rec: Value = serde_json::from_slice(value)
            .unwrap_or_else(|e| panic!("derived record is not JSON ({e}): {}", show(value)));
        assert_eq!(rec["stateVersion"], STATE_VERSION, "{rec}");
        let named = if key.len() > MAX_KEY_LEN {
            Value::Null
        } else {
            Value::from(String::from_utf8_lossy(key))
        };
        assert_eq!(rec["session"], named, "{rec}");
        match rec["type"].as_str() {
            Some("context/pressure") => {
                assert!(
                    key.len() <= MAX_KEY_LEN,
                    "a session key over the limit keeps no state: {}",
                    show(value)
                );
                assert_eq!(
                    rec["seq"].as_u64(),
                    v.seq(),
                    "a record carries its frame's seq"
                );
                assert_eq!(rec.get("timestamp").is_some(), v.stamp().is_some(), "{rec}");
                latest.insert(key.clone(), rec.clone());
            }
            Some("context/error") => {
                assert!(
                    rec["error"].as_str().is_some_and(|s| !s.is_empty()),
                    "{rec}"
                );
            }
            _ => panic!("unknown derived record: {rec}"),
        }
        parsed.push(rec);
    }
    for (key, rec) in &latest {
        if let Some(s) = sessions.get(key) {
            check_figures(rec, s, config);
        }
    }
    parsed
}
