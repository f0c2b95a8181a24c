//! Gemini CLI's chats and OpenCode's sessions, natively (docs/adapters.md): on the shared real
//! sessions every reading the module emits is one of the log's own (no all-zero one, never a
//! session total), the window is the model's, the `.wasm` and the native library write the same
//! bytes, a document written again and again as it grows gives each message once, and `serve`
//! lists a growing session with its agent, each message once.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common::real_data;
use crate::harness::{Server, agent_fold, row_of, scratch, succeeded};

/// The session's row in a state.
fn session<'a>(state: &'a Value, id: &str) -> Option<&'a Value> {
    row_of(&state["sessions"], id)
}

const GEMINI: [&str; 2] = [
    "gemini-cli/session-4eb0784d-cdb9-4f59-89a6-fc90a7fabc67.json",
    "gemini-cli/session-f7633853-6663-4dbb-bbf4-6159afa29df8.json",
];
const OPENCODE: &str = "opencode/ses_017eabd4affe5dT53SiL5dEtX6/export.json";

/// The readings a document holds, counted apart from the adapters: a Gemini CLI `gemini`
/// message's `tokens.input`; an OpenCode assistant message's `input + cache.read +
/// cache.write` (not a summary's); zero ones left out.
fn own_readings(doc: &Value) -> Vec<u64> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let messages = doc["messages"].as_array().unwrap();
    let readings = messages.iter().filter_map(|m| {
        if m.get("type").is_some() {
            (m["type"] == "gemini").then(|| n(&m["tokens"]["input"]))
        } else {
            let i = &m["info"];
            let t = &i["tokens"];
            (i["role"] == "assistant" && i["summary"] != true)
                .then(|| n(&t["input"]) + n(&t["cache"]["read"]) + n(&t["cache"]["write"]))
        }
    });
    readings.filter(|r| *r > 0).collect()
}

fn pressure(path: &Path, module: &[&str]) -> (Vec<u8>, Vec<Value>) {
    let mut args = module.to_vec();
    args.extend([
        "--input",
        "auto",
        "-e",
        "emit=pressure",
        path.to_str().unwrap(),
    ]);
    let mut full = vec!["run"];
    full.extend(args);
    let out = succeeded(agent_fold(&full, None));
    let records = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    (out.stdout, records)
}

/// The readings the records carry, one per change of `pressureTokens`.
fn shown(records: &[Value]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for r in records {
        if let Some(p) = r["pressureTokens"].as_u64()
            && out.last() != Some(&p)
        {
            out.push(p);
        }
    }
    out
}

fn shared() -> Option<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for rel in GEMINI.iter().chain([&OPENCODE]) {
        paths.push(real_data(rel)?);
    }
    Some(paths)
}

#[test]
fn every_reading_is_the_log_s_own_and_the_window_the_model_s() {
    let Some(paths) = shared() else { return };
    for path in &paths {
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let mut want = own_readings(&doc);
        want.dedup();
        let (_, records) = pressure(path, &["--native"]);
        assert_eq!(shown(&records), want, "{}", path.display());
        let last = records.last().unwrap();
        if doc.get("sessionId").is_some() {
            assert_eq!(last["agent"], "gemini-cli");
            assert_eq!(last["session"], doc["sessionId"]);
            assert_eq!(last["capacity"], 1_048_576, "the model's window");
            assert_eq!(
                last["compactAtTokens"], 524_288,
                "Gemini CLI compresses at half"
            );
        } else {
            assert_eq!(last["agent"], "opencode");
            assert_eq!(last["session"], doc["info"]["id"]);
            assert!(
                last["capacity"].is_null(),
                "a model no table knows: capacity's"
            );
            let totals = &doc["info"]["tokens"];
            assert!(
                records
                    .iter()
                    .all(|r| r["pressureTokens"] != totals["input"]
                        && r["pressureTokens"] != totals["cache"]["read"]),
                "never the session's totals"
            );
        }
    }
}

