//! The estimate's count of a JSON value, 64 bytes at a time: every byte that starts a UTF-8
//! scalar, less the whitespace outside strings. Where the strings are comes from the quotes
//! that no backslash escapes (simdjson's escape and prefix-XOR masks), so an escape never stops
//! the scan, as it stops a scan that finds each string's end.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use super::block::Simd128;
#[cfg(target_arch = "x86_64")]
use super::block::{Avx2, Sse2};
use super::block::{Block, Isa, Kind, Swar, low_bits};

/// Bits 0, 2, 4, …
const EVEN: u64 = 0x5555_5555_5555_5555;

/// The bytes a backslash escapes, given the window's backslashes and whether the previous
/// window's last byte escapes this one's first (updated for the next window): in a run of
/// backslashes each escapes the next, so a run of odd length escapes the byte after it.
#[inline(always)]
fn escaped(backslash: u64, carry: &mut u64) -> u64 {
    let backslash = backslash & !*carry;
    let follows = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows;
    let (from_even, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow as u64;
    (EVEN ^ (from_even << 1)) & follows
}

/// Each bit the parity of the set bits up to and including it.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Masks of the 64 bytes from `i`: quotes, backslashes, whitespace, continuation bytes.
///
/// # Safety
/// 64 bytes from `i` are inside `b`, and the CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn window<B: Block>(b: &[u8], i: usize) -> [u64; 4] {
    let mut m = [0; 4];
    for k in 0..64 / B::LEN {
        // SAFETY: the caller vouches for the 64 bytes and the instruction set.
        let blk = unsafe { B::load(b.as_ptr().add(i + k * B::LEN)) };
        let at = k * B::LEN;
        m[0] |= blk.byte(b'"') << at;
        m[1] |= blk.byte(b'\\') << at;
        m[2] |= blk.whitespace() << at;
        m[3] |= blk.continuation() << at;
    }
    m
}

/// The count, or `None` where a backslash stands outside a string or before a UTF-8
/// continuation byte: the byte-at-a-time count reads those otherwise (in a valid JSON text
/// there are none), so the caller counts such text that way.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn chars<B: Block>(b: &[u8]) -> Option<u64> {
    let mut count = 0u64;
    // All ones while inside a string at the window's start.
    let mut inside = 0u64;
    let mut escape_carry = 0u64;
    // The previous window's last byte was a backslash.
    let mut backslash_carry = 0u64;
    let mut i = 0;
    while i < b.len() {
        let (m, real) = if i + 64 <= b.len() {
            // SAFETY: 64 bytes from `i` are inside `b`; the caller vouches for the set.
            (unsafe { window::<B>(b, i) }, u64::MAX)
        } else {
            // Zeros pad the tail: no quote, backslash, whitespace or continuation byte.
            let mut buf = [0u8; 64];
            let rem = b.len() - i;
            buf[..rem].copy_from_slice(&b[i..]);
            // SAFETY: `buf` holds 64 bytes; the caller vouches for the set.
            (unsafe { window::<B>(&buf, 0) }, low_bits(rem as u32))
        };
        let [quote, backslash, space, cont] = m;
        let quotes = quote & !escaped(backslash, &mut escape_carry);
        // Set from an opening quote up to (not including) its closing quote.
        let string = prefix_xor(quotes) ^ inside;
        inside = ((string as i64) >> 63) as u64;
        if backslash & !string != 0 || ((backslash << 1) | backslash_carry) & cont != 0 {
            return None;
        }
        backslash_carry = backslash >> 63;
        count += (real & !cont & !(space & !string)).count_ones() as u64;
        i += 64;
    }
    Some(count)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chars_avx2(b: &[u8]) -> Option<u64> {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { chars::<Avx2>(b) }
}

/// The estimate's count of `b` on `isa` (see [`chars`]).
pub(crate) fn count(isa: Isa, b: &[u8]) -> Option<u64> {
    per_isa!(isa, chars, chars_avx2, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// The escaped bytes one at a time: a backslash not itself escaped escapes the next byte.
    fn naive_escaped(bytes: &[u8]) -> Vec<bool> {
        let mut out = vec![false; bytes.len()];
        let mut escaping = false;
        for (i, &b) in bytes.iter().enumerate() {
            out[i] = escaping;
            escaping = !escaping && b == b'\\';
        }
        out
    }

    #[test]
    fn escapes_across_windows_match_one_byte_at_a_time() {
        let mut rng = crate::Rng::from_state(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let bytes: Vec<u8> = (0..256)
                .map(|_| match rng.next_u64() % 3 {
                    0 => b'a',
                    _ => b'\\',
                })
                .collect();
            let mut carry = 0;
            let mut got = Vec::new();
            for w in bytes.chunks(64) {
                let bs = w
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (i, &b)| m | ((b == b'\\') as u64) << i);
                let e = escaped(bs, &mut carry);
                got.extend((0..64).map(|i| e >> i & 1 == 1));
            }
            assert_eq!(got, naive_escaped(&bytes));
        }
    }

    #[test]
    fn prefix_xor_is_the_running_parity() {
        let x = 0b1001_0110u64 | 1 << 63;
        let p = prefix_xor(x);
        let mut parity = false;
        for i in 0..64 {
            parity ^= x >> i & 1 == 1;
            assert_eq!(p >> i & 1 == 1, parity, "bit {i}");
        }
    }
}
