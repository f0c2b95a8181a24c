use serde_json::{Value, json};

use crate::adapt::{Input, adapt_values};
use crate::{Emit, Processor, RecordIn};

/// The prior a Claude Code session's header names (contract §3.4).
const CLAUDE_PRIOR: u64 = crate::config::restore_prior(Input::ClaudeCode);

/// One `otel/log` record of session `s`.
fn rec(session: &str, agent: &str, event: &str, attributes: Value) -> Value {
    json!({"type":"otel/log","session":session,"agent":agent,"event":event,
           "time":"2026-12-03T08:00:00.5Z","attributes":attributes,
           "resource":{"service.name":agent,"service.version":"2.1.217"}})
}

fn cc(event: &str, attributes: Value) -> Value {
    rec(
        "s",
        "claude-code",
        &format!("claude_code.{event}"),
        attributes,
    )
}

fn codex(event: &str, attributes: Value) -> Value {
    rec("cx", "codex", &format!("codex.{event}"), attributes)
}

fn gemini(event: &str, attributes: Value) -> Value {
    rec(
        "g",
        "gemini-cli",
        &format!("gemini_cli.{event}"),
        attributes,
    )
}

fn adapt(lines: &[Value]) -> Vec<Value> {
    adapt_values(Input::Otel, lines)
}

fn kinds(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(|f| f["type"].as_str().unwrap()).collect()
}

fn main_request(input: u64, read: u64, created: u64, output: u64) -> Value {
    cc(
        "api_request",
        json!({"model":"claude-opus-4-6","query_source":"repl_main_thread","input_tokens":input,
               "cache_read_tokens":read,"cache_creation_tokens":created,"output_tokens":output,
               "app.version":"2.1.45"}),
    )
}

#[test]
fn detects_a_collector_record() {
    let line = serde_json::to_vec(&cc("user_prompt", json!({}))).unwrap();
    assert_eq!(Input::detect(&line), Some(Input::Otel));
}