/// The `.wasm` in fluvio-smartengine and the native library write the same bytes.
#[test]
fn the_wasm_and_the_native_library_agree_byte_for_byte() {
    let Some(paths) = shared() else { return };
    let wasm = agent_fold::module::default_wasm_path();
    if !wasm.is_file() {
        println!(
            "skipped: no build at {} (scripts/build-wasm.sh)",
            wasm.display()
        );
        return;
    }
    for path in &paths {
        for view in ["pressure", "frames"] {
            let run = |module: &[&str]| {
                let mut args = vec!["run"];
                args.extend(module);
                args.extend(["--input", "auto", "-e"]);
                let emit = format!("emit={view}");
                args.push(&emit);
                args.push(path.to_str().unwrap());
                succeeded(agent_fold(&args, None)).stdout
            };
            let native = run(&["--native"]);
            assert!(!native.is_empty());
            assert_eq!(
                run(&["--wasm", wasm.to_str().unwrap()]),
                native,
                "{} {view}",
                path.display()
            );
        }
    }
}

/// A document with only its first `k` messages, as the agent writes it while the session runs.
fn prefix(doc: &Value, k: usize) -> Value {
    let mut d = doc.clone();
    let all = d["messages"].as_array().unwrap().clone();
    d["messages"] = Value::Array(all[..k].to_vec());
    d
}

/// Written again and again as it grows (each write a record), a document gives the message
/// frames it gives written once (the headers may differ: a write before the first answer
/// cannot name the model yet): each message applied once, in order.
#[test]
fn a_document_written_as_it_grows_gives_each_message_once() {
    let Some(paths) = shared() else { return };
    for path in &paths {
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let n = doc["messages"].as_array().unwrap().len();
        let dir = scratch("growing");
        let once = dir.join("once.jsonl");
        let grown = dir.join("grown.jsonl");
        std::fs::write(&once, serde_json::to_string(&doc).unwrap() + "\n").unwrap();
        let mut text = String::new();
        // Some writes bring one message, some several, some none (the same document again).
        let mut k = 0;
        while k < n {
            k = (k + 1 + k % 3).min(n);
            text += &(serde_json::to_string(&prefix(&doc, k)).unwrap() + "\n");
            if k % 5 == 0 {
                text += &(serde_json::to_string(&prefix(&doc, k)).unwrap() + "\n");
            }
        }
        std::fs::write(&grown, text).unwrap();
        let frames = |p: &Path| {
            let input = if doc.get("sessionId").is_some() {
                "gemini-cli"
            } else {
                "opencode"
            };
            let out = succeeded(agent_fold(
                &["run", "--native", "--input", input, p.to_str().unwrap()],
                None,
            ))
            .stdout;
            out.split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice::<Value>(l).unwrap())
                .filter(|f| f["type"] != "request/header")
                .map(|mut f| {
                    let o = f.as_object_mut().unwrap();
                    o.remove("id");
                    o.remove("seq");
                    o.remove("anchor_seq");
                    f
                })
                .collect::<Vec<Value>>()
        };
        let (grown, once) = (frames(&grown), frames(&once));
        assert_eq!(grown.len(), once.len(), "{}", path.display());
        if let Some(i) = (0..once.len()).find(|i| grown[*i] != once[*i]) {
            panic!("{}: frame {i}: {} vs {}", path.display(), grown[i], once[i]);
        }
    }
}

