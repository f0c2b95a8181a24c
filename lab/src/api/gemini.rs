//! The Gemini API as Gemini CLI calls it (`GOOGLE_GEMINI_BASE_URL`):
//! `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` for the conversation,
//! `:generateContent` for its side calls (the model router and other questions answered as
//! JSON to a schema), `:countTokens`. A request carries `systemInstruction`, `tools` and
//! `contents`; a compression is the request that asks for a `<state_snapshot>` (and the one
//! after it that asks to check it).

use serde_json::{Map, Value, json};

use crate::http::{Answer, Request};
use crate::model::{Asked, Kind, Model, Reply, SUMMARY, Served, Step, closing_text, key_in};
use crate::tokens::{self, Count};

pub fn handle(model: &Model, req: &Request) -> Answer {
    let path = req.path();
    let Some((name, method)) = path
        .rsplit_once('/')
        .and_then(|(_, last)| last.split_once(':'))
    else {
        return error(404, "NOT_FOUND", "no such endpoint in the lab");
    };
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return error(400, "INVALID_ARGUMENT", "the body is not JSON");
    };
    let mut asked = read(&body);
    asked.model.get_or_insert_with(|| name.to_owned());
    if method == "countTokens" {
        asked.kind = Kind::Side;
        let n = asked.count.total();
        model.answer("gemini", path, &asked, |_| 0);
        return Answer::Json(200, json!({ "totalTokens": n }).to_string().into_bytes());
    }
    // A question answered as JSON to a schema (the router's, a next-speaker check): no turn.
    let schema = body["generationConfig"]
        .get("responseJsonSchema")
        .or_else(|| body["generationConfig"].get("responseSchema"))
        .cloned();
    if schema.is_some() && asked.kind == Kind::Turn {
        asked.kind = Kind::Side;
    }
    // The second call of a compression asks the model to check its snapshot: the checked
    // snapshot is what Gemini CLI keeps, so it is answered with one too.
    let verifying = body.to_string().contains("Critically evaluate");
    let parts_of = |reply: &Reply| -> Vec<Value> {
        match (reply, &schema) {
            (Reply::Tool(step), _) => vec![json!({ "functionCall": call(model, step) })],
            (Reply::Summary, _) => {
                vec![json!({ "text": format!("<state_snapshot>\n{SUMMARY}\n</state_snapshot>") })]
            }
            (_, None) if verifying => {
                vec![json!({ "text": format!("<state_snapshot>\n{SUMMARY}\n</state_snapshot>") })]
            }
            (_, Some(s)) if asked.kind == Kind::Side => {
                vec![json!({ "text": fill(s).to_string() })]
            }
            _ => vec![json!({ "text": closing_text(asked.key.as_deref()) })],
        }
    };
    let served = model.answer("gemini", path, &asked, |r| {
        tokens::json(&Value::Array(parts_of(r))) + 1
    });
    if let Reply::Refused(status) = served.reply {
        return error(
            status,
            "INVALID_ARGUMENT",
            &format!(
                "The input token count ({}) exceeds the maximum number of tokens allowed ({}).",
                asked.count.total(),
                model.refuse_over
            ),
        );
    }
    let parts = parts_of(&served.reply);
    let chunk = response(&served, &asked, parts);
    if method == "streamGenerateContent" {
        Answer::Events(vec![format!("data: {chunk}\r\n\r\n")])
    } else {
        Answer::Json(200, chunk.to_string().into_bytes())
    }
}

