//! Reading an agent's JSONL log, and the small readers of its lines the agents' files share.

use serde_json::Value;

/// The lines of a JSONL log as JSON values, with their index; a line that does not parse is
/// read again with its lone surrogate escapes as U+FFFD (Claude Code cuts tool output inside
/// an emoji), and a line of several records written back to back is each of them.
pub fn read_jsonl(text: &str) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fixed;
        let line = if serde_json::from_str::<Value>(line).is_ok() {
            line
        } else {
            fixed = lone_surrogates_replaced(line);
            &fixed
        };
        for v in serde_json::Deserializer::from_str(line)
            .into_iter::<Value>()
            .map_while(Result::ok)
        {
            out.push((i, v));
        }
    }
    out
}

/// A JSON text with every `\uD800`–`\uDFFF` escape that is not half of a pair as `\uFFFD`.
pub(super) fn lone_surrogates_replaced(line: &str) -> String {
    let b = line.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| line.get(at + 2..at + 6))
            .flatten()
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            match unit(i) {
                Some(0xD800..=0xDBFF) if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) => {
                    out.push_str(&line[i..i + 12]);
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    out.push_str("\\uFFFD");
                    i += 6;
                }
                _ => {
                    // An escape of one character after the backslash.
                    let end = (i + 2).min(b.len());
                    out.push_str(&line[i..end]);
                    i = end;
                }
            }
        } else {
            let c = line[i..].chars().next().unwrap_or('\u{FFFD}');
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

pub(super) fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut at = v;
    for p in path {
        at = at.get(p)?;
    }
    at.as_u64()
}

pub(super) fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut at = v;
    for p in path {
        at = at.get(p)?;
    }
    at.as_str()
}
