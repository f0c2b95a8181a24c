//! Hostile logs: the shapes that broke the module once — lone surrogates in any
//! key, bytes that are not UTF-8, session keys past the limit, deep nesting in skipped fields,
//! many compactions, eviction with replays, agents' own lines — drawn by `arbitrary`.

use agent_fold_core::MAX_KEY_LEN;
use arbitrary::{Arbitrary, Unstructured};

use crate::GenRecord;
use crate::logs::{Drawn, draw_all, three_cuts};

/// A hostile log: its params byte, its invocation cuts and its steps.
#[derive(Arbitrary, Debug, Clone)]
pub struct HostileLog {
    /// Bit 0: pressure view; bit 1: the lines are Claude Code's (`input=claude-code`); bit 2:
    /// a small `max_sessions` (1 + bits 3–4); bit 5: `malformed=drop`; bit 6: keyed records.
    pub params: u8,
    pub cuts: Vec<u8>,
    pub ops: Vec<HostileOp>,
}

/// Where a frame carries an odd member beside the fields it names.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Odd {
    None,
    /// A key with a lone surrogate escape at the top level.
    SurrogateKey,
    /// In `extras` (beside `parent_tool_use_id` when it has one).
    SurrogateExtras,
    /// In `usage`.
    SurrogateUsage,
    /// A field's name spelled with an escape.
    EscapedName,
    /// A string value with a lone surrogate.
    SurrogateValue,
    /// `1e400` and a 30-digit integer beside the fields.
    HugeNumber,
}

/// One step of a hostile log.
#[derive(Arbitrary, Debug, Clone)]
pub enum HostileOp {
    /// A frame of session `session % 4`: kind picks message, reading, counter, header,
    /// sub-agent counter or sub-agent message.
    Frame { session: u8, kind: u8, odd: Odd },
    /// A compaction replacing the session's nodes from the `back`-th last through the last.
    Compact { session: u8, back: u8 },
    /// An earlier record sent again.
    Replay { back: u8 },
    /// A frame whose session key is 1,024 + `extra` bytes (0: exactly at the limit).
    LongKey { extra: u8 },
    /// A frame with bytes that are not UTF-8 in a skipped string.
    BadUtf8 { session: u8 },
    /// A frame with `depth` nested arrays in a skipped field.
    Deep { session: u8, depth: u16 },
}

impl Drawn for HostileLog {
    fn draw(_seed: u64, u: &mut Unstructured) -> HostileLog {
        HostileLog {
            params: u.arbitrary().unwrap_or(0),
            cuts: three_cuts(u),
            ops: draw_all(u),
        }
    }

