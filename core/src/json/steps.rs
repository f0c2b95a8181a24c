//! The reader's steps over a JSON text, each a function of the text and an index that returns
//! the next index: whitespace, numbers, literals, members, nested values. The string kernels
//! they stand on are [`super::scan`]'s.

use std::marker::PhantomData;

use super::block::{Block, ONES, non_digits};
use super::scan::{Bad, Base, Res, quotes, string};

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
    // lowest flagged one.
    while let Some(w) = b.get(i..i + 8) {
        let t = non_digits(u64::from_le_bytes(w.try_into().expect("eight bytes")));
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

/// Whether compact JSON's `,"` (a member's separator and the next key's opening quote) stands
/// at `at`.
#[inline(always)]
pub(crate) fn comma_quote(b: &[u8], at: usize) -> bool {
    b.get(at..at + 2) == Some(b",\"")
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
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
        b'"' => Ok(unsafe { string::<B>(b, i + 1) }?.0),
        b'-' | b'0'..=b'9' => number(b, i),
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
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
    // An object that opens with a string member, as compact JSON writes it (a sub-agent
    // frame's `extras`, a message's `role`): that member is read as the loop below would read
    // it, and one of no more is done, with no bracket stack. Any other is read from the start.
    if b.get(i..i + 2) == Some(b"{\"") {
        // SAFETY (all): the caller vouches for the instruction set.
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
        let (key_end, _) = unsafe { string::<B>(b, i + 2) }?;
        if b.get(key_end..key_end + 2) == Some(b":\"") {
            // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
            let (end, _) = unsafe { string::<B>(b, key_end + 2) }?;
            if b.get(end) == Some(&b'}') {
                return Ok(end + 1);
            }
            if comma_quote(b, end) {
                // Inside the object, at its next member's value.
                word = 1;
                depth = 1;
                // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
                i = unsafe { key_rest::<B>(b, end + 2) }?;
            }
        }
    }
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
            if object && comma_quote(b, i) {
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
pub(crate) struct MemberRead<'a> {
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
pub(crate) unsafe fn member<'a, B: Block>(b: &'a [u8], i: usize) -> Res<MemberRead<'a>> {
    // SAFETY (both): the caller vouches for the instruction set.
    // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
    let (key_end, escaped) = unsafe { string::<B>(b, i) }?;
    // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
    unsafe { member_rest::<B>(b, i, key_end, escaped) }
}

/// [`member`] of a key that `known` may name, and its name: a key `known` names is taken
/// from its closing quote, the first `"` within two blocks, with no string scan; any other is
/// read by [`member`].
///
/// # Safety
/// The CPU has `B`'s instruction set, and `known` names only keys of ASCII letters, digits and
/// `_` (whole JSON strings as they stand, see [`super::object_known`]).
#[inline(always)]
pub(crate) unsafe fn member_known<'a, B: Block, T>(
    b: &'a [u8],
    i: usize,
    known: &impl Fn(&[u8]) -> Option<T>,
) -> Res<(MemberRead<'a>, Option<T>)> {
    // SAFETY (all): the caller vouches for the instruction set.
    // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
    let mut q = unsafe { quotes::<B>(b, i) };
    let mut at = i;
    if q == 0 {
        at += B::LEN;
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
        q = unsafe { quotes::<B>(b, at) };
    }
    if q != 0 {
        let close = at + q.trailing_zeros() as usize;
        if let Some(t) = known(&b[i..close]) {
            debug_assert!(
                b[i..close]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_'),
                "`known` named a key that is no plain name"
            );
            return Ok((
                // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
                unsafe { member_rest::<B>(b, i, close + 1, false) }?,
                Some(t),
            ));
        }
    }
    // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
    Ok((unsafe { member::<B>(b, i) }?, None))
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
) -> Res<MemberRead<'a>> {
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
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
        let (end, escaped) = unsafe { string::<B>(b, start + 1) }?;
        (end, !escaped)
    } else {
        // SAFETY: the caller vouches for the instruction set, as the unsafe fn requires.
        (unsafe { value_at::<B>(b, start, c) }?, false)
    };
    debug_assert!(i < key_end && key_end <= start && start < end && end <= b.len());
    // SAFETY: the scan found `i < key_end ≤ start < end ≤ b.len()` (the key's closing quote
    // is at `key_end - 1`).
    let (key, value) = unsafe { (b.get_unchecked(i..key_end - 1), b.get_unchecked(start..end)) };
    Ok(MemberRead {
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
#[cold]
pub(crate) fn after_member(b: &[u8], i: usize) -> Res<(bool, usize)> {
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
    pub(super) fn base(b: &'a [u8]) -> Self {
        Scanner {
            b,
            i: 0,
            blocks: PhantomData,
        }
    }
}

impl<'a, B: Block> Scanner<'a, B> {
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    pub(super) fn ws(&mut self) {
        self.i = skip_ws(self.b, self.i);
    }

    #[inline]
    pub(super) fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// `"key" : value`, from the key's opening quote (see [`member`]).
    #[inline]
    pub(super) fn member(&mut self) -> Res<MemberRead<'a>> {
        self.eat(b'"')?;
        // SAFETY: a scanner of `B` is only made where the CPU has `B` (`base`).
        let m = unsafe { member::<B>(self.b, self.i) }?;
        self.i = m.end;
        Ok(m)
    }

    /// One value at the cursor (no whitespace before it).
    #[inline]
    pub(super) fn value(&mut self) -> Res<()> {
        // SAFETY: as above.
        self.i = unsafe { value::<B>(self.b, self.i) }?;
        Ok(())
    }
}
