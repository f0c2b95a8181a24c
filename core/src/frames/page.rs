//! The page API over `serde_json::Value`s (`compact_counters`), for history servers: one
//! session's page, folded by the same state machine the stream uses.

use serde_json::{Map, Value};

use crate::config::{Config, Subagents};
use crate::frame::MAX_SAFE;
use crate::frames::fold::{Fed, Part, RunState, Tally};

/// Fold each run of consecutive thinking-token counters in one session's page into the one
/// frame it draws as; sub-agent frames are dropped. Leading counters of the page are served as
/// themselves: their run's start is not in the page.
pub fn compact_counters(frames: &mut Vec<Value>) {
    compact_counters_with(frames, &Config::default());
}

/// [`compact_counters`] with a module's params: its counter type and sub-agent policy (`keep`:
/// in place, never folded, transparent to main runs). Values that are not objects are main
/// non-counters.
pub fn compact_counters_with(frames: &mut Vec<Value>, config: &Config) {
    let mut state = RunState::default();
    let mut keep = vec![true; frames.len()];
    let mut folds: Vec<Part> = Vec::new();
    let mut close = |keep: &mut Vec<bool>, p: Option<Box<Part>>| {
        if let Some(p) = p {
            keep[p.newest] = true;
            if p.members >= 2 {
                folds.push(*p);
            }
        }
    };
    for (i, v) in frames.iter().enumerate() {
        let Some(obj) = v.as_object() else {
            close(&mut keep, state.other());
            continue;
        };
        if is_subagent(obj) {
            keep[i] = config.subagents == Subagents::Keep;
            continue;
        }
        if obj.get("type").and_then(Value::as_str) != Some(config.counter_type.as_str()) {
            close(&mut keep, state.other());
            continue;
        }
        let (fed, closed) = state.counter(i, tally(obj));
        if fed == Fed::InRun {
            keep[i] = false;
        }
        close(&mut keep, closed);
    }
    close(&mut keep, state.end_page());

    for p in folds {
        let from = oldest_stamp(&frames[p.oldest]);
        if let Some(obj) = frames[p.newest].as_object_mut() {
            obj.insert("estimated_tokens_delta".into(), p.delta.into());
            obj.insert("folded_from".into(), from);
            obj.insert("folded_frames".into(), p.frames.into());
        }
    }
    let mut i = 0;
    frames.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

fn is_subagent(obj: &Map<String, Value>) -> bool {
    obj.get("extras")
        .and_then(|e| e.get("parent_tool_use_id"))
        .is_some_and(Value::is_string)
}

fn safe_u64(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n <= MAX_SAFE)
}

fn tally(obj: &Map<String, Value>) -> Option<Tally> {
    obj.get("timestamp").filter(|t| t.is_string())?;
    let delta = safe_u64(obj.get("estimated_tokens_delta")?)?;
    let frames = match obj.get("folded_frames") {
        None => 1,
        Some(v) => safe_u64(v).filter(|n| *n >= 1)?,
    };
    if obj.get("folded_from").is_some_and(|f| !f.is_string()) {
        return None;
    }
    Some(Tally { delta, frames })
}

fn oldest_stamp(v: &Value) -> Value {
    v.get("folded_from")
        .or_else(|| v.get("timestamp"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(id: &str, delta: u64, ts: Option<&str>) -> Value {
        let mut v = json!({"type": "thinking/tokens", "id": id, "estimated_tokens_delta": delta});
        if let Some(ts) = ts {
            v["timestamp"] = ts.into();
        }
        v
    }

    #[test]
    fn the_worked_example() {
        let mut page = vec![
            json!({"type": "user/message", "id": "s1"}),
            c("c1", 5, Some("t1")),
            c("c2", 7, Some("t2")),
            c("c3", 3, Some("t3")),
            json!({"type": "tool/result", "id": "r"}),
            c("c5", 4, Some("t5")),
            c("c6", 2, None),
            c("c7", 1, Some("t7")),
        ];
        compact_counters(&mut page);
        let ids: Vec<_> = page.iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["s1", "c3", "r", "c5", "c6", "c7"]);
        assert_eq!(
            page[1],
            json!({"type": "thinking/tokens", "id": "c3", "estimated_tokens_delta": 15,
                   "timestamp": "t3", "folded_from": "t1", "folded_frames": 3})
        );
        assert_eq!(page[3], c("c5", 4, Some("t5")));
    }

    #[test]
    fn a_page_opening_mid_run_serves_it_as_is() {
        let mut page = vec![c("c2", 7, Some("t2")), c("c3", 3, Some("t3"))];
        let before = page.clone();
        compact_counters(&mut page);
        assert_eq!(page, before);
    }

    #[test]
    fn folding_twice_changes_nothing() {
        let mut page = vec![
            json!({"type": "user/message"}),
            c("a", 1, Some("t1")),
            c("b", 2, Some("t2")),
            json!({"type": "tool/result"}),
        ];
        compact_counters(&mut page);
        let once = page.clone();
        compact_counters(&mut page);
        assert_eq!(page, once);
    }
}
