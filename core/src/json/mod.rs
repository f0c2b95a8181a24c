//! What counts as a JSON object (contract §1), in one home: the frames reader, the pressure view
//! and the adapters all read records through it; and, in `write.rs`, the one JSON writer of
//! the records and checkpoints.
//!
//! A record is a JSON object when its bytes are UTF-8 (skipped values included) and an RFC 8259
//! JSON text whose top level is an object. Any `\uXXXX` escape is valid, a lone surrogate
//! included: where a string's value is needed it reads as U+FFFD. Nesting depth and number
//! range are no limit. Members are handed over as raw slices of the record, never built.

mod block;
#[macro_use]
mod scan;
mod count;
mod steps;
mod write;

use std::borrow::Cow;

pub use block::Isa;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use block::Simd128;
#[cfg(target_arch = "x86_64")]
use block::{Avx2, Sse2};
use block::{Block, Kind, ONES, Swar, non_digits};
use scan::{Bad, Res, string_end};
pub(crate) use scan::{Sought, last_sought, plain};
use steps::{MemberRead, Scanner, after_member, comma_quote, member_known, skip_ws};
pub(crate) use write::{canonical_into, plain_ascii, uint_text, write_string, write_uint};

/// One member of an object: its key as it stands between the quotes, whether that key holds
/// an escape, and its value's JSON text. Only the reader makes one, so that `plain` is true of
/// `value` ([`Member::string`] trusts it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member<'a> {
    pub(crate) key: &'a str,
    pub(crate) escaped: bool,
    pub(crate) value: &'a str,
    /// The value is a string without an escape.
    pub(crate) plain: bool,
}

/// The eight bytes of `s` from `at` as a little-endian word: byte `at` lowest.
#[inline(always)]
pub(crate) fn word(s: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("eight bytes"))
}

/// Whether two byte strings are equal, a word at a time: the first and last words of the
/// string overlap instead of a loop over the bytes past the last whole word (a slice's `==` is a
/// call to a byte-at-a-time `memcmp` in wasm32, and names, kinds and session keys are compared
/// on every record).
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w8 = word;
    let w4 = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("four"));
    match n {
        0 => true,
        // Bytes 0, n/2 and n-1 are every byte of a string of one to three.
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        _ => {
            let mut i = 0;
            while i + 8 < n {
                if w8(a, i) != w8(b, i) {
                    return false;
                }
                i += 8;
            }
            w8(a, n - 8) == w8(b, n - 8)
        }
    }
}

/// Whether `s` begins with `prefix`, compared as [`same`] compares.
#[inline(always)]
pub(crate) fn starts_with(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && same(&s[..prefix.len()], prefix)
}

/// A byte string compared against many others, as [`same`] compares: its first and last words
/// read once, so that a string of 8 to 16 bytes (a frame type) is told in two word compares.
#[derive(Debug, Clone)]
pub struct Needle {
    bytes: Box<[u8]>,
    first: u64,
    last: u64,
}

impl Needle {
    pub fn new(bytes: &[u8]) -> Needle {
        let (first, last) = match bytes.len() {
            8..=16 => (word(bytes, 0), word(bytes, bytes.len() - 8)),
            _ => (0, 0),
        };
        Needle {
            bytes: bytes.into(),
            first,
            last,
        }
    }

    /// Whether `s` is this string.
    #[inline(always)]
    pub fn is(&self, s: &[u8]) -> bool {
        let n = self.bytes.len();
        if !(8..=16).contains(&n) {
            return same(&self.bytes, s);
        }
        // The words overlap where `n` < 16: together they are every byte.
        s.len() == n && word(s, 0) == self.first && word(s, n - 8) == self.last
    }
}

/// [`Member::string`] of a value that is no plain string (the cold path).
#[inline(never)]
fn unplain(raw: &str) -> Option<Cow<'_, str>> {
    string(raw)
}

impl<'a> Member<'a> {
    /// The value's text when it is a string, unescaped (as [`string`] reads it): a string the
    /// scan saw no escape in is its quotes' inside, without a second look.
    #[inline(always)]
    pub(crate) fn string(&self) -> Option<Cow<'a, str>> {
        if self.plain {
            let v: &'a [u8] = self.value.as_bytes();
            // SAFETY: a plain string's value is `"…"` of valid UTF-8; its quotes are ASCII, so
            // the inside is valid UTF-8 too.
            return Some(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(&v[1..v.len() - 1])
            }));
        }
        unplain(self.value)
    }

    /// Whether the key, unescaped, is `name` (a lone surrogate reads as U+FFFD, so an odd key
    /// never matches a field's name).
    #[inline]
    pub(crate) fn is(&self, name: &str) -> bool {
        if !self.escaped {
            return same(self.key.as_bytes(), name.as_bytes());
        }
        unescape(self.key) == name
    }

    /// The key, unescaped.
    pub(crate) fn name(&self) -> Cow<'_, str> {
        if self.escaped {
            Cow::Owned(unescape(self.key))
        } else {
            Cow::Borrowed(self.key)
        }
    }
}

