//! Merging a session's files (its transcript and its sub-agents') into one log, by time.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::record::Rec;

/// The line's `timestamp` in seconds since 1970, when it has an RFC 3339 one.
pub(crate) fn line_stamp(line: &[u8]) -> Option<f64> {
    let v = agent_fold_core::Frame::parse(line)?;
    let raw = v.stamp()?;
    agent_fold_core::time::parse_secs(raw.trim_matches('"'))
}

/// A file's head line in the merge: its time key, then its file's place (the first file first
/// on ties).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Head {
    key: f64,
    file: usize,
}

impl Eq for Head {}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(self.file.cmp(&other.file))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges files' lines into one log: each file keeps its order, and the next line is the
/// earliest head by timestamp (an unstamped line takes its predecessor's), the first file
/// first on ties. A session's sub-agent files interleave with the transcript as they ran.
/// Each line's stamp is read once and the heads wait in a heap: O(lines × log files).
pub(crate) fn merge(files: Vec<Vec<Rec>>) -> Vec<Rec> {
    if files.len() == 1 {
        return files.into_iter().next().unwrap_or_default();
    }
    let total = files.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = files
        .into_iter()
        .map(|f| f.into_iter().peekable())
        .collect();
    let key = |it: &mut std::iter::Peekable<std::vec::IntoIter<Rec>>, before: f64| {
        it.peek()
            .map(|head| line_stamp(&head.value).unwrap_or(before))
    };
    let mut heads: BinaryHeap<Reverse<Head>> = iters
        .iter_mut()
        .enumerate()
        .filter_map(|(file, it)| {
            Some(Reverse(Head {
                key: key(it, f64::NEG_INFINITY)?,
                file,
            }))
        })
        .collect();
    let mut out = Vec::with_capacity(total);
    while let Some(Reverse(head)) = heads.pop() {
        let it = &mut iters[head.file];
        out.extend(it.next());
        if let Some(next) = key(it, head.key) {
            heads.push(Reverse(Head {
                key: next,
                file: head.file,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_each_file_in_order() {
        let rec = |ts: Option<&str>, n: u32| {
            let line = match ts {
                Some(t) => format!(r#"{{"n":{n},"timestamp":"{t}"}}"#),
                None => format!(r#"{{"n":{n}}}"#),
            };
            Rec::new(None, line.as_bytes())
        };
        let main = vec![
            rec(Some("2026-01-01T00:00:01Z"), 1),
            rec(Some("2026-01-01T00:00:05Z"), 2),
            rec(Some("2026-01-01T00:00:03Z"), 3),
        ];
        let sub = vec![rec(Some("2026-01-01T00:00:02Z"), 10), rec(None, 11)];
        let out: Vec<String> = merge(vec![main, sub])
            .iter()
            .map(|r| String::from_utf8_lossy(&r.value).into_owned())
            .collect();
        let ns: Vec<&str> = out.iter().map(|l| &l[5..7]).collect();
        assert_eq!(ns, ["1,", "10", "11", "2,", "3,"]);
    }

    /// The merge before the heap: every step looks at every file's head.
    fn merge_by_scan(files: Vec<Vec<Rec>>) -> Vec<Rec> {
        let mut iters: Vec<_> = files
            .into_iter()
            .map(|f| f.into_iter().peekable())
            .collect();
        let mut keys = vec![f64::NEG_INFINITY; iters.len()];
        let mut out = Vec::new();
        loop {
            let mut best: Option<(usize, f64)> = None;
            for (i, it) in iters.iter_mut().enumerate() {
                let Some(head) = it.peek() else { continue };
                let k = line_stamp(&head.value).unwrap_or(keys[i]);
                if best.is_none_or(|(_, bk)| k < bk) {
                    best = Some((i, k));
                }
            }
            let Some((i, k)) = best else { break };
            keys[i] = k;
            out.extend(iters[i].next());
        }
        out
    }

    #[test]
    fn the_heap_merge_gives_the_scanning_merge_s_order() {
        // Files of stamped, unstamped and tied lines, in a scrambled but fixed pattern.
        let files: Vec<Vec<Rec>> = (0..13)
            .map(|f| {
                (0..(f * 7) % 11)
                    .map(|i| {
                        let line = match (f * 31 + i * 17) % 5 {
                            0 => format!(r#"{{"f":{f},"i":{i}}}"#),
                            s => format!(
                                r#"{{"f":{f},"i":{i},"timestamp":"2026-01-01T00:00:{:02}Z"}}"#,
                                (s * 7 + i * 3) % 60
                            ),
                        };
                        Rec::new(None, line.as_bytes())
                    })
                    .collect()
            })
            .collect();
        assert_eq!(merge(files.clone()), merge_by_scan(files));
    }
}
