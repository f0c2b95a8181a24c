//! The JSON reader against hand-made texts: members, strings, numbers, odd shapes.

use super::*;

fn members_of(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    object(text.as_bytes(), Isa::best(), |m| {
        out.push((m.name().into_owned(), m.value.to_owned()))
    })
    .map(|()| out)
    .unwrap_or_default()
}

#[test]
fn lone_surrogates_are_valid_and_read_as_replacement() {
    assert!(is_object(br#"{"k\ud800":"\udc00x"}"#));
    assert_eq!(string(r#""a\ud83dz""#).unwrap(), "a\u{FFFD}z");
    assert_eq!(string(r#""\ud83d\ude00""#).unwrap(), "😀");
    assert_eq!(string(r#""\udc00\ud800""#).unwrap(), "\u{FFFD}\u{FFFD}");
    assert_eq!(string(r#""\u0041\/\n""#).unwrap(), "A/\n");
    assert_eq!(members_of(r#"{"k\ud800":1}"#)[0].0, "k\u{FFFD}");
}

#[test]
fn utf8_is_checked_everywhere() {
    assert!(!is_object(b"{\"skipped\":\"\xff\xfe\"}"));
    assert!(!is_object(b"{\"a\":[{\"b\":\"\xc0\xaf\"}]}"));
    assert!(is_object("{\"a\":\"中文\"}".as_bytes()));
}

#[test]
fn depth_and_number_range_are_no_limit() {
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(200_000), "]".repeat(200_000));
    assert!(is_object(deep.as_bytes()));
    assert!(is_object(
        br#"{"x":1e400,"y":-0.0e-999,"z":123456789012345678901234567890}"#
    ));
    assert!(!is_object(br#"{"x":01}"#));
}

#[test]
fn nested_members_elements_and_last_wins() {
    let raw = r#"{ "a" : 1 , "b":{"c":[1,2]}, "a":"x" }"#;
    assert_eq!(get(raw, "a"), Some(r#""x""#));
    assert_eq!(get(raw, "b").and_then(|b| get(b, "c")), Some("[1,2]"));
    assert_eq!(
        elements("[ 1 , {\"a\":[]} ,\"s\"]").collect::<Vec<_>>(),
        ["1", "{\"a\":[]}", "\"s\""]
    );
    assert_eq!(elements("[]").count(), 0);
    assert_eq!(members("[]").count(), 0);
    assert!(members("{}").next().is_none());
    let m = members(r#"{"p\u0061rent":2}"#).next().unwrap();
    assert!(m.escaped && m.is("parent"));
}

#[test]
fn strings_write_as_json() {
    let mut out = Vec::new();
    write_string(&mut out, "a\"b\\c\n\u{1}中".as_bytes());
    assert_eq!(std::str::from_utf8(&out).unwrap(), r#""a\"b\\c\n\u0001中""#);
    assert_eq!(
        string(std::str::from_utf8(&out).unwrap()).unwrap(),
        "a\"b\\c\n\u{1}中"
    );
}

#[test]
fn canonical_copies_are_compact_with_serde_escapes() {
    let mut out = Vec::new();
    canonical_into(
        &mut out,
        r#"{ "a" : [ 1 , "x y\u00e9\/\u000A\ud83d\ude00\ud800" ] , "b":"\u4e2d" }"#,
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\"a\":[1,\"x yé/\\n😀\u{FFFD}\"],\"b\":\"中\"}"
    );
}

#[test]
fn canonical_copies_take_any_text_without_a_panic() {
    // A string that never closes, cut after a character of two, three and four bytes, and
    // every prefix of a value with escapes and wide characters.
    for raw in ["\"\\\"é", "\"中", "\"a😀", "\"\\"] {
        let mut out = Vec::new();
        canonical_into(&mut out, raw);
        assert_eq!(out, raw.as_bytes(), "{raw:?}");
    }
    let value = r#"{"a":"é\u00e9中\"😀","b":["\ud83d\ude00", "x"]}"#;
    for (cut, _) in value.char_indices() {
        let mut out = Vec::new();
        canonical_into(&mut out, &value[..cut]);
        assert!(std::str::from_utf8(&out).is_ok(), "cut at {cut}");
    }
}

#[test]
fn every_isa_finds_the_same_string_ends() {
    let pieces: [&[u8]; 10] = [
        b"a",
        b"\\\"",
        b"\\\\",
        b"\\u0041",
        b"\\u00",
        b"\x01",
        b"\xe4\xb8\xad",
        b"\xe4",
        b"\"",
        b"\xff",
    ];
    let mut rng = crate::Rng::from_state(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let x = rng.next_u64();
        let mut s = Vec::new();
        for k in 0..(x % 12) {
            let p = pieces[((x >> (4 * k)) % 10) as usize];
            let reps = if (x >> k).is_multiple_of(5) {
                1 + (x >> 20) % 70
            } else {
                1
            };
            for _ in 0..reps {
                s.extend_from_slice(p);
            }
        }
        s.extend_from_slice(b"\"tail");
        let want = scan::string_end(Isa::portable(), &s, 0);
        for isa in Isa::available() {
            assert_eq!(
                scan::string_end(isa, &s, 0),
                want,
                "{isa:?} on {:?}",
                String::from_utf8_lossy(&s)
            );
            assert_eq!(plain(isa, &s, 0), plain(Isa::portable(), &s, 0), "{isa:?}");
        }
    }
}

#[test]
fn same_is_slice_equality_at_every_length() {
    for n in 0..40usize {
        let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
        assert!(same(&a, &a.clone()), "{n}");
        for at in 0..n {
            let mut b = a.clone();
            b[at] ^= 0x40;
            assert!(!same(&a, &b), "{n} {at}");
        }
        assert!(!same(&a, &a[..n.saturating_sub(1)]) || n == 0);
    }
}

/// The word-at-a-time test agrees with the byte one for every byte at every place of strings of
/// 1 to 24 bytes (the short path, whole words, and an overlapping last word).
#[test]
fn plain_ascii_is_the_bytes_write_string_copies() {
    let plain = |c: u8| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\';
    for len in 1..=24 {
        for at in 0..len {
            for c in 0..=255u8 {
                let mut s = vec![b'a'; len];
                s[at] = c;
                assert_eq!(plain_ascii(&s), plain(c), "{len} {at} {c:#x}");
            }
        }
    }
    assert!(plain_ascii(b""));
}

#[test]
fn uint_reads_every_u64_and_refuses_the_rest() {
    for n in [
        0u64,
        7,
        149,
        10_000_000_000_000_000_000 - 1,
        10_000_000_000_000_000_000,
        u64::MAX,
    ] {
        assert_eq!(uint(&n.to_string()), Some(n), "{n}");
    }
    for bad in [
        "",
        "18446744073709551616",
        "99999999999999999999",
        "1.5",
        "-1",
        "1e3",
        "12a",
    ] {
        assert_eq!(uint(bad), None, "{bad:?}");
    }
    // Every length up to 20 digits, every digit in every place, and each place spoiled by
    // every byte that is no digit.
    for len in 1..=20usize {
        for d in 0..10u8 {
            for at in 0..len {
                let mut text = vec![b'7'; len];
                text[at] = b'0' + d;
                let s = std::str::from_utf8(&text).unwrap();
                assert_eq!(uint(s), s.parse::<u64>().ok(), "{s}");
            }
        }
        for at in 0..len {
            for c in (0..=255u8).filter(|c| !c.is_ascii_digit() && c.is_ascii()) {
                let mut text = vec![b'1'; len];
                text[at] = c;
                assert_eq!(
                    uint(std::str::from_utf8(&text).unwrap()),
                    None,
                    "{len} {at} {c}"
                );
            }
        }
    }
}

#[test]
fn has_string_reads_as_get_does() {
    let texts = [
        r#"{"parent_tool_use_id":"toolu_1"}"#,
        r#"{"parent_tool_use_id":""}"#,
        r#"{"parent_tool_use_id":"a\"b"}"#,
        r#"{"parent_tool_use_id":"a\\"}"#,
        r#"{"parent_tool_use_id":null}"#,
        r#"{"parent_tool_use_id":1}"#,
        r#"{"parent_tool_use_id":"x","parent_tool_use_id":null}"#,
        r#"{"parent_tool_use_id":null,"parent_tool_use_id":"x"}"#,
        r#"{"parent_tool_use_id":"x","other":"}"}"#,
        r#"{"parent_tool_use_idx":"x"}"#,
        r#"{"other":"x"}"#,
        r#"{ "parent_tool_use_id" : "x" }"#,
        r#"{"parent_tool_use_id":["x"]}"#,
        r#"{"parent_tool_use_id":"中文"}"#,
        r#"{}"#,
        r#"[]"#,
        r#""s""#,
    ];
    for t in texts {
        assert!(t == r#""s""# || t == "[]" || is_object(t.as_bytes()), "{t}");
        let want = get(t, "parent_tool_use_id").is_some_and(is_string);
        assert_eq!(has_string(t, "parent_tool_use_id"), want, "{t}");
    }
}

#[test]
fn numbers_of_every_length_end_where_their_digits_do() {
    for len in 1..=30usize {
        for tail in ["", ",", "}", ".5", "e3", "x", "\u{ff}", "/", ":"] {
            let digits: String = (0..len).map(|k| char::from(b'1' + (k % 9) as u8)).collect();
            let text = format!("{{\"n\":{digits}{tail}}}");
            let serde = serde_json::from_str::<serde_json::Value>(&text).is_ok();
            assert_eq!(is_object(text.as_bytes()), serde, "{text}");
        }
    }
}

#[test]
fn known_keys_are_named_and_read_as_every_other_key() {
    let known = |k: &[u8]| -> Option<usize> {
        [
            "type",
            "id",
            "session_id",
            "estimated_tokens_delta",
            "a_key_of_more_than_32_bytes_long",
        ]
        .iter()
        .position(|n| n.as_bytes() == k)
    };
    let texts = [
        r#"{"type":"t","id":"x","session_id":"s","estimated_tokens_delta":3}"#,
        r#"{"ty\"pe":1,"type":2}"#,
        r#"{"typ\u0065":1}"#,
        r#"{"a_key_of_more_than_32_bytes_long":1,"id":2}"#,
        r#"{"id":1}"#,
        r#"{"i":1,"d":2,"idx":3,"xid":4}"#,
        "{\"type\":1,\"\u{00e9}\":2}",
        r#"{ "type" : 1 , "id" :2}"#,
        r#"{"type":1,"id""#,
        r#"{"type":1,"id"#,
        r#"{"type"#,
        "{\"ty\u{0001}pe\":1}",
    ];
    for isa in [Isa::portable(), Isa::best()] {
        for t in texts {
            let mut plain = Vec::new();
            let read_plain = object(t.as_bytes(), isa, |m| plain.push((m.key, m.value)));
            let mut named = Vec::new();
            // SAFETY: `known` names only keys of ASCII letters and `_`.
            let read_named = unsafe {
                object_known(t.as_bytes(), 0, isa, known, |m, name| {
                    named.push(((m.key, m.value), name))
                })
            };
            assert_eq!(read_named, read_plain, "{t}");
            let members: Vec<_> = named.iter().map(|(m, _)| *m).collect();
            assert_eq!(members, plain, "{t}");
            for ((key, _), name) in &named {
                // A name is only ever the key's own; a key read by the scan may go unnamed.
                if let Some(n) = name {
                    assert_eq!(Some(*n), known(key.as_bytes()), "{t}: {key}");
                }
                // Every instruction set looks two blocks, 16 bytes at least, for the quote.
                if read_plain.is_some() && !key.contains('\\') && key.len() < 16 {
                    assert_eq!(*name, known(key.as_bytes()), "{t}: {key}");
                }
            }
        }
    }
}

/// The number writer's text is `Display`'s: every length, each power of ten and its
/// neighbours, and spread values.
#[test]
fn uint_text_writes_what_display_writes() {
    let mut ns = vec![0, 1, 9, 10, 11, 99, 100, 101, u64::MAX, u64::MAX - 1];
    let mut p: u64 = 1;
    while let Some(q) = p.checked_mul(10) {
        ns.extend([q - 1, q, q + 1]);
        p = q;
    }
    let mut rng = crate::rng::Rng::new(7);
    for _ in 0..100_000 {
        ns.push(rng.next_u64() >> (rng.next_u64() % 64));
    }
    for n in ns {
        let mut buf = [0; 20];
        assert_eq!(uint_text(n, &mut buf), n.to_string());
    }
}

/// `last_sought` against a byte-by-byte search, on every instruction set, for texts of every
/// length to 160 with a pair at every place (and pairs that only half match around it).
#[test]
fn last_sought_finds_the_last_pair_on_every_isa() {
    let sought = Sought([*b"\\u", *b"\\/", *b"\"e", *b"g/"]);
    let naive = |b: &[u8], end: usize| {
        (0..end.min(b.len().saturating_sub(1)))
            .rev()
            .find(|&k| sought.0.iter().any(|p| p[0] == b[k] && p[1] == b[k + 1]))
    };
    for len in 0..160 {
        for at in 0..len.max(1) {
            for (p, fill) in [
                (b"\\u", b'\\'),
                (b"g/", b'/'),
                (b"\"e", b'e'),
                (b"zz", b'"'),
            ] {
                let mut b = vec![fill; len];
                if at + 2 <= len {
                    b[at..at + 2].copy_from_slice(p);
                }
                for end in [len, at, at + 1, len / 2] {
                    let want = naive(&b, end);
                    for isa in Isa::available() {
                        assert_eq!(
                            last_sought(isa, &b, end, sought),
                            want,
                            "{isa:?} len {len} at {at} end {end} {:?}",
                            String::from_utf8_lossy(&b)
                        );
                    }
                }
            }
        }
    }
}
