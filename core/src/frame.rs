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

/// The one-pass reader behind [`FrameView::parse`]: a JSON validator with exactly the
/// acceptance of [`FrameView::parse_serde`], that hands the top-level fields the views read
/// to the same [`set_field`].
///
/// Strings, where a record's bytes are, are scanned 16 bytes at a time (SSE2 on x86_64, eight
/// at a time elsewhere), escapes stepped over within a block; UTF-8 is checked only where the
/// reference checks it (keys, and the values of the fields the views read), and only on the
/// runs of non-ASCII bytes, which are what can be invalid.
mod scan {
    use super::{FrameView, Key, set_field};

    pub enum Outcome {
        /// The frame was read into the view given.
        Frame,
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
        /// Use AVX2 (the CPU has it; std caches the check).
        #[cfg(target_arch = "x86_64")]
        avx2: bool,
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

        /// The rest of a string whose opening quote was eaten, through its closing quote;
        /// true when it holds an escape. Escapes are checked as serde_json skips them
        /// (`\uXXXX` needs four hex digits, surrogates are not paired); control characters
        /// are refused; with `utf8`, so is invalid UTF-8.
        #[inline]
        fn string(&mut self, utf8: bool) -> Res<bool> {
            #[cfg(target_arch = "x86_64")]
            if !self.portable {
                if self.avx2 {
                    // SAFETY: the CPU has AVX2.
                    return unsafe { self.string_avx2(utf8) };
                }
                return self.string_sse2(utf8);
            }
            self.string_portable(utf8)
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

        /// Checks the run of non-ASCII bytes at `at` as UTF-8; returns where it ends. ASCII
        /// bytes stand alone in UTF-8, so a text is valid exactly when each such run is.
        #[cold]
        fn utf8_run(&self, at: usize) -> Res<usize> {
            let end = self.b[at..]
                .iter()
                .position(|c| *c < 0x80)
                .map_or(self.b.len(), |n| at + n);
            match std::str::from_utf8(&self.b[at..end]) {
                Ok(_) => Ok(end),
                Err(_) => Err(Bad),
            }
        }

        fn string_portable(&mut self, utf8: bool) -> Res<bool> {
            let mut escaped = false;
            loop {
                let (at, high) = find_special(self.b, self.i);
                if utf8 && high < at {
                    self.i = self.utf8_run(high)?;
                    continue;
                }
                match self.b.get(at) {
                    Some(b'"') => {
                        self.i = at + 1;
                        return Ok(escaped);
                    }
                    Some(b'\\') => {
                        escaped = true;
                        self.i = self.escape_end(at)?;
                    }
                    // A control character, or the end.
                    _ => return Err(Bad),
                }
            }
        }

        /// [`Scanner::string_portable`] with SSE2, 16 bytes at a time: blocks with nothing to
        /// look at are skipped in a tight loop; in a block that has something, every quote,
        /// backslash and control character comes out of one compare and escapes are stepped
        /// over inside the block.
        #[cfg(target_arch = "x86_64")]
        fn string_sse2(&mut self, utf8: bool) -> Res<bool> {
            let b = self.b;
            let mut i = self.i;
            let mut escaped = false;
            // Bytes ≥ 0x80 are looked at only when UTF-8 is checked.
            let high_matters = if utf8 { u32::MAX } else { 0 };
            'block: loop {
                let (mut hits, mut high, whole) = loop {
                    if i + 16 > b.len() {
                        let (h, g) = tail16(b, i);
                        break (h, g & high_matters, false);
                    }
                    let (h, g) = block16(b, i);
                    let g = g & high_matters;
                    if h | g != 0 {
                        break (h, g, true);
                    }
                    i += 16;
                };
                loop {
                    let k = if hits != 0 { hits.trailing_zeros() } else { 16 };
                    let before = high & ((1u32 << k) - 1);
                    if before != 0 {
                        i = self.utf8_run(i + before.trailing_zeros() as usize)?;
                        continue 'block;
                    }
                    if hits == 0 {
                        if !whole {
                            return Err(Bad); // the end, inside the string
                        }
                        i += 16;
                        continue 'block;
                    }
                    let at = i + k as usize;
                    match b[at] {
                        b'"' => {
                            self.i = at + 1;
                            return Ok(escaped);
                        }
                        b'\\' => {
                            escaped = true;
                            let next = self.escape_end(at)?;
                            let step = next - i;
                            if step >= 16 {
                                i = next;
                                continue 'block;
                            }
                            let done = !((1u32 << step) - 1);
                            hits &= done;
                            high &= done;
                        }
                        _ => return Err(Bad),
                    }
                }
            }
        }

