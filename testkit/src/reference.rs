//! Naive references, written from the contract's words with no regard for speed, that the fast paths
//! of the core are checked against: what counts as a JSON object and what a frame reads of it
//! (§1), the estimate (§3), the usage sum and the calibrated scale (§3).

use std::ops::Range;

/// A JSON value as the reference reader builds it.
#[derive(Debug, Clone, PartialEq)]
pub enum RefValue {
    Null,
    Bool(bool),
    /// A number, as it stands.
    Number(String),
    /// A string's value; a lone surrogate escape reads as U+FFFD.
    Str(String),
    Array(Vec<RefValue>),
    /// Members in order, each with its value's byte range in the text.
    Object(Vec<(String, RefValue, Range<usize>)>),
}

impl Drop for RefValue {
    // A deep value is dropped from a heap stack: nesting depth is no limit here either.
    fn drop(&mut self) {
        let mut stack: Vec<RefValue> = Vec::new();
        let take = |v: &mut RefValue, stack: &mut Vec<RefValue>| match v {
            RefValue::Array(items) => stack.append(items),
            RefValue::Object(members) => stack.extend(members.drain(..).map(|(_, v, _)| v)),
            _ => {}
        };
        take(self, &mut stack);
        while let Some(mut v) = stack.pop() {
            take(&mut v, &mut stack);
        }
    }
}

/// Parses a JSON text per RFC 8259: UTF-8 throughout, any depth (an explicit stack, no
/// recursion), any number size. `None` when it is not JSON.
pub fn parse(bytes: &[u8]) -> Option<RefValue> {
    let text = std::str::from_utf8(bytes).ok()?;
    let b = text.as_bytes();
    let mut i = 0;
    ws(b, &mut i);
    let v = value(b, &mut i)?;
    ws(b, &mut i);
    (i == b.len()).then_some(v)
}

fn ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
        *i += 1;
    }
}

enum OpenContainer {
    Array(Vec<RefValue>),
    /// Members so far, and the key (and value start) of the member being read.
    Object(Vec<(String, RefValue, Range<usize>)>, String, usize),
}

/// One value from `i`, nested containers kept on a heap stack.
fn value(b: &[u8], i: &mut usize) -> Option<RefValue> {
    let mut stack: Vec<OpenContainer> = Vec::new();
    loop {
        // Read a value, or open a container.
        let mut v = match *b.get(*i)? {
            b'{' => {
                *i += 1;
                ws(b, i);
                if b.get(*i) == Some(&b'}') {
                    *i += 1;
                    RefValue::Object(Vec::new())
                } else {
                    let key = string(b, i)?;
                    ws(b, i);
                    (b.get(*i) == Some(&b':')).then_some(())?;
                    *i += 1;
                    ws(b, i);
                    stack.push(OpenContainer::Object(Vec::new(), key, *i));
                    continue;
                }
            }
            b'[' => {
                *i += 1;
                ws(b, i);
                if b.get(*i) == Some(&b']') {
                    *i += 1;
                    RefValue::Array(Vec::new())
                } else {
                    stack.push(OpenContainer::Array(Vec::new()));
                    continue;
                }
            }
            b'"' => RefValue::Str(string(b, i)?),
            b't' if b[*i..].starts_with(b"true") => {
                *i += 4;
                RefValue::Bool(true)
            }
            b'f' if b[*i..].starts_with(b"false") => {
                *i += 5;
                RefValue::Bool(false)
            }
            b'n' if b[*i..].starts_with(b"null") => {
                *i += 4;
                RefValue::Null
            }
            b'-' | b'0'..=b'9' => RefValue::Number(number(b, i)?),
            _ => return None,
        };
        // Close what the value completes.
        loop {
            let Some(top) = stack.last_mut() else {
                return Some(v);
            };
            ws(b, i);
            match top {
                OpenContainer::Array(items) => {
                    items.push(v);
                    match b.get(*i)? {
                        b',' => {
                            *i += 1;
                            ws(b, i);
                            break;
                        }
                        b']' => {
                            *i += 1;
                            let Some(OpenContainer::Array(items)) = stack.pop() else {
                                unreachable!()
                            };
                            v = RefValue::Array(items);
                        }
                        _ => return None,
                    }
                }
                OpenContainer::Object(members, key, vstart) => {
                    let range = *vstart..value_end(b, *i);
                    members.push((std::mem::take(key), v, range));
                    match b.get(*i)? {
                        b',' => {
                            *i += 1;
                            ws(b, i);
                            let k = string(b, i)?;
                            ws(b, i);
                            (b.get(*i) == Some(&b':')).then_some(())?;
                            *i += 1;
                            ws(b, i);
                            *key = k;
                            *vstart = *i;
                            break;
                        }
                        b'}' => {
                            *i += 1;
                            let Some(OpenContainer::Object(members, _, _)) = stack.pop() else {
                                unreachable!()
                            };
                            v = RefValue::Object(members);
                        }
                        _ => return None,
                    }
                }
            }
        }
    }
}

