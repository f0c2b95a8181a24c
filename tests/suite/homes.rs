//! Logs told without `--input` and homes found without a source: a Gemini CLI 0.61 JSONL
//! chat (a header, message records, `$set` patches) read by `run`, `inspect` and `serve` as
//! `--input gemini-cli` reads it; a log of no format known said so, never passed silently as
//! frames when pressure was asked for; `serve` with no source following the four agents' homes
//! of a HOME that holds them (docs/serve.md, "Sources").

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{Server, agent_fold, row_of, scratch, succeeded};
use crate::opencode_db::{Writer, pressure_of};

const GEMINI_SESSION: &str = "cda54134-8fd1-460c-b202-d7be41671dbc";

/// A chat as Gemini CLI 0.61 records it: its header, the history set whole, messages, the
/// model's answer written again with its tool calls, `lastUpdated` patches.
fn gemini_chat() -> String {
    let stamp = "2026-12-06T10:05:50.096Z";
    let answer = |id: &str, input: u64, calls: bool| {
        let mut m = json!({"id": id, "timestamp": stamp, "type": "gemini", "content": "Done.",
                           "thoughts": [], "model": "gemini-3.8-flash",
                           "tokens": {"input": input, "output": 41, "cached": input / 2,
                                      "thoughts": 0, "tool": 0, "total": input + 41}});
        if calls {
            m["toolCalls"] = json!([{"id": "read_file-1", "name": "read_file",
                "args": {"file_path": "notes.txt"}, "status": "success", "timestamp": stamp,
                "result": [{"functionResponse": {"id": "read_file-1", "name": "read_file",
                            "response": {"output": "The answer is 42.\n"}}}]}]);
        }
        m
    };
    let user = |id: &str, text: &str| json!({"id": id, "timestamp": stamp, "type": "user", "content": [{"text": text}]});
    let set = |v: Value| json!({ "$set": v });
    let lines = [
        json!({"sessionId": GEMINI_SESSION, "projectHash": "771ba581c432bf05",
               "startTime": stamp, "lastUpdated": stamp, "kind": "main"}),
        set(json!({"lastUpdated": stamp, "messages": []})),
        user("u1", "Please read notes.txt."),
        set(json!({"lastUpdated": stamp})),
        answer("g1", 42_000, false),
        set(json!({"lastUpdated": stamp})),
        answer("g1", 42_000, true),
        user("u2", "Now count its lines."),
        set(json!({"lastUpdated": stamp})),
        answer("g2", 43_500, false),
    ];
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

fn last_reading(records: &[Value]) -> Option<u64> {
    records
        .iter()
        .rev()
        .find_map(|p| p["pressureTokens"].as_u64())
}

#[test]
fn a_gemini_cli_jsonl_chat_is_told_without_input() {
    let dir = scratch("gemini-jsonl");
    let chat = dir.join("session-2026-12-06T10-05-cda54134.jsonl");
    std::fs::write(&chat, gemini_chat()).unwrap();
    let told = pressure_of(&dir, &chat, &[]);
    let named = pressure_of(&dir, &chat, &["--input", "gemini-cli"]);
    assert_eq!(told, named);
    let readings: Vec<u64> = told
        .iter()
        .filter_map(|p| p["pressureTokens"].as_u64())
        .collect();
    assert!(readings.contains(&42_000), "{readings:?}");
    assert_eq!(last_reading(&told), Some(43_500));

    let out = succeeded(agent_fold(&["inspect", chat.to_str().unwrap()], None));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("agent: gemini-cli"), "{said}");
    assert!(said.contains("readings: 2"), "{said}");

    let s = Server::start(&[chat.to_str().unwrap()]);
    let state = s.wait_state("the chat's last reading", |st| {
        row_of(&st["sessions"], GEMINI_SESSION)
            .is_some_and(|r| r["record"]["pressureTokens"] == 43_500)
    });
    assert_eq!(state["status"]["message"], "following (gemini-cli)");
}

