//! The records the pressure view writes: `context/pressure` and `context/error` (contract §3, §5).

use super::session::{Figures, Names, Refusal};
use crate::json::{self, write_string, write_uint};
use crate::record::Emit;
use crate::state::checkpoint::STATE_VERSION;

/// The session as a JSON string, or `null`.
fn session_json(out: &mut Vec<u8>, key: Option<&[u8]>) {
    match key {
        Some(k) => key_json(out, k, json::plain_ascii(k)),
        None => out.extend_from_slice(b"null"),
    }
}

/// A session key as a JSON string: the key read as UTF-8 (an invalid sequence as U+FFFD),
/// escaped. A `plain` key ([`json::plain_ascii`]: nearly every key) is that string's inside as
/// it stands, and is copied; any other goes through the lossy reading and the escaper.
fn key_json(out: &mut Vec<u8>, k: &[u8], plain: bool) {
    if plain {
        out.push(b'"');
        out.extend_from_slice(k);
        out.push(b'"');
    } else {
        write_string(out, String::from_utf8_lossy(k).as_bytes());
    }
}

/// The most a string of `len` bytes takes as JSON by [`key_json`] or [`write_string`]: its
/// bytes and quotes when `plain`, else six bytes a byte (`\u00XX` is the longest a byte
/// becomes; an invalid one becomes U+FFFD, three).
fn string_room(len: usize, plain: bool) -> usize {
    2 + if plain { len } else { 6 * len }
}

/// The most a `context/pressure` record takes besides its session, timestamp and names: its
/// member names and punctuation (282 bytes, and 98 for the compactions' members with the
/// longer trigger) and each number at its longest (`seq`, eleven counts and `stateVersion` at
/// 20 digits, the occupancy at 24 characters, the scale at 21).
const PRESSURE_ROOM: usize = 282 + 98 + 13 * 20 + 24 + 21;

/// `,"name":` of a member named by a literal, as one constant: one copy, not three.
macro_rules! head {
    ($name:literal) => {
        concat!(",\"", $name, "\":").as_bytes()
    };
}

/// `,"name":n`, or `null`, after its [`head!`].
fn opt(out: &mut Vec<u8>, head: &[u8], v: Option<u64>) {
    out.extend_from_slice(head);
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

/// `x` as serde_json writes an `f64`: a finite one as `zmij`'s shortest text (serde_json's own
/// float writer, called without its serializer), any other as `null`.
fn float(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// `,"stateVersion":5}`: the end of every record.
fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(head!("stateVersion"));
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
    names: &Names,
) -> Emit {
    // One buffer, sized once: it never grows.
    let plain = json::plain_ascii(key);
    let room = PRESSURE_ROOM
        + string_room(key.len(), plain)
        + stamp.map_or(0, str::len)
        + [&names.agent, &names.model]
            .iter()
            .map(|n| n.as_deref().map_or(0, |n| string_room(n.len(), false)))
            .sum::<usize>();
    let mut out = Vec::with_capacity(room);
    out.extend_from_slice(b"{\"type\":\"context/pressure\",\"session\":");
    key_json(&mut out, key, plain);
    out.extend_from_slice(head!("seq"));
    write_uint(&mut out, seq);
    if let Some(stamp) = stamp {
        out.extend_from_slice(head!("timestamp"));
        out.extend_from_slice(stamp.as_bytes());
    }
    opt(&mut out, head!("pressureTokens"), f.pressure);
    opt(&mut out, head!("projectedTokens"), f.projected);
    opt(&mut out, head!("capacity"), f.capacity);
    out.extend_from_slice(head!("contextOccupancy"));
    match f.occupancy() {
        Some(x) => float(&mut out, x),
        None => out.extend_from_slice(b"null"),
    }
    opt(&mut out, head!("systemTokens"), f.system);
    opt(&mut out, head!("toolsTokens"), f.tools);
    opt(&mut out, head!("messageTokens"), f.message);
    out.extend_from_slice(head!("estimateScale"));
    milli(&mut out, f.scale_milli);
    opt(&mut out, head!("compactAtTokens"), f.compact_at);
    opt(&mut out, head!("untilCompactTokens"), f.until_compact());
    out.extend_from_slice(head!("compactions"));
    write_uint(&mut out, f.compactions);
    if let Some(last) = &f.last_compaction {
        out.extend_from_slice(head!("lastCompactTrigger"));
        match last.trigger {
            Some(t) => {
                out.push(b'"');
                out.extend_from_slice(t.word().as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        }
        opt(&mut out, head!("lastCompactBeforeTokens"), last.before);
        opt(&mut out, head!("lastCompactAfterTokens"), last.after);
    }
    if f.partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    for (head, v) in [
        (head!("agent"), &names.agent),
        (head!("model"), &names.model),
    ] {
        if let Some(v) = v {
            out.extend_from_slice(head);
            write_string(&mut out, v.as_bytes());
        }
    }
    end(&mut out);
    debug_assert!(out.len() <= room, "{} > {room}", out.len());
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
    opt(&mut out, head!("seq"), seq);
    out.extend_from_slice(head!("error"));
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
    use super::{float, milli, session_json};
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

    /// The occupancy's text is serde_json's for every share a record can hold (a `u64` over a
    /// `u64`): round shares, long fractions, tiny and huge ones.
    #[test]
    fn occupancy_prints_as_serde_json_prints_it() {
        let mut rng = crate::rng::Rng::new(29);
        let mut shares = vec![
            0.0,
            1.0,
            0.5,
            0.00244,
            1e-300,
            1e300,
            f64::NAN,
            f64::INFINITY,
        ];
        for _ in 0..100_000 {
            let used = rng.next_u64() >> (rng.next_u64() % 64);
            let cap = (rng.next_u64() >> (rng.next_u64() % 64)).max(1);
            shares.push(used as f64 / cap as f64);
        }
        for x in shares {
            let mut out = Vec::new();
            float(&mut out, x);
            assert_eq!(out, serde_json::to_vec(&x).unwrap(), "{x}");
        }
    }

    /// A session's text is the lossy string's, escaped, whatever its bytes.
    #[test]
    fn sessions_print_as_their_lossy_strings() {
        let mut keys: Vec<Vec<u8>> = vec![b"".to_vec(), b"s".to_vec(), b"\xff".to_vec()];
        for c in 0..=255u8 {
            for len in [1, 7, 8, 9, 17] {
                let mut k = b"session-0123456789abcdef".to_vec();
                k.truncate(len);
                k[len / 2] = c;
                keys.push(k);
            }
        }
        for k in keys {
            let mut out = Vec::new();
            session_json(&mut out, Some(&k));
            let want = serde_json::to_vec(&String::from_utf8_lossy(&k)).unwrap();
            assert_eq!(out, want, "{k:?}");
        }
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
