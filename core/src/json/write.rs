//! The one JSON writer of the records, the frames the adapters build and the checkpoints:
//! numbers, strings (escaped as serde_json writes them), and canonical copies of values read.

use super::scan::string_end;
use super::{Isa, word};

/// The decimal digits of `n`, written into `buf`: the one number writer of the records and the
/// checkpoints (no `core::fmt` on a record's path: in wasm32 its machinery costs more than the
/// record's other fields together). Two digits a step, from a table of the hundred pairs.
pub(crate) fn uint_text(n: u64, buf: &mut [u8; 20]) -> &str {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut i = buf.len();
    let mut n = n;
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    // SAFETY: the bytes from `i` are ASCII digits.
    unsafe { std::str::from_utf8_unchecked(&buf[i..]) }
}

/// Writes `n` in decimal.
pub(crate) fn write_uint(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0; 20];
    out.extend_from_slice(uint_text(n, &mut buf).as_bytes());
}

/// Whether every byte of `s` is ASCII from the space up, other than `"` and `\`: the bytes
/// [`write_string`] copies as they stand. Eight bytes at a time, each test exact for "any byte
/// of the word" (a borrow into a byte's top bit happens only past a byte that matched); the last
/// word overlaps the one before it.
#[inline]
pub(crate) fn plain_ascii(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v;
    let bad = |w: u64| {
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let quote = has_zero(w ^ (ONES * b'"' as u64));
        let backslash = has_zero(w ^ (ONES * b'\\' as u64));
        (w | below_space | quote | backslash) & HIGH != 0
    };
    let n = s.len();
    if n < 8 {
        return s
            .iter()
            .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\');
    }
    let word = |at: usize| word(s, at);
    let mut i = 0;
    while i + 8 < n {
        if bad(word(i)) {
            return false;
        }
        i += 8;
    }
    !bad(word(n - 8))
}

/// Writes `s` as a JSON string (quotes, `"` `\` and control characters escaped). A
/// [`plain_ascii`] text (a name, an id: nearly every one) has nothing to escape, and is copied
/// as it stands.
pub(crate) fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    if plain_ascii(s) {
        out.extend_from_slice(s);
    } else {
        write_string_body(out, s);
    }
    out.push(b'"');
}

/// [`write_string`] without the quotes.
fn write_string_body(out: &mut Vec<u8>, s: &[u8]) {
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&s[start..i]);
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(c >> 4) as usize],
                    HEX[(c & 15) as usize],
                ]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
}

/// Copies a value's JSON text in canonical form: no whitespace outside strings, and strings
/// escaped as serde_json writes them (`"` `\` and control characters escaped, short forms where
/// there are, everything else literal UTF-8). A lone surrogate escape becomes the U+FFFD it
/// reads as (contract §1), so that the copy prices what it means, not its six characters. Any
/// text is taken (a `&str` is all it relies on): what is not JSON is copied, never a panic.
pub(crate) fn canonical_into(out: &mut Vec<u8>, raw: &str) {
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\n' | b'\t' | b'\r' => i += 1,
            b'"' => match string_end(Isa::best(), b, i + 1) {
                // `end` is just past the closing quote: the inside is between two ASCII
                // quotes, so it starts and ends on a character's boundary.
                Ok((end, _)) => {
                    let inner = &raw[i + 1..end - 1];
                    if inner.contains('\\') {
                        out.push(b'"');
                        canonical_string(out, inner);
                        out.push(b'"');
                    } else {
                        out.extend_from_slice(&b[i..end]);
                    }
                    i = end;
                }
                // A string that never closes (or holds what JSON does not allow) is no JSON:
                // the rest is copied as it stands.
                Err(_) => {
                    out.extend_from_slice(&b[i..]);
                    i = b.len();
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// The inside of a string with escapes, re-escaped canonically.
fn canonical_string(out: &mut Vec<u8>, inner: &str) {
    let mut rest = inner;
    while let Some(at) = rest.find('\\') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let esc = &rest[at..];
        let (len, c) = match esc.as_bytes().get(1) {
            Some(b'u') => match escape_unit(esc) {
                Some(hi @ 0xD800..=0xDBFF) => match esc.get(6..).and_then(escape_unit) {
                    Some(lo @ 0xDC00..=0xDFFF) => (
                        12,
                        char::from_u32(
                            0x10000 + ((hi as u32 - 0xD800) << 10) + (lo as u32 - 0xDC00),
                        ),
                    ),
                    _ => (6, Some(char::REPLACEMENT_CHARACTER)),
                },
                Some(0xDC00..=0xDFFF) => (6, Some(char::REPLACEMENT_CHARACTER)),
                Some(u) => (6, char::from_u32(u as u32)),
                None => (esc.len(), None),
            },
            Some(b'b') => (2, Some('\u{8}')),
            Some(b'f') => (2, Some('\u{c}')),
            Some(b'n') => (2, Some('\n')),
            Some(b'r') => (2, Some('\r')),
            Some(b't') => (2, Some('\t')),
            Some(&c) => (2, Some(c as char)),
            None => (1, None),
        };
        match c {
            Some(c) => {
                let mut buf = [0u8; 4];
                write_string_body(out, c.encode_utf8(&mut buf).as_bytes());
            }
            // A broken escape (the reader never hands one on) stays as it stood.
            None => out.extend_from_slice(&esc.as_bytes()[..len.min(esc.len())]),
        }
        rest = &esc[len.min(esc.len())..];
    }
    out.extend_from_slice(rest.as_bytes());
}

/// The code unit of a `\uXXXX` escape at the start of `s`.
fn escape_unit(s: &str) -> Option<u16> {
    if !s.starts_with("\\u") {
        return None;
    }
    u16::from_str_radix(s.get(2..6)?, 16).ok()
}
