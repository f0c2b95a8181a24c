//! State the native core keeps, measured with the counting allocator: bytes per session and
//! per surface node, and the live heap over a long stream with `max_sessions` bounding it.

use agent_fold::corpus::{Corpus, CorpusConfig};
use agent_fold::record::Rec;
use agent_fold_core::{Processor, RecordIn};
use anyhow::{Result, bail};

use crate::phases::PackedRecords;
use agent_fold::heap::HeapCount;

fn uuid(n: u64) -> Vec<u8> {
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        n.wrapping_mul(0x9e37_79b9) as u32,
        n & 0xffff,
        n & 0xfff,
        (n >> 12) & 0xfff,
        n
    )
    .into_bytes()
}

/// Heap bytes per frames-view session: `n` sessions each seen with a user message and a
/// counter (so each holds its run state), divided by `n`.
pub(crate) fn frames_bytes_per_session(n: usize) -> Result<f64> {
    let count = HeapCount::start();
    let cap = n.to_string();
    let mut p = Processor::from_params([("emit", "frames"), ("max_sessions", cap.as_str())])?;
    let user = br#"{"type":"user/message","seq":0,"timestamp":"2026-11-29T10:00:00Z","message":{"role":"user","content":"hi"}}"#;
    let counter = br#"{"type":"thinking/tokens","seq":1,"timestamp":"2026-11-29T10:00:01Z","estimated_tokens_delta":5}"#;
    let mut at = 0;
    let mut taken = 0;
    while at < n {
        let keys: Vec<Vec<u8>> = (at..(at + 1000).min(n)).map(|i| uuid(i as u64)).collect();
        let mut recs = Vec::with_capacity(keys.len() * 2);
        for k in &keys {
            recs.push(RecordIn::new(Some(k), user));
            recs.push(RecordIn::new(Some(k), counter));
        }
        let t0 = count.live();
        drop(p.process(&recs)?);
        taken += count.live() - t0;
        at += keys.len();
    }
    if p.sessions() != n {
        bail!("expected {n} sessions, hold {}", p.sessions());
    }
    Ok(taken as f64 / n as f64)
}

/// Heap bytes per surface node of the pressure view: `sessions` sessions of `nodes` message
/// frames each, divided by the node count (session overhead included).
pub(crate) fn pressure_bytes_per_node(sessions: usize, nodes: usize) -> Result<(f64, f64)> {
    let count = HeapCount::start();
    let cap = sessions.to_string();
    let mut p = Processor::from_params([("emit", "pressure"), ("max_sessions", cap.as_str())])?;
    let keys: Vec<Vec<u8>> = (0..sessions).map(|i| uuid(i as u64)).collect();
    let mut taken: i64 = 0;
    let mut taken_empty: i64 = 0;
    for seq in 0..nodes as u64 {
        let values: Vec<Vec<u8>> = keys
            .iter()
            .map(|_| {
                format!(
                    r#"{{"type":"user/message","seq":{seq},"timestamp":"2026-11-29T10:00:00Z","message":{{"role":"user","content":"hello"}}}}"#
                )
                .into_bytes()
            })
            .collect();
        let recs: Vec<RecordIn> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| RecordIn::new(Some(k), v))
            .collect();
        let t0 = count.live();
        drop(p.process(&recs)?);
        let d = count.live() - t0;
        if seq == 0 {
            taken_empty = d;
        }
        taken += d;
    }
    // The first frame creates the session with one node: its bytes minus one node's share.
    let per_node = taken as f64 / (sessions * nodes) as f64;
    Ok((per_node, taken_empty as f64 / sessions as f64))
}

/// One processor of the memory stream, and the live heap it holds.
pub(crate) struct Held {
    pub view: &'static str,
    pub cap: usize,
    p: Processor,
    bytes: i64,
    /// At each quarter of the stream: records so far, live bytes held, sessions held.
    pub marks: Vec<(usize, i64, usize)>,
}

/// Streams `total` corpus records (generated as they go: the stream itself holds one
/// invocation) through native processors in invocations of 10,000, and notes the live heap
/// each holds at every quarter of the stream, with its session count. What a processor holds
/// is the sum of the heap its `process` calls left behind, so the stream's own buffers and
/// the generator do not count.
pub(crate) fn stream_memory(
    views: &[(&'static str, usize)],
    total: usize,
    seed: u64,
) -> Result<Vec<Held>> {
    let count = HeapCount::start();
    let mut corpus = Corpus::new(CorpusConfig {
        seed,
        ..CorpusConfig::default()
    });
    let mut held = Vec::new();
    for &(view, cap) in views {
        let t0 = count.live();
        let c = cap.to_string();
        let p = Processor::from_params([("emit", view), ("max_sessions", c.as_str())])?;
        held.push(Held {
            view,
            cap,
            p,
            bytes: count.live() - t0,
            marks: Vec::new(),
        });
    }
    let mut done = 0;
    let quarter = (total / 4).max(1);
    while done < total {
        // Invocations of 10,000, cut at each quarter.
        let next_mark = ((done / quarter + 1) * quarter).min(total);
        let n = 10_000.min(next_mark - done).max(1);
        let chunk = PackedRecords::of(&corpus.by_ref().take(n).collect::<Vec<Rec>>());
        let ins = chunk.inputs();
        for h in &mut held {
            let t0 = count.live();
            drop(h.p.process(&ins)?);
            h.bytes += count.live() - t0;
        }
        let before = done;
        done += ins.len();
        if done / quarter != before / quarter || done == total {
            for h in &mut held {
                if h.marks.last().is_none_or(|m| m.0 != done) {
                    h.marks.push((done, h.bytes, h.p.sessions()));
                }
            }
        }
    }
    Ok(held)
}
