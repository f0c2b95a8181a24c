//! Checkpoints: the module's state as JSON, `stateVersion` 3, restoring 3, 2 and 1.
//!
//! Version 2 had no anchor, so a restored session has no projection until its next sample
//! (occupancy falls back to the bare sample); version 1 carried the breakdown only (envelope
//! and surface). Any other version is refused: guessing at a format would invent figures.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::fold::RunState;
use crate::lru::Lru;
use crate::pressure::Session;
use crate::surface::{Node, Surface};

/// A checkpoint that cannot be restored, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointError(pub String);

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "checkpoint refused: {}", self.0)
    }
}

impl std::error::Error for CheckpointError {}

fn err<T>(msg: impl Into<String>) -> Result<T, CheckpointError> {
    Err(CheckpointError(msg.into()))
}

fn key_json(key: &[u8]) -> (&'static str, Value) {
    match std::str::from_utf8(key) {
        Ok(s) => ("session", Value::from(s)),
        Err(_) => ("sessionBytes", Value::from(key.to_vec())),
    }
}

fn key_of(obj: &Map<String, Value>) -> Result<Vec<u8>, CheckpointError> {
    if let Some(s) = obj.get("session").and_then(Value::as_str) {
        return Ok(s.as_bytes().to_vec());
    }
    if let Some(bytes) = obj.get("sessionBytes").and_then(Value::as_array) {
        return bytes
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .map_or_else(|| err("`sessionBytes` must be an array of bytes"), Ok);
    }
    err("a session has neither a `session` string nor `sessionBytes`")
}

/// A nullable count: absent or null is `None`; anything but an integer ≥ 0 is refused.
fn count(obj: &Map<String, Value>, name: &str) -> Result<Option<u64>, CheckpointError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).map_or_else(
            || err(format!("`{name}` must be an integer ≥ 0 or null")),
            Ok,
        ),
    }
}

/// The `stateVersion` of a document or session; a refusal names the value it found as JSON
/// (`4`, `"3"`, `3.0`), since a string or float that merely looks right is refused too.
fn version(obj: &Map<String, Value>) -> Result<u64, CheckpointError> {
    match obj.get("stateVersion") {
        Some(v) => match v.as_u64() {
            Some(n @ 1..=3) => Ok(n),
            _ => err(format!(
                "stateVersion {v} is not one this build reads (1, 2 or 3)"
            )),
        },
        None => err("`stateVersion` is missing"),
    }
}

impl Session {
    /// This session's checkpoint, `stateVersion` 3.
    pub fn to_checkpoint(&self, key: &[u8]) -> Value {
        let (k, kv) = key_json(key);
        let surface: Vec<Value> = self
            .surface
            .nodes()
            .iter()
            .map(|n| json!([n.seq, n.tokens]))
            .collect();
        let mut obj = Map::new();
        obj.insert("stateVersion".into(), 3.into());
        obj.insert(k.into(), kv);
        obj.insert("cursor".into(), json!(self.cursor));
        obj.insert("partial".into(), self.partial.into());
        obj.insert("floor".into(), json!(self.surface.floor()));
        obj.insert("systemTokens".into(), json!(self.system));
        obj.insert("toolsTokens".into(), json!(self.tools));
        obj.insert("capacity".into(), json!(self.capacity));
        obj.insert("pressureTokens".into(), json!(self.pressure));
        obj.insert("anchorTokens".into(), json!(self.anchor));
        obj.insert("surface".into(), surface.into());
        Value::Object(obj)
    }

    /// Restores a session checkpoint of version 3, 2 or 1 (`default_version` when the
    /// object carries none).
    pub fn from_checkpoint(
        v: &Value,
        default_version: Option<u64>,
    ) -> Result<(Vec<u8>, Session), CheckpointError> {
        let Some(obj) = v.as_object() else {
            return err("a session checkpoint must be a JSON object");
        };
        let version = match (obj.contains_key("stateVersion"), default_version) {
            (false, Some(d)) => d,
            _ => version(obj)?,
        };
        let key = key_of(obj)?;
        let Some(nodes) = obj.get("surface").and_then(Value::as_array) else {
            return err("`surface` must be an array of [seq, tokens] pairs");
        };
        let nodes = nodes
            .iter()
            .map(|n| match n.as_array().map(Vec::as_slice) {
                Some([seq, tokens]) => Some(Node {
                    seq: seq.as_u64()?,
                    tokens: tokens.as_u64()?,
                }),
                _ => None,
            })
            .collect::<Option<Vec<Node>>>();
        let Some(nodes) = nodes else {
            return err("`surface` must be an array of [seq, tokens] pairs of integers ≥ 0");
        };
        let floor = if version >= 2 {
            count(obj, "floor")?
        } else {
            None
        };
        let Some(surface) = Surface::from_nodes(nodes, floor) else {
            return err("the surface's tokens add up past 2^64");
        };
        let mut s = Session {
            system: count(obj, "systemTokens")?,
            tools: count(obj, "toolsTokens")?,
            surface,
            ..Session::default()
        };
        if version >= 2 {
            s.cursor = count(obj, "cursor")?;
            s.partial = match obj.get("partial") {
                Some(Value::Bool(b)) => *b,
                _ => return err("`partial` must be true or false"),
            };
            s.capacity = count(obj, "capacity")?.filter(|c| *c > 0);
            s.pressure = count(obj, "pressureTokens")?;
        }
        if version >= 3 {
            s.anchor = count(obj, "anchorTokens")?;
        }
        Ok((key, s))
    }
}

/// The pressure view's sessions, least recently used first.
pub(crate) fn pressure_to_json(sessions: &Lru<Session>) -> Value {
    let list: Vec<Value> = sessions
        .iter_oldest_first()
        .map(|(k, s)| s.to_checkpoint(k))
        .collect();
    json!({"stateVersion": 3, "view": "pressure", "sessions": list})
}

/// The frames view's memory: per session, whether its last main frame was a non-counter.
pub(crate) fn frames_to_json(sessions: &Lru<RunState>) -> Value {
    let list: Vec<Value> = sessions
        .iter_oldest_first()
        .map(|(k, s)| {
            let (kn, kv) = key_json(k);
            let mut obj = Map::new();
            obj.insert(kn.into(), kv);
            obj.insert("afterOther".into(), s.open_ok.into());
            Value::Object(obj)
        })
        .collect();
    json!({"stateVersion": 3, "view": "frames", "sessions": list})
}

/// Reads a module checkpoint's header: its version, view and session list.
pub(crate) fn read_document(text: &str) -> Result<(u64, String, Vec<Value>), CheckpointError> {
    let doc: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return err(format!("not JSON: {e}")),
    };
    let Some(obj) = doc.as_object() else {
        return err("a checkpoint must be a JSON object");
    };
    let version = version(obj)?;
    let view = match obj.get("view").and_then(Value::as_str) {
        Some(v @ ("frames" | "pressure")) => v.to_owned(),
        _ => return err("`view` must be \"frames\" or \"pressure\""),
    };
    match obj.get("sessions") {
        Some(Value::Array(list)) => Ok((version, view, list.clone())),
        _ => err("`sessions` must be an array"),
    }
}

pub(crate) fn frames_session(v: &Value) -> Result<(Vec<u8>, RunState), CheckpointError> {
    let Some(obj) = v.as_object() else {
        return err("a session checkpoint must be a JSON object");
    };
    let key = key_of(obj)?;
    match obj.get("afterOther") {
        Some(Value::Bool(b)) => Ok((
            key,
            RunState {
                open_ok: *b,
                part: None,
            },
        )),
        _ => err("`afterOther` must be true or false"),
    }
}
