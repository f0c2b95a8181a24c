//! What a request body holds, counted before it is decoded: its records and the values in
//! them (attributes, bodies, their nested arrays and maps), each one item, an empty record too.
//! Decoding builds a structure per item, so a small body of many empty records (16 million in a
//! 31 KB gzip) would take gigabytes; counted first on the wire, it is refused at the bound
//! having built nothing (docs/collect.md).
//!
//! Protobuf is walked field by field through the messages of `ExportLogsServiceRequest` that
//! hold items (opentelemetry-proto's `logs/v1`, `common/v1`, `resource/v1`); JSON is walked by
//! serde_json with a visitor that keeps nothing, counting every object.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The body holds more items than the bound (or is too deep to walk): refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Over;

/// The messages whose fields hold items, by what their fields are.
#[derive(Clone, Copy)]
enum Msg {
    Request,
    ResourceLogs,
    Resource,
    ScopeLogs,
    Scope,
    LogRecord,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
}

impl Msg {
    /// The message a length-delimited field of this one holds, when it holds items.
    fn child(self, field: u64) -> Option<Msg> {
        use Msg::*;
        Some(match (self, field) {
            (Request, 1) => ResourceLogs,
            (ResourceLogs, 1) => Resource,
            (ResourceLogs, 2) => ScopeLogs,
            (Resource, 1) => KeyValue,
            (ScopeLogs, 1) => Scope,
            (ScopeLogs, 2) => LogRecord,
            (Scope, 3) => KeyValue,
            (LogRecord, 5) => AnyValue,
            (LogRecord, 6) => KeyValue,
            (KeyValue, 2) => AnyValue,
            (AnyValue, 5) => ArrayValue,
            (AnyValue, 6) => KeyValueList,
            (ArrayValue, 1) => AnyValue,
            (KeyValueList, 1) => KeyValue,
            _ => return None,
        })
    }
}

/// How deep the walk follows nested values: prost stops decoding at 100 levels of messages.
const DEPTH: usize = 100;

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Counts the items of a protobuf `ExportLogsServiceRequest`, refusing past `limit`. A body
/// that is not well-formed protobuf is left to the decoder, which says why. A body cut short
/// (the part of a gzip body inflated so far) is counted as far as it goes: a message whose
/// length runs past the end is walked to the end.
pub(crate) fn protobuf(bytes: &[u8], limit: usize) -> Result<usize, Over> {
    let mut items = 0;
    walk(bytes, Msg::Request, 0, &mut items, limit)?;
    Ok(items)
}

fn walk(b: &[u8], msg: Msg, depth: usize, items: &mut usize, limit: usize) -> Result<(), Over> {
    let mut i = 0;
    while i < b.len() {
        let Some(tag) = varint(b, &mut i) else {
            return Ok(());
        };
        let end = match tag & 7 {
            0 => match varint(b, &mut i) {
                Some(_) => i,
                None => return Ok(()),
            },
            1 => i + 8,
            5 => i + 4,
            2 => match varint(b, &mut i).and_then(|n| usize::try_from(n).ok()) {
                Some(n) => i + n.min(b.len() - i),
                None => return Ok(()),
            },
            _ => return Ok(()),
        };
        if end > b.len() {
            return Ok(());
        }
        if tag & 7 == 2
            && let Some(child) = msg.child(tag >> 3)
        {
            *items += 1;
            if *items > limit || depth >= DEPTH {
                return Err(Over);
            }
            walk(&b[i..end], child, depth + 1, items, limit)?;
        }
        i = end;
    }
    Ok(())
}

/// Counts the objects of a JSON body, refusing past `limit`. A body that is not JSON is left to
/// the decoder, which says where it broke.
pub(crate) fn json(bytes: &[u8], limit: usize) -> Result<usize, Over> {
    let mut items = 0;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match (Count {
        items: &mut items,
        limit,
    })
    .deserialize(&mut de)
    {
        Ok(()) => Ok(items),
        Err(_) if items > limit => Err(Over),
        Err(_) => Ok(items),
    }
}