        /// [`Scanner::string_sse2`] 32 bytes at a time; the last fewer than 32 bytes of the
        /// record go to it.
        ///
        /// # Safety
        /// The CPU must have AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn string_avx2(&mut self, utf8: bool) -> Res<bool> {
            use std::arch::x86_64::*;
            let b = self.b;
            let mut i = self.i;
            let mut escaped = false;
            let high_matters = if utf8 { u32::MAX } else { 0 };
            let quote = _mm256_set1_epi8(b'"' as i8);
            let backslash = _mm256_set1_epi8(b'\\' as i8);
            let control = _mm256_set1_epi8(0x1f);
            'block: loop {
                let (mut hits, mut high) = loop {
                    if i + 32 > b.len() {
                        self.i = i;
                        return self.string_sse2(utf8).map(|e| e || escaped);
                    }
                    // SAFETY: the load reads 32 bytes inside `b`.
                    let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(i) as *const __m256i) };
                    let special = _mm256_or_si256(
                        _mm256_or_si256(
                            _mm256_cmpeq_epi8(v, quote),
                            _mm256_cmpeq_epi8(v, backslash),
                        ),
                        _mm256_cmpeq_epi8(_mm256_min_epu8(v, control), v),
                    );
                    let h = _mm256_movemask_epi8(special) as u32;
                    let g = _mm256_movemask_epi8(v) as u32 & high_matters;
                    if h | g != 0 {
                        break (h, g);
                    }
                    i += 32;
                };
                loop {
                    let before = if hits != 0 {
                        high & ((1u32 << hits.trailing_zeros()) - 1)
                    } else {
                        high
                    };
                    if before != 0 {
                        i = self.utf8_run(i + before.trailing_zeros() as usize)?;
                        continue 'block;
                    }
                    if hits == 0 {
                        i += 32;
                        continue 'block;
                    }
                    let at = i + hits.trailing_zeros() as usize;
                    match b[at] {
                        b'"' => {
                            self.i = at + 1;
                            return Ok(escaped);
                        }
                        b'\\' => {
                            escaped = true;
                            let next = self.escape_end(at)?;
                            let step = next - i;
                            if step >= 32 {
                                i = next;
                                continue 'block;
                            }
                            let done = !((1u32 << step) - 1);
                            hits &= done;
                            high &= done;
                        }
                        _ => return Err(Bad),
                    }
                }
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
        fn member_key(&mut self, utf8: bool) -> Res<()> {
            self.eat(b'"')?;
            self.string(utf8)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            Ok(())
        }

        /// One value at the cursor (no whitespace before it), nested to any depth; with
        /// `utf8`, its strings must be valid UTF-8.
        fn value(&mut self, utf8: bool) -> Res<()> {
            // Open containers, innermost last: true for an object.
            let mut stack = BitStack::default();
            loop {
                match self.peek().ok_or(Bad)? {
                    b'"' => {
                        self.i += 1;
                        self.string(utf8)?;
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
                                self.member_key(utf8)?;
                            }
                            continue;
                        }
                    }
                    _ => return Err(Bad),
                }
                // A value is complete: close what it completes, up to the next member.
                loop {
                    let Some(object) = stack.top() else {
                        return Ok(());
                    };
                    self.ws();
                    match self.peek() {
                        Some(b',') => {
                            self.i += 1;
                            self.ws();
                            if object {
                                self.member_key(utf8)?;
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
            if self.depth > 0 && self.depth.is_multiple_of(64) {
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
            if self.depth > 0 && self.depth.is_multiple_of(64) {
                self.word = self.spill.pop().unwrap_or(0);
            }
        }
    }

    /// Quotes, backslashes and control characters of 16 bytes, and bytes ≥ 0x80, as masks.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn masks16(v: std::arch::x86_64::__m128i) -> (u32, u32) {
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
            (
                _mm_movemask_epi8(special) as u32,
                _mm_movemask_epi8(v) as u32,
            )
        }
    }

    /// [`masks16`] of `b[i..i + 16]`, which must be in `b`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn block16(b: &[u8], i: usize) -> (u32, u32) {
        use std::arch::x86_64::*;
        assert!(i + 16 <= b.len());
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads 16 bytes inside `b`.
        masks16(unsafe { _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i) })
    }

    /// [`masks16`] of the fewer than 16 bytes from `i` to the end of `b`.
    #[cfg(target_arch = "x86_64")]
    #[cold]
    fn tail16(b: &[u8], i: usize) -> (u32, u32) {
        let rem = b.len() - i;
        if b.len() >= 16 {
            // The last 16 bytes of `b`, shifted so that bit 0 is byte `i`.
            let (h, g) = block16(b, b.len() - 16);
            let shift = 16 - rem as u32;
            (h >> shift, g >> shift)
        } else {
            let mut tail = [0u8; 16];
            tail[..rem].copy_from_slice(&b[i..]);
            let keep = (1u32 << rem) - 1;
            let (h, g) = block16(&tail, 0);
            (h & keep, g & keep)
        }
    }

    /// Which string scan to use.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Level {
        /// The best the CPU has.
        Best,
        /// SSE2 even where AVX2 is there (tests).
        #[cfg_attr(not(test), allow(dead_code))]
        Sse2,
        /// Eight bytes at a time, as on wasm32.
        Portable,
    }

    /// Reads a record the way [`FrameView::parse_serde`] does, into `v` (a default view).
    pub fn frame<'a>(bytes: &'a [u8], level: Level, v: &mut FrameView<'a>) -> Outcome {
        match object(bytes, level, v) {
            Ok(true) => Outcome::Frame,
            Ok(false) => Outcome::EscapedKey,
            Err(Bad) => Outcome::Invalid,
        }
    }

    /// Fills `v`; false when a top-level key carries an escape.
    fn object<'a>(bytes: &'a [u8], level: Level, v: &mut FrameView<'a>) -> Res<bool> {
        let mut s = Scanner {
            b: bytes,
            i: 0,
            portable: level == Level::Portable,
            #[cfg(target_arch = "x86_64")]
            avx2: level == Level::Best && std::is_x86_feature_detected!("avx2"),
        };
        s.ws();
        s.eat(b'{')?;
        s.ws();
        if s.peek() == Some(b'}') {
            s.i += 1;
        } else {
            loop {
                s.eat(b'"')?;
                let start = s.i;
                if s.string(true)? {
                    return Ok(false);
                }
                // SAFETY: `string(true)` checked the key as UTF-8.
                let name = unsafe { std::str::from_utf8_unchecked(&bytes[start..s.i - 1]) };
                let key = Key::of(name);
                s.ws();
                s.eat(b':')?;
                s.ws();
                let start = s.i;
                let read = key != Key::Other;
                s.value(read)?;
                if read {
                    // SAFETY: `value(true)` checked its strings as UTF-8, and JSON outside
                    // strings is ASCII.
                    let raw = unsafe { std::str::from_utf8_unchecked(&bytes[start..s.i]) };
                    set_field(v, bytes, key, raw);
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
        Ok(true)
    }

    /// The index of the first `"`, `\` or control character at or after `i` (or the end),
    /// and of the first byte ≥ 0x80 before it (or `usize::MAX`). Eight bytes at a time
    /// (Mycroft's zero-byte test: the lowest flagged byte is exact).
    #[inline]
    fn find_special(b: &[u8], mut i: usize) -> (usize, usize) {
        const ONES: u64 = u64::MAX / 255;
        const HIGH: u64 = ONES * 0x80;
        let mut first_high = usize::MAX;
        while i + 8 <= b.len() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&b[i..i + 8]);
            let c = u64::from_le_bytes(word);
            let zero = |x: u64| x.wrapping_sub(ONES) & !x;
            let hits = (zero(c ^ (ONES * b'"' as u64))
                | zero(c ^ (ONES * b'\\' as u64))
                | (c.wrapping_sub(ONES * 0x20) & !c))
                & HIGH;
            if c & HIGH != 0 && first_high == usize::MAX {
                first_high = i + ((c & HIGH).trailing_zeros() / 8) as usize;
            }
            if hits != 0 {
                return (i + (hits.trailing_zeros() / 8) as usize, first_high);
            }
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                break;
            }
            if c >= 0x80 && first_high == usize::MAX {
                first_high = i;
            }
            i += 1;
        }
        (i, first_high)
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