    /// The log as records, in order.
    fn records(&self) -> Vec<GenRecord> {
        let keyed = self.params & 64 != 0;
        let mut seqs = [0u64; 4];
        let mut nodes: [Vec<u64>; 4] = Default::default();
        let mut out: Vec<GenRecord> = Vec::new();
        for (n, op) in self.ops.iter().enumerate() {
            let (session, body) = match op {
                HostileOp::Replay { back } => {
                    if !out.is_empty() {
                        let i = out.len() - 1 - (*back as usize % out.len());
                        out.push(out[i].clone());
                    }
                    continue;
                }
                HostileOp::LongKey { extra } => {
                    let s = "L"
                        .repeat(MAX_KEY_LEN + *extra as usize % 3 * 512 + usize::from(*extra > 0));
                    let body = self.frame(&s, n as u64, 0, &mut Vec::new(), Odd::None);
                    (Some(s), body)
                }
                HostileOp::Frame { session, kind, odd } => {
                    let k = (*session % 4) as usize;
                    let s = format!("s{k}");
                    let seq = seqs[k];
                    seqs[k] += 1;
                    (
                        Some(s.clone()),
                        self.frame(&s, seq, *kind, &mut nodes[k], *odd),
                    )
                }
                HostileOp::Compact { session, back } => {
                    let k = (*session % 4) as usize;
                    let s = format!("s{k}");
                    let seq = seqs[k];
                    seqs[k] += 1;
                    (
                        Some(s.clone()),
                        self.compaction(&s, seq, *back, &mut nodes[k]),
                    )
                }
                HostileOp::BadUtf8 { session } => {
                    let s = format!("s{}", session % 4);
                    let mut b = format!(r#"{{"type":"user/message","session_id":"{s}","note":""#)
                        .into_bytes();
                    b.extend_from_slice(b"\xff\xfe");
                    b.extend_from_slice(br#"","message":"x"}"#);
                    (Some(s), b)
                }
                HostileOp::Deep { session, depth } => {
                    let s = format!("s{}", session % 4);
                    let d = *depth as usize % 5000;
                    let body = format!(
                        r#"{{"type":"tool/result","session_id":"{s}","x":{}{}}}"#,
                        "[".repeat(d),
                        "]".repeat(d)
                    );
                    (Some(s), body.into_bytes())
                }
            };
            let key = if keyed {
                session.map(String::into_bytes)
            } else {
                None
            };
            out.push((key, body));
        }
        out
    }

    fn cuts(&self) -> &[u8] {
        &self.cuts
    }
}

impl HostileLog {
    pub fn claude(&self) -> bool {
        self.params & 2 != 0
    }

    /// One frame (or Claude Code line) of session `s`.
    fn frame(&self, s: &str, seq: u64, kind: u8, nodes: &mut Vec<u64>, odd: Odd) -> Vec<u8> {
        let extras_odd = matches!(odd, Odd::SurrogateExtras)
            .then_some(r#""n\ud800":1,"#)
            .unwrap_or("");
        let usage_odd = matches!(odd, Odd::SurrogateUsage)
            .then_some(r#","n\udc00":7"#)
            .unwrap_or("");
        let top = match odd {
            Odd::SurrogateKey => r#","k\ud800":1"#,
            Odd::HugeNumber => r#","big":1e400,"int":123456789012345678901234567890"#,
            Odd::SurrogateValue => r#","note":"cut \ud83d""#,
            _ => "",
        };
        let t = |name: &str| {
            if matches!(odd, Odd::EscapedName) {
                name.replacen('e', "\\u0065", 1)
            } else {
                name.to_owned()
            }
        };
        let (ty, sid) = (t("type"), t("session_id"));
        if self.claude() {
            let uuid = format!("{s}-{seq}");
            let line = match kind % 5 {
                0 => format!(
                    r#"{{"{ty}":"user","sessionId":"{s}","uuid":"{uuid}","timestamp":"t{seq}","message":{{"role":"user","content":"hello {seq}"}}{top}}}"#
                ),
                1 => format!(
                    r#"{{"{ty}":"assistant","sessionId":"{s}","uuid":"{uuid}","timestamp":"t{seq}","message":{{"id":"m{seq}","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":{}{usage_odd}}}}}{top}}}"#,
                    1000 + 37 * seq
                ),
                2 => format!(
                    r#"{{"{ty}":"user","sessionId":"{s}","uuid":"{uuid}","isSidechain":true,"agentId":"a{seq}","message":{{"role":"user","content":"sub"}}{top}}}"#
                ),
                3 => format!(
                    r#"{{"{ty}":"system","subtype":"compact_boundary","sessionId":"{s}","uuid":"{uuid}"{top}}}"#
                ),
                _ => format!(
                    r#"{{"{ty}":"user","sessionId":"{s}","uuid":"{uuid}","isCompactSummary":true,"message":{{"role":"user","content":"summary {seq}"}}{top}}}"#
                ),
            };
            return line.into_bytes();
        }
        let frame = match kind % 6 {
            0 => {
                nodes.push(seq);
                format!(
                    r#"{{"{ty}":"user/message","{sid}":"{s}","seq":{seq},"timestamp":"t{seq}","message":"hello {seq}"{top}}}"#
                )
            }
            1 => {
                nodes.push(seq);
                format!(
                    r#"{{"{ty}":"assistant/message","{sid}":"{s}","seq":{seq},"message":"ok","usage":{{"input_tokens":{}{usage_odd}}},"extras":{{{extras_odd}"model":"m"}}{top}}}"#,
                    1000 + 37 * seq
                )
            }
            2 => format!(
                r#"{{"{ty}":"thinking/tokens","{sid}":"{s}","seq":{seq},"timestamp":"t{seq}","estimated_tokens_delta":{},"extras":{{{extras_odd}"x":0}}{top}}}"#,
                seq % 9
            ),
            3 => format!(
                r#"{{"{ty}":"request/header","{sid}":"{s}","seq":{seq},"system":"be brief","tools":[{{"name":"t"}}],"context_window":200000{top}}}"#
            ),
            4 => format!(
                r#"{{"{ty}":"thinking/tokens","{sid}":"{s}","seq":{seq},"timestamp":"t{seq}","estimated_tokens_delta":3,"extras":{{{extras_odd}"parent_tool_use_id":"toolu_x"}}{top}}}"#
            ),
            _ => format!(
                r#"{{"{ty}":"assistant/message","{sid}":"{s}","seq":{seq},"message":"sub","usage":{{"input_tokens":90000}},"extras":{{{extras_odd}"parent_tool_use_id":"toolu_x"}}{top}}}"#
            ),
        };
        frame.into_bytes()
    }

    /// A compaction of session `s`: its nodes from the `back`-th last through the last
    /// replaced by one (a span that is no longer there, once its nodes went, is corrupt).
    fn compaction(&self, s: &str, seq: u64, back: u8, nodes: &mut Vec<u64>) -> Vec<u8> {
        if self.claude() {
            let uuid = format!("{s}-{seq}");
            return format!(r#"{{"type":"user","sessionId":"{s}","uuid":"{uuid}","isCompactSummary":true,"message":{{"role":"user","content":"summary"}}}}"#)
                .into_bytes();
        }
        let (from, to) = match nodes.len() {
            0 => (seq, seq),
            n => (nodes[n - 1 - (back as usize % n)], nodes[n - 1]),
        };
        if let Some(i) = nodes.iter().position(|x| *x == from) {
            nodes.truncate(i);
        }
        nodes.push(seq);
        format!(r#"{{"type":"user/message","session_id":"{s}","seq":{seq},"message":"summary","replaces":{{"from_seq":{from},"to_seq":{to}}}}}"#).into_bytes()
    }
}
