//! The corpus's text: words and code the messages are made of, as JSON strings of a given
//! length (cut short for `--small`), and the sizes drawn for them.

use std::fmt::Write as _;

use agent_fold_core::Rng;

pub(super) const WORDS: &[&str] = &[
    "the",
    "build",
    "fails",
    "on",
    "CI",
    "with",
    "a",
    "linker",
    "error",
    "find",
    "out",
    "why",
    "cargo",
    "test",
    "module",
    "stream",
    "record",
    "offset",
    "consumer",
    "partition",
    "fold",
    "counter",
    "session",
    "surface",
    "token",
    "window",
    "pressure",
    "compaction",
    "replay",
    "checkpoint",
    "invocation",
    "batch",
    "engine",
    "fuel",
    "memory",
    "frame",
    "header",
    "tool",
    "result",
    "schema",
    "agent",
    "dispatch",
    "parent",
    "review",
    "diff",
    "function",
    "return",
    "value",
    "string",
    "integer",
    "object",
    "array",
    "null",
    "true",
    "false",
    "because",
    "then",
    "we",
    "should",
    "could",
    "is",
    "are",
    "not",
    "it",
    "this",
    "that",
    "and",
    "or",
    "of",
    "to",
];

const CODE: &[&str] = &[
    "fn main() {\n    let args: Vec<String> = std::env::args().collect();\n",
    "    if let Err(e) = run(&args) {\n        eprintln!(\"error: {e:#}\");\n    }\n}\n",
    "error[E0308]: mismatched types\n  --> src/fold.rs:88:17\n   |\n88 |     let n: u32 = total;\n",
    "test fold::tests::leading_counters_are_alone ... ok\n",
    "warning: unused variable: `x`\n",
    "{\"key\": \"value\", \"path\": \"C:\\\\Users\\\\dev\\\\src\"}\n",
    "\tat org.example.Main.run(Main.java:42)\n",
    "+    out.extend_from_slice(&newest[at..close]);\n-    out.extend(newest[at..close].iter());\n",
    "中文注释：压力视图按会话保存表面节点。\n",
    "$ ls -la\ndrwxr-xr-x  5 dev dev 4096 Nov 29 10:00 src\n",
];

pub(super) const TOOL_NAMES: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "Task",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "NotebookEdit",
    "LS",
    "MultiEdit",
    "ExitPlanMode",
    "BashOutput",
    "KillShell",
];

/// A draw from `small`'s range in the small-event corpus, else from `large`'s.
pub(super) fn range_sized(
    rng: &mut Rng,
    small: bool,
    small_range: (u64, u64),
    large: (u64, u64),
) -> u64 {
    let (lo, hi) = if small { small_range } else { large };
    rng.range(lo, hi)
}

/// Text of about `len` bytes: prose, code, logs, a little CJK.
fn text(rng: &mut Rng, len: usize, out: &mut String) {
    let start = out.len();
    while out.len() - start < len {
        if rng.chance(0.15) {
            let line: &str = rng.pick::<&str>(CODE);
            out.push_str(line);
        } else {
            let n = rng.range(4, 14);
            for i in 0..n {
                if i > 0 {
                    out.push(' ');
                }
                let word: &str = rng.pick::<&str>(WORDS);
                out.push_str(word);
            }
            out.push_str(if rng.chance(0.3) { ".\n" } else { ". " });
        }
    }
}

/// `s` as a JSON string literal.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(super) fn json_text(rng: &mut Rng, len: usize, out: &mut String, scratch: &mut String) {
    scratch.clear();
    text(rng, len, scratch);
    json_str(out, scratch);
}

/// [`json_text`] cut to at most `len` bytes of text (on a character's boundary): a small
/// event's text, which a sentence would overshoot.
pub(super) fn json_text_cut(rng: &mut Rng, len: usize, out: &mut String, scratch: &mut String) {
    scratch.clear();
    text(rng, len, scratch);
    let mut end = len.min(scratch.len());
    while !scratch.is_char_boundary(end) {
        end -= 1;
    }
    scratch.truncate(end);
    json_str(out, scratch);
}

/// A frame's `timestamp` value at `ms` of the corpus's clock.
pub(super) fn write_stamp(o: &mut String, ms: u64) {
    let (day, rem) = (ms / 86_400_000, ms % 86_400_000);
    let _ = write!(
        o,
        "\"2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\"",
        11 + (day + 28) / 30 % 2,
        1 + (day + 28) % 30,
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    );
}

/// The text writer a corpus uses: whole, or cut short for `--small`.
pub(super) type TextWriter = fn(&mut Rng, usize, &mut String, &mut String);