/// Reads `bytes` as a JSON object and hands each top-level member to `f`, in order; `None` when
/// the text is not one (then `f` may have seen members of the valid prefix).
pub(crate) fn object<'a>(bytes: &'a [u8], isa: Isa, mut f: impl FnMut(Member<'a>)) -> Option<()> {
    // SAFETY: `known` names no key.
    unsafe {
        object_known(
            bytes,
            0,
            isa,
            |_| None::<()>,
            #[inline(always)]
            |m, _| f(m),
        )
    }
}

/// [`object`], each member handed over with its key's name when `known` names it. `known` sees
/// the bytes of a key before its first `"`; a key it names is not scanned again.
///
/// `resume`: 0 to read from the start; else the caller has read `bytes[..resume]`, an object's
/// `{` and its first member (a key and a value, each checked as JSON), and the walk goes on
/// after it, that member not handed over.
///
/// # Safety
/// `known` names only keys of ASCII letters, digits and `_`: such a key is a whole JSON string
/// as it stands (no escape, no control character, UTF-8), and is handed over as `&str`
/// unchecked. (Testing the key's bytes here instead costs every named key a mask and a load:
/// 3% of a small record's fuel.) A `resume` other than 0 is as said above.
pub(crate) unsafe fn object_known<'a, T: Copy>(
    bytes: &'a [u8],
    resume: usize,
    isa: Isa,
    known: impl Fn(&[u8]) -> Option<T>,
    mut f: impl FnMut(Member<'a>, Option<T>),
) -> Option<()> {
    let (known, f) = (&known, &mut f);
    // `per_isa!` names one generic; the walk has two.
    let read = match isa.0 {
        // SAFETY: an `Isa` of AVX2 is only made where the CPU has AVX2.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => unsafe { walk_avx2(bytes, resume, known, f) },
        // SAFETY: SSE2 is part of the x86_64 baseline.
        #[cfg(target_arch = "x86_64")]
        Kind::Sse2 => unsafe { walk::<Sse2, T>(bytes, resume, known, f) },
        // SAFETY: the module is built with simd128, which the engine checks when it loads it.
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        Kind::Simd128 => unsafe { walk::<Simd128, T>(bytes, resume, known, f) },
        // SAFETY: SWAR needs no instruction set.
        Kind::Swar => unsafe { walk::<Swar, T>(bytes, resume, known, f) },
    };
    read.ok()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn walk_avx2<'a, T: Copy>(
    bytes: &'a [u8],
    resume: usize,
    known: &impl Fn(&[u8]) -> Option<T>,
    f: &mut impl FnMut(Member<'a>, Option<T>),
) -> Res<()> {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { walk::<Avx2, T>(bytes, resume, known, f) }
}

/// A member as the reader read it.
///
/// SAFETY: the scan checked every string as UTF-8, and JSON outside strings is ASCII.
#[inline(always)]
fn as_member(m: MemberRead<'_>) -> Member<'_> {
    // SAFETY: as above.
    unsafe {
        Member {
            key: std::str::from_utf8_unchecked(m.key),
            escaped: m.escaped,
            value: std::str::from_utf8_unchecked(m.value),
            plain: m.plain,
        }
    }
}

/// [`object`] on `B`'s blocks: the index kept in a local through the record (see
/// `steps::skip_ws`), compact JSON's separators taken where they stand; from `resume` when not
/// 0 (see [`object_known`]).
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn walk<'a, B: Block, T: Copy>(
    bytes: &'a [u8],
    resume: usize,
    known: &impl Fn(&[u8]) -> Option<T>,
    f: &mut impl FnMut(Member<'a>, Option<T>),
) -> Res<()> {
    let b = bytes;
    let mut i;
    // Whether a member is to be read (`i` just after its key's opening quote), else the
    // object has closed (`i` past its `}`).
    let first = if resume != 0 {
        // The separator where compact JSON has it, as the loop below takes it.
        if comma_quote(b, resume) {
            i = resume + 2;
            true
        } else {
            let (more, next) = after_member(b, resume)?;
            i = next;
            more
        }
    } else {
        i = skip_ws(b, 0);
        if b.get(i) != Some(&b'{') {
            return Err(Bad);
        }
        i = skip_ws(b, i + 1);
        match b.get(i) {
            Some(b'}') => {
                i += 1;
                false
            }
            Some(b'"') => {
                i += 1;
                true
            }
            _ => return Err(Bad),
        }
    };
    if first {
        loop {
            // SAFETY: the caller vouches for the instruction set.
            let (m, name) = unsafe { member_known::<B, T>(b, i, known) }?;
            let end = m.end;
            f(as_member(m), name);
            // The separator and the next key's quote where compact JSON has them (a
            // tuple handed back would cost the loop a three-way test per member). Written
            // out, not `steps::comma_quote`: through it this loop cost the pressure view 10
            // fuel a small record more (measured).
            let pair = b
                .get(end..end + 2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]));
            if pair == Some(u16::from_le_bytes(*b",\"")) {
                i = end + 2;
                continue;
            }
            match b.get(end) {
                Some(b'}') => {
                    i = end + 1;
                    break;
                }
                _ => {
                    let (more, next) = after_member(b, end)?;
                    i = next;
                    if !more {
                        break;
                    }
                }
            }
        }
    }
    if skip_ws(b, i) != b.len() {
        return Err(Bad);
    }
    Ok(())
}

