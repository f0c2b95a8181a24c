//! OpenAI chat completions as OpenCode's OpenAI-compatible provider calls them:
//! `POST /v1/chat/completions` streamed as `data:` chunks with a last chunk carrying the usage,
//! `GET /v1/models`. A request carries `messages` (its `system` ones the system prompt) and
//! `tools`; a request without tools is a side call (a title) or, when it asks for a summary of
//! the conversation, a compaction.

use serde_json::{Value, json};

use super::{parts, text_kind, text_of};
use crate::http::{Answer, Request};
use crate::model::{Asked, Kind, Model, Reply, SUMMARY, Served, Step, closing_text, key_in};
use crate::tokens::{self, Count};

pub fn handle(model: &Model, req: &Request) -> Answer {
    if req.method == "GET" {
        return Answer::Json(
            200,
            br#"{"object":"list","data":[{"id":"lab-model","object":"model","owned_by":"lab"}]}"#
                .to_vec(),
        );
    }
    if !req.path().ends_with("/chat/completions") {
        return Answer::Json(
            404,
            br#"{"error":{"message":"no such endpoint in the lab"}}"#.to_vec(),
        );
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return Answer::Json(400, br#"{"error":{"message":"not JSON"}}"#.to_vec());
    };
    let asked = read(&body);
    let served = model.answer("chat", req.path(), &asked, |r| match r {
        Reply::Tool(step) => tokens::json(&call(model, step)) + 1,
        r => tokens::text(&text(r, &asked)) + 1,
    });
    if let Reply::Refused(status) = served.reply {
        return Answer::Json(
            status,
            json!({"error":{"message":format!("This model's maximum context length is {} tokens. However, your messages resulted in {} tokens.", model.refuse_over, asked.count.total()),
                            "type":"invalid_request_error","code":"context_length_exceeded"}})
            .to_string()
            .into_bytes(),
        );
    }
    Answer::Events(events(model, &served, &asked))
}

fn read(body: &Value) -> Asked {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let (system, rest): (Vec<Value>, Vec<Value>) = messages
        .iter()
        .cloned()
        .partition(|m| m["role"] == "system");
    let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let last_user = rest
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .unwrap_or_default();
    let system_text: String = system.iter().map(|m| text_of(&m["content"])).collect();
    let summarising = last_user.contains("summar") || system_text.to_lowercase().contains("summar");
    let kind = match (tools, summarising) {
        (true, _) => Kind::Turn,
        (false, true) if !system_text.to_lowercase().contains("title") => Kind::Compaction,
        (false, _) => Kind::Side,
    };
    Asked {
        kind,
        key: rest
            .iter()
            .rev()
            .filter(|m| m["role"] == "user")
            .find_map(|m| key_in(&text_of(&m["content"]))),
        count: Count::of(&Value::Array(system.clone()), &body["tools"], &rest),
        estimated: Count::estimated(&Value::Array(system), &body["tools"], &rest),
        model: body["model"].as_str().map(str::to_owned),
        parts: parts(messages, |m| {
            let role = m["role"].as_str().unwrap_or("?");
            match m.get("tool_calls") {
                Some(_) => format!("{role}:tool_calls"),
                None => format!("{role}:{}", text_kind(&text_of(&m["content"]))),
            }
        }),
    }
}

fn call(model: &Model, step: &Step) -> Value {
    match step {
        Step::Read(p) => {
            json!({"name":"read","arguments":json!({"filePath": model.path(p)}).to_string()})
        }
        Step::Shell(c) => {
            json!({"name":"bash","arguments":json!({"command": c, "description": "the lab's command"}).to_string()})
        }
        Step::Agent(p) => {
            json!({"name":"task","arguments":json!({"description":"a lab sub-agent","prompt":p,"subagent_type":"general"}).to_string()})
        }
    }
}

fn text(reply: &Reply, asked: &Asked) -> String {
    match (reply, asked.kind) {
        (Reply::Summary, _) => SUMMARY.to_owned(),
        (_, Kind::Side) => "A lab session".to_owned(),
        _ => closing_text(asked.key.as_deref()),
    }
}

fn events(model: &Model, served: &Served, asked: &Asked) -> Vec<String> {
    let prompt = served.answered.unwrap_or(0);
    let u = super::Usage::split(prompt, served.seq);
    let id = format!("chatcmpl-{}", served.id);
    let name = asked.model.clone().unwrap_or_default();
    let created = served.at_ms / 1000;
    let chunk = |delta: Value, finish: Value| {
        json!({"id":id,"object":"chat.completion.chunk","created":created,"model":name,
               "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
    };
    let mut out = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    match &served.reply {
        Reply::Tool(step) => {
            let c = call(model, step);
            out.push(chunk(
                json!({"tool_calls":[{"index":0,"id":format!("call_{}", served.id),"type":"function",
                                      "function":{"name":c["name"],"arguments":""}}]}),
                Value::Null,
            ));
            out.push(chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":c["arguments"]}}]}),
                Value::Null,
            ));
            out.push(chunk(json!({}), json!("tool_calls")));
        }
        r => {
            out.push(chunk(json!({"content": text(r, asked)}), Value::Null));
            out.push(chunk(json!({}), json!("stop")));
        }
    }
    out.push(json!({"id":id,"object":"chat.completion.chunk","created":created,"model":name,"choices":[],
        "usage":{"prompt_tokens":prompt,"completion_tokens":served.output,"total_tokens":prompt + served.output,
                 "prompt_tokens_details":{"cached_tokens":u.cached}}}));
    let mut lines: Vec<String> = out.iter().map(|c| format!("data: {c}\n\n")).collect();
    lines.push("data: [DONE]\n\n".to_owned());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_messages_are_the_system_prompt_and_no_tools_is_no_turn() {
        let body = json!({"model":"lab/m","tools":[{"type":"function","function":{"name":"read"}}],"messages":[
            {"role":"system","content":"You are OpenCode."},
            {"role":"user","content":[{"type":"text","text":"LAB-O1 go"}]},
            {"role":"tool","tool_call_id":"c","content":"LAB-NO"}]});
        let a = read(&body);
        assert_eq!((a.kind, a.key.as_deref()), (Kind::Turn, Some("LAB-O1")));
        assert_eq!(
            a.count.system,
            tokens::json(&json!([{"role":"system","content":"You are OpenCode."}]))
        );
        let title = json!({"messages":[{"role":"system","content":"Generate a title"},{"role":"user","content":"hi"}]});
        assert_eq!(read(&title).kind, Kind::Side);
        let summary = json!({"messages":[{"role":"user","content":"Provide a detailed summary of our conversation"}]});
        assert_eq!(read(&summary).kind, Kind::Compaction);
    }
}
