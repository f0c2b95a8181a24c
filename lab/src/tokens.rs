//! What a stand-in counts for a request: the context it carries, tokenised by a real BPE
//! (OpenAI's `o200k_base`, the vocabulary `tiktoken-rs` bundles), part by part — the system
//! prompt, the tool list, each message — each as its compact JSON text. Not any provider's own
//! tokenizer (none of them is public but OpenAI's), but a real one: it prices prose, code and
//! JSON differently from the meter's "four characters a token", so that what the meter learns
//! (its calibration, contract §3.3) is exercised the way a provider exercises it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use tiktoken_rs::CoreBPE;

fn bpe() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("the bundled o200k_base vocabulary"))
}

/// Tokens of a text, remembered by its hash: an agent sends the same messages again with every
/// request, and the lab's sessions hold a few megabytes at most.
pub fn text(s: &str) -> u64 {
    static SEEN: OnceLock<Mutex<HashMap<u64, u64>>> = OnceLock::new();
    let key = agent_fold_core::fnv1a(s.as_bytes());
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(n) = seen.lock().ok().and_then(|m| m.get(&key).copied()) {
        return n;
    }
    let n = bpe().encode_ordinary(s).len() as u64;
    if let Ok(mut m) = seen.lock() {
        if m.len() > 1 << 20 {
            m.clear();
        }
        m.insert(key, n);
    }
    n
}

/// Tokens of a JSON value: its compact text's.
pub fn json(v: &Value) -> u64 {
    match v {
        Value::Null => 0,
        v => text(&v.to_string()),
    }
}

/// What a request carries, counted by part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Count {
    pub system: u64,
    pub tools: u64,
    pub messages: u64,
}

/// A JSON value priced as agent-fold's estimate prices it (contract §3.1: four characters a
/// token): what the meter's breakdown of the same parts should say.
pub fn estimated(v: &Value) -> u64 {
    match v {
        Value::Null => 0,
        v => agent_fold_core::estimate(v.to_string().as_bytes()),
    }
}

impl Count {
    pub fn of(system: &Value, tools: &Value, messages: &[Value]) -> Count {
        Count {
            system: json(system),
            tools: json(tools),
            messages: messages.iter().map(json).sum(),
        }
    }

    /// The same parts priced by agent-fold's estimate.
    pub fn estimated(system: &Value, tools: &Value, messages: &[Value]) -> Count {
        Count {
            system: estimated(system),
            tools: estimated(tools),
            messages: messages.iter().map(estimated).sum(),
        }
    }

    pub fn total(&self) -> u64 {
        self.system + self.tools + self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_the_parts_tokens_and_prices_text_unlike_four_chars_a_token() {
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(40);
        let digits = "3.14159265358979 2.71828182845904 ".repeat(40);
        let (p, d) = (text(&prose), text(&digits));
        // Prose is cheaper than four characters a token, digits dearer.
        assert!(p * 4 < prose.len() as u64, "{p}");
        assert!(d * 4 > digits.len() as u64, "{d}");
        assert_eq!(text(&prose), p, "remembered");
        let c = Count::of(
            &Value::String(prose.clone()),
            &Value::Null,
            &[Value::String(digits.clone()), Value::String("hi".into())],
        );
        assert_eq!(c.system, json(&Value::String(prose)));
        assert_eq!(c.tools, 0);
        assert_eq!(c.total(), c.system + c.messages);
    }
}