/// Where a member's value ended: before the whitespace that precedes `i`.
fn value_end(b: &[u8], mut i: usize) -> usize {
    while i > 0 && matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'\r') {
        i -= 1;
    }
    i
}

fn number(b: &[u8], i: &mut usize) -> Option<String> {
    let start = *i;
    if b.get(*i) == Some(&b'-') {
        *i += 1;
    }
    let int_start = *i;
    while b.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    let int = &b[int_start..*i];
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    if b.get(*i) == Some(&b'.') {
        *i += 1;
        let f = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        (*i > f).then_some(())?;
    }
    if matches!(b.get(*i), Some(b'e' | b'E')) {
        *i += 1;
        if matches!(b.get(*i), Some(b'+' | b'-')) {
            *i += 1;
        }
        let e = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        (*i > e).then_some(())?;
    }
    Some(String::from_utf8_lossy(&b[start..*i]).into_owned())
}

/// A string token at `i` (its quote), decoded: escapes resolved, a surrogate pair to its
/// scalar, a lone surrogate to U+FFFD; a control character is no JSON.
fn string(b: &[u8], i: &mut usize) -> Option<String> {
    (b.get(*i) == Some(&b'"')).then_some(())?;
    *i += 1;
    let mut units: Vec<u16> = Vec::new();
    loop {
        let c = *b.get(*i)?;
        match c {
            b'"' => {
                *i += 1;
                return Some(
                    char::decode_utf16(units)
                        .map(|r| r.unwrap_or('\u{FFFD}'))
                        .collect(),
                );
            }
            b'\\' => {
                let e = *b.get(*i + 1)?;
                *i += 2;
                let u = match e {
                    b'"' => '"' as u16,
                    b'\\' => '\\' as u16,
                    b'/' => '/' as u16,
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => 10,
                    b'r' => 13,
                    b't' => 9,
                    b'u' => {
                        let hex = std::str::from_utf8(b.get(*i..*i + 4)?).ok()?;
                        if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                            return None;
                        }
                        *i += 4;
                        u16::from_str_radix(hex, 16).ok()?
                    }
                    _ => return None,
                };
                units.push(u);
            }
            0..=0x1f => return None,
            _ => {
                // One UTF-8 scalar (the text was checked as UTF-8 whole).
                let len = match c {
                    0x00..=0x7f => 1,
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    _ => 4,
                };
                let s = std::str::from_utf8(&b[*i..*i + len]).ok()?;
                for ch in s.chars() {
                    let mut buf = [0u16; 2];
                    units.extend_from_slice(ch.encode_utf16(&mut buf));
                }
                *i += len;
            }
        }
    }
}

/// A frame as contract §1 reads it, from the reference parse: the same fields the core's
/// [`agent_fold_core::Frame`] reads, raw values as byte ranges of the record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefFrame {
    pub kind: Option<String>,
    pub seq: Option<u64>,
    pub stamp: Option<Range<usize>>,
    pub delta: Option<u64>,
    /// `None` absent, `Some(None)` invalid, `Some(Some(n))` valid.
    pub folded_frames: Option<Option<u64>>,
    pub folded_from: Option<Option<Range<usize>>>,
    pub subagent: bool,
    pub session_id: Option<String>,
    pub message: Option<Range<usize>>,
    /// `message_chars`: an integer in 0..=2^53, else none.
    pub message_chars: Option<u64>,
    pub usage: Option<Range<usize>>,
    pub system: Option<Range<usize>>,
    pub tools: Option<Range<usize>>,
    pub context_window: Option<u64>,
    pub replaces: Option<Range<usize>>,
    /// Where the fold fields stand, and whether each is repeated.
    pub places: [(Option<Range<usize>>, bool); 3],
    /// The usage sum and the span the frame carries, as contract §3 reads them.
    pub usage_tokens: Option<u64>,
    pub span: Option<Option<(u64, u64)>>,
}

/// An integer ≥ 0 that fits a u64, as it stands (no sign, fraction or exponent).
fn uint(v: &RefValue) -> Option<u64> {
    match v {
        RefValue::Number(n) if n.bytes().all(|b| b.is_ascii_digit()) => n.parse().ok(),
        _ => None,
    }
}

/// The last member named `name` of an object.
fn member<'v>(v: &'v RefValue, name: &str) -> Option<&'v RefValue> {
    match v {
        RefValue::Object(m) => m
            .iter()
            .rev()
            .find(|(k, _, _)| k == name)
            .map(|(_, v, _)| v),
        _ => None,
    }
}

