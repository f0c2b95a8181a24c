//! The kernels: a JSON string's end (escapes checked, control characters refused, UTF-8
//! checked on the runs of non-ASCII bytes, which are the only bytes that can be invalid) and
//! the estimate's plain run; each written once over [`Block`], wrapped per instruction set.

use std::marker::PhantomData;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use super::block::Simd128;
#[cfg(target_arch = "x86_64")]
use super::block::{Avx2, Sse2};
use super::block::{Block, Isa, Kind, Swar, low_bits, tail};

/// Not JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad;

pub(crate) type Res<T> = Result<T, Bad>;

/// The end of the escape whose backslash is at `at`: `\uXXXX` needs four hex digits (a lone
/// surrogate is valid JSON), the others one of `"\/bfnrt`.
#[inline(always)]
fn escape_end(b: &[u8], at: usize) -> Res<usize> {
    match b.get(at + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
        Some(b'u') => match b.get(at + 2..at + 6) {
            Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => Ok(at + 6),
            _ => Err(Bad),
        },
        _ => Err(Bad),
    }
}

/// Checks the run of non-ASCII bytes at `at` as UTF-8 and returns where it ends. ASCII bytes
/// stand alone in UTF-8, so a text is valid exactly when each such run is.
#[cold]
fn utf8_run(b: &[u8], at: usize) -> Res<usize> {
    let end = b[at..]
        .iter()
        .position(|c| *c < 0x80)
        .map_or(b.len(), |n| at + n);
    match std::str::from_utf8(&b[at..end]) {
        Ok(_) => Ok(end),
        Err(_) => Err(Bad),
    }
}

/// The attention mask of the block at `i` (its bytes past the text's end left out); `Bad`
/// when the text ends there with nothing to look at, inside the string.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn block_mask<B: Block>(b: &[u8], i: usize) -> Res<u64> {
    if i + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `i` are inside `b`.
        return Ok(unsafe { B::load(b.as_ptr().add(i)) }.attention());
    }
    // SAFETY: the caller vouches for the instruction set.
    let (blk, shift, keep) = unsafe { tail::<B>(b, i) };
    match (blk.attention() >> shift) & keep {
        0 => Err(Bad),
        m => Ok(m),
    }
}

/// The attention mask of the 64 bytes from `i`, a block at a time. (Its methods are called
/// here, never passed as functions: a function value would not inline into a `target_feature`
/// caller, nor would the block's intrinsics then.)
///
/// # Safety
/// 64 bytes from `i` are inside `b`, and the CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn window<B: Block>(b: &[u8], i: usize) -> u64 {
    let mut m = 0;
    for k in 0..64 / B::LEN {
        // SAFETY: the caller vouches for the 64 bytes and the instruction set.
        m |= unsafe { B::load(b.as_ptr().add(i + k * B::LEN)) }.attention() << (k * B::LEN);
    }
    m
}

/// From `i`, just after a string's opening quote: the index after its closing quote, and
/// whether it holds an escape. Each byte that needs a look (a quote, an escape, a control
/// character, the start of a non-ASCII run) is found by the masks, dealt with, and the scan
/// goes on after it: a block at a time for the first 64 bytes (keys, ids and stamps end
/// there), then 64 bytes at a time.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn string<B: Block>(b: &[u8], mut i: usize) -> Res<(usize, bool)> {
    let mut escaped = false;
    loop {
        // SAFETY (all three): the caller vouches for the instruction set; the window has its
        // 64 bytes.
        let at = 'found: {
            for _ in 0..64 / B::LEN {
                let m = unsafe { block_mask::<B>(b, i) }?;
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += B::LEN;
            }
            while i + 64 <= b.len() {
                let m = unsafe { window::<B>(b, i) };
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += 64;
            }
            loop {
                let m = unsafe { block_mask::<B>(b, i) }?;
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += B::LEN;
            }
        };
        // SAFETY: a mask marks bytes inside `b` only.
        let c = unsafe { *b.get_unchecked(at) };
        if c == b'"' {
            return Ok((at + 1, escaped));
        }
        match c {
            b'\\' => {
                escaped = true;
                i = escape_end(b, at)?;
            }
            0x80.. => i = utf8_run(b, at)?,
            _ => return Err(Bad), // a control character
        }
    }
}

