//! The records the pressure view writes: `context/pressure` and `context/error` (contract §3, §5).

use super::session::{Figures, Refusal};
use crate::json::{write_string, write_uint};
use crate::record::Emit;
use crate::state::checkpoint::STATE_VERSION;

fn session_json(out: &mut Vec<u8>, key: Option<&[u8]>) {
    match key {
        Some(k) => write_string(out, String::from_utf8_lossy(k).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
}

/// `,"name":n`, or `null`.
fn opt(out: &mut Vec<u8>, name: &str, v: Option<u64>) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    match v {
        Some(n) => write_uint(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

/// Thousandths as a JSON number: `1.344`, `0.25`, `4`.
fn milli(out: &mut Vec<u8>, m: u64) {
    let (whole, frac) = (m / 1000, m % 1000);
    write_uint(out, whole);
    if frac != 0 {
        let digits = [frac / 100, frac / 10 % 10, frac % 10].map(|d| b'0' + d as u8);
        let len = 3 - digits.iter().rev().take_while(|d| **d == b'0').count();
        out.push(b'.');
        out.extend_from_slice(&digits[..len]);
    }
}

/// `,"stateVersion":5}`: the end of every record.
fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b",\"stateVersion\":");
    write_uint(out, STATE_VERSION);
    out.push(b'}');
}

/// A `context/pressure` record of session `key`, answering the frame at `at`.
pub(crate) fn pressure_record(
    at: usize,
    key: &[u8],
    seq: u64,
    stamp: Option<&str>,
    f: &Figures,
) -> Emit {
    let mut out = Vec::with_capacity(320);
    out.extend_from_slice(b"{\"type\":\"context/pressure\",\"session\":");
    session_json(&mut out, Some(key));
    out.extend_from_slice(b",\"seq\":");
    write_uint(&mut out, seq);
    if let Some(stamp) = stamp {
        out.extend_from_slice(b",\"timestamp\":");
        out.extend_from_slice(stamp.as_bytes());
    }
    opt(&mut out, "pressureTokens", f.pressure);
    opt(&mut out, "projectedTokens", f.projected);
    opt(&mut out, "capacity", f.capacity);
    out.extend_from_slice(b",\"contextOccupancy\":");
    match f.occupancy() {
        Some(x) => serde_json::to_writer(&mut out, &x).expect("writing to a Vec"),
        None => out.extend_from_slice(b"null"),
    }
    opt(&mut out, "systemTokens", f.system);
    opt(&mut out, "toolsTokens", f.tools);
    opt(&mut out, "messageTokens", f.message);
    out.extend_from_slice(b",\"estimateScale\":");
    milli(&mut out, f.scale_milli);
    opt(&mut out, "compactAtTokens", f.compact_at);
    opt(&mut out, "untilCompactTokens", f.until_compact());
    if f.partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    for (name, v) in [("agent", &f.names.agent), ("model", &f.names.model)] {
        if let Some(v) = v {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            write_string(&mut out, v.as_bytes());
        }
    }
    end(&mut out);
    Emit::New {
        at,
        key: key.to_vec(),
        value: out,
    }
}

/// A `context/error` record answering the frame at `at`; its `session` is null when the key
/// itself is refused (over the limit).
pub(crate) fn error_record(at: usize, key: &[u8], seq: Option<u64>, refusal: &Refusal) -> Emit {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(b"{\"type\":\"context/error\",\"session\":");
    let named = !matches!(refusal, Refusal::LongKey(_));
    session_json(&mut out, named.then_some(key));
    opt(&mut out, "seq", seq);
    out.extend_from_slice(b",\"error\":");
    write_string(&mut out, refusal.to_string().as_bytes());
    end(&mut out);
    Emit::New {
        at,
        key: key.to_vec(),
        value: out,
    }
}

#[cfg(test)]
mod tests {
    use super::milli;
    use crate::{Emit, Processor, RecordIn};

    fn records(p: &mut Processor, frames: &[&str]) -> Vec<serde_json::Value> {
        let ins: Vec<RecordIn> = frames
            .iter()
            .map(|f| RecordIn::new(Some(b"s"), f.as_bytes()))
            .collect();
        p.process(&ins)
            .unwrap()
            .into_iter()
            .map(|e| match e {
                Emit::New { value, .. } => serde_json::from_slice(&value).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// The agent and model a header names ride on every record after it; a new model is a new
    /// record even when no figure moved; an over-long name is no name; a checkpoint keeps them.
    #[test]
    fn records_name_the_agent_and_model_a_header_named() {
        let mut p = Processor::from_params([("emit", "pressure")]).unwrap();
        let long = "m".repeat(crate::frame::NAME_BYTES + 1);
        let header = |seq: u64, model: &str| {
            format!(r#"{{"type":"request/header","seq":{seq},"agent":"codex","model":"{model}"}}"#)
        };
        let out = records(
            &mut p,
            &[
                r#"{"type":"user/message","seq":0,"message":"hi"}"#,
                &header(1, "gpt-5"),
                &header(2, "gpt-5"),
                &header(3, "gpt-5.5"),
                &header(4, &long),
            ],
        );
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out[0].get("agent").is_none() && out[0].get("model").is_none());
        assert_eq!(
            (&out[1]["agent"], &out[1]["model"]),
            (&"codex".into(), &"gpt-5".into())
        );
        assert_eq!(out[2]["model"], "gpt-5.5");
        let cp = p.checkpoint();
        let mut q = Processor::from_params([("emit", "pressure")]).unwrap();
        q.restore(&cp).unwrap();
        let more = records(
            &mut q,
            &[r#"{"type":"user/message","seq":5,"message":"more"}"#],
        );
        assert_eq!(
            (&more[0]["agent"], &more[0]["model"]),
            (&"codex".into(), &"gpt-5.5".into())
        );
    }

    #[test]
    fn thousandths_print_as_short_numbers() {
        for (m, s) in [
            (1000, "1"),
            (1344, "1.344"),
            (250, "0.25"),
            (4000, "4"),
            (1300, "1.3"),
            (1001, "1.001"),
        ] {
            let mut out = Vec::new();
            milli(&mut out, m);
            assert_eq!(String::from_utf8(out).unwrap(), s);
        }
    }
}
