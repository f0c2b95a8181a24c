//! The pressure view in a stream: per session, apply each main frame once (the cursor makes
//! re-deliveries no-ops) and emit a `context/pressure` record whenever a figure changes.

use std::io::Write;

use crate::config::{Config, Malformed};
use crate::frame::FrameView;
use crate::lru::Lru;
use crate::pressure::{Change, Figures, Refusal, Session};
use crate::record::{BatchError, Emit, RecordIn};

/// Every record this module writes says which state format it speaks.
pub const STATE_VERSION: u32 = 3;

pub struct PressureView {
    capacity: Option<u64>,
    malformed: Malformed,
    pub(crate) sessions: Lru<Session>,
}

impl PressureView {
    pub fn new(config: &Config) -> Self {
        PressureView {
            capacity: config.capacity,
            malformed: config.malformed,
            sessions: Lru::new(config.max_sessions),
        }
    }

    pub fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        let mut out = Vec::new();
        if self.malformed == Malformed::Fail {
            // Every record is read before any is applied: a refused invocation changes nothing.
            let views: Vec<Option<FrameView>> =
                records.iter().map(|r| FrameView::parse(r.value)).collect();
            if let Some(index) = views.iter().position(Option::is_none) {
                return Err(BatchError {
                    index,
                    message: "agent-fold: the record is not a JSON object (malformed=fail)".into(),
                });
            }
            for (at, (rec, view)) in records.iter().zip(&views).enumerate() {
                if let Some(v) = view {
                    self.apply(at, rec, v, Some(&mut out));
                }
            }
            return Ok(out);
        }
        // Otherwise each record is read as it is applied: no batch-sized array of views.
        for (at, rec) in records.iter().enumerate() {
            if let Some(v) = FrameView::parse(rec.value) {
                self.apply(at, rec, &v, Some(&mut out));
            }
        }
        Ok(out)
    }

    /// Rebuilds sessions from history, emitting nothing.
    pub fn look_back(&mut self, records: &[RecordIn]) {
        for (at, rec) in records.iter().enumerate() {
            if let Some(v) = FrameView::parse(rec.value) {
                self.apply(at, rec, &v, None);
            }
        }
    }

    fn apply(&mut self, at: usize, rec: &RecordIn, v: &FrameView, out: Option<&mut Vec<Emit>>) {
        if v.subagent {
            return;
        }
        let key = rec.session(Some(v));
        // Looked up without touching: only a frame that is applied uses its session. A refused,
        // re-delivered or ignored frame leaves the state as it was, recency included (SPEC §6.7);
        // touching here let it reorder the checkpoint and save its session from eviction.
        let slot = self.sessions.peek(&key);
        if let (Some(slot), Some(seq)) = (slot, v.seq)
            && self.sessions.get(slot).is_redelivery(seq)
        {
            return;
        }
        let change = match Change::read(v) {
            Ok(change) => change,
            Err(refusal) => {
                if let Some(out) = out {
                    out.push(error_record(at, &key, v.seq, &refusal));
                }
                return;
            }
        };
        let Some(seq) = v.seq else { return };
        let (result, before) = match slot {
            Some(slot) => {
                let s = self.sessions.get_mut(slot);
                let before = s.figures(self.capacity);
                let result = s.apply(change.as_ref(), seq).map(|()| slot);
                if result.is_ok() {
                    self.sessions.touch_slot(slot);
                }
                (result, Some(before))
            }
            None => {
                let mut s = Session::starting_at(seq);
                match s.apply(change.as_ref(), seq) {
                    Ok(()) => (Ok(self.sessions.insert(&key, s).0), None),
                    Err(e) => (Err(e), None),
                }
            }
        };
        let Some(out) = out else { return };
        match result {
            Err(refusal) => out.push(error_record(at, &key, Some(seq), &refusal)),
            Ok(slot) => {
                let now = self.sessions.get(slot).figures(self.capacity);
                if before != Some(now) {
                    out.push(pressure_record(at, &key, seq, v.stamp, &now));
                }
            }
        }
    }
}

fn session_json(out: &mut Vec<u8>, key: &[u8]) {
    let s = String::from_utf8_lossy(key);
    serde_json::to_writer(&mut *out, &*s).expect("writing to a Vec");
}

fn opt(out: &mut Vec<u8>, name: &str, v: Option<u64>) {
    match v {
        Some(n) => write!(out, ",\"{name}\":{n}"),
        None => write!(out, ",\"{name}\":null"),
    }
    .expect("writing to a Vec");
}

/// A `context/pressure` record.
pub fn pressure_record(at: usize, key: &[u8], seq: u64, stamp: Option<&str>, f: &Figures) -> Emit {
    let mut out = Vec::with_capacity(320);
    out.extend_from_slice(b"{\"type\":\"context/pressure\",\"session\":");
    session_json(&mut out, key);
    write!(out, ",\"seq\":{seq}").expect("writing to a Vec");
    if let Some(stamp) = stamp {
        out.extend_from_slice(b",\"timestamp\":");
        out.extend_from_slice(stamp.as_bytes());
    }
    opt(&mut out, "pressureTokens", f.pressure);
    opt(&mut out, "projectedTokens", f.projected);
    opt(&mut out, "capacity", f.capacity);
    out.extend_from_slice(b",\"contextOccupancy\":");
    match f.occupancy {
        Some(x) => serde_json::to_writer(&mut out, &x).expect("writing to a Vec"),
        None => out.extend_from_slice(b"null"),
    }
    opt(&mut out, "systemTokens", f.system);
    opt(&mut out, "toolsTokens", f.tools);
    opt(&mut out, "messageTokens", f.message);
    if f.partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    write!(out, ",\"stateVersion\":{STATE_VERSION}}}").expect("writing to a Vec");
    Emit::New {
        at,
        key: key.to_vec(),
        value: out,
    }
}

/// A `context/error` record.
pub fn error_record(at: usize, key: &[u8], seq: Option<u64>, refusal: &Refusal) -> Emit {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(b"{\"type\":\"context/error\",\"session\":");
    session_json(&mut out, key);
    opt(&mut out, "seq", seq);
    out.extend_from_slice(b",\"error\":");
    serde_json::to_writer(&mut out, &refusal.to_string()).expect("writing to a Vec");
    write!(out, ",\"stateVersion\":{STATE_VERSION}}}").expect("writing to a Vec");
    Emit::New {
        at,
        key: key.to_vec(),
        value: out,
    }
}
