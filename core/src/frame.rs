//! A frame seen through the few fields the views read, borrowed from the record's bytes.
//!
//! Parsing walks the object once: the fields the fold and the projection read are kept as raw
//! JSON slices of the record, every other field is skipped without being built. A frame that is
//! not changed is never re-serialised; a folded one is rewritten by splicing byte ranges.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// 2^53: the largest integer every JSON reader holds exactly, and the fold's ceiling.
pub const MAX_SAFE: u64 = 1 << 53;

/// One field that may be absent, well-formed, or present with a value the spec refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Slot<T> {
    #[default]
    Absent,
    Valid(T),
    Invalid,
}

/// Where the value of one of the three fields a fold rewrites stands in the record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Span {
    pub range: Option<Range<usize>>,
    /// The key occurs more than once: which value a reader takes is ambiguous.
    pub repeated: bool,
}

/// The fields of one frame that the views read, borrowed from the record.
#[derive(Debug, Default)]
pub struct FrameView<'a> {
    /// The record's bytes, for splicing.
    pub bytes: &'a [u8],
    /// `type`, when it is a string.
    pub kind: Option<Cow<'a, str>>,
    /// `seq`, when it is an integer ≥ 0.
    pub seq: Option<u64>,
    /// `timestamp` as raw JSON text, when it is a string.
    pub stamp: Option<&'a str>,
    /// `estimated_tokens_delta`, when it is an integer in 0..=2^53.
    pub delta: Option<u64>,
    /// `folded_frames`: valid when an integer in 1..=2^53.
    pub folded_frames: Slot<u64>,
    /// `folded_from` as raw JSON text: valid when a string.
    pub folded_from: Slot<&'a str>,
    /// `extras.parent_tool_use_id` is a string: the frame is a sub-agent's.
    pub subagent: bool,
    /// `session_id`, when it is a string.
    pub session_id: Option<Cow<'a, str>>,
    /// `message`, raw, when present.
    pub message: Option<&'a str>,
    /// `usage`, raw, when it is an object.
    pub usage: Option<&'a str>,
    /// `system`, raw, when present.
    pub system: Option<&'a str>,
    /// `tools`, raw, when present.
    pub tools: Option<&'a str>,
    /// `context_window`, when an integer ≥ 1.
    pub context_window: Option<u64>,
    /// `replaces`, raw, when present and not null.
    pub replaces: Option<&'a str>,
    /// Value ranges of the fields a fold rewrites.
    pub delta_span: Span,
    pub from_span: Span,
    pub frames_span: Span,
}