/// Claude Code: the session opens with a header of what telemetry never carries and what the
/// record knows; prompts, tool results and responses join the surface by size; the main
/// thread's reading is the sample, anything else a sub-agent's; a compaction replaces the
/// whole surface with a node of its post-size.
#[test]
fn claude_code_events_become_frames() {
    let out = adapt(&[
        cc(
            "user_prompt",
            json!({"prompt_length":"41","app.version":"2.1.45"}),
        ),
        main_request(3, 20_000, 500, 120),
        cc(
            "tool_result",
            json!({"tool_result_size_bytes":900,"success":"true"}),
        ),
        cc(
            "api_request",
            json!({"model":"claude-haiku-4-5","query_source":"generate_session_title","input_tokens":300}),
        ),
        cc(
            "compaction",
            json!({"trigger":"auto","success":"true","pre_tokens":"155000","post_tokens":"12000"}),
        ),
        cc(
            "compaction",
            json!({"trigger":"auto","success":"false","pre_tokens":1}),
        ),
    ]);
    assert_eq!(
        kinds(&out).join(" "),
        "request/header user/message request/header assistant/message tool/result \
         assistant/message compact/start user/message compact/end \
         otel/claude_code.compaction"
    );
    let open = &out[0];
    assert_eq!(
        (&open["system"], &open["tools"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(open["agent"], "claude-code");
    assert_eq!(open["compact_restore"], CLAUDE_PRIOR);
    // Version 2.1.45 reserves 33,000 (contract §3.5); no model is known yet.
    assert_eq!(open["compact_reserve"], 33_000);
    assert!(open.get("model").is_none() && open.get("context_window").is_none());
    assert_eq!(out[1]["message_chars"], 41);
    let model = &out[2];
    assert_eq!(
        (&model["model"], &model["context_window"]),
        (&json!("claude-opus-4-6"), &json!(200_000))
    );
    assert!(model.get("system").is_none() && model.get("compact_restore").is_none());
    let sample = &out[3];
    assert_eq!(
        sample["usage"],
        json!({"input_tokens":3,"cache_read_input_tokens":20000,"cache_creation_input_tokens":500,"output_tokens":120})
    );
    assert_eq!(sample["message_chars"], 480);
    assert_eq!(out[4]["message_chars"], 900);
    let title = &out[5];
    assert_eq!(
        title["extras"]["parent_tool_use_id"],
        "query_source:generate_session_title"
    );
    assert!(title.get("message_chars").is_none());
    let start = &out[6];
    assert_eq!(
        (
            &start["trigger"],
            &start["preTokens"],
            &start["restore_shown"]
        ),
        (&json!("auto"), &json!(155_000), &json!(true))
    );
    // The whole surface: the prompt (seq 1) through the tool result (seq 4).
    assert_eq!(out[7]["replaces"], json!({"from_seq":1,"to_seq":4}));
    assert_eq!(out[7]["message_chars"], 48_000);
    assert!(out.iter().all(|f| f["session_id"] == "s"));
    let seqs: Vec<u64> = out.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..10).collect::<Vec<_>>());
}

/// A header is written again only when what the records say changes: the model, the window
/// (1M once a reading is above 200k), the reserve by version.
#[test]
fn a_header_says_each_change_once() {
    let req = |model: &str, version: &str, read: u64| {
        cc(
            "api_request",
            json!({"model":model,"input_tokens":1,"cache_read_tokens":read,"output_tokens":1,"app.version":version}),
        )
    };
    let out = adapt(&[
        req("claude-sonnet-4-5", "2.1.7", 50_000),
        req("claude-sonnet-4-5", "2.1.7", 60_000),
        cc(
            "tool_result",
            json!({"tool_result_size_bytes":9,"app.version":"2.1.7"}),
        ),
        req("claude-sonnet-4-5", "2.1.45", 250_000),
        req("claude-opus-4-6", "2.1.45", 260_000),
    ]);
    let headers: Vec<&Value> = out
        .iter()
        .filter(|f| f["type"] == "request/header")
        .collect();
    assert_eq!(headers.len(), 3, "{headers:?}");
    assert_eq!(
        (
            &headers[0]["context_window"],
            &headers[0]["compact_reserve"],
            &headers[0]["model"]
        ),
        (&json!(200_000), &json!(45_000), &json!("claude-sonnet-4-5"))
    );
    assert_eq!(
        (
            &headers[1]["context_window"],
            &headers[1]["compact_reserve"]
        ),
        (&json!(1_000_000), &json!(33_000))
    );
    assert!(
        headers[1].get("model").is_none(),
        "the model did not change"
    );
    assert_eq!(headers[2]["model"], "claude-opus-4-6");
    assert!(headers[2].get("context_window").is_none());
    assert!(headers.iter().all(|h| h["agent"] == "claude-code"));
}

/// Codex: counts recorded as strings, the window and threshold from `conversation_starts`, a
/// reading only from `response.completed` (its input count already holds the cached tokens),
/// a tool result sized by its output, the collector's `{"length": N}` included.
#[test]
fn codex_events_become_frames() {
    let out = adapt(&[
        codex(
            "conversation_starts",
            json!({"model":"gpt-5.5","context_window":258400,"auto_compact_token_limit":"232560"}),
        ),
        codex(
            "user_prompt",
            json!({"model":"gpt-5.5","prompt_length":"12"}),
        ),
        codex(
            "sse_event",
            json!({"model":"gpt-5.5","event.kind":"response.output_item.done"}),
        ),
        codex(
            "sse_event",
            json!({"model":"gpt-5.5","event.kind":"response.completed","input_token_count":"19704",
                   "output_token_count":"597","cached_token_count":4480}),
        ),
        codex("tool_result", json!({"model":"gpt-5.5","output":"héllo"})),
        codex(
            "tool_result",
            json!({"model":"gpt-5.5","output":{"length":70000}}),
        ),
        codex(
            "conversation_starts",
            json!({"model":"gpt-5.5","context_window":258400}),
        ),
    ]);
    assert_eq!(
        kinds(&out).join(" "),
        "request/header user/message otel/codex.sse_event assistant/message tool/result \
         tool/result otel/codex.conversation_starts"
    );
    let h = &out[0];
    assert_eq!(
        (
            &h["context_window"],
            &h["auto_compact_tokens"],
            &h["model"],
            &h["agent"],
            &h["compact_restore"]
        ),
        (
            &json!(258_400),
            &json!(232_560),
            &json!("gpt-5.5"),
            &json!("codex"),
            &json!(1_700)
        )
    );
    assert!(h.get("compact_reserve").is_none());
    assert_eq!(out[1]["message_chars"], 12);
    assert_eq!(
        out[3]["usage"],
        json!({"input_tokens":19704,"output_tokens":597})
    );
    assert_eq!(out[3]["message_chars"], 2388);
    assert_eq!(out[4]["message_chars"], 5, "characters, not bytes");
    assert_eq!(out[5]["message_chars"], 70_000);
    assert!(out.iter().all(|f| f["session_id"] == "cx"));
}

/// Gemini CLI: the window by model and the default compression threshold (half of it); the
/// main thread's responses are readings, a utility role's a sub-agent's; a compression applies
/// only when it shrank the history.
#[test]
fn gemini_events_become_frames() {
    let out = adapt(&[
        gemini("user_prompt", json!({"prompt_length":8})),
        gemini(
            "api_response",
            json!({"model":"gemini-2.5-pro","role":"main","input_token_count":9000,"output_token_count":100,"cached_content_token_count":5000}),
        ),
        gemini(
            "api_response",
            json!({"model":"gemini-2.5-flash-lite","role":"utility_next_speaker","input_token_count":9100}),
        ),
        gemini(
            "tool_call",
            json!({"function_name":"read_file","content_length":4000}),
        ),
        gemini("tool_call", json!({"function_name":"read_file"})),
        gemini(
            "chat_compression",
            json!({"tokens_before":600000,"tokens_after":600000}),
        ),
        gemini(
            "chat_compression",
            json!({"tokens_before":600000,"tokens_after":90000}),
        ),
    ]);
    assert_eq!(
        kinds(&out).join(" "),
        "request/header user/message request/header assistant/message assistant/message \
         tool/result otel/gemini_cli.tool_call otel/gemini_cli.chat_compression \
         compact/start user/message compact/end"
    );
    assert!(out[0].get("compact_restore").is_none(), "no prior fitted");
    assert_eq!(out[0]["agent"], "gemini-cli");
    assert_eq!(
        (&out[2]["context_window"], &out[2]["auto_compact_tokens"]),
        (&json!(1_048_576), &json!(524_288))
    );
    assert_eq!(
        out[3]["usage"],
        json!({"input_tokens":9000,"output_tokens":100})
    );
    assert_eq!(
        out[4]["extras"]["parent_tool_use_id"],
        "role:utility_next_speaker"
    );
    assert_eq!(out[5]["message_chars"], 4000);
    // No trigger is claimed; the level before is said, the post-size replaces the surface.
    assert!(out[8].get("trigger").is_none());
    assert_eq!(out[8]["preTokens"], 600_000);
    assert_eq!(out[9]["message_chars"], 360_000);
    assert_eq!(out[9]["replaces"], json!({"from_seq":1,"to_seq":5}));
}

/// Counts are integers or decimal strings up to 2^53; anything else is no count, and an event
/// whose size is not one passes through rather than join the surface unmeasured.
#[test]
fn a_count_is_an_integer_or_a_decimal_string() {
    for (raw, chars) in [
        (json!(7), Some(7)),
        (json!("7"), Some(7)),
        (json!("+7"), None),
        (json!(" 7"), None),
        (json!(7.5), None),
        (json!(-7), None),
        (json!("9007199254740993"), None),
        (json!(null), None),
        (json!({"length":7}), None),
    ] {
        let out = adapt(&[cc("user_prompt", json!({"prompt_length": raw}))]);
        match chars {
            Some(n) => assert_eq!(out[1]["message_chars"], n, "{raw}"),
            None => assert_eq!(out[1]["type"], "otel/claude_code.user_prompt", "{raw}"),
        }
    }
}

/// Another agent's events, and what is no log event, pass through; a pass-through frame
/// carries the record without its resource, each large value as its size.
#[test]
fn what_has_no_mapping_passes_through_cheaply() {
    let big = "x".repeat(5000);
    let out = adapt(&[
        rec(
            "o",
            "my-agent",
            "my_agent.thing",
            json!({"note":"hi","big":big}),
        ),
        json!({"type":"otel/metric","session":"o","name":"m"}),
        json!({"type":"otel/log","session":"o"}),
    ]);
    assert_eq!(
        kinds(&out),
        [
            "request/header",
            "otel/my_agent.thing",
            "otel/metric",
            "otel/log"
        ]
    );
    // A session whose first record is no log event opens all the same, and names its agent's
    // prior.
    let first = adapt(&[
        json!({"type":"otel/metric","session":"s","agent":"claude-code"}),
        cc("user_prompt", json!({"prompt_length":5})),
    ]);
    assert_eq!(
        kinds(&first),
        [
            "request/header",
            "otel/metric",
            "request/header",
            "user/message"
        ]
    );
    assert_eq!(first[0]["compact_restore"], CLAUDE_PRIOR);
    assert_eq!(first[0]["system"], Value::Null);
    // The first Claude Code event names the reserve by the resource's version.
    assert_eq!(first[2]["compact_reserve"], 33_000);
    assert!(first[2].get("system").is_none());
    assert_eq!(out[0]["agent"], "my-agent");
    let source = &out[1]["source"];
    assert_eq!(source["attributes"]["note"], "hi");
    assert_eq!(source["attributes"]["big"], json!({"length":5000}));
    assert!(source.get("resource").is_none());
    assert_eq!(source["event"], "my_agent.thing");
}

/// Telemetry interleaves sessions: a record that names none (and has no key) belongs to none,
/// not to the record before it.
#[test]
fn a_record_of_no_session_has_no_seq() {
    let mut nameless = cc("user_prompt", json!({"prompt_length":5}));
    nameless.as_object_mut().unwrap().remove("session");
    let out = adapt(&[
        cc("user_prompt", json!({"prompt_length":5})),
        codex("user_prompt", json!({"prompt_length":6})),
        nameless,
        cc("user_prompt", json!({"prompt_length":7})),
    ]);
    let placed: Vec<(Value, Value)> = out
        .iter()
        .map(|f| (f["session_id"].clone(), f["seq"].clone()))
        .collect();
    assert_eq!(
        placed,
        [
            (json!("s"), json!(0)),
            (json!("s"), json!(1)),
            (json!("cx"), json!(0)),
            (json!("cx"), json!(1)),
            (Value::Null, Value::Null),
            (json!("s"), json!(2)),
        ]
    );
}

/// Nothing a record holds panics the adapter: odd types everywhere, a string where an object
/// stands, huge numbers, deep nesting.
#[test]
fn odd_records_are_adapted_not_a_panic() {
    let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
    let lines = [
        r#"{"type":"otel/log","session":"s","event":"claude_code.api_request","attributes":"no"}"#.to_owned(),
        r#"{"type":"otel/log","session":"s","event":"claude_code.api_request","attributes":{"input_tokens":1e400,"output_tokens":99999999999999999999,"model":7}}"#.to_owned(),
        format!(r#"{{"type":"otel/log","session":"s","event":"claude_code.compaction","attributes":{{"post_tokens":{deep},"trigger":{deep}}},"time":5}}"#),
        r#"{"type":"otel/log","session":7,"event":["x"],"agent":{}}"#.to_owned(),
        r#"{"type":"otel/log","session":"s","event":"codex.tool_result","attributes":{"output":{"length":"x"}}}"#.to_owned(),
        r#"{"type":"otel/log","session":"s","event":"gemini_cli.chat_compression","attributes":{"tokens_before":"5","tokens_after":"\ud800"}}"#.to_owned(),
    ];
    let mut a = crate::adapt::Adapter::new(Input::Otel, 10);
    let frames = a.adapt_all(lines.iter().map(|l| (None, l.as_bytes())));
    assert!(frames.len() >= lines.len());
    for f in &frames {
        assert!(
            crate::Frame::parse(f).is_some(),
            "{}",
            String::from_utf8_lossy(f)
        );
    }
}

/// The pressure view over records of one session, each its own invocation: the records out.
fn pressure(params: &[(&str, &str)], lines: &[Value]) -> Vec<Value> {
    let mut p = Processor::from_params(params.iter().copied()).unwrap();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let bytes = serde_json::to_vec(l).unwrap();
        for e in p
            .process(&[RecordIn::new(None, &bytes).at(i as i64)])
            .unwrap()
        {
            if let Emit::New { value, .. } = e {
                out.push(serde_json::from_slice(&value).unwrap());
            }
        }
    }
    out
}

/// A session up to its compaction: the first reading (40,000) came with a prompt of 400 chars
/// (100 tokens) on its surface, so the base is 39,900.
fn up_to_a_compaction(post: Option<u64>) -> Vec<Value> {
    let mut compaction = json!({"trigger":"auto","success":true,"pre_tokens":160000});
    if let Some(p) = post {
        compaction["post_tokens"] = p.into();
    }
    vec![
        cc("user_prompt", json!({"prompt_length":400})),
        main_request(10, 39_000, 990, 250),
        // 750 estimated tokens of growth: too little to calibrate, the scale stays 1.
        cc("tool_result", json!({"tool_result_size_bytes":2_000})),
        main_request(10, 40_600, 140, 50),
        cc("compaction", compaction),
    ]
}

/// Right after a compaction, before the next reading, `rebased` shows the base, the agent's
/// own post-compaction size as prose (unscaled), and what comes back unseen: nothing when the
/// post-size is known (it counts what the agent put back), else the session's agent's prior
/// from its header, unless param `compact_restore` names one (contract §3.4).
#[test]
fn after_a_compaction_the_figure_is_base_post_size_and_restore() {
    let shown = |params: &[(&str, &str)], post: Option<u64>| {
        let out = pressure(params, &up_to_a_compaction(post));
        let last = out.last().unwrap().clone();
        (last["projectedTokens"].as_u64(), last)
    };
    let otel = [("input", "otel"), ("emit", "pressure")];
    let (figure, last) = shown(&otel, Some(12_000));
    assert_eq!(figure, Some(39_900 + 12_000));
    assert_eq!(last["messageTokens"], 12_000);
    assert_eq!(last["capacity"], 200_000);
    assert_eq!(last["compactAtTokens"], 160_000, "the level it fired at");
    assert_eq!(shown(&otel, None).0, Some(39_900 + CLAUDE_PRIOR));
    let named = [
        ("input", "otel"),
        ("emit", "pressure"),
        ("compact_restore", "500"),
    ];
    assert_eq!(shown(&named, None).0, Some(39_900 + 500));
    // What joins after the compaction counts toward the restore, not on top of it.
    let mut lines = up_to_a_compaction(None);
    lines.push(cc("user_prompt", json!({"prompt_length":4000})));
    let out = pressure(&otel, &lines);
    assert_eq!(
        out.last().unwrap()["projectedTokens"],
        39_900 + CLAUDE_PRIOR,
        "1,000 joined, under the prior"
    );
    // The next reading ends the re-basing: the figure is the reading and its response.
    lines.push(main_request(5, 50_000, 0, 100));
    let out = pressure(&otel, &lines);
    assert_eq!(out.last().unwrap()["projectedTokens"], 50_005 + 100);
}

/// Between readings the figure is the last reading and what joined since; the sub-agent's and
/// the title's requests never move it; every record names the session.
#[test]
fn the_main_figure_moves_only_with_the_main_thread() {
    let otel = [("input", "otel"), ("emit", "pressure")];
    let out = pressure(
        &otel,
        &[
            cc("user_prompt", json!({"prompt_length":400})),
            main_request(10, 39_000, 990, 250),
            cc(
                "api_request",
                json!({"query_source":"agent:builtin:general-purpose","input_tokens":3,"cache_read_tokens":90000}),
            ),
            cc("tool_result", json!({"tool_result_size_bytes":4_000})),
        ],
    );
    let last = out.last().unwrap();
    assert_eq!(last["pressureTokens"], 40_000);
    // The reading, the response (250) and the tool result (1,000).
    assert_eq!(last["projectedTokens"], 41_250);
    assert!(out.iter().all(|r| r["session"] == "s"));
}

/// Each record is applied once: an invocation delivered again (its offsets at or below what
/// was seen) says nothing new and changes nothing.
#[test]
fn a_record_delivered_again_is_applied_once() {
    let lines = up_to_a_compaction(Some(12_000));
    let bytes: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| serde_json::to_vec(l).unwrap())
        .collect();
    let records: Vec<RecordIn> = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| RecordIn::new(None, b).at(i as i64))
        .collect();
    let mut p = Processor::from_params([("input", "otel"), ("emit", "pressure")]).unwrap();
    let first = p.process(&records).unwrap();
    let cp = p.checkpoint();
    let again = p.process(&records).unwrap();
    assert!(!first.is_empty());
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(p.checkpoint(), cp);
    // The adapter's state round-trips, the model it announced included.
    let mut q = Processor::from_params([("input", "otel"), ("emit", "pressure")]).unwrap();
    q.restore(&cp).unwrap();
    assert_eq!(q.checkpoint(), cp);
    assert!(cp.contains(r#""modelPrint":"#) && !cp.contains(r#""modelPrint":null"#));
}

/// A session's prior is in its checkpoint (`restorePrior`); a checkpoint without it (written
/// before the member) restores with the instance's prior, as a session whose header named none.
#[test]
fn the_prior_a_header_named_is_checkpointed() {
    let params = [("input", "otel"), ("emit", "pressure")];
    let mut lines = up_to_a_compaction(None);
    let compaction = lines.pop().unwrap();
    let mut p = Processor::from_params(params).unwrap();
    for (i, l) in lines.iter().enumerate() {
        let bytes = serde_json::to_vec(l).unwrap();
        p.process(&[RecordIn::new(None, &bytes).at(i as i64)])
            .unwrap();
    }
    let cp = p.checkpoint();
    assert!(
        cp.contains(&format!(r#""restorePrior":{CLAUDE_PRIOR}"#)),
        "{cp}"
    );
    let older = cp.replace(&format!(r#""restorePrior":{CLAUDE_PRIOR},"#), "");
    assert_ne!(older, cp);
    let shown = |doc: &str| {
        let mut q = Processor::from_params(params).unwrap();
        q.restore(doc).unwrap();
        let bytes = serde_json::to_vec(&compaction).unwrap();
        let out = q
            .process(&[RecordIn::new(None, &bytes).at(lines.len() as i64)])
            .unwrap();
        let Some(Emit::New { value, .. }) = out.last() else {
            panic!("a record: {out:?}")
        };
        serde_json::from_slice::<Value>(value).unwrap()["projectedTokens"].clone()
    };
    assert_eq!(shown(&cp), 39_900 + CLAUDE_PRIOR);
    assert_eq!(shown(&older), 39_900, "the instance's prior for otel is 0");
}
