//! The OpenAI Responses API as Codex calls it through a custom provider (`wire_api =
//! "responses"`): `POST /v1/responses` streamed as Server-Sent Events (`response.created` …
//! `response.completed` with the usage). A request carries `instructions` (Codex ≥ 0.17x
//! sends none: its base prompt is the first `developer` item of `input`), `tools` and `input`;
//! a compaction is the request whose last user item asks for Codex's handoff summary.

use serde_json::{Value, json};

use super::{Usage, parts, text_kind, text_of};
use crate::http::{Answer, Request};
use crate::model::{Asked, Kind, Model, Reply, SUMMARY, Served, Step, closing_text, key_in};
use crate::tokens::{self, Count};

/// What Codex's compaction request asks for.
const COMPACT_INSTRUCTION: &str = "CONTEXT CHECKPOINT COMPACTION";

pub fn handle(model: &Model, req: &Request) -> Answer {
    if !req.path().ends_with("/responses") {
        return Answer::Json(
            404,
            br#"{"error":{"message":"no such endpoint in the lab","type":"invalid_request_error"}}"#.to_vec(),
        );
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return Answer::Json(400, br#"{"error":{"message":"not JSON"}}"#.to_vec());
    };
    let asked = read(&body);
    let served = model.answer("responses", req.path(), &asked, |r| {
        tokens::json(&item(model, r, &asked, "")) + 1
    });
    Answer::Events(events(model, &served, &asked))
}

fn read(body: &Value) -> Asked {
    let input: Vec<Value> = match &body["input"] {
        Value::Array(items) => items.clone(),
        Value::String(s) => vec![json!({"type":"message","role":"user","content":s})],
        _ => Vec::new(),
    };
    // The system prompt: `instructions`, else the leading developer item.
    let (system, messages) = match (&body["instructions"], input.first()) {
        (Value::Null, Some(first)) if first["role"] == "developer" => (first.clone(), &input[1..]),
        (i, _) => (i.clone(), &input[..]),
    };
    let users: Vec<String> = input
        .iter()
        .filter(|it| it["role"] == "user")
        .map(|it| text_of(&it["content"]))
        .collect();
    let compaction = users
        .last()
        .is_some_and(|t| t.contains(COMPACT_INSTRUCTION));
    Asked {
        kind: if compaction {
            Kind::Compaction
        } else {
            Kind::Turn
        },
        key: users.iter().rev().find_map(|t| key_in(t)),
        count: Count::of(&system, &body["tools"], messages),
        estimated: Count::estimated(&system, &body["tools"], messages),
        model: body["model"].as_str().map(str::to_owned),
        parts: parts(&input, label),
    }
}

/// An input item's role (a message's, with what its text reads as) or type.
fn label(item: &Value) -> String {
    match item["role"].as_str() {
        Some(role) => format!("{role}:{}", text_kind(&text_of(&item["content"]))),
        None => item["type"].as_str().unwrap_or("?").to_owned(),
    }
}

/// The command a step is, for Codex's shell tool.
fn command(step: &Step) -> String {
    match step {
        Step::Read(p) => format!("cat {p}"),
        Step::Shell(c) => c.clone(),
        Step::Agent(p) => format!("echo {p:?}"),
    }
}

/// The output item a reply is; `id` fills its ids (empty while only its size is wanted).
fn item(_model: &Model, reply: &Reply, asked: &Asked, id: &str) -> Value {
    match reply {
        Reply::Tool(step) => {
            json!({"type":"function_call","id":format!("fc_{id}"),"status":"completed",
            "name":"exec_command","arguments":json!({"cmd": command(step)}).to_string(),"call_id":format!("call_{id}")})
        }
        r => {
            let text = match r {
                Reply::Summary => SUMMARY.to_owned(),
                _ => closing_text(asked.key.as_deref()),
            };
            json!({"type":"message","id":format!("msg_{id}"),"status":"completed","role":"assistant",
                   "content":[{"type":"output_text","text":text,"annotations":[]}]})
        }
    }
}

fn events(model: &Model, served: &Served, asked: &Asked) -> Vec<String> {
    let total = served.answered.unwrap_or(0);
    let u = Usage::split(total, served.seq);
    let usage = json!({"input_tokens": total, "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": served.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total + served.output});
    let item = item(model, &served.reply, asked, &served.id);
    let response = |status: &str, output: Value, usage: Option<&Value>| {
        let mut r = json!({"id":format!("resp_{}", served.id),"object":"response","created_at":served.at_ms / 1000,
            "status":status,"model":asked.model.clone().unwrap_or_default(),"output":output});
        if let Some(u) = usage {
            r["usage"] = u.clone();
        }
        r
    };
    let mut n = 0;
    let mut out = Vec::new();
    let mut ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(n);
        n += 1;
        out.push(format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "response.created",
        json!({"response": response("in_progress", json!([]), None)}),
    );
    ev(
        "response.in_progress",
        json!({"response": response("in_progress", json!([]), None)}),
    );
    let id = item["id"].clone();
    if item["type"] == "function_call" {
        let mut added = item.clone();
        added["arguments"] = json!("");
        added["status"] = json!("in_progress");
        ev(
            "response.output_item.added",
            json!({"output_index":0,"item":added}),
        );
        let args = item["arguments"].as_str().unwrap_or("").to_owned();
        for piece in args.as_bytes().chunks(40) {
            ev(
                "response.function_call_arguments.delta",
                json!({"item_id":id,"output_index":0,"delta":String::from_utf8_lossy(piece)}),
            );
        }
        ev(
            "response.function_call_arguments.done",
            json!({"item_id":id,"output_index":0,"arguments":args}),
        );
    } else {
        let text = item["content"][0]["text"].as_str().unwrap_or("").to_owned();
        let mut added = item.clone();
        added["content"] = json!([]);
        added["status"] = json!("in_progress");
        ev(
            "response.output_item.added",
            json!({"output_index":0,"item":added}),
        );
        let part = |t: &str| json!({"type":"output_text","text":t,"annotations":[]});
        ev(
            "response.content_part.added",
            json!({"item_id":id,"output_index":0,"content_index":0,"part":part("")}),
        );
        ev(
            "response.output_text.delta",
            json!({"item_id":id,"output_index":0,"content_index":0,"delta":text}),
        );
        ev(
            "response.output_text.done",
            json!({"item_id":id,"output_index":0,"content_index":0,"text":text}),
        );
        ev(
            "response.content_part.done",
            json!({"item_id":id,"output_index":0,"content_index":0,"part":part(&text)}),
        );
    }
    ev(
        "response.output_item.done",
        json!({"output_index":0,"item":item}),
    );
    ev(
        "response.completed",
        json!({"response": response("completed", json!([item]), Some(&usage))}),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_developer_item_is_the_system_prompt() {
        let body = json!({"model":"gpt-5.5","tools":[{"name":"exec_command"}],"input":[
            {"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
            {"type":"message","role":"user","content":[{"type":"input_text","text":"LAB-T2 go"}]},
            {"type":"function_call_output","call_id":"c","output":"LAB-NO"}]});
        let a = read(&body);
        assert_eq!(a.key.as_deref(), Some("LAB-T2"));
        assert_eq!(a.count.system, tokens::json(&body["input"][0]));
        assert_eq!(a.kind, Kind::Turn);
        let compact = json!({"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"You are performing a CONTEXT CHECKPOINT COMPACTION."}]}]});
        assert_eq!(read(&compact).kind, Kind::Compaction);
    }
}