impl<'a> FrameView<'a> {
    /// Reads a record. `None` when it is not a JSON object (not UTF-8, not JSON, trailing bytes).
    ///
    /// A single pass of [`scan`]: it accepts exactly what [`FrameView::parse_serde`] accepts
    /// and reads the same fields, several times faster on the long strings agent logs carry.
    /// A record with an escape in a top-level key goes through `parse_serde` itself.
    pub fn parse(bytes: &'a [u8]) -> Option<FrameView<'a>> {
        let mut v = FrameView::default();
        match scan::frame(bytes, scan::Level::Best, &mut v) {
            scan::Outcome::Frame => Some(v),
            scan::Outcome::Invalid => None,
            scan::Outcome::EscapedKey => Self::parse_serde(bytes),
        }
    }

    /// [`FrameView::parse`] with its portable string scan (what wasm32 runs), for tests that
    /// compare it with the vector one.
    #[doc(hidden)]
    pub fn parse_portable(bytes: &'a [u8]) -> Option<FrameView<'a>> {
        let mut v = FrameView::default();
        match scan::frame(bytes, scan::Level::Portable, &mut v) {
            scan::Outcome::Frame => Some(v),
            scan::Outcome::Invalid => None,
            scan::Outcome::EscapedKey => Self::parse_serde(bytes),
        }
    }

    /// The reference reader, on serde_json: the definition [`FrameView::parse`] keeps to
    /// (kept for records whose keys carry escapes, and for differential tests).
    ///
    /// Its acceptance, which `parse` reproduces: a JSON object, whitespace around it; keys
    /// are valid UTF-8 without control characters; the values of the fields the views read
    /// are valid UTF-8; the other values are checked as JSON (numbers, escapes, nesting at
    /// any depth) but their strings' bytes are not checked as UTF-8 (serde_json skips them).
    pub fn parse_serde(bytes: &'a [u8]) -> Option<FrameView<'a>> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let mut view = de.deserialize_map(ViewVisitor { bytes }).ok()?;
        de.end().ok()?;
        view.bytes = bytes;
        Some(view)
    }

    /// Whether this frame is a counter of the given type.
    pub fn is_counter(&self, counter_type: &str) -> bool {
        self.kind.as_deref() == Some(counter_type)
    }
}

/// The text of a JSON string value, unescaped; `None` when `raw` is not a string.
pub fn raw_str(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// A JSON integer token ≥ 0 that fits a `u64`; fractions, exponents and signs are refused.
pub fn raw_u64(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

fn is_string(raw: &str) -> bool {
    raw.starts_with('"')
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Type,
    Seq,
    Timestamp,
    Delta,
    FoldedFrames,
    FoldedFrom,
    Extras,
    SessionId,
    Message,
    Usage,
    System,
    Tools,
    ContextWindow,
    Replaces,
    Other,
}

impl Key {
    fn of(name: &str) -> Key {
        match name {
            "type" => Key::Type,
            "seq" => Key::Seq,
            "timestamp" => Key::Timestamp,
            "estimated_tokens_delta" => Key::Delta,
            "folded_frames" => Key::FoldedFrames,
            "folded_from" => Key::FoldedFrom,
            "extras" => Key::Extras,
            "session_id" => Key::SessionId,
            "message" => Key::Message,
            "usage" => Key::Usage,
            "system" => Key::System,
            "tools" => Key::Tools,
            "context_window" => Key::ContextWindow,
            "replaces" => Key::Replaces,
            _ => Key::Other,
        }
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::of(v))
    }
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(KeyVisitor)
    }
}

struct ViewVisitor<'a> {
    bytes: &'a [u8],
}

fn range_of(bytes: &[u8], raw: &str) -> Range<usize> {
    let start = raw.as_ptr() as usize - bytes.as_ptr() as usize;
    start..start + raw.len()
}

fn mark(bytes: &[u8], span: &mut Span, raw: &str) {
    span.repeated |= span.range.is_some();
    span.range = Some(range_of(bytes, raw));
}

/// Records one field the views read: `raw` is its value's JSON text, a slice of `bytes`.
fn set_field<'a>(v: &mut FrameView<'a>, bytes: &'a [u8], key: Key, raw: &'a str) {
    match key {
        Key::Type => v.kind = raw_str(raw),
        Key::Seq => v.seq = raw_u64(raw),
        Key::Timestamp => v.stamp = is_string(raw).then_some(raw),
        Key::Delta => {
            mark(bytes, &mut v.delta_span, raw);
            v.delta = raw_u64(raw).filter(|d| *d <= MAX_SAFE);
        }
        Key::FoldedFrames => {
            mark(bytes, &mut v.frames_span, raw);
            v.folded_frames = match raw_u64(raw) {
                Some(n) if (1..=MAX_SAFE).contains(&n) => Slot::Valid(n),
                _ => Slot::Invalid,
            };
        }
        Key::FoldedFrom => {
            mark(bytes, &mut v.from_span, raw);
            v.folded_from = if is_string(raw) {
                Slot::Valid(raw)
            } else {
                Slot::Invalid
            };
        }
        Key::Extras => v.subagent = raw.starts_with('{') && extras_is_subagent(raw),
        Key::SessionId => v.session_id = raw_str(raw),
        Key::Message => v.message = Some(raw),
        Key::Usage => v.usage = raw.starts_with('{').then_some(raw),
        Key::System => v.system = Some(raw),
        Key::Tools => v.tools = Some(raw),
        Key::ContextWindow => v.context_window = raw_u64(raw).filter(|w| *w >= 1),
        Key::Replaces => v.replaces = (raw != "null").then_some(raw),
        Key::Other => {}
    }
}

