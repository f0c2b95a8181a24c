//! Generated agent logs for property tests and fuzz targets.
//!
//! One generator serves both: the fuzz targets shape it from libFuzzer's bytes, the property
//! tests from a seeded stream of pseudo-random bytes, so `cargo test` explores the same space
//! the fuzzers do, in seconds.

use std::ops::Range;

use arbitrary::{Arbitrary, Result, Unstructured};

use serde_json::{Value, json};

/// A counter's `estimated_tokens_delta`, good and bad.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Delta {
    Small(u8),
    Big(u64),
    Max,
    Negative,
    Float,
    Text,
    Missing,
}

/// A frame of a generated log, before it becomes JSON.
#[derive(Arbitrary, Debug, Clone)]
pub enum GenFrame {
    Counter {
        session: u8,
        delta: Delta,
        stamped: bool,
        /// An already folded counter: `folded_frames` (0 is invalid) and a `folded_from`.
        folded: Option<(u8, bool)>,
    },
    Other {
        session: u8,
        kind: u8,
    },
    Sub {
        session: u8,
        counter: bool,
    },
    Malformed {
        session: Option<u8>,
        bytes: u8,
    },
}

/// A log of frames, the invocation cuts to replay it with, and its key mode.
#[derive(Arbitrary, Debug, Clone)]
pub struct GenLog {
    pub frames: Vec<GenFrame>,
    /// Invocation sizes, cycled (0 counts as 1).
    pub cuts: Vec<u8>,
    /// Records carry their session as a Fluvio key (else only as `session_id`).
    pub keyed: bool,
}

/// A generated record: key and value.
pub type GenRecord = (Option<Vec<u8>>, Vec<u8>);

const OTHER_KINDS: [&str; 4] = [
    "user/message",
    "assistant/message",
    "tool/result",
    "compact/end",
];

fn session_name(s: u8) -> String {
    format!("s{}", s % 4)
}

impl GenFrame {
    /// The frame's session and JSON text; `n` numbers it (ids, stamps).
    pub fn render(&self, n: usize) -> (Option<String>, Vec<u8>) {
        match self {
            GenFrame::Counter {
                session,
                delta,
                stamped,
                folded,
            } => {
                let s = session_name(*session);
                let mut v =
                    json!({"type": "thinking/tokens", "id": format!("c{n}"), "session_id": s});
                if *stamped {
                    v["timestamp"] =
                        format!("2026-11-29T10:{:02}:{:02}Z", n / 60 % 60, n % 60).into();
                }
                let d: Option<Value> = match delta {
                    Delta::Small(d) => Some((*d).into()),
                    Delta::Big(d) => Some((*d).into()),
                    Delta::Max => Some((1u64 << 53).into()),
                    Delta::Negative => Some((-1).into()),
                    Delta::Float => Some(1.5.into()),
                    Delta::Text => Some("7".into()),
                    Delta::Missing => None,
                };
                if let Some(d) = d {
                    v["estimated_tokens_delta"] = d;
                }
                if let Some((frames, from_ok)) = folded {
                    v["folded_frames"] = (*frames).into();
                    v["folded_from"] = if *from_ok {
                        format!("f{n}").into()
                    } else {
                        Value::Null
                    };
                }
                (Some(s), v.to_string().into_bytes())
            }
            GenFrame::Other { session, kind } => {
                let s = session_name(*session);
                let kind = OTHER_KINDS[*kind as usize % OTHER_KINDS.len()];
                let v =
                    json!({"type": kind, "id": format!("o{n}"), "session_id": s, "timestamp": "t"});
                (Some(s), v.to_string().into_bytes())
            }
            GenFrame::Sub { session, counter } => {
                let s = session_name(*session);
                let kind = if *counter {
                    "thinking/tokens"
                } else {
                    "assistant/message"
                };
                let v = json!({"type": kind, "id": format!("x{n}"), "session_id": s, "timestamp": "t",
                    "estimated_tokens_delta": 3, "extras": {"parent_tool_use_id": "toolu_sub"}});
                (Some(s), v.to_string().into_bytes())
            }
            GenFrame::Malformed { session, bytes } => {
                let body = match bytes % 4 {
                    0 => b"not json".to_vec(),
                    1 => b"[1,2]".to_vec(),
                    2 => b"{\"type\":\"thinking/tokens\"".to_vec(),
                    _ => vec![0xff, b'{'],
                };
                (session.map(session_name), body)
            }
        }
    }
}

impl Drawn for GenLog {
    fn draw(_seed: u64, u: &mut Unstructured) -> GenLog {
        GenLog {
            keyed: u.arbitrary().unwrap_or(true),
            cuts: three_cuts(u),
            frames: draw_all(u),
        }
    }

    /// The log as records. Malformed records are keyed by their session when `keyed`.
    fn records(&self) -> Vec<GenRecord> {
        self.frames
            .iter()
            .enumerate()
            .map(|(n, f)| {
                let (s, body) = f.render(n);
                let key = if self.keyed {
                    s.map(String::into_bytes)
                } else {
                    None
                };
                (key, body)
            })
            .collect()
    }

