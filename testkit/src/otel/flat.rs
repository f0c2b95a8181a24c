//! How an event's attributes reach a collector record (the `otel/log` shape,
//! `docs/adapters.md`): a map of plain JSON values, a long string as its length.

use serde_json::{Map, Value, json};

use super::{Attr, chars};

/// A string attribute over this many bytes reaches a record as `{"length": chars}`.
pub const MAX_STRING_BYTES: usize = 16 * 1024;

/// An attribute's value in a collector record.
fn flat(a: &Attr) -> Value {
    match a {
        Attr::Str(s) if s.len() > MAX_STRING_BYTES => json!({ "length": chars(s) }),
        Attr::Str(s) => json!(s),
        Attr::Int(n) => json!(n),
        Attr::Double(d) => json!(d),
        Attr::Bool(b) => json!(b),
    }
}

pub(super) fn flat_map(attrs: &[(String, Attr)]) -> Value {
    let mut m = Map::new();
    for (k, v) in attrs {
        m.insert(k.clone(), flat(v));
    }
    Value::Object(m)
}