impl<'a> Visitor<'a> for ViewVisitor<'a> {
    type Value = FrameView<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<FrameView<'a>, M::Error> {
        let mut v = FrameView::default();
        while let Some(key) = map.next_key::<Key>()? {
            if let Key::Other = key {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let raw: &'a RawValue = map.next_value()?;
            set_field(&mut v, self.bytes, key, raw.get());
        }
        Ok(v)
    }
}

/// Whether an `extras` object carries a string `parent_tool_use_id` (the last one, if repeated).
fn extras_is_subagent(raw: &str) -> bool {
    struct Extras;
    impl<'de> Visitor<'de> for Extras {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
            let mut sub = false;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                let raw: &'de RawValue = map.next_value()?;
                if key == "parent_tool_use_id" {
                    sub = is_string(raw.get());
                }
            }
            Ok(sub)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(Extras).unwrap_or(false)
}

/// Named integer fields of a small object (`usage`, `replaces`), each as [`raw_u64`] reads it.
pub fn object_u64s<const N: usize>(raw: &str, names: [&str; N]) -> Option<[Slot<u64>; N]> {
    struct Fields<'n, const N: usize>(&'n [&'n str; N]);
    impl<'de, const N: usize> Visitor<'de> for Fields<'_, N> {
        type Value = [Slot<u64>; N];
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut out = [Slot::Absent; N];
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                let raw: &'de RawValue = map.next_value()?;
                if let Some(i) = self.0.iter().position(|n| *n == key) {
                    out[i] = raw_u64(raw.get()).map_or(Slot::Invalid, Slot::Valid);
                }
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(Fields(&names)).ok()
}

mod scan;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_it_needs() {
        let rec = br#"{"type":"thinking/tokens","id":"c1","seq":4,"timestamp":"t1","estimated_tokens_delta":5,"big":[1,{"a":[2]}],"extras":{"parent_tool_use_id":null}}"#;
        let v = FrameView::parse(rec).unwrap();
        assert!(v.is_counter("thinking/tokens"));
        assert_eq!(v.seq, Some(4));
        assert_eq!(v.stamp, Some("\"t1\""));
        assert_eq!(v.delta, Some(5));
        assert!(!v.subagent);
        let r = v.delta_span.range.clone().unwrap();
        assert_eq!(&rec[r], b"5");
    }

    #[test]
    fn refuses_what_is_not_an_object() {
        for bad in [&b"[1]"[..], b"\"s\"", b"{", b"{} x", b"\xff", b"", b"null"] {
            assert!(FrameView::parse(bad).is_none(), "{:?}", bad);
        }
        assert!(FrameView::parse(b" {} \n").is_some());
    }

    #[test]
    fn field_types_are_checked() {
        let v = FrameView::parse(
            br#"{"type":1,"seq":-1,"timestamp":5,"estimated_tokens_delta":1.0,"folded_frames":0,"folded_from":null}"#,
        )
        .unwrap();
        assert_eq!(v.kind, None);
        assert_eq!(v.seq, None);
        assert_eq!(v.stamp, None);
        assert_eq!(v.delta, None);
        assert_eq!(v.folded_frames, Slot::Invalid);
        assert_eq!(v.folded_from, Slot::Invalid);
        let v = FrameView::parse(br#"{"estimated_tokens_delta":9007199254740993}"#).unwrap();
        assert_eq!(v.delta, None);
    }

    #[test]
    fn subagent_needs_a_string_parent() {
        let sub = |s: &[u8]| FrameView::parse(s).unwrap().subagent;
        assert!(sub(br#"{"extras":{"parent_tool_use_id":"toolu_1"}}"#));
        assert!(!sub(br#"{"extras":{"parent_tool_use_id":7}}"#));
        assert!(!sub(br#"{"extras":"x"}"#));
        assert!(!sub(br#"{"parent_tool_use_id":"toolu_1"}"#));
    }

    #[test]
    fn escaped_keys_and_values_are_read() {
        let v =
            FrameView::parse(br#"{"typ\u0065":"thinking\/tokens","session_id":"a\"b"}"#).unwrap();
        assert_eq!(v.kind.as_deref(), Some("thinking/tokens"));
        assert_eq!(v.session_id.as_deref(), Some("a\"b"));
    }

    #[test]
    fn deep_nesting_in_a_skipped_field_is_no_error() {
        let mut rec = String::from(r#"{"type":"x","deep":"#);
        rec.push_str(&"[".repeat(100_000));
        rec.push_str(&"]".repeat(100_000));
        rec.push('}');
        assert!(FrameView::parse(rec.as_bytes()).is_some());
    }

    #[test]
    fn object_fields() {
        let [a, b, c] = object_u64s(r#"{"a":1,"b":"x"}"#, ["a", "b", "c"]).unwrap();
        assert_eq!((a, b, c), (Slot::Valid(1), Slot::Invalid, Slot::Absent));
        assert!(object_u64s("[]", ["a"]).is_none());
    }

    /// The readers agree: same acceptance, same fields.
    fn agree(bytes: &[u8]) {
        let reference = format!("{:?}", FrameView::parse_serde(bytes));
        let mut v = FrameView::default();
        let sse2 = match scan::frame(bytes, scan::Level::Sse2, &mut v) {
            scan::Outcome::Frame => Some(v),
            scan::Outcome::Invalid => None,
            scan::Outcome::EscapedKey => FrameView::parse_serde(bytes),
        };
        assert_eq!(
            format!("{sse2:?}"),
            reference,
            "sse2 on {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(
            format!("{:?}", FrameView::parse(bytes)),
            reference,
            "parse on {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(
            format!("{:?}", FrameView::parse_portable(bytes)),
            reference,
            "parse_portable on {:?}",
            String::from_utf8_lossy(bytes)
        );
    }

    #[test]
    fn the_scanner_agrees_with_serde_json_on_edge_cases() {
        let cases: &[&[u8]] = &[
            b"",
            b" ",
            b"{",
            b"}",
            b"{}",
            b" {} ",
            b"{} {}",
            b"[]",
            b"null",
            b"\"s\"",
            b"{,}",
            b"{\"a\":1,}",
            b"{\"a\" : 1 , \"b\":[ ]}",
            b"{\"a\":[1,]}",
            b"{\"a\":[,1]}",
            b"{\"a\":{}}",
            b"{\"a\":{,}}",
            b"{\"a\":{\"b\"}}",
            b"{\"a\":{\"b\":}}",
            b"{\"a\"1}",
            b"{\"a\":-}",
            b"{\"a\":-0}",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":1.5e}",
            b"{\"a\":1e+5}",
            b"{\"a\":1E-0}",
            b"{\"a\":-12.50e3}",
            b"{\"a\":.5}",
            b"{\"a\":+1}",
            b"{\"a\":nul}",
            b"{\"a\":nulll}",
            b"{\"a\":truex}",
            b"{\"a\":false}",
            b"{\"a\":tru",
            b"{\"seq\":-1}",
            b"{\"seq\":1.0}",
            b"{\"seq\":18446744073709551616}",
            b"{\"seq\":007}",
            b"{\"type\":\"a\\u0062\"}",
            b"{\"type\":\"\\ud800\"}",
            b"{\"x\":\"\\ud800\"}",
            b"{\"x\":\"\\uZZZZ\"}",
            b"{\"x\":\"\\u12\"}",
            b"{\"x\":\"\\q\"}",
            b"{\"x\":\"a\x01b\"}",
            b"{\"type\":\"a\x1fb\"}",
            b"{\"x\":\"tab\there\"}",
            b"{\"t\\u0079pe\":\"thinking/tokens\"}",
            b"{\"\\\"\":1}",
            b"{\"a\\\\\":1}",
            b"{\"x\":\"\xff\"}",
            b"{\"type\":\"\xff\"}",
            b"{\"\xff\":1}",
            b"{\"x\":{\"\xff\":1}}",
            b"{\"message\":{\"\xff\":1}}",
            b"{\"message\":\"\xe4\xb8\xad\"}",
            b"{\"message\":\"\xe4\xb8\"}",
            b"{\"message\":\"\xed\xa0\x80\"}",
            b"{\"message\":\"\xc0\xaf\"}",
            b"{\"message\":\"\xf4\x90\x80\x80\"}",
            "{\"message\":\"中文\",\"type\":\"é\"}".as_bytes(),
            b"{\"x\":\"\xe4\xb8\xad\"}\xff",
            b"{\"extras\":{\"parent_tool_use_id\":\"t\"},\"extras\":{}}",
            b"{\"estimated_tokens_delta\":1,\"estimated_tokens_delta\":2}",
            b"{\"a\":1}\n",
            b"\t\r\n{\"a\":1}\t\r\n",
            b"{\"a\":1}\x0b",
            b"{\"a\":1} x",
            b"{\"a\":\"unterminated",
            b"{\"a\":\"ends in a backslash\\",
            b"{\"a\":\"\\u00",
            b"{\"a\":[[[[[[]]]]]]}",
            b"{\"a\":[[[[[[]]]]]}",
            b"{\"a\":{\"b\":{\"c\":[{}]}}}",
        ];
        for c in cases {
            agree(c);
        }
        // Escapes and specials at every position around the 16- and 64-byte block edges.
        for pad in 0..70 {
            for tail in [
                &b"\\\""[..],
                b"\\\\",
                b"\\u0041",
                b"\\u00",
                b"\x01",
                b"\xe4\xb8\xad",
                b"\xe4",
                b"\"",
                b"\\",
                b"\\\\\\\"",
            ] {
                for key in ["message", "other"] {
                    let mut rec = format!("{{\"{key}\":\"").into_bytes();
                    rec.extend(std::iter::repeat_n(b'a', pad));
                    rec.extend_from_slice(tail);
                    let open = rec.clone();
                    agree(&open);
                    rec.extend_from_slice(b"z\"}");
                    agree(&rec);
                    rec.extend_from_slice(b"   ");
                    agree(&rec);
                }
            }
        }
        let mut deep = b"{\"message\":".to_vec();
        deep.extend(std::iter::repeat_n(b'[', 200));
        deep.extend(std::iter::repeat_n(b']', 200));
        deep.push(b'}');
        agree(&deep);
        deep.insert(deep.len() - 150, b',');
        agree(&deep);
    }

    #[test]
    fn the_scanner_agrees_with_serde_json_on_mutated_frames() {
        let seeds: [&[u8]; 5] = [
            br#"{"type":"thinking/tokens","id":"c1","session_id":"s-1","seq":4,"timestamp":"2026-11-29T10:00:00Z","estimated_tokens_delta":5,"extras":{"parent_tool_use_id":null}}"#,
            "{\"type\":\"tool/result\",\"seq\":9,\"message\":{\"role\":\"tool\",\"content\":\"line one\\nline \\\"two\\\" \\\\ 中文注释：压力视图\\u4e2d\\tend of a longer line of output that spans blocks\"},\"extras\":{\"parent_tool_use_id\":\"toolu_1\"}}".as_bytes(),
            br#"{"type":"request/header","seq":0,"system":"You are careful.","tools":[{"name":"Read","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}],"context_window":200000}"#,
            br#"{"type":"assistant/message","seq":7,"message":{"content":[{"type":"text","text":"ok"}]},"usage":{"input_tokens":412,"cache_read_input_tokens":3650,"output_tokens":58},"replaces":{"from_seq":1,"to_seq":3},"n":[-1.5e3,0,true,false,null]}"#,
            br#" { "folded_frames" : 3 , "folded_from" : "t1" , "timestamp" : "t3" , "type" : "thinking/tokens" } "#,
        ];
        const SPECIAL: &[u8] =
            b"\"\\{}[]:,0123456789-+.eEtrufalsn u\x00\x01\x1f\x7f\x80\xbf\xc3\xe4\xed\xf0\xff\t\n";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut rec = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + next() % 3 {
                if rec.is_empty() {
                    break;
                }
                let at = (next() % rec.len() as u64) as usize;
                let byte = SPECIAL[(next() % SPECIAL.len() as u64) as usize];
                match next() % 5 {
                    0 => rec[at] = byte,
                    1 => rec.insert(at, byte),
                    2 => {
                        rec.remove(at);
                    }
                    3 => rec.truncate(at),
                    _ => {
                        let n = (next() % 40) as usize;
                        let filler = [b'a', b'\\', b'"', 0xe4, 0xb8, 0xad][(next() % 6) as usize];
                        rec.splice(at..at, std::iter::repeat_n(filler, n));
                    }
                }
            }
            agree(&rec);
        }
    }
}
