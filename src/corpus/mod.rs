//! A deterministic corpus of realistic agent logs, for the bench and for anyone who wants a big
//! log to feed the module: `agent-fold corpus --records N --seed S`.
//!
//! Many sessions run at once and their frames interleave, as on a busy agent-event topic. Each
//! session opens with a `request/header` carrying a system prompt and a large tool schema, and
//! then runs turns: a run of 1–50 thinking-token counters (most short, a few long), an
//! `assistant/message` with `usage`, a `tool/result` of 100 B–20 KiB; now and then a fresh
//! header, a sub-agent dispatch (frames with `extras.parent_tool_use_id`), or a compaction
//! (`compact/start`, counters, `compact/end`, a summary `user/message` whose `replaces` span is
//! a valid span of the session's surface). About 0.1% of records are malformed (truncated
//! frames, relay error pages). Counters are about half the records.
//!
//! The generator streams: it holds only each live session's small state, so a corpus of any
//! length costs constant memory. A seeded splitmix64 (`agent_fold_core::Rng`) makes it deterministic across machines.

use std::fmt::Write as _;

use anyhow::Result;

use agent_fold_core::Rng;

use crate::record::Rec;
use text::{TOOL_NAMES, TextWriter, WORDS, json_text, json_text_cut, range_sized, write_stamp};

mod text;

/// How a corpus is shaped.
#[derive(Debug, Clone)]
pub struct CorpusConfig {
    pub seed: u64,
    /// Sessions live at once (their frames interleave).
    pub active_sessions: usize,
    /// Records carry their session id as the Fluvio record key (as a producer keyed by
    /// session writes them); else only as `session_id`.
    pub keyed: bool,
    /// A live fleet, as a board meets it: sessions joined mid-life (their context anywhere
    /// from 20k to 175k tokens), headers naming the agent's compaction reserve (33,000 of a
    /// 200,000 window), and an automatic compaction (`compact/start` with `trigger` and
    /// `preTokens`) once a session's context passes 167,000.
    pub fleet: bool,
    /// Small events, as most of a live stream's records are (about 200 B a record): turns that
    /// nearly all think, in runs of 1–50 counters (counters about three quarters of the
    /// records), user messages of 10–200 B, assistant texts of 10–120 B, tool calls' input of
    /// 10–60 B, tool results of 10–200 B, summaries of 100–400 B, and headers of a 100–400 B
    /// system prompt and 1–3 short tools.
    pub small: bool,
}

impl Default for CorpusConfig {
    fn default() -> Self {
        CorpusConfig {
            seed: 1,
            active_sessions: 64,
            keyed: true,
            fleet: false,
            small: false,
        }
    }
}

/// What a generator has produced so far.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub records: u64,
    pub bytes: u64,
    pub counters: u64,
    pub subagent: u64,
    pub malformed: u64,
    pub headers: u64,
    pub compactions: u64,
    pub tool_results: u64,
    pub sessions: u64,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let pct = |n: u64| 100.0 * n as f64 / self.records.max(1) as f64;
        write!(
            f,
            "{} records, {:.1} MB, {} sessions; counters {:.1}%, sub-agent {:.1}%, tool results {:.1}%, \
             headers {:.2}%, compactions {}, malformed {:.2}%",
            self.records,
            self.bytes as f64 / 1e6,
            self.sessions,
            pct(self.counters),
            pct(self.subagent),
            pct(self.tool_results),
            pct(self.headers),
            self.compactions,
            pct(self.malformed)
        )
    }
}

/// Where a fleet's sessions compact on their own: their 200,000 window less 33,000.
const FLEET_COMPACT_AT: u64 = 167_000;

/// One planned frame of a session: bodies are rendered when it is emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planned {
    Header,
    User,
    Counter {
        sub: bool,
    },
    Assistant {
        sub: bool,
        tool: Tool,
    },
    ToolResult {
        sub: bool,
    },
    /// The main `tool/result` a dispatch returns.
    TaskResult,
    CompactStart,
    CompactEnd,
    /// The compaction's summary, replacing most of the surface.
    Summary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Call,
    Task,
    Text,
}