/// Reads a record as contract §1 defines a frame; `None` when it is not a JSON object.
pub fn frame(bytes: &[u8]) -> Option<RefFrame> {
    let parsed = parse(bytes)?;
    let RefValue::Object(members) = &parsed else {
        return None;
    };
    const MAX_SAFE: u64 = 1 << 53;
    let mut f = RefFrame::default();
    for (key, v, range) in members {
        let raw = || Some(range.clone());
        let is_str = matches!(v, RefValue::Str(_));
        let mut place = |k: usize| {
            f.places[k].1 |= f.places[k].0.is_some();
            f.places[k].0 = raw();
        };
        match key.as_str() {
            "type" => {
                f.kind = if let RefValue::Str(s) = v {
                    Some(s.clone())
                } else {
                    None
                }
            }
            "seq" => f.seq = uint(v),
            "timestamp" => f.stamp = if is_str { raw() } else { None },
            "estimated_tokens_delta" => {
                place(0);
                f.delta = uint(v).filter(|d| *d <= MAX_SAFE);
            }
            "folded_from" => {
                place(1);
                f.folded_from = Some(if is_str { raw() } else { None });
            }
            "folded_frames" => {
                place(2);
                f.folded_frames = Some(uint(v).filter(|n| (1..=MAX_SAFE).contains(n)));
            }
            "extras" => {
                f.subagent = matches!(member(v, "parent_tool_use_id"), Some(RefValue::Str(_)))
            }
            "session_id" => {
                f.session_id = if let RefValue::Str(s) = v {
                    Some(s.clone())
                } else {
                    None
                }
            }
            "message" => f.message = raw(),
            "message_chars" => f.message_chars = uint(v).filter(|n| *n <= MAX_SAFE),
            "usage" => {
                let object = matches!(v, RefValue::Object(_));
                f.usage = if object { raw() } else { None };
                f.usage_tokens = object.then(|| {
                    [
                        "input_tokens",
                        "cache_read_input_tokens",
                        "cache_creation_input_tokens",
                    ]
                    .iter()
                    .filter_map(|n| member(v, n).and_then(uint))
                    .fold(0u64, u64::saturating_add)
                });
            }
            "system" => f.system = raw(),
            "tools" => f.tools = raw(),
            "context_window" => f.context_window = uint(v).filter(|w| *w >= 1),
            "replaces" => {
                let null = *v == RefValue::Null;
                f.replaces = if null { None } else { raw() };
                f.span = (!null).then(|| {
                    match (
                        member(v, "from_seq").map(uint),
                        member(v, "to_seq").map(uint),
                    ) {
                        (Some(Some(a)), Some(Some(b))) if matches!(v, RefValue::Object(_)) => {
                            Some((a, b))
                        }
                        _ => None,
                    }
                });
            }
            _ => {}
        }
    }
    Some(f)
}

/// contract §3's estimate, read literally: `ceil(chars / 4)`, chars = the Unicode scalar values of
/// the JSON text as it stands, whitespace outside strings excluded.
pub fn estimate(json: &str) -> u64 {
    let (mut chars, mut in_str, mut esc) = (0u64, false, false);
    for c in json.chars() {
        if in_str {
            chars += 1;
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            chars += 1;
            in_str = c == '"';
        }
    }
    chars.div_ceil(4)
}

/// contract §3's calibration ratio N/D as a reduced-free pair: provider/estimated growth clamped to
/// [1/4, 4], 1 while the estimated growth is under 1,000 or under `fixed`.
pub fn ratio(provider_growth: u64, est_growth: u64, fixed: bool) -> (u128, u128) {
    let (n, d) = (provider_growth as u128, est_growth as u128);
    if fixed || d < 1000 {
        (1, 1)
    } else if n > 4 * d {
        (4, 1)
    } else if 4 * n < d {
        (1, 4)
    } else {
        (n, d)
    }
}

/// `d × n / den` rounded to the nearest integer, halves away from zero (exact, in i128/u128).
pub fn scale(d: i128, (n, den): (u128, u128)) -> i128 {
    let num = d.unsigned_abs() * n;
    let q = num / den;
    let q = if 2 * (num % den) >= den { q + 1 } else { q };
    if d < 0 { -(q as i128) } else { q as i128 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_reader_follows_the_definition() {
        assert!(parse(br#"{"a":"\ud800"}"#).is_some());
        assert!(parse(b"{\"a\":\"\xff\"}").is_none());
        assert!(parse(br#"{"a":01}"#).is_none());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(deep.as_bytes()).is_some());
        let f = frame(br#"{"type":"t","extras":{"x\ud800":1,"parent_tool_use_id":"p"},"seq":4}"#)
            .unwrap();
        assert!(f.subagent && f.seq == Some(4) && f.kind.as_deref() == Some("t"));
        assert_eq!(scale(7, (3, 2)), 11);
        assert_eq!(scale(-7, (3, 2)), -11);
        assert_eq!(ratio(9000, 1000, false), (4, 1));
    }
}