#[test]
fn a_log_of_no_known_format_is_said_so() {
    let dir = scratch("unknown-format");
    let log = dir.join("notes.jsonl");
    std::fs::write(&log, "{\"a\":1}\n{\"b\":2}\n").unwrap();
    let p = dir.join("p.jsonl");
    for args in [
        vec![
            "run",
            "--pressure-out",
            p.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
        vec!["run", "-e", "emit=pressure", log.to_str().unwrap()],
    ] {
        let out = agent_fold(&args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("do not tell its format") && err.contains("--input"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    // Frames asked for: passed on as frames, and said.
    let out = succeeded(agent_fold(&["run", log.to_str().unwrap()], None));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("do not tell its format"), "{err}");
}

/// A HOME holding the four agents' homes, each with one session.
fn four_homes(home: &Path) -> Vec<(&'static str, PathBuf)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapt");
    let claude = home.join(".claude/projects/-work-proj");
    std::fs::create_dir_all(&claude).unwrap();
    let transcript = "5e551011-0000-4000-8000-000000000001.jsonl";
    std::fs::copy(
        data.join("claude-code").join(transcript),
        claude.join(transcript),
    )
    .unwrap();
    let codex = home.join(".codex/sessions/2026/03/03");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::copy(
        data.join("codex.jsonl"),
        codex.join("rollout-2026-03-03T10-00-00-019ca000.jsonl"),
    )
    .unwrap();
    let gemini = home.join(".gemini/tmp/work/chats");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("session-2026-12-06T10-05-cda54134.jsonl"),
        gemini_chat(),
    )
    .unwrap();
    let opencode = home.join(".local/share/opencode");
    std::fs::create_dir_all(&opencode).unwrap();
    let w = Writer::create(&opencode.join("opencode.db"));
    w.session("ses_0001home");
    let u = w.user("ses_0001home", "Hello.");
    w.assistant("ses_0001home", &u, (12_000, 0));
    vec![
        ("Claude Code", home.join(".claude/projects")),
        ("Codex", home.join(".codex/sessions")),
        ("Gemini CLI", home.join(".gemini/tmp")),
        ("OpenCode", opencode.join("opencode.db")),
    ]
}

/// The agents' own variables set empty: unset, as the agents read them.
fn env_of(home: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        ("CLAUDE_CONFIG_DIR", String::new()),
        ("CODEX_HOME", String::new()),
        ("XDG_DATA_HOME", String::new()),
        ("RUST_LOG", "info".into()),
    ]
}

#[test]
fn serve_with_no_source_follows_every_agents_home() {
    let dir = scratch("four-homes");
    let home = dir.join("home");
    let homes = four_homes(&home);
    let env = env_of(&home);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Native: four homes are a dozen module instances, each seconds to compile as .wasm.
    let s = Server::start_with(
        &["--native", "-e", "capacity=200000"],
        &env,
        std::process::Stdio::null(),
    );
    let sessions = [
        "5e551011-0000-4000-8000-000000000001",
        "019ca000-0000-7000-8000-000000000003",
        GEMINI_SESSION,
        "ses_0001home",
    ];
    let state = s.wait_state("a session of each agent", |st| {
        sessions
            .iter()
            .all(|id| row_of(&st["sessions"], id).is_some())
    });
    let agents: Vec<&str> = sessions
        .iter()
        .map(|id| {
            row_of(&state["sessions"], id).unwrap()["agent"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(agents, ["claude-code", "codex", "gemini-cli", "opencode"]);
    let lines: Vec<String> = homes
        .iter()
        .map(|(agent, path)| format!("following {agent}'s sessions: {}", path.display()))
        .collect();
    s.wait_stderr("each home found said", |said| {
        lines.iter().all(|l| said.contains(l))
    });

    // Two of the four: the others said missing, where they were looked for.
    std::fs::remove_dir_all(home.join(".codex")).unwrap();
    std::fs::remove_dir_all(home.join(".local")).unwrap();
    let s = Server::start_with(&["--native"], &env, std::process::Stdio::null());
    s.wait_state("Claude Code's session", |st| {
        row_of(&st["sessions"], sessions[0]).is_some()
    });
    s.wait_stderr("the homes missing said, and the ones found", |said| {
        said.contains("no Codex sessions here")
            && said.contains("no OpenCode sessions here")
            && said.contains("following Gemini CLI's sessions")
    });

    // The agents' own variables place their homes.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("codex/sessions")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/adapt/codex.jsonl"),
        elsewhere.join("codex/sessions/rollout-x.jsonl"),
    )
    .unwrap();
    let mut env2: Vec<(&str, &str)> = env.clone();
    let codex_home = elsewhere.join("codex").display().to_string();
    env2.retain(|(k, _)| *k != "CODEX_HOME");
    env2.push(("CODEX_HOME", &codex_home));
    let s = Server::start_with(&["--native"], &env2, std::process::Stdio::null());
    s.wait_state("Codex's session from CODEX_HOME", |st| {
        row_of(&st["sessions"], sessions[1]).is_some()
    });

    // None: refused, naming where each was looked for.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = std::process::Command::new(crate::harness::binary())
        .arg("serve")
        .envs(env_of(&empty))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no agent's sessions on this machine"), "{err}");
    for place in [
        ".claude/projects",
        ".codex/sessions",
        ".gemini/tmp",
        "opencode.db",
    ] {
        assert!(err.contains(place), "{place}: {err}");
    }
}