struct Session {
    id: String,
    seq: u64,
    turns_left: u32,
    plan: std::collections::VecDeque<Planned>,
    /// Seqs of the session's surface nodes, as the pressure view holds them, so compaction
    /// spans are valid.
    surface: Vec<u64>,
    /// The dispatch in flight, if any.
    parent: Option<String>,
    /// The session's running context size, to make `usage` grow as a real one does.
    context: u64,
    tools: u32,
    system_len: u64,
}

/// A `request/header`'s members: the model, the system prompt, the tools with their schemas,
/// the window.
fn write_header(
    rng: &mut Rng,
    s: &Session,
    small: bool,
    fleet: bool,
    json_text: TextWriter,
    o: &mut String,
    scratch: &mut String,
) {
    o.push_str(",\"model\":\"claude-sonnet-4-5\",\"system\":");
    json_text(rng, s.system_len as usize, o, scratch);
    o.push_str(",\"tools\":[");
    for t in 0..s.tools {
        if t > 0 {
            o.push(',');
        }
        let name = TOOL_NAMES[t as usize % TOOL_NAMES.len()];
        let _ = write!(o, "{{\"name\":\"{name}{}\",\"description\":", t / 16);
        let n = range_sized(rng, small, (20, 80), (120, 600)) as usize;
        json_text(rng, n, o, scratch);
        o.push_str(",\"input_schema\":{\"type\":\"object\",\"properties\":{");
        let props = range_sized(rng, small, (1, 2), (1, 6));
        for p in 0..props {
            if p > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "\"{}_{p}\":{{\"type\":\"{}\",\"description\":",
                rng.pick(WORDS),
                rng.pick(&["string", "integer", "boolean", "array"])
            );
            let n = rng.range(20, 120) as usize;
            json_text(rng, n, o, scratch);
            o.push('}');
        }
        o.push_str("},\"required\":[]}}");
    }
    o.push_str("],\"context_window\":200000,\"max_tokens\":32000");
    if fleet {
        o.push_str(",\"compact_reserve\":33000");
    }
}