fn read(body: &Value) -> Asked {
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    // The latest user prompt: a user content with text and no function response.
    let prompt = contents
        .iter()
        .rev()
        .filter(|c| c["role"] == "user")
        .map(|c| c["parts"].as_array().map_or(&[][..], Vec::as_slice))
        .find(|parts| {
            parts.iter().any(|p| p.get("text").is_some())
                && !parts.iter().any(|p| p.get("functionResponse").is_some())
        })
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let system = body["systemInstruction"].to_string();
    let snapshot = system.contains("state_snapshot") || prompt.contains("<state_snapshot>");
    let kind = match snapshot {
        // The second call of a compression checks the first one's snapshot.
        true if prompt.contains("Critically evaluate") => Kind::Side,
        true => Kind::Compaction,
        false => Kind::Turn,
    };
    let key = contents
        .iter()
        .rev()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .find_map(|p| p["text"].as_str().and_then(key_in));
    Asked {
        kind,
        key,
        count: Count::of(&body["systemInstruction"], &body["tools"], contents),
        estimated: Count::estimated(&body["systemInstruction"], &body["tools"], contents),
        model: None,
        parts: super::parts(contents, label),
    }
}

/// A content's role and its parts' kinds.
fn label(c: &Value) -> String {
    let mut kinds: Vec<&str> = c["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match p.as_object().and_then(|o| o.keys().next()) {
            Some(k) if k == "text" => super::text_kind(p["text"].as_str().unwrap_or("")),
            Some(k) => k.as_str(),
            None => "?",
        })
        .collect();
    kinds.dedup();
    format!("{}:{}", c["role"].as_str().unwrap_or("?"), kinds.join("+"))
}

fn call(model: &Model, step: &Step) -> Value {
    match step {
        Step::Read(p) => json!({"name":"read_file","args":{"file_path": model.path(p)}}),
        Step::Shell(c) => {
            json!({"name":"run_shell_command","args":{"command": c, "description": "the lab's command"}})
        }
        Step::Agent(p) => {
            json!({"name":"run_shell_command","args":{"command": format!("echo {p:?}"), "description": "the lab's command"}})
        }
    }
}

/// A value for a JSON schema: each property filled by its type (the router's score low, so
/// that it keeps the default model).
fn fill(schema: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in schema["properties"].as_object().into_iter().flatten() {
        let t = v["type"].as_str().unwrap_or("string").to_ascii_lowercase();
        let value = match (k.as_str(), t.as_str()) {
            ("complexity_score", _) => json!(10),
            ("next_speaker", _) => json!("user"),
            _ if v["enum"].is_array() => v["enum"][0].clone(),
            (_, "number" | "integer") => json!(1),
            (_, "boolean") => json!(false),
            (_, "array") => json!([]),
            (_, "object") => fill(v),
            _ => json!("the lab's answer"),
        };
        out.insert(k.clone(), value);
    }
    Value::Object(out)
}

fn response(served: &Served, asked: &Asked, parts: Vec<Value>) -> Value {
    let prompt = served.answered.unwrap_or(0);
    let u = super::Usage::split(prompt, served.seq);
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": served.output,
                          "totalTokenCount": prompt + served.output, "cachedContentTokenCount": u.cached},
        "modelVersion": asked.model.clone().unwrap_or_default(),
        "responseId": served.id,
    })
}

fn error(code: u16, status: &str, message: &str) -> Answer {
    Answer::Json(
        code,
        json!({"error":{"code":code,"message":message,"status":status}})
            .to_string()
            .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_snapshots_and_schemas_are_told_apart() {
        let body = json!({"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},
            "contents":[{"role":"user","parts":[{"text":"LAB-G1 read"}]},
                        {"role":"model","parts":[{"functionCall":{"name":"read_file","args":{}}}]},
                        {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"LAB-X"}}}]}]});
        let a = read(&body);
        assert_eq!((a.kind, a.key.as_deref()), (Kind::Turn, Some("LAB-G1")));
        let snap = json!({"systemInstruction":{"parts":[{"text":"write a <state_snapshot>"}]},"contents":[]});
        assert_eq!(read(&snap).kind, Kind::Compaction);
        let filled = fill(
            &json!({"properties":{"complexity_reasoning":{"type":"string"},"complexity_score":{"type":"integer"}}}),
        );
        assert_eq!(filled["complexity_score"], 10);
    }
}