    fn cuts(&self) -> &[u8] {
        &self.cuts
    }
}

/// One step of a generated session for the pressure view.
#[derive(Arbitrary, Debug, Clone)]
pub enum SurfaceOp {
    Header {
        system: u8,
        tools: u8,
        window: Option<u32>,
    },
    Message {
        len: u8,
        cjk: bool,
    },
    Sample {
        input: u16,
        cache_read: u32,
        cache_creation: u16,
        with_message: bool,
    },
    /// A replacement span; each end either picks a node of the log so far or is a raw seq.
    Replace {
        from: SeqPick,
        to: SeqPick,
        with_message: bool,
    },
    /// A replacement whose `replaces` is not a span object.
    BadReplace(u8),
    /// A frame already applied, sent again.
    Redeliver(u8),
    /// A frame with a message and no seq.
    NoSeq,
    /// A frame that moves the cursor only.
    Quiet,
    /// A sub-agent's message: not this session's context.
    Sub,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SeqPick {
    /// The seq of the n-th message-bearing frame so far (modulo their count).
    Node(u8),
    Raw(u64),
    Huge,
}

impl SeqPick {
    /// The seq it picks among `nodes` (the seqs of the message-bearing frames so far).
    pub fn pick(self, nodes: &[u64]) -> u64 {
        match self {
            SeqPick::Node(i) if !nodes.is_empty() => nodes[i as usize % nodes.len()],
            SeqPick::Node(i) => i as u64,
            SeqPick::Raw(r) => r,
            SeqPick::Huge => u64::MAX,
        }
    }
}

/// A generated session: it may start mid-stream (partial).
#[derive(Arbitrary, Debug, Clone)]
pub struct GenSession {
    pub start_seq: u8,
    pub ops: Vec<SurfaceOp>,
    pub cuts: Vec<u8>,
}

impl Drawn for GenSession {
    /// One seed in four joins mid-stream (partial), the rest start at seq 0.
    fn draw(seed: u64, u: &mut Unstructured) -> GenSession {
        GenSession {
            start_seq: if seed % 4 == 3 {
                u.arbitrary().unwrap_or(1)
            } else {
                0
            },
            cuts: three_cuts(u),
            ops: draw_all(u),
        }
    }

    /// The session's frames as records of session `s`, in log order.
    fn records(&self) -> Vec<GenRecord> {
        let mut seq = self.start_seq as u64;
        let mut sent: Vec<Vec<u8>> = Vec::new();
        let mut nodes: Vec<u64> = Vec::new();
        let mut out = Vec::new();
        for op in &self.ops {
            let mut v = json!({"session_id": "s", "seq": seq, "timestamp": format!("t{seq}")});
            let mut node = false;
            match op {
                SurfaceOp::Header {
                    system,
                    tools,
                    window,
                } => {
                    v["type"] = "request/header".into();
                    if *system > 0 {
                        v["system"] = "s".repeat(*system as usize).into();
                    }
                    if *tools > 0 {
                        v["tools"] = json!([{"name": "t".repeat(*tools as usize)}]);
                    }
                    if let Some(w) = window {
                        v["context_window"] = (*w).into();
                    }
                    // Some headers name a compaction reserve (read from the op's own bits, so
                    // that the corpus decodes as before).
                    if system % 5 == 4 {
                        v["compact_reserve"] = (*tools as u64 * 100).into();
                    }
                }
                SurfaceOp::Message { len, cjk } => {
                    v["type"] = "user/message".into();
                    let unit = if *cjk { "中" } else { "a\\\"" };
                    // Some content is measured, not carried (telemetry gives sizes:
                    // `message_chars`, contract §3.1), beside a message or alone; read from
                    // the op's own bits, so that the corpus decodes as before.
                    match len % 7 {
                        3 => v["message_chars"] = (*len as u64 * 13).into(),
                        5 => v["message_chars"] = (*len as u64 * 7).into(),
                        _ => {}
                    }
                    if len % 7 != 5 {
                        v["message"] = json!({"content": unit.repeat(*len as usize)});
                    }
                    node = true;
                }
                SurfaceOp::Sample {
                    input,
                    cache_read,
                    cache_creation,
                    with_message,
                } => {
                    v["type"] = "assistant/message".into();
                    v["usage"] = json!({"input_tokens": input, "cache_read_input_tokens": cache_read,
                        "cache_creation_input_tokens": cache_creation, "output_tokens": 1});
                    // Some readings are anchored to an earlier frame (its request carried the
                    // surface as it stood there), some to a frame not below their own.
                    if input % 3 == 1 {
                        v["anchor_seq"] = (seq as i64 + 1 - (*cache_creation as i64 % 5)).into();
                    }
                    if *with_message {
                        v["message"] = json!({"content": "ok"});
                        node = true;
                    }
                }
                SurfaceOp::Replace {
                    from,
                    to,
                    with_message,
                } => {
                    // A compaction may open with its `compact/start`, which may say the log
                    // shows what comes back.
                    if *with_message {
                        let (from, to) = (from.pick(&nodes), to.pick(&nodes));
                        let mut start = json!({"type": "compact/start", "seq": seq, "session_id": "s",
                            "restore_shown": from % 2 == to % 2});
                        // Or what the agent's rule puts back that the log does not show.
                        if from % 3 == 0 {
                            start["restore_tokens"] = (to.wrapping_mul(37) % 20_000).into();
                            // And, at times, that nothing comes back beyond it.
                            if to % 2 == 1 {
                                start["restore_beyond"] = false.into();
                            }
                        }
                        let bytes = start.to_string().into_bytes();
                        sent.push(bytes.clone());
                        out.push((Some(b"s".to_vec()), bytes));
                        seq += 1;
                        v["seq"] = seq.into();
                    }
                    v["type"] = "user/message".into();
                    v["replaces"] =
                        json!({"from_seq": from.pick(&nodes), "to_seq": to.pick(&nodes)});
                    if *with_message {
                        v["message"] = json!({"content": "summary"});
                    }
                    node = true;
                }
                SurfaceOp::BadReplace(k) => {
                    v["type"] = "user/message".into();
                    v["replaces"] = match k % 4 {
                        0 => json!({"from_seq": -1, "to_seq": 2}),
                        1 => json!({"from_seq": 1}),
                        2 => json!([1, 2]),
                        _ => json!({"from_seq": 1.5, "to_seq": "2"}),
                    };
                    node = true;
                }
                SurfaceOp::Redeliver(back) => {
                    if !sent.is_empty() {
                        let i = sent.len() - 1 - (*back as usize % sent.len());
                        out.push((Some(b"s".to_vec()), sent[i].clone()));
                    }
                    continue;
                }
                SurfaceOp::NoSeq => {
                    let v = json!({"type": "user/message", "session_id": "s", "message": "x"});
                    out.push((Some(b"s".to_vec()), v.to_string().into_bytes()));
                    continue;
                }
                SurfaceOp::Quiet => v["type"] = "tool/use".into(),
                SurfaceOp::Sub => {
                    v["type"] = "user/message".into();
                    v["message"] = "sub".into();
                    v["extras"] = json!({"parent_tool_use_id": "toolu_x"});
                }
            }
            if node {
                nodes.push(seq);
            }
            let bytes = v.to_string().into_bytes();
            sent.push(bytes.clone());
            out.push((Some(b"s".to_vec()), bytes));
            seq += 1;
        }
        out
    }

