//! The Anthropic Messages API as Claude Code calls it: `POST /v1/messages` streamed as
//! Server-Sent Events (`message_start`, content blocks, `message_delta` with the usage,
//! `message_stop`), `POST /v1/messages/count_tokens`, and the 400 "prompt is too long" that
//! makes Claude Code compact and try again.
//!
//! What a request carries is `system`, `tools` and `messages` (role `system` messages among
//! them: Claude Code ≥ 2.1.3xx sends its listings so). A compaction is the request whose last
//! message holds Claude Code's summary instruction.

use serde_json::{Value, json};

use super::{Usage, parts, text_kind, text_of};
use crate::http::{Answer, Request};
use crate::model::{Asked, Kind, Model, Reply, SUMMARY, Served, Step, closing_text, key_in};
use crate::tokens::{self, Count};

/// The instruction Claude Code appends to the conversation when it compacts.
const COMPACT_INSTRUCTION: &str = "CRITICAL: Respond with TEXT ONLY";

pub fn handle(model: &Model, req: &Request) -> Answer {
    let body = match serde_json::from_slice::<Value>(&req.body) {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "lab: a request body that is not JSON ({} bytes): {e}",
                req.body.len()
            );
            return error(400, "invalid_request_error", "the body is not JSON");
        }
    };
    if req.path().ends_with("/count_tokens") {
        let asked = read(&body, Kind::Side);
        let n = asked.count.total();
        model.answer("anthropic", req.path(), &asked, |_| 0);
        return Answer::Json(200, json!({ "input_tokens": n }).to_string().into_bytes());
    }
    if !req.path().ends_with("/v1/messages") {
        return error(404, "not_found_error", "no such endpoint in the lab");
    }
    let asked = read(&body, Kind::Turn);
    let served = model.answer("anthropic", req.path(), &asked, |r| {
        output(model, r, &asked)
    });
    match &served.reply {
        Reply::Refused(status) => error(
            *status,
            "invalid_request_error",
            &format!(
                "prompt is too long: {} tokens > {} maximum",
                asked.count.total(),
                model.refuse_over
            ),
        ),
        reply => Answer::Events(events(model, &served, reply, &asked)),
    }
}

/// What a request asks: the key of its latest prompt, whether it compacts, its count.
fn read(body: &Value, kind: Kind) -> Asked {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let compaction = messages
        .last()
        .is_some_and(|m| text_of(&m["content"]).contains(COMPACT_INSTRUCTION));
    let key = messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find_map(|m| key_in(&text_of(&m["content"])));
    Asked {
        kind: match kind {
            Kind::Turn if compaction => Kind::Compaction,
            k => k,
        },
        key,
        count: Count::of(&body["system"], &body["tools"], messages),
        estimated: Count::estimated(&body["system"], &body["tools"], messages),
        model: body["model"].as_str().map(str::to_owned),
        parts: parts(messages, label),
    }
}

/// `role:kinds` of a message: its blocks' types (a text block by what it reads as).
fn label(m: &Value) -> String {
    let role = m["role"].as_str().unwrap_or("?");
    let kinds: Vec<&str> = match &m["content"] {
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => text_kind(b["text"].as_str().unwrap_or("")),
                Some(t) => t,
                None => "?",
            })
            .collect(),
        Value::String(s) => vec![text_kind(s)],
        _ => vec!["?"],
    };
    let mut kinds = kinds;
    kinds.dedup();
    format!("{role}:{}", kinds.join("+"))
}

/// The tool call a step is in Claude Code's tools.
fn tool_call(model: &Model, step: &Step) -> (&'static str, Value) {
    match step {
        Step::Read(p) => ("Read", json!({ "file_path": model.path(p) })),
        Step::Shell(c) => (
            "Bash",
            json!({ "command": c, "description": "Run the lab's command" }),
        ),
        Step::Agent(p) => (
            "Agent",
            json!({ "description": "A lab sub-agent", "prompt": p, "subagent_type": "general-purpose" }),
        ),
    }
}

fn answer_text(reply: &Reply, asked: &Asked) -> String {
    match reply {
        Reply::Summary => SUMMARY.to_owned(),
        _ => closing_text(asked.key.as_deref()),
    }
}

fn output(model: &Model, reply: &Reply, asked: &Asked) -> u64 {
    match reply {
        Reply::Tool(step) => {
            let (name, input) = tool_call(model, step);
            tokens::text(name) + tokens::json(&input) + 1
        }
        Reply::Refused(_) => 0,
        r => tokens::text(&answer_text(r, asked)) + 1,
    }
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn events(model: &Model, served: &Served, reply: &Reply, asked: &Asked) -> Vec<String> {
    let u = Usage::split(served.answered.unwrap_or(0), served.seq);
    let usage = |output: u64| {
        json!({
            "input_tokens": u.fresh,
            "cache_creation_input_tokens": u.written,
            "cache_read_input_tokens": u.cached,
            "output_tokens": output,
        })
    };
    let model_name = asked.model.clone().unwrap_or_default();
    let mut out = vec![event(
        "message_start",
        json!({"type":"message_start","message":{"id":format!("msg_{}", served.id),"type":"message","role":"assistant",
               "model":model_name,"content":[],"stop_reason":null,"stop_sequence":null,"usage":usage(1)}}),
    )];
    let stop = match reply {
        Reply::Tool(step) => {
            let (name, input) = tool_call(model, step);
            out.push(event(
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use",
                       "id":format!("toolu_{}", served.id),"name":name,"input":{}}}),
            ));
            let text = input.to_string();
            for piece in pieces(&text, 40) {
                out.push(event(
                    "content_block_delta",
                    json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":piece}}),
                ));
            }
            "tool_use"
        }
        r => {
            out.push(event(
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ));
            out.push(event("ping", json!({"type":"ping"})));
            for piece in pieces(&answer_text(r, asked), 200) {
                out.push(event(
                    "content_block_delta",
                    json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":piece}}),
                ));
            }
            "end_turn"
        }
    };
    out.push(event(
        "content_block_stop",
        json!({"type":"content_block_stop","index":0}),
    ));
    out.push(event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":usage(served.output)}),
    ));
    out.push(event("message_stop", json!({"type":"message_stop"})));
    out
}

/// A text in pieces of at most `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

fn error(status: u16, kind: &str, message: &str) -> Answer {
    Answer::Json(
        status,
        json!({"type":"error","error":{"type":kind,"message":message}})
            .to_string()
            .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_for_its_key_its_kind_and_its_parts() {
        let body = json!({"model":"m","system":[{"type":"text","text":"be brief"}],"tools":[{"name":"Read"}],
            "messages":[
                {"role":"user","content":"LAB-T1 read it"},
                {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"LAB-NOT a prompt"}]},
                {"role":"system","content":"listings"}]});
        let a = read(&body, Kind::Turn);
        assert_eq!((a.kind, a.key.as_deref()), (Kind::Turn, Some("LAB-T1")));
        assert_eq!(a.count.system, tokens::json(&body["system"]));
        assert_eq!(a.model.as_deref(), Some("m"));
        let mut compacting = body.clone();
        compacting["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role":"user","content":[{"type":"text","text":"CRITICAL: Respond with TEXT ONLY. Summarise."}]}));
        assert_eq!(read(&compacting, Kind::Turn).kind, Kind::Compaction);
    }
}
