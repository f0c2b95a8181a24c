//! Target `checkpoint_restore`: any checkpoint is restored whole or refused, never half.

use agent_fold_core::{Config, Processor, RecordIn, View};
use serde_json::{Value, json};

use super::pressure::cp_key;
use super::{
    assert_round_trip, check_frames_invocation, check_pressure_invocation, inputs, pick, restored,
    small_cap,
};
use crate::GenRecord;

/// Frames that exercise a restored state: per session (at most 8), for the frames view two
/// stamped counters and a message; for the pressure view a message, a replacement of its
/// whole surface, a sample and a header above its cursor.
fn probe(view: View, checkpoint: &str) -> Vec<GenRecord> {
    let doc: Value = serde_json::from_str(checkpoint).expect("a written checkpoint is JSON");
    let mut out = Vec::new();
    for s in doc["sessions"].as_array().expect("sessions").iter().take(8) {
        let obj = s.as_object().expect("a session object");
        let key = Some(cp_key(obj));
        let mut push = |v: Value| out.push((key.clone(), v.to_string().into_bytes()));
        match view {
            View::Frames => {
                for n in 0..2 {
                    push(json!({"type": "thinking/tokens", "id": format!("p{n}"),
                        "timestamp": format!("t{n}"), "estimated_tokens_delta": 3}));
                }
                push(json!({"type": "user/message", "id": "p2", "message": "x"}));
            }
            View::Pressure => {
                let c = obj["cursor"].as_u64();
                let at = |k: u64| c.map_or(k, |c| c.saturating_add(k));
                let Some(nodes) = obj.get("surface").and_then(Value::as_array) else {
                    continue;
                };
                let ends = (nodes.first(), nodes.last());
                push(json!({"type": "user/message", "seq": at(1), "message": "hello there"}));
                if let (Some(first), Some(last)) = ends {
                    push(
                        json!({"type": "user/message", "seq": at(2), "message": "summary",
                        "replaces": {"from_seq": first[0], "to_seq": last[0]}}),
                    );
                }
                push(
                    json!({"type": "assistant/message", "seq": at(3), "message": "ok",
                    "usage": {"input_tokens": 100, "cache_read_input_tokens": 7}}),
                );
                push(
                    json!({"type": "request/header", "seq": at(4), "system": "s",
                    "context_window": 1000}),
                );
            }
        }
    }
    out
}

/// `checkpoint_restore`: byte 0 = view (bit 0: pressure) and a small `max_sessions` (bit 1;
/// 1 + bits 2–3); the rest (lossy UTF-8) is a checkpoint for [`Processor::restore`]. Either a
/// clear error that leaves the state as it was, or a state whose `checkpoint()` restores to the
/// same `checkpoint()` text, which the other view refuses, and which then processes frames
/// exactly as its restored copy does.
pub fn check_checkpoint_restore(data: &[u8]) {
    let Some((&p, rest)) = data.split_first() else {
        return;
    };
    let config = Config {
        view: pick(p, 1, View::Frames, View::Pressure),
        max_sessions: small_cap(p, 2, 2),
        ..Config::default()
    };
    let text = String::from_utf8_lossy(rest);

    // Some state first, so that "unchanged on error" means something.
    let warm: Vec<GenRecord> = [
        r#"{"type":"user/message","id":"w0","seq":0,"message":"hi"}"#,
        r#"{"type":"thinking/tokens","id":"w1","seq":1,"timestamp":"t1","estimated_tokens_delta":2}"#,
    ]
    .iter()
    .map(|v| (Some(b"warm".to_vec()), v.as_bytes().to_vec()))
    .collect();
    let mut proc = Processor::new(&config);
    proc.process(&inputs(&warm)).expect("a valid batch");
    let before = proc.checkpoint();

    match proc.restore(&text) {
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error says why");
            assert_eq!(
                proc.checkpoint(),
                before,
                "a refused checkpoint changed the state"
            );
        }
        Ok(()) => {
            let cp = proc.checkpoint();
            assert!(proc.sessions() <= config.max_sessions.max(1));
            let mut copy = restored(&config, &cp);
            assert_eq!(
                copy.checkpoint(),
                cp,
                "checkpoint → restore → checkpoint changed it"
            );
            let other_view = match config.view {
                View::Frames => View::Pressure,
                View::Pressure => View::Frames,
            };
            let mut other = Processor::new(&Config {
                view: other_view,
                ..config.clone()
            });
            assert!(
                other.restore(&cp).is_err(),
                "the other view took this checkpoint"
            );

            let recs = probe(config.view, &cp);
            let records = inputs(&recs);
            // The pressure view frame by frame, so that every state it passes through is
            // checkpointed; the frames view in one invocation, so that its counters can fold.
            let pages: Vec<&[RecordIn]> = match config.view {
                View::Frames => vec![&records[..]],
                View::Pressure => records.chunks(1).collect(),
            };
            for page in pages {
                let out = proc.process(page).expect("malformed=pass never fails");
                assert_eq!(
                    Ok(&out),
                    copy.process(page).as_ref(),
                    "a restored copy answered differently"
                );
                let after = proc.checkpoint();
                assert_eq!(copy.checkpoint(), after, "a restored copy's state diverged");
                match config.view {
                    View::Frames => check_frames_invocation(&config, page, &out),
                    View::Pressure => {
                        check_pressure_invocation(page, &out, &after, &config);
                    }
                }
                assert_round_trip(&config, &after);
            }
        }
    }
}
