//! The derivations, stamps and bodies held to small hand-made logs.

use serde_json::{Value, json};

use super::claude_code::quarter;
use super::json::lone_surrogates_replaced;
use super::time::format_time_ms;
use super::*;

/// The events derived from a log of `lines`.
fn derived(lines: &[Value]) -> Vec<OtelEvent> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    derive(&text)
}

fn names(events: &[OtelEvent]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

fn attr(e: &OtelEvent, key: &str) -> Option<Attr> {
    e.attr(key).cloned()
}

#[test]
fn stamps_round_trip() {
    let t = parse_time("2026-02-18T03:44:30.694Z").unwrap();
    assert_eq!(format_time(t), "2026-02-18T03:44:30.694000000Z");
    assert_eq!(format_time_ms(t), "2026-02-18T03:44:30.694Z");
    assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_time("2000-03-01T00:00:01.5Z"),
        Some((951_868_800 + 1) * 1_000_000_000 + 500_000_000)
    );
    assert_eq!(parse_time("1969-12-31T23:59:59Z"), None, "before the epoch");
    assert_eq!(
        parse_time("2026-02-18T04:44:30.694+01:00"),
        Some(t),
        "an offset, read as the core reads it"
    );
}

#[test]
fn lone_surrogates_read_as_replacement_characters() {
    let line = r#"{"a":"x\ud83d y","b":"\ud83d\ude00","c":"\\ud83d"}"#;
    let fixed = lone_surrogates_replaced(line);
    let v: Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(v["a"], "x\u{FFFD} y");
    assert_eq!(v["b"], "😀");
    assert_eq!(v["c"], "\\ud83d");
}

/// A small transcript: a prompt, a response over two lines (one request), a tool result,
/// a sub-agent's response, a compaction with no `postTokens` (derived from its summary).
#[test]
fn a_transcript_becomes_claude_codes_events() {
    let lines = [
        json!({"type":"user","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:30.000Z","message":{"role":"user","content":"héllo"}}),
        json!({"type":"assistant","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:31.000Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":9}}}),
        json!({"type":"assistant","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:31.100Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"t1"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":9}}}),
        json!({"type":"user","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:32.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out"}]}}),
        json!({"type":"progress","sessionId":"s","timestamp":"2026-02-18T03:44:33.000Z","data":{"type":"agent_progress","agentId":"a7","message":{"type":"assistant","message":{"id":"sm1","role":"assistant","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":50}}}}}),
        json!({"type":"system","subtype":"compact_boundary","sessionId":"s","timestamp":"2026-02-18T03:44:40.000Z","compactMetadata":{"trigger":"auto","preTokens":155000}}),
        json!({"type":"user","sessionId":"s","isCompactSummary":true,"timestamp":"2026-02-18T03:44:40.000Z","message":{"role":"user","content":"s".repeat(398)}}),
        json!({"type":"attachment","sessionId":"s","timestamp":"2026-02-18T03:44:40.000Z","attachment":{"type":"file","content":"x".repeat(30)}}),
    ];
    let events = derived(&lines);
    assert_eq!(
        names(&events),
        [
            "claude_code.user_prompt",
            "claude_code.api_request",
            "claude_code.tool_result",
            "claude_code.api_request",
            "claude_code.compaction",
        ]
    );
    assert_eq!(attr(&events[0], "prompt_length"), Some(Attr::Int(5)));
    assert_eq!(
        attr(&events[1], "query_source"),
        Some("repl_main_thread".into())
    );
    assert_eq!(attr(&events[1], "cache_read_tokens"), Some(Attr::Int(100)));
    assert_eq!(
        attr(&events[2], "tool_result_size_bytes"),
        Some(Attr::Int(3))
    );
    assert_eq!(attr(&events[3], "query_source"), Some("agent:a7".into()));
    // The summary's 400 chars of JSON and the attachment's, a quarter each.
    let attachment = quarter(&json!({"type":"file","content":"x".repeat(30)}));
    assert_eq!(
        attr(&events[4], "post_tokens"),
        Some(Attr::Int(100 + attachment as i64))
    );
    let seqs: Vec<Option<u64>> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
    assert!(events.iter().all(|e| e.session == "s"));
}

