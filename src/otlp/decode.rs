//! An OTLP/HTTP logs request's body: its content type (`application/x-protobuf`, or
//! `application/json` in OTLP's JSON encoding), its encoding (`gzip` or none), both within
//! bounds, decoded by the OpenTelemetry project's own types (`opentelemetry-proto`).
//!
//! What holds: a body over [`Limits::body`] is refused before it is read whole; a gzip body
//! whose trailer says it inflates past [`Limits::inflated`] is refused before it is inflated,
//! and any other is inflated at most one byte past that bound (a trailer can lie), so a gzip
//! bomb costs at most the bound.

use std::io::Read;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message;

/// The two encodings OTLP/HTTP carries; the answer goes back in the request's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

/// How large a body may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// As it arrives (compressed, when it is).
    pub body: usize,
    /// Inflated.
    pub inflated: usize,
}

/// Why a body is refused: each maps to the HTTP status OTLP's clients understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body is over {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the gzip body inflates past {limit} bytes")]
    Inflates { limit: usize },
    #[error("the gzip body does not inflate: {0}")]
    Gzip(String),
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
    pub fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } | BodyError::Inflates { .. } => 413,
            BodyError::ContentType(_) | BodyError::ContentEncoding(_) => 415,
            BodyError::Gzip(_) | BodyError::Decode(_) => 400,
        }
    }
}

/// The encoding a `Content-Type` names (parameters such as `charset` aside).
pub fn encoding(content_type: Option<&str>) -> Result<Encoding, BodyError> {
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
pub fn gzipped(content_encoding: Option<&str>) -> Result<bool, BodyError> {
    match content_encoding
        .map(|e| e.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") | Some("identity") => Ok(false),
        Some("gzip") | Some("x-gzip") => Ok(true),
        Some(other) => Err(BodyError::ContentEncoding(other.to_owned())),
    }
}

/// Inflates a gzip body within the bound.
fn inflate(body: &[u8], limit: usize) -> Result<Vec<u8>, BodyError> {
    // The trailer's ISIZE is the inflated size mod 2^32: a larger one is refused at once.
    if body.len() >= 18 {
        let n = &body[body.len() - 4..];
        let size = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
        if size > limit {
            return Err(BodyError::Inflates { limit });
        }
    }
    let mut out = Vec::with_capacity(limit.min(body.len() * 4));
    flate2::read::MultiGzDecoder::new(body)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(BodyError::Inflates { limit });
    }
    Ok(out)
}

/// Decodes a body read whole (its length already within [`Limits::body`]).
pub fn decode(
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
        inflated = inflate(body, limits.inflated)?;
        &inflated[..]
    } else {
        body
    };
    if bytes.len() > limits.inflated {
        return Err(BodyError::TooLarge {
            limit: limits.inflated,
        });
    }
    match encoding {
        Encoding::Protobuf => {
            ExportLogsServiceRequest::decode(bytes).map_err(|e| BodyError::Decode(e.to_string()))
        }
        Encoding::Json => {
            serde_json::from_slice(bytes).map_err(|e| BodyError::Decode(e.to_string()))
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

    /// A bomb: 64 MiB of zeros in ~64 KiB. Its trailer tells it at once; with the trailer
    /// forged, inflating stops one byte past the bound.
    #[test]
    fn a_gzip_bomb_is_refused_before_it_is_inflated() {
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
            inflate(&forged, 4 << 20),
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
}
