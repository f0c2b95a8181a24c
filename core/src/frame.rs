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
        match scan::frame(bytes, false) {
            scan::Outcome::Frame(v) => Some(v),
            scan::Outcome::Invalid => None,
            scan::Outcome::EscapedKey => Self::parse_serde(bytes),
        }
    }

    /// [`FrameView::parse`] with its portable string scan (what wasm32 runs), for tests that
    /// compare it with the vector one.
    #[doc(hidden)]
    pub fn parse_portable(bytes: &'a [u8]) -> Option<FrameView<'a>> {
        match scan::frame(bytes, true) {
            scan::Outcome::Frame(v) => Some(v),
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

/// The one-pass reader behind [`FrameView::parse`]: a JSON validator with exactly the
/// acceptance of [`FrameView::parse_serde`], that hands the top-level fields the views read
/// to the same [`set_field`]. Strings, where the bytes are, are skipped 16 bytes at a time.
mod scan {
    use super::{FrameView, Key, set_field};

    pub enum Outcome<'a> {
        Frame(FrameView<'a>),
        Invalid,
        /// A top-level key carries an escape: the reference reader decides.
        EscapedKey,
    }

    /// Not JSON as the reference reader takes it.
    struct Bad;

    type Res<T> = Result<T, Bad>;

    struct Scanner<'a> {
        b: &'a [u8],
        i: usize,
        /// Use the portable string scan even where a vector one exists (tests compare them).
        portable: bool,
    }

    /// What a string or value held.
    #[derive(Clone, Copy)]
    struct Seen {
        escaped: bool,
        /// No byte ≥ 0x80: valid UTF-8 without a check.
        ascii: bool,
    }

    impl<'a> Scanner<'a> {
        #[inline]
        fn peek(&self) -> Option<u8> {
            self.b.get(self.i).copied()
        }

        #[inline]
        fn ws(&mut self) {
            while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
                self.i += 1;
            }
        }

        #[inline]
        fn eat(&mut self, c: u8) -> Res<()> {
            if self.peek() == Some(c) {
                self.i += 1;
                Ok(())
            } else {
                Err(Bad)
            }
        }

        /// The rest of a string whose opening quote was eaten, through its closing quote.
        /// Escapes are checked as serde_json skips them (`\uXXXX` needs four hex digits,
        /// surrogates are not paired); control characters are refused.
        #[inline]
        fn string(&mut self, seen: &mut Seen) -> Res<()> {
            #[cfg(target_arch = "x86_64")]
            if !self.portable {
                return self.string_sse2(seen);
            }
            self.string_portable(seen)
        }

        /// The end of the escape whose backslash is at `at`.
        #[inline]
        fn escape_end(&self, at: usize) -> Res<usize> {
            match self.b.get(at + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
                Some(b'u') => {
                    let hex = self.b.get(at + 2..at + 6).ok_or(Bad)?;
                    if hex.iter().all(u8::is_ascii_hexdigit) {
                        Ok(at + 6)
                    } else {
                        Err(Bad)
                    }
                }
                _ => Err(Bad),
            }
        }

        fn string_portable(&mut self, seen: &mut Seen) -> Res<()> {
            loop {
                self.i = find_special(self.b, self.i, &mut seen.ascii);
                match self.peek() {
                    Some(b'"') => {
                        self.i += 1;
                        return Ok(());
                    }
                    Some(b'\\') => {
                        seen.escaped = true;
                        self.i = self.escape_end(self.i)?;
                    }
                    // A control character, or the end.
                    _ => return Err(Bad),
                }
            }
        }

        /// [`Scanner::string_portable`] with SSE2: a string that ends within 16 bytes is read
        /// with one compare; a longer one 64 bytes at a time, where escapes are resolved
        /// without a branch per escape (simdjson's odd-backslash-run trick) and only the
        /// escaped characters are looked at one by one.
        #[cfg(target_arch = "x86_64")]
        fn string_sse2(&mut self, seen: &mut Seen) -> Res<()> {
            use std::arch::x86_64::*;
            let b = self.b;
            let i = self.i;
            let rem = b.len() - i;
            // SAFETY: SSE2 is part of the x86_64 baseline; the load reads 16 bytes inside `b`.
            if rem >= 16 {
                let (hits, high) = unsafe {
                    let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                    (special16(v) as u32, _mm_movemask_epi8(v) as u32)
                };
                if hits != 0 {
                    let k = hits.trailing_zeros() as usize;
                    if b[i + k] == b'"' {
                        if high & ((1u32 << k) - 1) != 0 {
                            seen.ascii = false;
                        }
                        self.i = i + k + 1;
                        return Ok(());
                    }
                }
            }
            self.string_blocks(seen)
        }

        #[cfg(target_arch = "x86_64")]
        fn string_blocks(&mut self, seen: &mut Seen) -> Res<()> {
            let b = self.b;
            let mut i = self.i;
            // Whether the block's first byte is escaped by a backslash run ending the last one.
            let mut carry = 0u64;
            loop {
                let rem = b.len() - i;
                let m = if rem >= 64 {
                    Masks::of(&b[i..i + 64])
                } else {
                    // Zero padding reads as control characters: a string running past the
                    // end is refused by the control check.
                    let mut tail = [0u8; 64];
                    tail[..rem].copy_from_slice(&b[i..]);
                    Masks::of(&tail)
                };
                let escaped = find_escaped(m.backslash, &mut carry);
                let ends = m.quote & !escaped;
                // The bytes of the string in this block: those before its closing quote.
                let inside = if ends != 0 {
                    (ends & ends.wrapping_neg()) - 1
                } else {
                    u64::MAX
                };
                if m.control & inside != 0 {
                    return Err(Bad);
                }
                if m.high & inside != 0 {
                    seen.ascii = false;
                }
                let mut esc = escaped & inside;
                if esc != 0 {
                    seen.escaped = true;
                    while esc != 0 {
                        // Inside and no control character: within `b`.
                        let at = i + esc.trailing_zeros() as usize;
                        match b[at] {
                            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                            b'u' => {
                                let hex = b.get(at + 1..at + 5).ok_or(Bad)?;
                                if !hex.iter().all(u8::is_ascii_hexdigit) {
                                    return Err(Bad);
                                }
                            }
                            _ => return Err(Bad),
                        }
                        esc &= esc - 1;
                    }
                }
                if ends != 0 {
                    self.i = i + ends.trailing_zeros() as usize + 1;
                    return Ok(());
                }
                i += 64;
            }
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        fn number(&mut self) -> Res<()> {
            if self.peek() == Some(b'-') {
                self.i += 1;
            }
            match self.peek() {
                Some(b'0') => {
                    self.i += 1;
                    if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        return Err(Bad);
                    }
                }
                Some(b'1'..=b'9') => {
                    self.i += 1;
                    self.digits();
                }
                _ => return Err(Bad),
            }
            if self.peek() == Some(b'.') {
                self.i += 1;
                if self.digits() == 0 {
                    return Err(Bad);
                }
            }
            if let Some(b'e' | b'E') = self.peek() {
                self.i += 1;
                if let Some(b'+' | b'-') = self.peek() {
                    self.i += 1;
                }
                if self.digits() == 0 {
                    return Err(Bad);
                }
            }
            Ok(())
        }

        #[inline]
        fn digits(&mut self) -> usize {
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.i += 1;
            }
            self.i - start
        }

        #[inline]
        fn literal(&mut self, word: &[u8]) -> Res<()> {
            if self.b.get(self.i..self.i + word.len()) == Some(word) {
                self.i += word.len();
                Ok(())
            } else {
                Err(Bad)
            }
        }

        /// `"key" :` inside a nested object, then the whitespace before its value.
        fn member_key(&mut self, seen: &mut Seen) -> Res<()> {
            self.eat(b'"')?;
            self.string(seen)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            Ok(())
        }

        /// One value at the cursor (no whitespace before it), nested to any depth.
        fn value(&mut self) -> Res<Seen> {
            let mut seen = Seen {
                escaped: false,
                ascii: true,
            };
            // Open containers, innermost last: true for an object.
            let mut stack = BitStack::default();
            loop {
                match self.peek().ok_or(Bad)? {
                    b'"' => {
                        self.i += 1;
                        self.string(&mut seen)?;
                    }
                    b'-' | b'0'..=b'9' => self.number()?,
                    b'n' => self.literal(b"null")?,
                    b't' => self.literal(b"true")?,
                    b'f' => self.literal(b"false")?,
                    open @ (b'[' | b'{') => {
                        self.i += 1;
                        self.ws();
                        let close = if open == b'[' { b']' } else { b'}' };
                        if self.peek() == Some(close) {
                            self.i += 1;
                        } else {
                            stack.push(open == b'{');
                            if open == b'{' {
                                self.member_key(&mut seen)?;
                            }
                            continue;
                        }
                    }
                    _ => return Err(Bad),
                }
                // A value is complete: close what it completes, up to the next member.
                loop {
                    let Some(object) = stack.top() else {
                        return Ok(seen);
                    };
                    self.ws();
                    match self.peek() {
                        Some(b',') => {
                            self.i += 1;
                            self.ws();
                            if object {
                                self.member_key(&mut seen)?;
                            }
                            break;
                        }
                        Some(b'}') if object => {
                            self.i += 1;
                            stack.pop();
                        }
                        Some(b']') if !object => {
                            self.i += 1;
                            stack.pop();
                        }
                        _ => return Err(Bad),
                    }
                }
            }
        }
    }

    /// A stack of bits, in a word until 64 deep.
    #[derive(Default)]
    struct BitStack {
        word: u64,
        depth: usize,
        spill: Vec<u64>,
    }

    impl BitStack {
        #[inline]
        fn push(&mut self, bit: bool) {
            if self.depth > 0 && self.depth % 64 == 0 {
                self.spill.push(self.word);
                self.word = 0;
            }
            self.word = (self.word << 1) | bit as u64;
            self.depth += 1;
        }
        #[inline]
        fn top(&self) -> Option<bool> {
            (self.depth > 0).then_some(self.word & 1 == 1)
        }
        #[inline]
        fn pop(&mut self) {
            self.depth -= 1;
            self.word >>= 1;
            if self.depth > 0 && self.depth % 64 == 0 {
                self.word = self.spill.pop().unwrap_or(0);
            }
        }
    }

    /// Quotes, backslashes and control characters of 16 bytes, as a bit mask.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    unsafe fn special16(v: std::arch::x86_64::__m128i) -> i32 {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            let special = _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
                // v ≤ 0x1f, unsigned.
                _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v),
            );
            _mm_movemask_epi8(special)
        }
    }

    /// One bit per byte of a 64-byte block.
    #[cfg(target_arch = "x86_64")]
    struct Masks {
        quote: u64,
        backslash: u64,
        control: u64,
        high: u64,
    }

    #[cfg(target_arch = "x86_64")]
    impl Masks {
        #[inline]
        fn of(block: &[u8]) -> Masks {
            use std::arch::x86_64::*;
            assert!(block.len() >= 64);
            let mut m = Masks {
                quote: 0,
                backslash: 0,
                control: 0,
                high: 0,
            };
            // SAFETY: SSE2 is part of the x86_64 baseline; the loads read 64 bytes of `block`.
            unsafe {
                let quote = _mm_set1_epi8(b'"' as i8);
                let backslash = _mm_set1_epi8(b'\\' as i8);
                let control = _mm_set1_epi8(0x1f);
                for k in 0..4 {
                    let v = _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
                    let bit = |x: __m128i| (_mm_movemask_epi8(x) as u32 as u64) << (16 * k);
                    m.quote |= bit(_mm_cmpeq_epi8(v, quote));
                    m.backslash |= bit(_mm_cmpeq_epi8(v, backslash));
                    m.control |= bit(_mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
                    m.high |= bit(v);
                }
            }
            m
        }
    }

    /// The bytes a backslash escapes: the byte after each run of backslashes of odd length
    /// (`carry` says a run ended the last block with the first byte of this one escaped).
    /// simdjson's `find_escaped_branchless`.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn find_escaped(backslash: u64, carry: &mut u64) -> u64 {
        const EVEN: u64 = 0x5555_5555_5555_5555;
        // A backslash that is itself escaped starts nothing.
        let backslash = backslash & !*carry;
        let follows_escape = (backslash << 1) | *carry;
        let odd_starts = backslash & !EVEN & !follows_escape;
        let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
        *carry = overflow as u64;
        let invert = even_starts << 1;
        (EVEN ^ invert) & follows_escape
    }

    /// Reads a record the way [`FrameView::parse_serde`] does.
    pub fn frame(bytes: &[u8], portable: bool) -> Outcome<'_> {
        match object(bytes, portable) {
            Ok(Some(v)) => Outcome::Frame(v),
            Ok(None) => Outcome::EscapedKey,
            Err(Bad) => Outcome::Invalid,
        }
    }

    fn object(bytes: &[u8], portable: bool) -> Res<Option<FrameView<'_>>> {
        let mut s = Scanner {
            b: bytes,
            i: 0,
            portable,
        };
        let mut v = FrameView::default();
        s.ws();
        s.eat(b'{')?;
        s.ws();
        if s.peek() == Some(b'}') {
            s.i += 1;
        } else {
            loop {
                s.eat(b'"')?;
                let start = s.i;
                let mut key_seen = Seen {
                    escaped: false,
                    ascii: true,
                };
                s.string(&mut key_seen)?;
                if key_seen.escaped {
                    return Ok(None);
                }
                let key_bytes = &bytes[start..s.i - 1];
                let key = if key_seen.ascii {
                    // The names the views read are all ASCII.
                    match std::str::from_utf8(key_bytes) {
                        Ok(name) => Key::of(name),
                        Err(_) => return Err(Bad),
                    }
                } else {
                    std::str::from_utf8(key_bytes).map_err(|_| Bad)?;
                    Key::Other
                };
                s.ws();
                s.eat(b':')?;
                s.ws();
                let start = s.i;
                let seen = s.value()?;
                if key != Key::Other {
                    let raw = &bytes[start..s.i];
                    let raw = if seen.ascii {
                        // SAFETY: bytes below 0x80 are valid UTF-8.
                        unsafe { std::str::from_utf8_unchecked(raw) }
                    } else {
                        std::str::from_utf8(raw).map_err(|_| Bad)?
                    };
                    set_field(&mut v, bytes, key, raw);
                }
                s.ws();
                match s.peek() {
                    Some(b',') => {
                        s.i += 1;
                        s.ws();
                    }
                    Some(b'}') => {
                        s.i += 1;
                        break;
                    }
                    _ => return Err(Bad),
                }
            }
        }
        s.ws();
        if s.i != bytes.len() {
            return Err(Bad);
        }
        v.bytes = bytes;
        Ok(Some(v))
    }

    /// The index of the first `"`, `\` or control character at or after `i` (or the end);
    /// clears `ascii` when a byte ≥ 0x80 comes before it. Eight bytes at a time (Mycroft's
    /// zero-byte test: the lowest flagged byte is exact).
    #[inline]
    fn find_special(b: &[u8], mut i: usize, ascii: &mut bool) -> usize {
        const ONES: u64 = u64::MAX / 255;
        const HIGH: u64 = ONES * 0x80;
        while i + 8 <= b.len() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&b[i..i + 8]);
            let c = u64::from_le_bytes(word);
            let zero = |x: u64| x.wrapping_sub(ONES) & !x;
            let hits = (zero(c ^ (ONES * b'"' as u64))
                | zero(c ^ (ONES * b'\\' as u64))
                | (c.wrapping_sub(ONES * 0x20) & !c))
                & HIGH;
            if hits != 0 {
                let k = hits.trailing_zeros() / 8;
                if c & HIGH & ((1u64 << (8 * k)) - 1) != 0 {
                    *ascii = false;
                }
                return i + k as usize;
            }
            if c & HIGH != 0 {
                *ascii = false;
            }
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                return i;
            }
            if c >= 0x80 {
                *ascii = false;
            }
            i += 1;
        }
        i
    }
}

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
}
