//! The four model APIs the agents call, each read into what the [`crate::model::Model`] needs and
//! answered in its own wire format: Anthropic Messages (Claude Code), OpenAI Responses
//! (Codex), Gemini `generateContent` (Gemini CLI), OpenAI chat completions (OpenCode's
//! OpenAI-compatible provider).

pub mod anthropic;
pub mod chat;
pub mod gemini;
pub mod responses;

use serde_json::Value;

/// The text a message's content holds for the model to read as a prompt: a string, or the
/// `text` of its text blocks (`text`, `input_text`); never a tool's result or call.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let mut out = String::new();
            for b in blocks {
                let t = b["type"].as_str().unwrap_or("text");
                if matches!(t, "text" | "input_text")
                    && let Some(s) = b["text"].as_str()
                {
                    out.push_str(s);
                    out.push('\n');
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// Each message's tokens, labelled by `label`.
pub fn parts(messages: &[Value], label: impl Fn(&Value) -> String) -> Vec<(String, u64)> {
    messages
        .iter()
        .map(|m| (label(m), crate::tokens::json(m)))
        .collect()
}

/// How a text a message carries reads, for the labels of what comes back after a compaction:
/// the summary an agent writes, a reminder it adds, or text.
pub fn text_kind(text: &str) -> &'static str {
    let t = text.trim_start();
    if t.starts_with("This session is being continued")
        || t.contains("Another language model started to solve this problem")
        || t.contains("<state_snapshot>")
    {
        "summary"
    } else if t.starts_with("<system-reminder>") {
        "reminder"
    } else {
        "text"
    }
}

/// A prompt size split as providers report it: a warm cache after the first request (seven
/// eighths read from it), the rest written to it, a few tokens fresh. The three always sum to
/// the size, so that every adapter's sum is exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub cached: u64,
    pub written: u64,
    pub fresh: u64,
}

impl Usage {
    pub fn split(total: u64, seq: u64) -> Usage {
        let cached = if seq > 1 { total / 8 * 7 } else { 0 };
        let fresh = (total - cached).min(3);
        Usage {
            cached,
            written: total - cached - fresh,
            fresh,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_split_sums_to_the_size() {
        for (n, seq) in [(0, 1), (2, 1), (100, 1), (100, 2), (977_000, 9)] {
            let u = Usage::split(n, seq);
            assert_eq!(u.cached + u.written + u.fresh, n, "{n}");
        }
        assert_eq!(Usage::split(100, 1).cached, 0);
    }

    #[test]
    fn a_prompt_is_text_not_tool_traffic() {
        let c = json!([{"type":"text","text":"a"},{"type":"tool_result","content":"b"},{"type":"input_text","text":"c"}]);
        assert_eq!(text_of(&c), "a\nc\n");
        assert_eq!(text_of(&json!("s")), "s");
    }
}