/// An `assistant/message`'s members: the message (text, and a tool call or a dispatch) and
/// its usage; the message's length in bytes.
fn write_assistant(
    rng: &mut Rng,
    context: u64,
    small: bool,
    tool: Tool,
    json_text: TextWriter,
    o: &mut String,
    scratch: &mut String,
) -> u64 {
    let start = o.len();
    o.push_str(",\"message\":{\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":");
    let (lo, hi) = if small { (10, 120) } else { (30, 1500) };
    let n = rng.log_range(lo, hi) as usize;
    json_text(rng, n, o, scratch);
    o.push('}');
    match tool {
        Tool::Text => {}
        Tool::Call | Tool::Task => {
            let name = if tool == Tool::Task {
                "Task"
            } else {
                rng.pick(TOOL_NAMES)
            };
            let _ = write!(
                o,
                ",{{\"type\":\"tool_use\",\"id\":\"toolu_{:016x}\",\"name\":\"{name}\",\"input\":{{\"command\":",
                rng.next_u64()
            );
            let n = range_sized(rng, small, (10, 60), (20, 300)) as usize;
            json_text(rng, n, o, scratch);
            o.push_str("}}");
        }
    }
    o.push_str("]}");
    let message_len = (o.len() - start) as u64;
    let input = rng.range(2, 400);
    let cached = context.saturating_sub(input);
    let created = rng.range(0, 300);
    let _ = write!(
        o,
        ",\"usage\":{{\"input_tokens\":{input},\"cache_read_input_tokens\":{cached},\
             \"cache_creation_input_tokens\":{created},\"output_tokens\":{}}}",
        rng.range(10, 900)
    );
    message_len
}

/// A deterministic stream of agent-log records.
pub struct Corpus {
    rng: Rng,
    config: CorpusConfig,
    live: Vec<Session>,
    next_session: u64,
    /// Milliseconds since 2026-11-29T00:00:00Z.
    clock: u64,
    stats: Stats,
    scratch: String,
    /// A record queued behind a malformed one.
    queued: Option<Rec>,
}

impl Corpus {
    pub fn new(config: CorpusConfig) -> Corpus {
        let mut c = Corpus {
            rng: Rng::new(config.seed),
            live: Vec::new(),
            next_session: 0,
            clock: 10 * 3_600_000,
            stats: Stats::default(),
            scratch: String::new(),
            queued: None,
            config,
        };
        for _ in 0..c.config.active_sessions.max(1) {
            let s = c.new_session();
            c.live.push(s);
        }
        c
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    fn new_session(&mut self) -> Session {
        let n = self.next_session;
        self.next_session += 1;
        self.stats.sessions += 1;
        let id = format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            self.rng.next_u64() as u32,
            n & 0xffff,
            self.rng.next_u64() & 0xfff,
            self.rng.next_u64() & 0xfff,
            self.rng.next_u64() & 0xffff_ffff_ffff
        );
        let mut s = Session {
            id,
            seq: 0,
            turns_left: self.rng.range(8, 120) as u32,
            plan: Default::default(),
            surface: Vec::new(),
            parent: None,
            context: if self.config.fleet {
                self.rng.range(20_000, 175_000)
            } else {
                0
            },
            tools: if self.config.small {
                self.rng.range(1, 3) as u32
            } else {
                self.rng.range(8, 30) as u32
            },
            system_len: if self.config.small {
                self.rng.log_range(100, 400)
            } else {
                self.rng.log_range(800, 8000)
            },
        };
        s.plan.push_back(Planned::Header);
        s.plan.push_back(Planned::User);
        s
    }

    /// Plans a session's next turn.
    fn plan_turn(rng: &mut Rng, s: &mut Session, fleet: bool, small: bool) {
        let p = &mut s.plan;
        let due = fleet && s.context > FLEET_COMPACT_AT && s.surface.len() >= 3;
        if due || (s.surface.len() >= 8 && rng.chance(0.035)) {
            p.push_back(Planned::CompactStart);
            for _ in 0..rng.range(1, 20) {
                p.push_back(Planned::Counter { sub: false });
            }
            p.push_back(Planned::CompactEnd);
            p.push_back(Planned::Summary);
            return;
        }
        if rng.chance(0.1) {
            p.push_back(Planned::Header);
        }
        let run = |rng: &mut Rng| -> u64 {
            // Most runs are short; a few long ones are what folding is for. Small events are
            // a stream's thinking: nearly every turn thinks, and its runs are longer.
            let (thinks, short, middle) = if small { (0.95, 40, 80) } else { (0.6, 72, 94) };
            if !rng.chance(thinks) {
                return 0;
            }
            let x = rng.next_u64() % 100;
            if x < short {
                rng.range(1, if small { 4 } else { 2 })
            } else if x < middle {
                rng.range(if small { 5 } else { 3 }, if small { 15 } else { 10 })
            } else {
                rng.range(if small { 16 } else { 11 }, 50)
            }
        };
        for _ in 0..run(rng) {
            p.push_back(Planned::Counter { sub: false });
        }
        let x = rng.next_u64() % 100;
        let tool = if x < 8 {
            Tool::Task
        } else if x < 85 {
            Tool::Call
        } else {
            Tool::Text
        };
        p.push_back(Planned::Assistant { sub: false, tool });
        match tool {
            Tool::Call => p.push_back(Planned::ToolResult { sub: false }),
            Tool::Text => p.push_back(Planned::User),
            Tool::Task => {
                p.push_back(Planned::User); // the sub-agent's prompt (marked sub when rendered)
                for _ in 0..rng.range(1, 4) {
                    for _ in 0..run(rng) {
                        p.push_back(Planned::Counter { sub: true });
                    }
                    p.push_back(Planned::Assistant {
                        sub: true,
                        tool: Tool::Call,
                    });
                    p.push_back(Planned::ToolResult { sub: true });
                }
                p.push_back(Planned::Assistant {
                    sub: true,
                    tool: Tool::Text,
                });
                p.push_back(Planned::TaskResult);
            }
        }
    }

    /// Renders a session's next frame.
    fn render(&mut self, at: usize) -> Rec {
        let rng = &mut self.rng;
        let s = &mut self.live[at];
        if s.plan.is_empty() {
            Self::plan_turn(rng, s, self.config.fleet, self.config.small);
        }
        let step = s.plan.pop_front().expect("a turn plans at least one frame");
        // A dispatch's sub-agent frames carry its parent; the prompt is its first.
        let opens_dispatch = matches!(
            (step, s.plan.front().copied()),
            (
                Planned::User,
                Some(Planned::Counter { sub: true } | Planned::Assistant { sub: true, .. })
            )
        );
        if opens_dispatch && s.parent.is_none() {
            s.parent = Some(format!("toolu_{:016x}", rng.next_u64()));
        }
        let sub = match step {
            Planned::Counter { sub }
            | Planned::Assistant { sub, .. }
            | Planned::ToolResult { sub } => sub,
            Planned::User => s.parent.is_some(),
            _ => false,
        };
        let kind = match step {
            Planned::Header => "request/header",
            Planned::User | Planned::Summary => "user/message",
            Planned::Counter { .. } => "thinking/tokens",
            Planned::Assistant { .. } => "assistant/message",
            Planned::ToolResult { .. } | Planned::TaskResult => "tool/result",
            Planned::CompactStart => "compact/start",
            Planned::CompactEnd => "compact/end",
        };
        let seq = s.seq;
        s.seq += 1;
        let mut o = String::with_capacity(256);
        o.push_str("{\"type\":\"");
        o.push_str(kind);
        let _ = write!(
            o,
            "\",\"id\":\"{}-{seq:05}\",\"session_id\":\"{}\",\"seq\":{seq},\"timestamp\":",
            &s.id[..8],
            s.id
        );
        // A few counters go unstamped (a relay that lost the field): they end a foldable part.
        let unstamped = matches!(step, Planned::Counter { .. }) && rng.chance(0.003);
        if unstamped {
            o.truncate(o.len() - ",\"timestamp\":".len());
        } else {
            write_stamp(&mut o, self.clock);
        }
        let scratch = &mut self.scratch;
        let small = self.config.small;
        let json_text = if small { json_text_cut } else { json_text };
        let mut message_len = 0u64;
        match step {
            Planned::Header => {
                self.stats.headers += 1;
                write_header(rng, s, small, self.config.fleet, json_text, &mut o, scratch);
            }
            Planned::User | Planned::Summary => {
                let start = o.len();
                o.push_str(",\"message\":{\"role\":\"user\",\"content\":");
                let len = match (step == Planned::Summary, small) {
                    (true, false) => rng.range(600, 4000),
                    (true, true) => rng.range(100, 400),
                    (false, false) => rng.log_range(40, 3000),
                    (false, true) => rng.log_range(10, 200),
                };
                json_text(rng, len as usize, &mut o, scratch);
                o.push('}');
                message_len = (o.len() - start) as u64;
                if step == Planned::Summary {
                    self.stats.compactions += 1;
                    // Replace all but the last two nodes: a valid span of the surface.
                    let n = s.surface.len();
                    let (from, to) = (s.surface[0], s.surface[n - 3]);
                    let _ = write!(o, ",\"replaces\":{{\"from_seq\":{from},\"to_seq\":{to}}}");
                    s.surface.drain(..n - 2);
                    s.surface.insert(0, seq);
                    s.context /= 5;
                } else if !sub {
                    s.surface.push(seq);
                }
            }
            Planned::Counter { .. } => {
                self.stats.counters += 1;
                let delta = rng.log_range(1, 400);
                let _ = write!(o, ",\"estimated_tokens_delta\":{delta}");
            }
            Planned::Assistant { tool, .. } => {
                message_len =
                    write_assistant(rng, s.context, small, tool, json_text, &mut o, scratch);
                if !sub {
                    s.surface.push(seq);
                }
            }
            Planned::ToolResult { .. } | Planned::TaskResult => {
                self.stats.tool_results += 1;
                let start = o.len();
                let len = match (sub, small) {
                    (_, true) => rng.log_range(10, 200),
                    (true, false) => rng.log_range(100, 4096),
                    (false, false) => rng.log_range(100, 20 * 1024),
                };
                let _ = write!(
                    o,
                    ",\"message\":{{\"role\":\"tool\",\"tool_use_id\":\"toolu_{:016x}\",\"content\":",
                    rng.next_u64()
                );
                json_text(rng, len as usize, &mut o, scratch);
                o.push('}');
                message_len = (o.len() - start) as u64;
                if step == Planned::TaskResult {
                    s.parent = None;
                }
                if !sub {
                    s.surface.push(seq);
                }
            }
            Planned::CompactStart if self.config.fleet && s.context > FLEET_COMPACT_AT => {
                let _ = write!(o, ",\"trigger\":\"auto\",\"preTokens\":{}", s.context);
            }
            Planned::CompactStart | Planned::CompactEnd => {}
        }
        if !sub {
            s.context += message_len / 4;
        }
        if sub {
            self.stats.subagent += 1;
            let parent = s.parent.as_deref().unwrap_or("toolu_0");
            let _ = write!(o, ",\"extras\":{{\"parent_tool_use_id\":\"{parent}\"}}");
        }
        o.push('}');
        let key = self.config.keyed.then(|| s.id.clone().into_bytes());
        Rec {
            key,
            value: o.into_bytes(),
        }
    }

    /// A record the relay mangled: a truncated frame, or an error page.
    fn malformed(&mut self, of: &Rec) -> Rec {
        let value = if self.rng.chance(0.7) {
            let cut = self.rng.range(1, of.value.len() as u64 - 1) as usize;
            of.value[..cut].to_vec()
        } else {
            b"<html><body><h1>502 Bad Gateway</h1></body></html>".to_vec()
        };
        Rec {
            key: of.key.clone(),
            value,
        }
    }

    fn count(&mut self, r: &Rec) {
        self.stats.records += 1;
        self.stats.bytes += r.value.len() as u64;
    }
}

impl Iterator for Corpus {
    type Item = Rec;

    fn next(&mut self) -> Option<Rec> {
        if let Some(r) = self.queued.take() {
            self.count(&r);
            return Some(r);
        }
        self.clock += self.rng.range(0, 250);
        let at = (self.rng.next_u64() % self.live.len() as u64) as usize;
        let rec = self.render(at);
        let s = &mut self.live[at];
        if s.plan.is_empty() {
            if s.turns_left == 0 && s.parent.is_none() {
                self.live[at] = self.new_session();
            } else {
                s.turns_left = s.turns_left.saturating_sub(1);
            }
        }
        if self.rng.chance(0.001) {
            self.stats.malformed += 1;
            let bad = self.malformed(&rec);
            self.queued = Some(rec);
            self.count(&bad);
            return Some(bad);
        }
        self.count(&rec);
        Some(rec)
    }
}

/// The index of the first record that is not a JSON object (the corpus has a few).
pub fn first_malformed(records: &[Rec]) -> Option<usize> {
    records
        .iter()
        .position(|r| !agent_fold_core::is_object(&r.value))
}

/// `records` records of the corpus `seed` shapes, with the default shape.
pub fn corpus(records: usize, seed: u64) -> Vec<Rec> {
    Corpus::new(CorpusConfig {
        seed,
        ..CorpusConfig::default()
    })
    .take(records)
    .collect()
}

/// `agent-fold corpus`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Records to write
    #[arg(long, default_value_t = 10_000)]
    pub records: usize,
    /// The generator's seed
    #[arg(long, default_value_t = CorpusConfig::default().seed)]
    pub seed: u64,
    /// Sessions active at once
    #[arg(long, default_value_t = CorpusConfig::default().active_sessions, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub sessions: usize,
    /// Records carry no key (only their frame's session_id)
    #[arg(long)]
    pub unkeyed: bool,
    /// A live fleet: sessions joined mid-life, compacting on their own near their threshold
    #[arg(long)]
    pub fleet: bool,
    /// Small events (about 200 B a record: mostly thinking counters, short messages and tool
    /// results, small headers)
    #[arg(long)]
    pub small: bool,
}

