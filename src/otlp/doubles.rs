//! OTLP/JSON's doubles as proto3's JSON mapping writes them: a `doubleValue` may be a number or
//! a string — `"NaN"`, `"Infinity"`, `"-Infinity"`, or a number's text — which
//! opentelemetry-proto's JSON reader takes only as a number. The protobuf path carries the same
//! values as IEEE doubles, and a record's attribute that is no finite number reads as `null`
//! ([`super::record`]); so here each `doubleValue` string member becomes what its value would
//! read as there: the number's text when it is a finite number, else `null`. Anything else in a
//! `doubleValue` string is left as it is, for the reader to refuse (400).
//!
//! The scan follows JSON's strings (their escapes) so that text inside a value, such as a log
//! body quoting `"doubleValue":"NaN"`, is never touched; it reads any bytes and never fails:
//! what does not lex is left for the reader to refuse.

/// The body with each `doubleValue` string member rewritten as above; `None` when there is
/// none (the body is read as it came).
pub(super) fn rewrite(body: &[u8]) -> Option<Vec<u8>> {
    // Most bodies have no double at all, or none written as a string.
    if !contains(body, b"\"doubleValue\"") {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'"' {
            i += 1;
            continue;
        }
        let end = string_end(body, i);
        let key = &body[i + 1..end.saturating_sub(1).max(i + 1)];
        i = end;
        if key != b"doubleValue" {
            continue;
        }
        let colon = skip_space(body, i);
        if body.get(colon) != Some(&b':') {
            continue;
        }
        let start = skip_space(body, colon + 1);
        if body.get(start) != Some(&b'"') {
            continue;
        }
        let value_end = string_end(body, start);
        // Closed: it ends with its own quote, past the opening one.
        if value_end < start + 2 || body[value_end - 1] != b'"' {
            break;
        }
        let text = &body[start + 1..value_end - 1];
        let Some(with) = replacement(text) else {
            i = value_end;
            continue;
        };
        let o = out.get_or_insert_with(|| Vec::with_capacity(body.len()));
        o.extend_from_slice(&body[copied..start]);
        o.extend_from_slice(with.as_bytes());
        copied = value_end;
        i = value_end;
    }
    let mut o = out?;
    o.extend_from_slice(&body[copied..]);
    Some(o)
}

/// What a `doubleValue` string's text stands for, as JSON: a finite number's own text, else
/// `null` (as the protobuf path reads NaN and the infinities); `None`: no double.
fn replacement(text: &[u8]) -> Option<String> {
    match text {
        b"NaN" | b"Infinity" | b"-Infinity" => return Some("null".to_owned()),
        _ => {}
    }
    let t = std::str::from_utf8(text).ok()?;
    // A number's text by JSON's own grammar (no `inf`, `+1`, `.5`, spaces).
    let first = t.bytes().next()?;
    if !(first == b'-' || first.is_ascii_digit())
        || serde_json::from_str::<serde::de::IgnoredAny>(t).is_err()
    {
        return None;
    }
    let x: f64 = t.parse().ok()?;
    Some(if x.is_finite() {
        t.to_owned()
    } else {
        "null".to_owned()
    })
}

/// The index just past the string that opens at `open` (a `"`), its escapes followed; the
/// body's end when it is not closed.
fn string_end(b: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(s: &str) -> String {
        String::from_utf8(rewrite(s.as_bytes()).unwrap_or_else(|| s.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn special_and_string_doubles_read_as_the_protobuf_path_reads_them() {
        assert_eq!(
            rw(r#"{"doubleValue":"NaN"},{"doubleValue" : "Infinity"},{"doubleValue":"-Infinity"}"#),
            r#"{"doubleValue":null},{"doubleValue" : null},{"doubleValue":null}"#
        );
        assert_eq!(rw(r#"{"doubleValue":"2.5e3"}"#), r#"{"doubleValue":2.5e3}"#);
        assert_eq!(rw(r#"{"doubleValue":"1e999"}"#), r#"{"doubleValue":null}"#);
        // Left for the reader to refuse, or untouched.
        for same in [
            r#"{"doubleValue":"nan"}"#,
            r#"{"doubleValue":"+1"}"#,
            r#"{"doubleValue":" 1"}"#,
            r#"{"doubleValue":1.5}"#,
            r#"{"stringValue":"{\"doubleValue\":\"NaN\"}"}"#,
            r#"{"doubleValue":"NaN"#,
            r#"{"doubleValue""#,
            r#""doubleValue"#,
        ] {
            assert_eq!(rw(same), same, "{same}");
        }
    }

    #[test]
    fn any_bytes_are_scanned_without_a_panic() {
        let pieces: [&[u8]; 8] = [
            b"\"doubleValue\"",
            b":",
            b"\"NaN\"",
            b"\\",
            b"\"",
            b" ",
            b"\xff",
            b"{",
        ];
        // Every sequence of up to five pieces.
        let mut stack = vec![(Vec::new(), 0)];
        while let Some((body, n)) = stack.pop() {
            let _ = rewrite(&body);
            if n < 5 {
                for p in pieces {
                    let mut next = body.clone();
                    next.extend_from_slice(p);
                    stack.push((next, n + 1));
                }
            }
        }
    }
}