/// Whether `bytes` is a JSON object.
pub fn is_object(bytes: &[u8]) -> bool {
    object(bytes, Isa::best(), |_| {}).is_some()
}

/// The members of an object value that was read already (a slice [`object`] handed over); for
/// any other text, none.
pub(crate) fn members(raw: &str) -> impl Iterator<Item = Member<'_>> {
    let mut s = Scanner::base(raw.as_bytes());
    let mut open = false;
    let mut done = !raw.starts_with('{');
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let m = next_member(&mut s, &mut open);
        if m.is_none() {
            done = true;
        }
        m
    })
}

fn next_member<'a, B: Block>(s: &mut Scanner<'a, B>, open: &mut bool) -> Option<Member<'a>> {
    if !*open {
        *open = true;
        s.eat(b'{').ok()?;
    } else {
        s.ws();
        s.eat(b',').ok()?;
    }
    s.ws();
    s.member().ok().map(as_member)
}

/// The value of member `name` of an object value (the last one, when repeated).
pub(crate) fn get<'a>(raw: &'a str, name: &str) -> Option<&'a str> {
    members(raw).filter(|m| m.is(name)).last().map(|m| m.value)
}

/// Whether member `name` of an object value that was read already is a string (the last one,
/// when repeated). An object of that one member, `{"name":"…"}` as compact JSON writes it, is
/// answered from its shape: the string that opens after the name closes right before the
/// object's last byte (an escaped quote there would leave the object unclosed, and the text
/// was read as JSON). Any other object is read member by member.
pub(crate) fn has_string(raw: &str, name: &str) -> bool {
    let (b, n) = (raw.as_bytes(), name.len());
    let head = b.len() > n + 6
        && b[0] == b'{'
        && b[1] == b'"'
        && same(&b[2..2 + n], name.as_bytes())
        && b[2 + n..5 + n] == *b"\":\""
        && b[b.len() - 1] == b'}';
    if head && string_end(Isa::best(), b, n + 5).is_ok_and(|(end, _)| end == b.len() - 1) {
        return true;
    }
    get(raw, name).is_some_and(is_string)
}

/// The elements of an array value that was read already; for any other text, none.
pub(crate) fn elements(raw: &str) -> impl Iterator<Item = &str> {
    let mut s = Scanner::base(raw.as_bytes());
    let mut first = true;
    let mut done = s.eat(b'[').is_err();
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        s.ws();
        if first {
            first = false;
            if s.peek() == Some(b']') {
                done = true;
                return None;
            }
        } else if s.eat(b',').is_err() {
            done = true;
            return None;
        }
        s.ws();
        let start = s.i;
        if s.value().is_err() {
            done = true;
            return None;
        }
        // SAFETY: `raw` is a `&str`.
        Some(unsafe { std::str::from_utf8_unchecked(&s.b[start..s.i]) })
    })
}

