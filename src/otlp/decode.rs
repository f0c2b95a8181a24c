//! An OTLP/HTTP logs request's body: its content type (`application/x-protobuf`, or
//! `application/json` in OTLP's JSON encoding), its encoding (`gzip` or none), both within
//! bounds, decoded by the OpenTelemetry project's own types (`opentelemetry-proto`).
//!
//! What holds: a body over [`Limits::body`] is refused before it is read whole; a gzip body is
//! inflated at most one byte past [`Limits::inflated`], so a gzip bomb costs at most the bound;
//! a body labelled gzip that is not gzip (no gzip header, truncated, junk after it) is a 400; a
//! body that holds more than [`Limits::items`] records and values is refused before it is
//! decoded ([`super::tally`]), so what decoding builds is bounded too.

use std::io::Read;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message;

/// The two encodings OTLP/HTTP carries; the answer goes back in the request's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Protobuf,
    Json,
}

/// How large a body may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// As it arrives (compressed, when it is).
    pub body: usize,
    /// Inflated.
    pub inflated: usize,
    /// Records and values (attributes, bodies, their nested arrays and maps), each one.
    pub items: usize,
}

impl Limits {
    /// The collector's defaults (`--max-body`, `--max-inflated`, `--max-items`), and
    /// `serve --otlp`'s: a request holds at most 32 MiB inflated and 200,000 records and values,
    /// what decoding builds of it some 40 MB (docs/collect.md).
    pub(crate) const DEFAULT: Limits = Limits {
        body: 8 << 20,
        inflated: 32 << 20,
        items: 200_000,
    };
}

/// Why a body is refused: each maps to the HTTP status OTLP's clients understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("the body is over {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the gzip body inflates past {limit} bytes")]
    Inflates { limit: usize },
    #[error("the gzip body does not inflate: {0}")]
    Gzip(String),
    #[error("the body holds more than {limit} records and values (--max-items)")]
    TooMany { limit: usize },
    #[error("content type {0:?} is neither application/x-protobuf nor application/json")]
    ContentType(String),
    #[error("content encoding {0:?} is neither gzip nor identity")]
    ContentEncoding(String),
    #[error("the body is not an ExportLogsServiceRequest: {0}")]
    Decode(String),
}

impl BodyError {
    /// 413 for a body too large, 415 for a type or encoding not served, 400 for one that does
    /// not read (OTLP: not retried).
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } | BodyError::Inflates { .. } | BodyError::TooMany { .. } => {
                413
            }
            BodyError::ContentType(_) | BodyError::ContentEncoding(_) => 415,
            BodyError::Gzip(_) | BodyError::Decode(_) => 400,
        }
    }
}

/// The encoding a `Content-Type` names (parameters such as `charset` aside).
pub(crate) fn encoding(content_type: Option<&str>) -> Result<Encoding, BodyError> {
    let ct = content_type.unwrap_or("");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(BodyError::ContentType(ct.to_owned())),
    }
}

/// Whether a `Content-Encoding` is gzip (`None`: identity).
pub(crate) fn gzipped(content_encoding: Option<&str>) -> Result<bool, BodyError> {
    match content_encoding
        .map(|e| e.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") | Some("identity") => Ok(false),
        Some("gzip") | Some("x-gzip") => Ok(true),
        Some(other) => Err(BodyError::ContentEncoding(other.to_owned())),
    }
}

/// Inflates a gzip body within the bound. Its trailer's size is not trusted either way: a body
/// that is not gzip, or is cut short, would read as one too large (a 413 where it is a 400).
/// What it holds is counted as it inflates, at every doubling of what has come (1 MiB, 2 MiB,
/// …): a small body of many records is refused having inflated a few MiB, not its bound.
fn inflate(body: &[u8], limits: Limits, encoding: Encoding) -> Result<Vec<u8>, BodyError> {
    if !body.starts_with(&[0x1f, 0x8b]) {
        return Err(BodyError::Gzip("no gzip header".into()));
    }
    let limit = limits.inflated;
    let mut out = Vec::with_capacity(limit.min(body.len() * 4));
    let mut gz = flate2::read::MultiGzDecoder::new(body).take(limit as u64 + 1);
    let mut check = 1 << 20;
    loop {
        let want = (check - out.len()).max(1);
        let n = (&mut gz)
            .take(want as u64)
            .read_to_end(&mut out)
            .map_err(|e| BodyError::Gzip(e.to_string()))?;
        if out.len() > limit {
            return Err(BodyError::Inflates { limit });
        }
        if n == 0 {
            return Ok(out);
        }
        if out.len() >= check {
            tally(encoding, &out, limits.items)?;
            check = check.saturating_mul(2);
        }
    }
}

/// [`super::tally`]'s count of a body, or its refusal.
fn tally(encoding: Encoding, bytes: &[u8], items: usize) -> Result<usize, BodyError> {
    let counted = match encoding {
        Encoding::Protobuf => super::tally::protobuf(bytes, items),
        Encoding::Json => super::tally::json(bytes, items),
    };
    counted.map_err(|_| BodyError::TooMany { limit: items })
}