/// From `i`, inside a string: the index of the first `"` or `\` (or the end), and how many
/// UTF-8 continuation bytes come before it.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn plain_run<B: Block>(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut continuation = 0;
    while i + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `i` are inside `b`.
        let blk = unsafe { B::load(b.as_ptr().add(i)) };
        let hits = blk.quote_or_backslash();
        let cont = blk.continuation();
        if hits != 0 {
            let k = hits.trailing_zeros();
            continuation += (cont & low_bits(k)).count_ones() as usize;
            return (i + k as usize, continuation);
        }
        continuation += cont.count_ones() as usize;
        i += B::LEN;
    }
    if i < b.len() {
        // SAFETY: the caller vouches for the instruction set.
        let (blk, shift, keep) = unsafe { tail::<B>(b, i) };
        let hits = (blk.quote_or_backslash() >> shift) & keep;
        let cont = (blk.continuation() >> shift) & keep;
        let k = if hits != 0 {
            hits.trailing_zeros()
        } else {
            (b.len() - i) as u32
        };
        continuation += (cont & low_bits(k)).count_ones() as usize;
        return (i + k as usize, continuation);
    }
    (i, continuation)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn string_avx2(b: &[u8], i: usize) -> Res<(usize, bool)> {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { string::<Avx2>(b, i) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn plain_run_avx2(b: &[u8], i: usize) -> (usize, usize) {
    // SAFETY: as above.
    unsafe { plain_run::<Avx2>(b, i) }
}

/// Runs a kernel on `isa`'s blocks: AVX2 through its `target_feature` wrapper, SSE2 and SIMD128
/// directly (the x86_64 baseline; compiled in), SWAR everywhere.
macro_rules! per_isa {
    ($isa:expr, $kernel:ident, $avx2:ident, $($arg:expr),*) => {
        match $isa.0 {
            // SAFETY: an `Isa` of AVX2 is only made where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { $avx2($($arg),*) },
            // SAFETY: SSE2 is part of the x86_64 baseline.
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => unsafe { $kernel::<Sse2>($($arg),*) },
            // SAFETY: the module is built with simd128, which the engine checks when it loads it.
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            Kind::Simd128 => unsafe { $kernel::<Simd128>($($arg),*) },
            // SAFETY: SWAR needs no instruction set.
            Kind::Swar => unsafe { $kernel::<Swar>($($arg),*) },
        }
    };
}

/// [`string`] on `isa`.
#[inline]
pub(crate) fn string_end(isa: Isa, b: &[u8], i: usize) -> Res<(usize, bool)> {
    per_isa!(isa, string, string_avx2, b, i)
}

/// [`plain_run`] on `isa`.
#[inline]
pub(crate) fn plain(isa: Isa, b: &[u8], i: usize) -> (usize, usize) {
    per_isa!(isa, plain_run, plain_run_avx2, b, i)
}

/// The blocks every machine that runs this build has: SSE2 on x86_64 (its baseline), SIMD128
/// in a wasm32 build with it, SWAR elsewhere.
#[cfg(target_arch = "x86_64")]
pub(crate) type Base = Sse2;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) type Base = Simd128;
#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
pub(crate) type Base = Swar;

// The cursor's steps are functions of the text and an index that return the next index: the
// index stays in a wasm local (or a register) through a whole record. A cursor kept in a
// struct behind `&mut` lives in linear memory once any step is not inlined, and every byte
// read then reloads the text and the index from memory (several times the instructions).

/// The index of the first byte at or after `i` that is no JSON whitespace.
#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The index after the run of ASCII digits at `i`.
#[inline(always)]
fn digits(b: &[u8], mut i: usize) -> usize {
    // Eight bytes at a time while eight are left: the first byte that is no digit is the
    // lowest flagged one (a carry from a flagged byte reaches only the bytes after it).
    const ONES: u64 = u64::MAX / 255;
    while let Some(w) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        let t = ((x & (ONES * 0xF0)) ^ (ONES * 0x30))
            | ((x.wrapping_add(ONES * 0x06) & (ONES * 0xF0)) ^ (ONES * 0x30));
        let flagged = (((t & (ONES * 0x7F)) + ONES * 0x7F) | t) & (ONES * 0x80);
        if flagged != 0 {
            return i + flagged.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() && b[i].wrapping_sub(b'0') < 10 {
        i += 1;
    }
    i
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` at `i`: the index after it.
#[inline(always)]
fn number(b: &[u8], mut i: usize) -> Res<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(b, i + 1),
        _ => return Err(Bad),
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(b, i + 1);
        if end == i + 1 {
            return Err(Bad);
        }
        i = end;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(b, i);
        if end == i {
            return Err(Bad);
        }
        i = end;
    }
    Ok(i)
}

/// `true`, `false` or `null` at `i` (its first byte already told which): the index after it.
/// Four bytes compared as one word, not through a slice's `==` (a `memcmp` call in wasm32).
#[inline(always)]
fn literal(b: &[u8], i: usize) -> Res<usize> {
    let word = |at: usize| {
        b.get(at..at + 4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("four bytes")))
    };
    let (at, want, len) = match b.get(i) {
        Some(b't') => (i, u32::from_le_bytes(*b"true"), 4),
        Some(b'n') => (i, u32::from_le_bytes(*b"null"), 4),
        Some(b'f') => (i + 1, u32::from_le_bytes(*b"alse"), 5),
        _ => return Err(Bad),
    };
    if word(at) == Some(want) {
        Ok(i + len)
    } else {
        Err(Bad)
    }
}

/// `"key" :` of a nested object's member, from whitespace before its opening quote, and the
/// whitespace before its value: the value's index.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn member_key<B: Block>(b: &[u8], i: usize) -> Res<usize> {
    let (c, i) = byte_past_ws(b, i)?;
    if c != b'"' {
        return Err(Bad);
    }
    // SAFETY: the caller vouches for the instruction set.
    unsafe { key_rest::<B>(b, i + 1) }
}

/// [`member_key`] from just after the key's opening quote.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn key_rest<B: Block>(b: &[u8], i: usize) -> Res<usize> {
    // SAFETY: the caller vouches for the instruction set.
    let (i, _) = unsafe { string::<B>(b, i) }?;
    colon(b, i)
}

/// The `:` after a key (compact JSON has it right there), and the whitespace around it: the
/// index of the value.
#[inline(always)]
fn colon(b: &[u8], i: usize) -> Res<usize> {
    let i = if b.get(i) == Some(&b':') {
        i + 1
    } else {
        let i = skip_ws(b, i);
        if b.get(i) != Some(&b':') {
            return Err(Bad);
        }
        i + 1
    };
    Ok(match b.get(i) {
        Some(&c) if c > b' ' => i,
        _ => skip_ws(b, i),
    })
}

/// The `:` after whitespace, from `i`: the index after it.
#[cold]
fn colon_after_ws(b: &[u8], i: usize) -> Res<usize> {
    let at = skip_ws(b, i);
    match b.get(at) {
        Some(b':') => Ok(at + 1),
        _ => Err(Bad),
    }
}

/// One value at `i` (no whitespace before it), nested to any depth: the index after it. The
/// depth is a stack of bits on the heap, never the call stack.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn value<B: Block>(b: &[u8], i: usize) -> Res<usize> {
    match b.get(i) {
        // SAFETY: the caller vouches for the instruction set.
        Some(&c) => unsafe { value_at::<B>(b, i, c) },
        None => Err(Bad),
    }
}

/// [`value`] whose first byte, `c` at `i`, is read already.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn value_at<B: Block>(b: &[u8], i: usize, c: u8) -> Res<usize> {
    match c {
        // SAFETY (both): the caller vouches for the instruction set.
        b'"' => Ok(unsafe { string::<B>(b, i + 1) }?.0),
        b'-' | b'0'..=b'9' => number(b, i),
        b'{' | b'[' => unsafe { nested::<B>(b, i) },
        _ => literal(b, i),
    }
}

/// An object or an array at `i`: the index after it.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(never)]
unsafe fn nested<B: Block>(b: &[u8], mut i: usize) -> Res<usize> {
    // The open brackets, a bit each (1 for an object), the innermost lowest: 64 in a word held
    // in a local, the words beyond spilled to the heap (only a push or a pop at a word's edge
    // touches memory).
    let mut word = 0u64;
    let mut depth = 0usize;
    let mut spill: Vec<u64> = Vec::new();
    loop {
        match b.get(i).ok_or(Bad)? {
            b'"' => {
                // SAFETY: the caller vouches for the instruction set.
                i = unsafe { string::<B>(b, i + 1) }?.0;
            }
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            &open @ (b'[' | b'{') => {
                let (c, at) = byte_past_ws(b, i + 1)?;
                let close = if open == b'[' { b']' } else { b'}' };
                if c == close {
                    i = at + 1;
                } else {
                    if depth > 0 && depth.is_multiple_of(64) {
                        spill.push(word);
                        word = 0;
                    }
                    word = (word << 1) | (open == b'{') as u64;
                    depth += 1;
                    i = at;
                    if open == b'{' {
                        if c != b'"' {
                            return Err(Bad);
                        }
                        // SAFETY: as above.
                        i = unsafe { key_rest::<B>(b, at + 1) }?;
                    }
                    continue;
                }
            }
            _ => i = literal(b, i)?,
        }
        // A value is complete: close what it completes, up to the next member.
        loop {
            if depth == 0 {
                return Ok(i);
            }
            let object = word & 1 == 1;
            // Compact JSON's `,"` before an object's next key, compared as one word.
            if object
                && b.get(i..i + 2).map(|p| u16::from_le_bytes([p[0], p[1]]))
                    == Some(u16::from_le_bytes(*b",\""))
            {
                // SAFETY: as above.
                i = unsafe { key_rest::<B>(b, i + 2) }?;
                break;
            }
            let (c, at) = byte_past_ws(b, i)?;
            match c {
                b',' => {
                    i = at + 1;
                    if object {
                        // SAFETY: as above.
                        i = unsafe { member_key::<B>(b, i) }?;
                    } else {
                        i = byte_past_ws(b, i)?.1;
                    }
                    break;
                }
                b'}' | b']' if c == if object { b'}' } else { b']' } => {
                    i = at + 1;
                    depth -= 1;
                    word >>= 1;
                    if depth > 0 && depth.is_multiple_of(64) {
                        word = spill.pop().unwrap_or(0);
                    }
                }
                _ => return Err(Bad),
            }
        }
    }
}