/// The command line: `agent-fold corpus …`: the generated corpus on stdout, its shape on stderr.
pub fn main(args: &Args) -> Result<i32> {
    let config = CorpusConfig {
        seed: args.seed,
        active_sessions: args.sessions,
        keyed: !args.unkeyed,
        fleet: args.fleet,
        small: args.small,
    };
    let mut c = Corpus::new(config);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    use std::io::Write;
    for r in c.by_ref().take(args.records) {
        out.write_all(&r.value)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    eprintln!("corpus: {}", c.stats());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped() {
        let a = corpus(5000, 7);
        let b = corpus(5000, 7);
        assert_eq!(a, b);
        assert_ne!(a, corpus(5000, 8));
        let mut c = Corpus::new(CorpusConfig::default());
        let recs: Vec<Rec> = c.by_ref().take(50_000).collect();
        let s = c.stats();
        let counters = s.counters as f64 / s.records as f64;
        assert!((0.4..=0.6).contains(&counters), "{s}");
        assert!(
            s.malformed > 0 && s.compactions > 0 && s.subagent > 0,
            "{s}"
        );
        let bad = recs
            .iter()
            .filter(|r| serde_json::from_slice::<serde_json::Value>(&r.value).is_err())
            .count() as u64;
        assert_eq!(bad, s.malformed);
    }

    /// Small events are about 200 B a record, mostly thinking counters.
    #[test]
    fn small_events_are_small() {
        let mut c = Corpus::new(CorpusConfig {
            small: true,
            ..CorpusConfig::default()
        });
        let _: Vec<Rec> = c.by_ref().take(20_000).collect();
        let s = c.stats();
        let average = s.bytes as f64 / s.records as f64;
        assert!((150.0..=300.0).contains(&average), "{s}");
        assert!(s.counters as f64 / s.records as f64 > 0.7, "{s}");
        assert!(
            s.malformed > 0 && s.compactions > 0 && s.subagent > 0,
            "{s}"
        );
    }

    /// A fleet's sessions start mid-life, name their reserve, and compact on their own past
    /// their threshold: the figures a board alerts on come and go.
    #[test]
    fn a_fleet_compacts_on_its_own_near_its_threshold() {
        let config = CorpusConfig {
            seed: 3,
            active_sessions: 20,
            keyed: true,
            fleet: true,
            small: false,
        };
        let recs: Vec<Rec> = Corpus::new(config).take(20_000).collect();
        let has = |r: &Rec, s: &str| String::from_utf8_lossy(&r.value).contains(s);
        assert!(recs.iter().any(|r| has(r, "\"compact_reserve\":33000")));
        let autos = recs
            .iter()
            .filter(|r| has(r, "\"trigger\":\"auto\""))
            .count();
        assert!(autos >= 5, "{autos} automatic compactions");
        let mut p = agent_fold_core::Processor::from_params([("emit", "pressure")]).unwrap();
        let ins: Vec<_> = recs
            .iter()
            .map(|r| agent_fold_core::RecordIn::new(r.key.as_deref(), &r.value))
            .collect();
        let until: Vec<u64> = p
            .process(&ins)
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                agent_fold_core::Emit::New { value, .. } => {
                    serde_json::from_slice::<serde_json::Value>(value).ok()?["untilCompactTokens"]
                        .as_u64()
                }
                _ => None,
            })
            .collect();
        assert!(
            until.iter().any(|u| *u < 20_000),
            "sessions near their threshold"
        );
        assert!(
            until.iter().any(|u| *u > 100_000),
            "and far from it after compacting"
        );
    }
}
