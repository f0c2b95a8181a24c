//! The token estimate: the seed's fixed "4 chars ≈ 1 token" heuristic, in its one home.
//!
//! It prices the JSON text *as it stands in the record*: an escaped `\u4e2d` is six chars, a
//! literal `中` one. It underprices CJK text and code on purpose; every figure it yields is a
//! `~` figure to a UI and is never reconciled with the provider's.

/// `ceil(chars / 4)`, where `chars` counts the Unicode scalar values of `json`, whitespace
/// outside strings excluded. A linear scan with no recursion, so nesting depth costs nothing;
/// the plain runs inside strings, where a record's bytes are, go 16 (x86_64) or 8 bytes at a
/// time.
pub fn estimate(json: &[u8]) -> u64 {
    let mut chars: u64 = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < json.len() {
        if in_string && !escaped {
            // Up to the next quote or backslash every byte that is no UTF-8 continuation
            // byte is one char.
            let (end, continuation) = plain_run(json, i);
            chars += (end - i - continuation) as u64;
            i = end;
            if i == json.len() {
                break;
            }
        }
        let b = json[i];
        i += 1;
        // A UTF-8 continuation byte belongs to the scalar already counted.
        if b & 0xC0 == 0x80 {
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            chars += 1;
        } else {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    in_string = true;
                    chars += 1;
                }
                _ => chars += 1,
            }
        }
    }
    chars.div_ceil(4)
}

/// From `i`: the index of the first `"` or `\` (or the end), and how many UTF-8 continuation
/// bytes come before it.
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut continuation = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        while i + 16 <= b.len() {
            // SAFETY: SSE2 is part of the x86_64 baseline; the load reads 16 bytes inside `b`.
            let (hits, cont) = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                let hits = _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                );
                let top = _mm_and_si128(v, _mm_set1_epi8(0xC0u8 as i8));
                let cont = _mm_cmpeq_epi8(top, _mm_set1_epi8(0x80u8 as i8));
                (
                    _mm_movemask_epi8(hits) as u32,
                    _mm_movemask_epi8(cont) as u32,
                )
            };
            // Continuation bytes are rare in most text: count them only where they are (the
            // baseline x86_64 has no popcnt instruction).
            if hits != 0 {
                let k = hits.trailing_zeros();
                let cont = cont & ((1u32 << k) - 1);
                if cont != 0 {
                    continuation += cont.count_ones() as usize;
                }
                return (i + k as usize, continuation);
            }
            if cont != 0 {
                continuation += cont.count_ones() as usize;
            }
            i += 16;
        }
    }
    // Eight bytes at a time (Mycroft's zero-byte test: the lowest flagged byte is exact).
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 0x80;
    while i + 8 <= b.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&b[i..i + 8]);
        let c = u64::from_le_bytes(word);
        let zero = |x: u64| x.wrapping_sub(ONES) & !x;
        let hits = (zero(c ^ (ONES * b'"' as u64)) | zero(c ^ (ONES * b'\\' as u64))) & HIGH;
        // Bit 7 set and bit 6 clear: 10xxxxxx.
        let cont = c & !(c << 1) & HIGH;
        if hits != 0 {
            let k = hits.trailing_zeros() / 8;
            let cont = cont & ((1u64 << (8 * k)) - 1);
            if cont != 0 {
                continuation += cont.count_ones() as usize;
            }
            return (i + k as usize, continuation);
        }
        if cont != 0 {
            continuation += cont.count_ones() as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' {
            break;
        }
        continuation += (c & 0xC0 == 0x80) as usize;
        i += 1;
    }
    (i, continuation)
}

/// The byte-at-a-time definition [`estimate`] keeps to (tests and the fuzz checks compare them).
#[cfg(any(test, feature = "testgen"))]
pub fn estimate_bytewise(json: &[u8]) -> u64 {
    let mut chars: u64 = 0;
    let mut in_string = false;
    let mut escaped = false;
    for &b in json {
        if b & 0xC0 == 0x80 {
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            chars += 1;
        } else {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    in_string = true;
                    chars += 1;
                }
                _ => chars += 1,
            }
        }
    }
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn counts_scalars_not_bytes() {
        // "中文" is 4 chars with its quotes: one token.
        assert_eq!(estimate("\"中文\"".as_bytes()), 1);
        // The escaped form stands as 14 chars in the record: four tokens.
        assert_eq!(estimate(br#""\u4e2d\u6587""#), 4);
    }

    #[test]
    fn whitespace_counts_only_inside_strings() {
        assert_eq!(estimate(b"{ \"a\" :\n 1 }"), estimate(b"{\"a\":1}"));
        assert_eq!(estimate(b"\"a b\""), 2); // 5 chars
        assert_eq!(estimate(b"\"ab\""), 1);
    }

    #[test]
    fn escaped_quote_does_not_end_the_string() {
        // `"a\" b"`: the space is inside the string, so 7 chars.
        assert_eq!(estimate(br#""a\" b""#), 2);
        assert_eq!(estimate(br#""a\\" "#), 2); // 5 chars, trailing space outside
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(estimate(b""), 0);
        assert_eq!(estimate(b"   "), 0);
        assert_eq!(estimate(b"0"), 1);
    }

    #[test]
    fn the_fast_scan_counts_as_the_bytewise_one() {
        let pieces: [&[u8]; 12] = [
            b"\"",
            b"\\",
            b"\\\"",
            b" ",
            b"\n",
            b"a",
            b"{",
            b"\xe4\xb8\xad",
            b"\x80",
            b"\xc3",
            b"0",
            b"\\u4e2d",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut json = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 90) as usize;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let p = pieces[(x % 12) as usize];
                let reps = if x.is_multiple_of(7) {
                    1 + (x >> 8) % 40
                } else {
                    1
                };
                for _ in 0..reps {
                    json.extend_from_slice(p);
                }
            }
            assert_eq!(
                super::estimate(&json),
                super::estimate_bytewise(&json),
                "{:?}",
                String::from_utf8_lossy(&json)
            );
        }
    }
}