/// Decodes a body read whole (its length already within [`Limits::body`]).
pub(crate) fn decode(
    encoding: Encoding,
    gzip: bool,
    body: &[u8],
    limits: Limits,
) -> Result<ExportLogsServiceRequest, BodyError> {
    if body.len() > limits.body {
        return Err(BodyError::TooLarge { limit: limits.body });
    }
    let inflated;
    let bytes = if gzip {
        inflated = inflate(body, limits, encoding)?;
        &inflated[..]
    } else {
        body
    };
    if bytes.len() > limits.inflated {
        return Err(BodyError::TooLarge {
            limit: limits.inflated,
        });
    }
    tally(encoding, bytes, limits.items)?;
    match encoding {
        Encoding::Protobuf => {
            ExportLogsServiceRequest::decode(bytes).map_err(|e| BodyError::Decode(e.to_string()))
        }
        Encoding::Json => {
            // proto3's JSON doubles ("NaN", "Infinity", a number as a string) as the protobuf
            // path reads them.
            let rewritten = super::doubles::rewrite(bytes);
            serde_json::from_slice(rewritten.as_deref().unwrap_or(bytes))
                .map_err(|e| BodyError::Decode(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const LIMITS: Limits = Limits {
        body: 1 << 20,
        inflated: 4 << 20,
        items: 100_000,
    };

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn types_and_encodings_are_told_or_refused() {
        assert_eq!(
            encoding(Some("application/x-protobuf")),
            Ok(Encoding::Protobuf)
        );
        assert_eq!(
            encoding(Some("Application/JSON; charset=utf-8")),
            Ok(Encoding::Json)
        );
        assert_eq!(encoding(Some("text/plain")).unwrap_err().status(), 415);
        assert_eq!(encoding(None).unwrap_err().status(), 415);
        assert_eq!(gzipped(Some("gzip")), Ok(true));
        assert_eq!(gzipped(None), Ok(false));
        assert_eq!(gzipped(Some("br")).unwrap_err().status(), 415);
    }

    #[test]
    fn json_and_protobuf_bodies_decode_gzipped_or_not() {
        let json = br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1700000000000000000","attributes":[{"key":"n","value":{"intValue":"5"}}]}]}]}]}"#;
        let req = decode(Encoding::Json, false, json, LIMITS).unwrap();
        let again = decode(Encoding::Json, true, &gzip(json), LIMITS).unwrap();
        assert_eq!(req, again);
        let pb = req.encode_to_vec();
        assert_eq!(
            decode(Encoding::Protobuf, true, &gzip(&pb), LIMITS).unwrap(),
            req
        );
        let e = decode(Encoding::Json, false, b"{\"resourceLogs\":[", LIMITS).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e.to_string().contains("line 1"), "where it broke: {e}");
        assert_eq!(
            decode(Encoding::Protobuf, false, b"\xff\xff\xff", LIMITS)
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(
            decode(Encoding::Json, true, b"not gzip", LIMITS)
                .unwrap_err()
                .status(),
            400
        );
    }

    /// A bomb: 64 MiB of zeros in ~64 KiB. Inflating stops one byte past the bound, whatever
    /// its trailer says.
    #[test]
    fn a_gzip_bomb_is_refused_once_it_inflates_past_the_bound() {
        let bomb = gzip(&vec![0; 64 << 20]);
        assert!(bomb.len() < 128 << 10);
        let e = decode(Encoding::Json, true, &bomb, LIMITS).unwrap_err();
        assert_eq!(
            (e.status(), e),
            (413, BodyError::Inflates { limit: 4 << 20 })
        );
        let mut forged = bomb.clone();
        let n = forged.len();
        forged[n - 4..].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            inflate(&forged, LIMITS, Encoding::Json),
            Err(BodyError::Inflates { limit: 4 << 20 })
        );
        let big = vec![b' '; (1 << 20) + 1];
        assert_eq!(
            decode(Encoding::Json, false, &big, LIMITS)
                .unwrap_err()
                .status(),
            413
        );
    }

    /// A body labelled gzip that is not gzip, is cut short or has junk after it does not
    /// read: 400, whatever its last four bytes would say as a gzip trailer.
    #[test]
    fn a_body_that_is_not_what_its_encoding_says_is_a_400() {
        let json = br#"{"resourceLogs":[]}"#;
        let good = gzip(json);
        let mut big_trailer = b"not gzip at all, twenty bytes".to_vec();
        big_trailer.extend_from_slice(&u32::MAX.to_le_bytes());
        let mut junk = good.clone();
        junk.extend_from_slice(b"junk after the stream");
        for body in [big_trailer, good[..good.len() - 6].to_vec(), junk] {
            let e = decode(Encoding::Json, true, &body, LIMITS).unwrap_err();
            assert_eq!(e.status(), 400, "{e}");
        }
        assert!(decode(Encoding::Json, true, &good, LIMITS).is_ok());
    }

    /// Empty records cost: a small body of many is refused before it is decoded.
    #[test]
    fn many_records_in_a_small_body_are_refused_before_decoding() {
        let pb = agent_fold_testkit::protobuf::empty_records(200_000);
        let g = gzip(&pb);
        assert!(g.len() < 4 << 10, "{} bytes", g.len());
        let e = decode(Encoding::Protobuf, true, &g, LIMITS).unwrap_err();
        assert_eq!(
            (e.status(), e),
            (413, BodyError::TooMany { limit: 100_000 })
        );
    }
}
