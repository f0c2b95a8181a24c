//! The token estimate: the fixed "4 chars ≈ 1 token" heuristic of contract §3.1, in its one home.
//!
//! It prices the JSON text *as it stands in the record*: an escaped `\u4e2d` is six chars, a
//! literal `中` one. It underprices CJK text and code on purpose; every figure it yields is a
//! `~` figure to a UI and is never reconciled with the provider's.

/// `ceil(chars / 4)`, where `chars` counts the Unicode scalar values of `json`, whitespace
/// outside strings excluded. A JSON value is counted 64 bytes at a time; other text (a
/// backslash outside a string) one byte at a time, by `chars`, which says what is counted.
pub fn estimate(json: &[u8]) -> u64 {
    counted(json).div_ceil(4)
}

/// The characters [`estimate`] counts in `json`: what a frame's `message_chars` says of content
/// an adapter measured and priced as the estimate would (contract §3.1).
pub(crate) fn counted(json: &[u8]) -> u64 {
    crate::json::chars_on(crate::json::Isa::best(), json).unwrap_or_else(|| chars(json))
}

/// The count, a byte at a time: a linear scan with no recursion, so nesting depth costs
/// nothing; the plain runs inside strings go a block at a time.
fn chars(json: &[u8]) -> u64 {
    let mut chars: u64 = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < json.len() {
        if in_string && !escaped {
            // Up to the next quote or backslash every byte that is no UTF-8 continuation
            // byte is one char.
            let (end, continuation) = crate::json::plain_run(json, i);
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
    chars
}

#[cfg(test)]
mod tests {
    use super::{chars, estimate};
    use crate::json::{Isa, chars_on};

    #[test]
    fn every_isa_counts_windows_as_the_byte_at_a_time_count_does() {
        let pieces: [&[u8]; 14] = [
            b"\"a\"",
            b"\\\"",
            b"\\\\",
            b"\\",
            b" ",
            b"\n",
            b"{",
            b"}",
            b"\"",
            b"\xe4\xb8\xad",
            b"x",
            b"\t",
            b"\\\xa9",
            b"\xbf",
        ];
        let mut rng = crate::Rng::from_state(0x2545_f491_4f6c_dd1d);
        let mut fast = 0;
        for _ in 0..20_000 {
            let x = rng.next_u64();
            let mut s = Vec::new();
            for k in 0..(x % 40) {
                let p = pieces[((x >> (k % 60)) % 14) as usize];
                for _ in 0..1 + (x >> (k % 50)) % 9 {
                    s.extend_from_slice(p);
                }
            }
            for isa in Isa::available() {
                if let Some(n) = chars_on(isa, &s) {
                    assert_eq!(n, chars(&s), "{isa:?} on {:?}", String::from_utf8_lossy(&s));
                    fast += 1;
                }
            }
        }
        assert!(fast > 3_000, "{fast} texts counted by windows");
        // A JSON value always is.
        let v = r#"{"a": ["x\"y", "\\", "\u00e9", 1 ], "b" : "中 z\n"}"#.as_bytes();
        for isa in Isa::available() {
            assert_eq!(chars_on(isa, v), Some(chars(v)), "{isa:?}");
        }
    }

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
}
