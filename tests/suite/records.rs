//! Records the suite builds to feed the host tool's services.

use serde_json::{Value, json};

/// A pressure record (`context/pressure`) of `session` at `seq`, then `fields` (a JSON object)
/// in their order, as one JSONL line for `serve`'s standard input.
pub(crate) fn pressure_line(session: &str, seq: u64, fields: Value) -> String {
    let mut r = json!({"type": "context/pressure", "session": session, "seq": seq});
    match (r.as_object_mut(), fields) {
        (Some(r), Value::Object(fields)) => r.extend(fields),
        (_, fields) => panic!("a pressure record's fields are an object, not {fields}"),
    }
    r.to_string() + "\n"
}