/// The first byte at or after `i` that is no whitespace, and its index. Compact JSON has none
/// there: a byte above the space is taken with one compare, no whitespace loop.
#[inline(always)]
fn byte_past_ws(b: &[u8], i: usize) -> Res<(u8, usize)> {
    match b.get(i) {
        Some(&c) if c > b' ' => Ok((c, i)),
        _ => {
            let at = skip_ws(b, i);
            Ok((*b.get(at).ok_or(Bad)?, at))
        }
    }
}

/// One member as [`member`] reads it: where it ends, its key as it stands between the
/// quotes, whether the key holds an escape, its value's text, and whether the value is a
/// string without an escape.
pub(crate) struct Read<'a> {
    pub end: usize,
    pub key: &'a [u8],
    pub escaped: bool,
    pub value: &'a [u8],
    pub plain: bool,
}

/// `"key" : value` at `i`, just after the key's opening quote (which the caller has seen).
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(crate) unsafe fn member<'a, B: Block>(b: &'a [u8], i: usize) -> Res<Read<'a>> {
    // SAFETY (both): the caller vouches for the instruction set.
    let (key_end, escaped) = unsafe { string::<B>(b, i) }?;
    unsafe { member_rest::<B>(b, i, key_end, escaped) }
}

/// [`member`] of a key that `known` may name, and its name: a key `known` names is taken
/// from its closing quote, the first `"` within two blocks, with no string scan (`known` must
/// name only keys of ASCII letters, digits and `_`, which are whole JSON strings as they
/// stand); any other is read by [`member`].
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(crate) unsafe fn member_known<'a, B: Block, T>(
    b: &'a [u8],
    i: usize,
    known: &impl Fn(&[u8]) -> Option<T>,
) -> Res<(Read<'a>, Option<T>)> {
    // SAFETY (all): the caller vouches for the instruction set.
    let mut q = unsafe { quotes::<B>(b, i) };
    let mut at = i;
    if q == 0 {
        at += B::LEN;
        q = unsafe { quotes::<B>(b, at) };
    }
    if q != 0 {
        let close = at + q.trailing_zeros() as usize;
        if let Some(t) = known(&b[i..close]) {
            return Ok((
                unsafe { member_rest::<B>(b, i, close + 1, false) }?,
                Some(t),
            ));
        }
    }
    Ok((unsafe { member::<B>(b, i) }?, None))
}