/// A rollout: the reading goes where its response ended, before the tool outputs it asked
/// for; counts are strings where Codex records them so.
#[test]
fn a_rollout_becomes_codexs_events() {
    let item = |t: &str, p: Value| {
        let mut p = p;
        p["type"] = json!(t);
        json!({"timestamp": "2026-06-30T08:34:45.000Z", "type": "response_item", "payload": p})
    };
    let lines = [
        json!({"timestamp":"2026-06-30T08:33:39.451Z","type":"session_meta","payload":{"id":"cx","cli_version":"0.142.4","originator":"codex-tui","model_provider":"openai"}}),
        json!({"timestamp":"2026-06-30T08:33:39.453Z","type":"event_msg","payload":{"type":"task_started","model_context_window":258400}}),
        json!({"timestamp":"2026-06-30T08:33:39.632Z","type":"turn_context","payload":{"model":"gpt-5.5"}}),
        json!({"timestamp":"2026-06-30T08:33:43.307Z","type":"event_msg","payload":{"type":"user_message","message":"do it"}}),
        item("reasoning", json!({})),
        item(
            "function_call",
            json!({"name":"shell","call_id":"c1","arguments":"{}"}),
        ),
        json!({"timestamp":"2026-06-30T08:34:46.507Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"done"}}),
        json!({"timestamp":"2026-06-30T08:34:46.524Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":19704,"cached_input_tokens":4480,"output_tokens":597,"reasoning_output_tokens":268},"total_token_usage":{"total_tokens":20301}}}}),
        json!({"timestamp":"2026-06-30T08:34:46.600Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":19704},"total_token_usage":{"total_tokens":20301}}}}),
    ];
    let events = derived(&lines);
    assert_eq!(
        names(&events),
        [
            "codex.conversation_starts",
            "codex.user_prompt",
            "codex.sse_event",
            "codex.tool_result",
        ]
    );
    assert_eq!(attr(&events[0], "context_window"), Some(Attr::Int(258_400)));
    assert_eq!(attr(&events[0], "model"), Some("gpt-5.5".into()));
    assert_eq!(attr(&events[1], "prompt_length"), Some("5".into()));
    assert_eq!(attr(&events[2], "input_token_count"), Some("19704".into()));
    assert_eq!(
        attr(&events[2], "cached_token_count"),
        Some(Attr::Int(4480))
    );
    assert_eq!(
        events[2].time_ns,
        parse_time("2026-06-30T08:34:45.000Z").unwrap()
    );
    assert_eq!(attr(&events[3], "tool_name"), Some("shell".into()));
    assert_eq!(attr(&events[3], "output"), Some("done".into()));
    assert!(events.iter().all(|e| e.session == "cx"));
    assert_eq!(events[0].resource[0].1, "codex-tui".into());
}

/// The bodies are OTLP/JSON as an exporter sends them, batched by 5 s of event time and
/// 512 records; a plain receiver makes of them exactly the collector records; a long
/// string reaches a record as its length.
#[test]
fn bodies_and_records_agree() {
    let event = |i: u64, secs: u64| OtelEvent {
        agent: OtelAgent::ClaudeCode,
        session: "s".into(),
        name: "claude_code.tool_result".into(),
        time_ns: secs * 1_000_000_000 + i,
        sequence: Some(i),
        attributes: vec![
            ("session.id".into(), "s".into()),
            ("event.name".into(), "tool_result".into()),
            ("event.sequence".into(), i.into()),
            ("tool_result_size_bytes".into(), (i * 10).into()),
            (
                "note".into(),
                "é".repeat(if i == 3 { 9_000 } else { 1 }).into(),
            ),
        ],
        resource: vec![("service.name".into(), "claude-code".into())],
        scope: ("com.anthropic.claude_code.events".into(), "2.1.45".into()),
        line: i as usize,
    };
    let mut events: Vec<OtelEvent> = (0..600).map(|i| event(i, 100)).collect();
    events.push(event(600, 104));
    events.push(event(601, 105));
    let bodies = export_requests(&events);
    let sizes: Vec<usize> = bodies
        .iter()
        .map(|b| {
            b["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
                .as_array()
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(sizes, [512, 89, 1]);
    let r = &bodies[0]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][1];
    assert_eq!(r["timeUnixNano"], "100000000001");
    assert_eq!(r["severityNumber"], 9);
    assert_eq!(r["body"]["stringValue"], "claude_code.tool_result");
    assert_eq!(r["attributes"][3]["value"]["intValue"], "10");
    let received: Vec<Value> = bodies.iter().flat_map(records_from_request).collect();
    let records = collector_records(&events);
    assert_eq!(received, records);
    assert_eq!(records[3]["attributes"]["note"], json!({"length": 9000}));
    assert_eq!(records[1]["attributes"]["tool_result_size_bytes"], 10);
    assert_eq!(records[1]["time"], "1970-01-01T00:01:40.000000001Z");
}
