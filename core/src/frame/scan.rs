//! The one-pass reader behind [`FrameView::parse`]: a JSON validator with exactly the
//! acceptance of [`FrameView::parse_serde`], that hands the top-level fields the views read
//! to the same [`set_field`].
//!
//! Strings, where a record's bytes are, are scanned 16 bytes at a time (SSE2 on x86_64, eight
//! at a time elsewhere), escapes stepped over within a block; UTF-8 is checked only where the
//! reference checks it (keys, and the values of the fields the views read), and only on the
//! runs of non-ASCII bytes, which are what can be invalid.

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
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
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
                    _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
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