/// The quotes of the block at `at`, bit 0 for byte `at` (none past the end of `b`).
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn quotes<B: Block>(b: &[u8], at: usize) -> u64 {
    if at + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `at` are inside `b`; the caller vouches for the set.
        return unsafe { B::load(b.as_ptr().add(at)) }.byte(b'"');
    }
    if at >= b.len() {
        return 0;
    }
    // SAFETY: the caller vouches for the instruction set.
    let (blk, shift, keep) = unsafe { tail::<B>(b, at) };
    (blk.byte(b'"') >> shift) & keep
}

/// The rest of a member after its key, whose closing quote ends at `key_end`.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn member_rest<'a, B: Block>(
    b: &'a [u8],
    i: usize,
    key_end: usize,
    escaped: bool,
) -> Res<Read<'a>> {
    // The `:` and the value's first byte, each read once: compact JSON has them right there.
    let mut start = match b.get(key_end) {
        Some(b':') => key_end + 1,
        _ => colon_after_ws(b, key_end)?,
    };
    let mut c = *b.get(start).ok_or(Bad)?;
    if c <= b' ' {
        start = skip_ws(b, start);
        c = *b.get(start).ok_or(Bad)?;
    }
    // SAFETY (both): the caller vouches for the instruction set.
    let (end, plain) = if c == b'"' {
        let (end, escaped) = unsafe { string::<B>(b, start + 1) }?;
        (end, !escaped)
    } else {
        (unsafe { value_at::<B>(b, start, c) }?, false)
    };
    debug_assert!(i < key_end && key_end <= start && start < end && end <= b.len());
    // SAFETY: the scan found `i < key_end ≤ start < end ≤ b.len()` (the key's closing quote
    // is at `key_end - 1`).
    let (key, value) = unsafe { (b.get_unchecked(i..key_end - 1), b.get_unchecked(start..end)) };
    Ok(Read {
        end,
        key,
        escaped,
        value,
        plain,
    })
}

