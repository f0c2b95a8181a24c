//! OTLP/protobuf bodies built field by field, where building them from the OpenTelemetry
//! project's message types would cost what the test is about: millions of empty records in a
//! few megabytes, or nesting deeper than the decoder takes.

use prost::encoding::{WireType, encode_key, encode_varint};

/// Field `number` of a message, length-delimited (a sub-message, bytes, a string): its key, its
/// length, then `inner`.
pub fn delimited(number: u32, inner: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(inner.len() + 16);
    encode_key(number, WireType::LengthDelimited, &mut out);
    encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(inner);
    out
}

/// An `ExportLogsServiceRequest` of `n` empty `LogRecord`s under one resource and one scope:
/// two bytes a record, the smallest body of the most records.
pub fn empty_records(n: usize) -> Vec<u8> {
    // `ScopeLogs.log_records` (field 2) of an empty `LogRecord`, n times.
    let records = delimited(2, &[]).repeat(n);
    // `ExportLogsServiceRequest.resource_logs` (1) › `ResourceLogs.scope_logs` (2).
    delimited(1, &delimited(2, &records))
}

/// A `LogRecord` whose body (field 5) is an `AnyValue` holding an array holding an array …,
/// `depth` deep, in a request of one resource and one scope.
pub fn nested_body(depth: usize) -> Vec<u8> {
    let mut any = Vec::new();
    for _ in 0..depth {
        // `AnyValue.array_value` (5) › `ArrayValue.values` (1).
        any = delimited(5, &delimited(1, &any));
    }
    let record = delimited(5, &any);
    delimited(1, &delimited(2, &delimited(2, &record)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_as_the_wire_format_says() {
        assert_eq!(delimited(1, b"ab"), [0x0a, 2, b'a', b'b']);
        assert_eq!(delimited(5, &[]), [0x2a, 0]);
        let long = delimited(2, &[0; 200]);
        assert_eq!(&long[..3], [0x12, 0xc8, 0x01]);
        assert_eq!(long.len(), 203);
        let body = empty_records(3);
        assert_eq!(body, [0x0a, 8, 0x12, 6, 0x12, 0, 0x12, 0, 0x12, 0]);
        assert_eq!(
            nested_body(1),
            [0x0a, 10, 0x12, 8, 0x12, 6, 0x2a, 4, 0x2a, 2, 0x0a, 0]
        );
    }
}