    fn cuts(&self) -> &[u8] {
        &self.cuts
    }
}

/// A generated log, made by libFuzzer's bytes or by a seed: the records it makes and the
/// invocations to replay them in.
pub trait Drawn: Sized + for<'a> Arbitrary<'a> {
    /// Drawn from a seed's bytes: its header, its three cuts, then steps until the bytes run
    /// out.
    fn draw(seed: u64, u: &mut Unstructured) -> Self;

    /// The records it makes, in log order (key, value).
    fn records(&self) -> Vec<GenRecord>;

    /// The invocation cuts: batch sizes, cycled over the records.
    fn cuts(&self) -> &[u8];

    /// The invocation boundaries over `n` records: sizes from [`Drawn::cuts`], cycled (a cut of
    /// 0 is 1; no cuts, one invocation).
    fn batches(&self, n: usize) -> Vec<Range<usize>> {
        let cuts = self.cuts();
        let mut out = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < n {
            let size = cuts
                .get(i % cuts.len().max(1))
                .map_or(n, |c| (*c as usize).max(1));
            let end = (at + size).min(n);
            out.push(at..end);
            at = end;
            i += 1;
        }
        out
    }

    fn from_bytes(data: &[u8]) -> Result<Self> {
        Self::arbitrary_take_rest(Unstructured::new(data))
    }

    /// Shaped from `len` pseudo-random bytes of `seed`.
    fn from_seed(seed: u64, len: usize) -> Self {
        let bytes = seeded_bytes(seed, len);
        Self::draw(seed, &mut Unstructured::new(&bytes))
    }
}

/// Three invocation cuts.
pub(crate) fn three_cuts(u: &mut Unstructured) -> Vec<u8> {
    (0..3).map(|_| u.arbitrary().unwrap_or(1)).collect()
}

/// Values drawn until the bytes run out. (Derived `arbitrary` sizes a list by coin flips,
/// which on random bytes gives a list of one or two: fine for libFuzzer, which learns the
/// flips, useless for a seeded test.)
pub(crate) fn draw_all<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> Vec<T> {
    let mut out = Vec::new();
    while !u.is_empty() {
        match T::arbitrary(u) {
            Ok(v) => out.push(v),
            Err(_) => break,
        }
    }
    out
}

/// splitmix64 bytes: a seeded, portable stream for property tests.
pub fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    agent_fold_core::Rng::from_state(seed).bytes(len)
}