/// A visitor that keeps nothing and counts objects.
struct Count<'a> {
    items: &'a mut usize,
    limit: usize,
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        *self.items += 1;
        if *self.items > self.limit {
            return Err(serde::de::Error::custom("over the bound"));
        }
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Count {
                items: &mut *self.items,
                limit: self.limit,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Count {
                items: &mut *self.items,
                limit: self.limit,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    use prost::Message;

    use super::*;

    fn request(records: usize, attributes: usize) -> ExportLogsServiceRequest {
        let kv = |i: usize| KeyValue {
            key: format!("k{i}"),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(i as i64)),
            }),
            ..KeyValue::default()
        };
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: (0..records)
                        .map(|_| LogRecord {
                            attributes: (0..attributes).map(kv).collect(),
                            ..LogRecord::default()
                        })
                        .collect(),
                    ..ScopeLogs::default()
                }],
                ..ResourceLogs::default()
            }],
        }
    }

    /// Each record, attribute and value is one item, in either encoding: one resource, one
    /// scope, then per record 1 + 2 per attribute (its pair and its value).
    #[test]
    fn both_encodings_count_records_and_values() {
        for (records, attributes) in [(0, 0), (1, 0), (3, 2), (50, 7)] {
            let req = request(records, attributes);
            let want = 2 + records * (1 + 2 * attributes);
            assert_eq!(protobuf(&req.encode_to_vec(), usize::MAX), Ok(want));
            let text = serde_json::to_vec(&req).unwrap();
            // JSON has the request itself as an object too.
            assert_eq!(json(&text, usize::MAX), Ok(want + 1));
        }
    }

    #[test]
    fn empty_records_count_and_the_bound_refuses_early() {
        let req = request(100_000, 0);
        let pb = req.encode_to_vec();
        assert!(pb.len() < 100_000 * 2 + 16, "two bytes an empty record");
        assert_eq!(protobuf(&pb, 1_000), Err(Over));
        assert_eq!(protobuf(&pb, 100_002), Ok(100_002));
        let text = serde_json::to_vec(&req).unwrap();
        assert_eq!(json(&text, 1_000), Err(Over));
    }

    /// What is not well-formed is left to the decoder, to say why.
    #[test]
    fn malformed_bodies_are_the_decoders_to_refuse() {
        assert_eq!(protobuf(b"\xff\xff\xff", 10), Ok(0));
        // Cut short: counted as far as it goes (a resource's logs, begun).
        assert_eq!(protobuf(b"\x0a\x05ab", 10), Ok(1));
        assert_eq!(json(b"{\"resourceLogs\":[", 10), Ok(1));
        assert_eq!(json(b"not json", 10), Ok(0));
    }

    /// The part of a body inflated so far counts what it holds, so that a bomb is refused
    /// before the rest of it is inflated.
    #[test]
    fn a_body_cut_short_counts_what_it_holds() {
        let pb = request(10_000, 1).encode_to_vec();
        let half = protobuf(&pb[..pb.len() / 2], usize::MAX).unwrap();
        assert!((14_000..=16_000).contains(&half), "{half}");
        assert_eq!(protobuf(&pb[..pb.len() / 2], 1_000), Err(Over));
        let text = serde_json::to_vec(&request(10_000, 1)).unwrap();
        assert_eq!(json(&text[..text.len() / 2], 1_000), Err(Over));
    }

    #[test]
    fn nesting_past_the_decoders_depth_is_refused() {
        // AnyValue{array_value: ArrayValue{values: [AnyValue{…}]}}, 200 deep, in a record's body.
        let body = agent_fold_testkit::protobuf::nested_body(200);
        assert_eq!(protobuf(&body, usize::MAX), Err(Over));
    }
}