/// After an object's member: `(true, i)` for a `,` and the next key's opening quote (`i` just
/// after the quote), `(false, i)` for the closing `}` (`i` after it), whitespace around them
/// skipped. The walk tests compact JSON's `,"` and `}` itself; this is its way round the rest.
#[inline(never)]
pub(crate) fn after_member(b: &[u8], i: usize) -> Res<(bool, usize)> {
    match b.get(i) {
        Some(b',') => match b.get(i + 1) {
            Some(b'"') => Ok((true, i + 2)),
            _ => next_key(b, i + 1),
        },
        Some(b'}') => Ok((false, i + 1)),
        _ => after_member_ws(b, i),
    }
}

/// [`after_member`] with whitespace before the separator.
#[cold]
fn after_member_ws(b: &[u8], i: usize) -> Res<(bool, usize)> {
    let at = skip_ws(b, i);
    match b.get(at) {
        Some(b',') => next_key(b, at + 1),
        Some(b'}') => Ok((false, at + 1)),
        _ => Err(Bad),
    }
}

/// The next key's opening quote after whitespace, from `i`: the index after it.
#[cold]
fn next_key(b: &[u8], i: usize) -> Res<(bool, usize)> {
    let at = skip_ws(b, i);
    match b.get(at) {
        Some(b'"') => Ok((true, at + 1)),
        _ => Err(Bad),
    }
}

/// A validating cursor over JSON text, for the readers that step through a value already read
/// (its members, its elements): the steps above on its index.
pub(crate) struct Scanner<'a, B> {
    pub b: &'a [u8],
    pub i: usize,
    blocks: PhantomData<B>,
}

impl<'a> Scanner<'a, Base> {
    /// A scanner on the blocks every machine has.
    pub fn base(b: &'a [u8]) -> Self {
        Scanner {
            b,
            i: 0,
            blocks: PhantomData,
        }
    }
}

impl<'a, B: Block> Scanner<'a, B> {
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    pub fn ws(&mut self) {
        self.i = skip_ws(self.b, self.i);
    }

    #[inline]
    pub fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// `"key" : value`, from the key's opening quote (see [`member`]).
    #[inline]
    pub fn member(&mut self) -> Res<Read<'a>> {
        self.eat(b'"')?;
        // SAFETY: a scanner of `B` is only made where the CPU has `B` (`base`).
        let m = unsafe { member::<B>(self.b, self.i) }?;
        self.i = m.end;
        Ok(m)
    }

    /// One value at the cursor (no whitespace before it).
    #[inline]
    pub fn value(&mut self) -> Res<()> {
        // SAFETY: as above.
        self.i = unsafe { value::<B>(self.b, self.i) }?;
        Ok(())
    }
}