/// A JSON string value's text, unescaped (a lone surrogate as U+FFFD); `None` when `raw` is no
/// string.
pub(crate) fn string(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        Some(Cow::Owned(unescape(inner)))
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// Whether `raw` is a string value.
#[inline]
pub(crate) fn is_string(raw: &str) -> bool {
    raw.starts_with('"')
}

/// A JSON integer ≥ 0 that fits a `u64`; fractions, exponents and signs are refused.
#[inline]
pub(crate) fn uint(raw: &str) -> Option<u64> {
    let b = raw.as_bytes();
    if b.is_empty() || b.len() > 19 {
        return long_uint(b);
    }
    if b.len() <= 8 {
        return eight_digits(b);
    }
    // Up to 19 digits cannot overflow, and need no checked multiply (a 128-bit product in
    // wasm32, a library call).
    let mut n: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + d as u64;
    }
    Some(n)
}

/// [`uint`] of one to eight bytes, in a word: left-padded with `0`s, checked as digits and
/// combined two, four and eight at a time (a counter's `seq` and delta are a few digits; a loop
/// costs a compare and a multiply per digit).
#[inline(always)]
fn eight_digits(b: &[u8]) -> Option<u64> {
    let mut w = [b'0'; 8];
    w[8 - b.len()..].copy_from_slice(b);
    let x = u64::from_le_bytes(w);
    if non_digits(x) != 0 {
        return None;
    }
    // The first digit is the lowest byte: pairs, then fours, then the eight.
    let x = (x & (ONES * 0x0F)).wrapping_mul(10 << 8 | 1) >> 8;
    let x = (x & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 << 16 | 1) >> 16;
    Some((x & 0x0000_FFFF_0000_FFFF).wrapping_mul(10_000 << 32 | 1) >> 32)
}

/// [`uint`] of an empty text or one of more than 19 bytes: each step checked.
#[cold]
fn long_uint(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    b.iter().try_fold(0u64, |n, &c| {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n.checked_mul(10)?.checked_add(d as u64)
    })
}

/// The text of a string's inside (between its quotes), its escapes resolved; a lone surrogate
/// becomes U+FFFD, a pair the scalar it encodes.
fn unescape(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let esc = &rest[at + 1..];
        let mut step = 2;
        match esc.as_bytes().first() {
            Some(b'b') => out.push('\u{8}'),
            Some(b'f') => out.push('\u{c}'),
            Some(b'n') => out.push('\n'),
            Some(b'r') => out.push('\r'),
            Some(b't') => out.push('\t'),
            Some(b'u') => {
                let unit = |s: &str| s.get(1..5).and_then(|h| u16::from_str_radix(h, 16).ok());
                step = 6;
                match unit(esc) {
                    Some(hi @ 0xD800..=0xDBFF) => {
                        let lo = esc
                            .get(5..)
                            .filter(|t| t.starts_with("\\u"))
                            .and_then(|t| unit(&t[1..]));
                        match lo {
                            Some(lo @ 0xDC00..=0xDFFF) => {
                                let c =
                                    0x10000 + ((hi as u32 - 0xD800) << 10) + (lo as u32 - 0xDC00);
                                out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                                step = 12;
                            }
                            _ => out.push('\u{FFFD}'),
                        }
                    }
                    Some(u) => out.push(char::from_u32(u as u32).unwrap_or('\u{FFFD}')),
                    None => out.push('\u{FFFD}'),
                }
            }
            Some(&c) => out.push(c as char),
            None => step = 1,
        }
        rest = rest.get(at + step..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// The estimate's plain-run kernel on the best instruction set.
#[inline]
pub(crate) fn plain_run(b: &[u8], i: usize) -> (usize, usize) {
    plain(Isa::best(), b, i)
}

/// What the estimate counts in `b` (its scalars, whitespace outside strings left out), 64 bytes
/// at a time on `isa`; `None` for text with a backslash outside a string or before a UTF-8
/// continuation byte, which the count one byte at a time reads otherwise.
#[inline]
pub(crate) fn chars_on(isa: Isa, b: &[u8]) -> Option<u64> {
    count::count(isa, b)
}

/// Texts that are no JSON object, each for a different reason (shared by the readers' tests).
#[cfg(test)]
pub(crate) const NOT_OBJECTS: [&[u8]; 10] = [
    b"not json",
    b"[1,2]",
    b"\"s\"",
    b"{",
    b"\xff",
    b"{\"a\":\"\xff\"}",
    b"{} x",
    b"",
    b"null",
    b"{\"a\":01}",
];

#[cfg(test)]
mod tests;