/// `serve FILE` on a Gemini CLI chat being written: the session listed with its agent without
/// `--input`, its history one point per reading however often the file is rewritten.
#[test]
fn serve_follows_a_chat_rewritten_whole() {
    let Some(paths) = shared() else { return };
    let doc: Value = serde_json::from_slice(&std::fs::read(&paths[1]).unwrap()).unwrap();
    let id = doc["sessionId"].as_str().unwrap().to_owned();
    let dir = scratch("chats");
    let file = dir.join("session-f7633853.json");
    let write = |k: usize| {
        // Written as Gemini CLI writes it: pretty, whole, then renamed into place.
        let tmp = dir.join("tmp");
        std::fs::write(
            &tmp,
            serde_json::to_string_pretty(&prefix(&doc, k)).unwrap(),
        )
        .unwrap();
        std::fs::rename(&tmp, &file).unwrap();
    };
    write(3);
    let s = Server::start_with(&["--native", file.to_str().unwrap()], &[], Stdio::null());
    s.wait_state("the session", |st| session(st, &id).is_some());
    let n = doc["messages"].as_array().unwrap().len();
    for k in [8, 8, 12, n] {
        write(k);
        std::thread::sleep(std::time::Duration::from_millis(400));
    }
    let state = s.wait_state("every reading", |st| {
        session(st, &id).is_some_and(|r| r["record"]["pressureTokens"] == 15_146)
    });
    let row = session(&state, &id).unwrap();
    assert_eq!(row["agent"], "gemini-cli");
    let detail = s.get(&format!("/api/sessions/{id}"));
    let detail: Value = serde_json::from_slice(&detail.body).unwrap();
    let points = detail["history"]["points"].as_array().unwrap();
    // One point per pressure record the module writes for the whole chat at once: no message
    // applied twice however often the file was rewritten.
    let (_, once) = pressure(&paths[1], &["--native"]);
    assert_eq!(points.len(), once.len());
    let readings: Vec<&Value> = points
        .iter()
        .map(|p| &p[2])
        .filter(|r| !r.is_null())
        .collect();
    let mut distinct = readings.clone();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        own_readings(&doc).len(),
        "each reading once"
    );
}

/// `serve DIR` over `~/.gemini/tmp` and OpenCode's storage as the agents lay them out: each
/// session on the board with its agent; JSON files that are no agent's log left alone.
#[test]
fn serve_follows_the_agents_own_directories() {
    let Some(paths) = shared() else { return };
    let root = scratch("homes");
    let chats = root.join("gemini/tmp/7e8989f7/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::copy(
        &paths[1],
        chats.join("session-2026-01-15T20-51-f7633853.json"),
    )
    .unwrap();
    std::fs::write(
        root.join("gemini/tmp/7e8989f7/logs.json"),
        "[{\"sessionId\":\"x\"}]",
    )
    .unwrap();
    std::fs::write(root.join("gemini/settings.json"), "{\"theme\":\"dark\"}").unwrap();
    let storage = root.join("opencode/storage");
    let (msg, part) = (storage.join("message/ses_42"), storage.join("part/msg_1"));
    std::fs::create_dir_all(&msg).unwrap();
    std::fs::create_dir_all(&part).unwrap();
    std::fs::write(
        storage.join("message/ses_42/msg_1.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "id": "msg_1", "sessionID": "ses_42", "role": "assistant",
            "modelID": "claude-sonnet-4-5", "time": {"created": 1786305135578u64},
            "tokens": {"input": 900, "output": 20, "reasoning": 0, "cache": {"read": 40_000, "write": 100}}
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        part.join("prt_1.json"),
        serde_json::json!({"id": "prt_1", "messageID": "msg_1", "sessionID": "ses_42",
                           "type": "text", "text": "done"})
        .to_string(),
    )
    .unwrap();
    let s = Server::start_with(&["--native", root.to_str().unwrap()], &[], Stdio::null());
    let state = s.wait_state("both sessions", |st| {
        session(st, "f7633853-6663-4dbb-bbf4-6159afa29df8")
            .is_some_and(|r| r["record"]["pressureTokens"] == 15_146)
            && session(st, "ses_42").is_some_and(|r| r["record"]["pressureTokens"] == 41_000)
    });
    let gemini = session(&state, "f7633853-6663-4dbb-bbf4-6159afa29df8").unwrap();
    assert_eq!(gemini["agent"], "gemini-cli");
    let opencode = session(&state, "ses_42").unwrap();
    assert_eq!(opencode["agent"], "opencode");
    assert_eq!(
        opencode["record"]["capacity"], 200_000,
        "Claude's window by the model"
    );
    assert_eq!(
        state["sessions"].as_array().unwrap().len(),
        2,
        "no session from the files that are no agent's log"
    );
    assert_eq!(state["status"]["skipped"], 0, "and nothing said of them");
}
