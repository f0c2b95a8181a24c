//! OTLP/HTTP logs in (`POST /v1/logs`): what `agent-fold collect` and `agent-fold serve --otlp`
//! share. Each agent event becomes one record keyed by its session ([`record`]), written to a
//! [`EventSink`] — a file, a Fluvio topic, the board — before OTLP success is answered (at least
//! once: an exporter that sees no success sends again).
//!
//! What holds, as a network service: a body is bounded as it arrives and inflated, and what it
//! holds is counted before it is decoded ([`decode`], [`tally`]); a bearer token is checked
//! before the body is read; a body is read whole before it takes a decoding slot, within a
//! share of [`Receiver::reading`]'s byte budget and a deadline its size sets ([`body_time`]),
//! so a slow sender holds only its own connection and is cut with 408; at most
//! [`Receiver::slots`] requests are decoded at once, the rest wait [`SLOT_WAIT`] and are then
//! told 503 with `Retry-After`; every refusal has OTLP's status (400 not retried, 408, 413,
//! 415, 401, 503 retried) and a `google.rpc.Status` body in the request's encoding; a request
//! in flight when the process stops is finished ([`Receiver::drain`]) or answered 503, never
//! 500; what a request
//! carries that is no agent event is counted and named in OTLP's partial-success answer; a
//! request sent again (an exporter that lost the answer resends the batch) is answered and not
//! written twice.

pub(crate) mod decode;
mod doubles;
pub(crate) mod otel_log;
pub(crate) mod tally;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message;

use anyhow::{Context, Result, bail};

use crate::record::Rec;
use crate::service::metrics::{Kind, Text};
use decode::{BodyError, Encoding, Limits};
use otel_log::{Refused, Resource};

/// How long a request waits for a slot before it is told to come back.
pub(crate) const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How long a stopping process finishes the requests in flight, at the most.
pub(crate) const DRAIN: Duration = Duration::from_secs(10);
/// How long a request's body may take to arrive once its head has, at the most.
pub(crate) const BODY_TIME: Duration = Duration::from_secs(30);
/// The slowest a body may arrive, after [`BODY_GRACE`]: a sender below it is cut (408).
pub(crate) const BODY_RATE: u64 = 32 << 10;
/// What every body is given before the rate counts.
pub(crate) const BODY_GRACE: Duration = Duration::from_secs(2);
/// Bodies being read hold at most this many times what the decoding slots hold.
pub(crate) const READING_SHARE: usize = 4;

/// How long a body of `bytes` may take to arrive: [`BODY_GRACE`], then [`BODY_RATE`], at most
/// [`BODY_TIME`].
pub(crate) fn body_time(bytes: usize) -> Duration {
    (BODY_GRACE + Duration::from_millis(bytes as u64 * 1000 / BODY_RATE)).min(BODY_TIME)
}

/// Where the records go. `write` returns once they are stored (a file flushed, a topic's
/// acknowledgement); an error is answered 503, so the exporter sends them again.
pub(crate) trait EventSink: Send + Sync + 'static {
    fn write(&self, records: Vec<Rec>) -> Written<'_>;
}

/// What [`EventSink::write`] returns: a future that settles once the records are stored, or fail.
pub(crate) type Written<'a> = Pin<Box<dyn Future<Output = Result<(), NotStored>> + Send + 'a>>;

/// Why a sink did not store a request's records (answered 503, so the exporter sends them
/// again), in the words of what failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotStored {
    /// The file or stdout `collect` writes to.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The Fluvio producer, as its error words it.
    #[error("{0}")]
    Cluster(String),
    #[error("no acknowledgement from the cluster within 30 s")]
    NoAck,
    /// `serve --otlp`: the thread that runs the module over the events ended.
    #[error("the board's module is gone")]
    BoardGone,
    /// `serve --otlp`: the module refused the batch.
    #[error("the module failed: {0}")]
    Module(String),
}

impl NotStored {
    /// A producer's error, as it words it.
    pub(crate) fn cluster(e: impl std::fmt::Display) -> NotStored {
        NotStored::Cluster(e.to_string())
    }
}

/// `google.rpc.Status`, the body of an OTLP failure (not part of `opentelemetry-proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// What the receiver has done, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests answered, by status: 200, 400, 401, 413, 415, 503, other.
    pub answered: [AtomicU64; 7],
    /// Events written to the sink.
    pub written: AtomicU64,
    /// Events refused, by [`Refused::ALL`]'s order.
    pub refused: [AtomicU64; 3],
    /// Body bytes received (as they arrived).
    pub bytes: AtomicU64,
    /// Requests being handled now.
    pub in_flight: AtomicU64,
    /// Writes the sink failed.
    pub sink_failures: AtomicU64,
    /// Requests that repeated one already written (an exporter sending again a batch whose
    /// answer it lost): answered 200, written once.
    pub repeated: AtomicU64,
}

impl Counters {
    /// The statuses counted, in `Counters::answered`'s order.
    pub(crate) const STATUSES: [&'static str; 7] =
        ["200", "400", "401", "413", "415", "503", "other"];

    fn answered(&self, status: StatusCode) {
        let i = match status.as_u16() {
            200 => 0,
            400 => 1,
            401 => 2,
            413 => 3,
            415 => 4,
            503 => 5,
            _ => 6,
        };
        self.answered[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// How many written requests are remembered to tell a repeat.
pub(crate) const RECENT: usize = 4096;

/// The fingerprints of the last [`RECENT`] requests written, oldest first.
#[derive(Default)]
struct Recent {
    set: std::collections::HashSet<u64>,
    order: std::collections::VecDeque<u64>,
}

impl Recent {
    fn remember(&mut self, print: u64) {
        if self.set.insert(print) {
            self.order.push_back(print);
            if self.order.len() > RECENT {
                let old = self.order.pop_front().expect("longer than the bound");
                self.set.remove(&old);
            }
        }
    }
}

/// A request's fingerprint: its body as sent, and how it is encoded.
fn fingerprint(encoding: Encoding, gzip: bool, body: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (encoding == Encoding::Json, gzip, body).hash(&mut h);
    h.finish()
}

/// The receiver's state: the sink, the token, the bounds.
pub(crate) struct Receiver {
    pub sink: Arc<dyn EventSink>,
    /// The bearer token every request must carry, when one is set; the file it was read from,
    /// read again on [`Receiver::reload_token`] (SIGHUP).
    token: std::sync::RwLock<Option<String>>,
    token_file: Option<std::path::PathBuf>,
    pub limits: Limits,
    /// Requests decoded at once at most.
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The bytes bodies being read may hold at once (a body takes its declared length, or the
    /// body limit when it declares none): [`READING_SHARE`] × slots × the body limit.
    pub reading: Arc<tokio::sync::Semaphore>,
    pub counters: Arc<Counters>,
    /// What was written lately: a request sent again is not written twice (OTLP clients
    /// resend a batch whose answer they did not get; each event stays at least once, and a
    /// repeat within the last [`RECENT`] requests is not a second time).
    recent: std::sync::Mutex<Recent>,
}

impl Receiver {
    pub(crate) fn new(
        sink: Arc<dyn EventSink>,
        token: Token,
        limits: Limits,
        slots: usize,
    ) -> Receiver {
        let slots = slots.max(1);
        let budget = READING_SHARE
            .saturating_mul(slots)
            .saturating_mul(limits.body)
            .min(u32::MAX as usize);
        Receiver {
            sink,
            token: std::sync::RwLock::new(token.token),
            token_file: token.file,
            limits,
            slots: Arc::new(tokio::sync::Semaphore::new(slots)),
            reading: Arc::new(tokio::sync::Semaphore::new(budget)),
            counters: Arc::default(),
            recent: std::sync::Mutex::default(),
        }
    }

    /// The token requests must carry now.
    pub(crate) fn token(&self) -> Option<String> {
        self.token.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads the token file again on SIGHUP (a rotated token takes effect without a restart),
    /// and says so. A file that no longer holds one token keeps the token there was, and says
    /// why.
    pub(crate) fn reload_token(&self) {
        let Some(file) = &self.token_file else {
            return;
        };
        match read_token(file) {
            Ok(token) => {
                *self.token.write().unwrap_or_else(|e| e.into_inner()) = Some(token);
                tracing::info!("SIGHUP: the token file was read again");
            }
            Err(e) => tracing::warn!("SIGHUP: {e:#}; the token stays as it was"),
        }
    }

    /// Whether these headers carry the token (always, when none is set).
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        match self.token() {
            Some(token) => authorized(headers, &token),
            None => true,
        }
    }

    /// Waits until no request is in flight, or [`DRAIN`] has passed (then says how many were):
    /// what a stopping process does before it lets its connections go.
    pub(crate) async fn drain(&self) {
        let until = tokio::time::Instant::now() + DRAIN;
        loop {
            let n = self.counters.in_flight.load(Ordering::Relaxed);
            if n == 0 {
                return;
            }
            if tokio::time::Instant::now() >= until {
                tracing::warn!("stopping with {n} requests in flight");
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A receiver's token: none (loopback), or the one its file holds, read again on SIGHUP.
#[derive(Debug, Clone, Default)]
pub(crate) struct Token {
    pub token: Option<String>,
    pub file: Option<std::path::PathBuf>,
}

/// `POST /v1/logs`, on a router of its own (merged into `collect`'s and `serve`'s).
pub(crate) fn router(receiver: Arc<Receiver>) -> Router {
    Router::new()
        .route("/v1/logs", post(logs))
        .with_state(receiver)
}

/// A failure in OTLP's shape: the status, a `google.rpc.Status` in the request's encoding
/// (JSON when the request's was not told), `Retry-After` on a 503.
fn failure(encoding: Option<Encoding>, status: StatusCode, message: &str) -> Response {
    // gRPC's codes for the HTTP statuses (google.rpc.Code).
    let code = match status.as_u16() {
        400 => 3,
        401 => 16,
        413 => 8,
        415 => 3,
        503 => 14,
        _ => 2,
    };
    let rpc = RpcStatus {
        code,
        message: message.to_owned(),
    };
    let mut res = match encoding {
        Some(Encoding::Protobuf) => (
            status,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            rpc.encode_to_vec(),
        )
            .into_response(),
        _ => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({"code": code, "message": message}).to_string(),
        )
            .into_response(),
    };
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    }
    if status == StatusCode::UNAUTHORIZED {
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    res
}

/// Success, with OTLP's partial-success answer when some events were refused.
fn success(encoding: Encoding, rejected: i64, message: String) -> Response {
    match encoding {
        Encoding::Protobuf => {
            let body = ExportLogsServiceResponse {
                partial_success: (rejected > 0).then_some(ExportLogsPartialSuccess {
                    rejected_log_records: rejected,
                    error_message: message,
                }),
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/x-protobuf")],
                body.encode_to_vec(),
            )
                .into_response()
        }
        Encoding::Json => {
            // Written here: the crate's own serialisation says `"partialSuccess": null`.
            let body = if rejected > 0 {
                serde_json::json!({"partialSuccess": {
                    "rejectedLogRecords": rejected.to_string(), "errorMessage": message}})
            } else {
                serde_json::json!({})
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    }
}

/// Whether the request carries the token, compared in constant time.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The records of a request, and how many events it refused (by reason) and why.
pub(crate) fn records(req: &ExportLogsServiceRequest) -> (Vec<Rec>, [u64; 3]) {
    let mut out = Vec::new();
    let mut refused = [0u64; 3];
    for rl in &req.resource_logs {
        let kvs = rl.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let res = Resource::new(kvs);
        for sl in &rl.scope_logs {
            for lr in &sl.log_records {
                match otel_log::record(&res, lr) {
                    Ok(r) => out.push(r),
                    Err(why) => {
                        let i = Refused::ALL.iter().position(|r| *r == why).expect("listed");
                        refused[i] += 1;
                    }
                }
            }
        }
    }
    (out, refused)
}

async fn logs(State(rx): State<Arc<Receiver>>, headers: HeaderMap, body: Body) -> Response {
    rx.counters.in_flight.fetch_add(1, Ordering::Relaxed);
    let res = handle(&rx, &headers, body).await;
    rx.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
    rx.counters.answered(res.status());
    res
}

async fn handle(rx: &Receiver, headers: &HeaderMap, body: Body) -> Response {
    let header_str = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok());
    // The encoding first, so that every later refusal is in it.
    let encoding = match decode::encoding(header_str(header::CONTENT_TYPE)) {
        Ok(e) => e,
        Err(e) => return failure(None, StatusCode::UNSUPPORTED_MEDIA_TYPE, &e.to_string()),
    };
    let fail = |status: StatusCode, why: &str| failure(Some(encoding), status, why);
    if !rx.authorized(headers) {
        return fail(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (Authorization: Bearer …, as --token-file holds it)",
        );
    }
    let gzip = match decode::gzipped(header_str(header::CONTENT_ENCODING)) {
        Ok(g) => g,
        Err(e) => return fail(StatusCode::UNSUPPORTED_MEDIA_TYPE, &e.to_string()),
    };
    let declared = header_str(header::CONTENT_LENGTH).and_then(|n| n.parse::<usize>().ok());
    if declared.is_some_and(|n| n > rx.limits.body) {
        let e = BodyError::TooLarge {
            limit: rx.limits.body,
        };
        return fail(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string());
    }
    // The body is read before a decoding slot is taken: a slow sender holds its own
    // connection and its share of the reading budget, no slot.
    let need = declared.unwrap_or(rx.limits.body).max(1);
    let Ok(Ok(reading)) =
        tokio::time::timeout(SLOT_WAIT, rx.reading.acquire_many(need as u32)).await
    else {
        return fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "the receiver is reading as many bodies as it holds: send again later",
        );
    };
    let within = body_time(need);
    let bytes = match tokio::time::timeout(within, axum::body::to_bytes(body, rx.limits.body)).await
    {
        Err(_) => {
            return fail(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the body did not arrive within {:.1}s ({} KiB/s after {}s)",
                    within.as_secs_f64(),
                    BODY_RATE >> 10,
                    BODY_GRACE.as_secs()
                ),
            );
        }
        // Past the bound as it arrives (no Content-Length, or one that lied): 413. Any other
        // failure is the body's framing (a chunk size that does not read, a connection cut
        // mid-body): a bad request, 400.
        Ok(Err(e)) => {
            let e = e.into_inner();
            if e.is::<http_body_util::LengthLimitError>() {
                let e = BodyError::TooLarge {
                    limit: rx.limits.body,
                };
                return fail(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string());
            }
            return fail(
                StatusCode::BAD_REQUEST,
                &format!("the body did not read: {e}"),
            );
        }
        Ok(Ok(b)) => b,
    };
    rx.counters
        .bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    // A slot bounds what is decoded at once: inflated bodies, decoded requests.
    let Ok(Ok(_slot)) = tokio::time::timeout(SLOT_WAIT, rx.slots.acquire()).await else {
        return fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "the receiver is busy: send again later",
        );
    };
    drop(reading);
    let print = fingerprint(encoding, gzip, &bytes);
    // Inflating and decoding are CPU work: off the runtime's threads.
    let limits = rx.limits;
    let large = bytes.len() > 1 << 20 || (gzip && bytes.len() > 64 << 10);
    let decoded = tokio::task::spawn_blocking(move || {
        decode::decode(encoding, gzip, &bytes, limits).map(|req| records(&req))
    })
    .await;
    let answer = write(rx, decoded, encoding, print).await;
    if large {
        tokio::task::spawn_blocking(give_back);
    }
    answer
}

/// What a request decoded to: its records and how many events it refused, by reason; or why it
/// did not decode; or the decoding task did not finish.
type Decoded = Result<Result<(Vec<Rec>, [u64; 3]), BodyError>, tokio::task::JoinError>;

/// Writes what a request decoded to, and answers it.
async fn write(rx: &Receiver, decoded: Decoded, encoding: Encoding, print: u64) -> Response {
    let fail = |status: StatusCode, why: &str| failure(Some(encoding), status, why);
    let seen = |rx: &Receiver| {
        rx.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .contains(&print)
    };
    let (records, refused) = match decoded {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let status = StatusCode::from_u16(e.status()).expect("a status");
            return fail(status, &e.to_string());
        }
        // The decoding task did not finish (the process is stopping): a retryable answer,
        // so that the exporter sends the batch again.
        Err(e) => {
            return fail(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("decoding did not finish ({e}): send again"),
            );
        }
    };
    let n = records.len() as u64;
    // A repeat of a request written lately: its events are stored already.
    let repeat = seen(rx);
    if repeat {
        rx.counters.repeated.fetch_add(1, Ordering::Relaxed);
    }
    if !repeat
        && !records.is_empty()
        && let Err(e) = rx.sink.write(records).await
    {
        rx.counters.sink_failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("writing {n} events failed: {e}");
        return fail(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the events could not be stored: {e}"),
        );
    }
    if !repeat {
        rx.counters.written.fetch_add(n, Ordering::Relaxed);
        for (i, k) in refused.iter().enumerate() {
            rx.counters.refused[i].fetch_add(*k, Ordering::Relaxed);
        }
        rx.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remember(print);
    }
    let rejected: u64 = refused.iter().sum();
    let why: Vec<String> = Refused::ALL
        .iter()
        .zip(refused)
        .filter(|(_, k)| *k > 0)
        .map(|(r, k)| format!("{k} with {r}"))
        .collect();
    success(encoding, rejected as i64, why.join("; "))
}

/// Hands the heap's free pages back to the system after a large request: glibc keeps what a
/// decoded request freed in its arenas, so a process that once decoded 70 MB would stay that
/// size.
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer; it walks glibc's own arenas under their locks and
    // releases only pages no allocation holds.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The token a `--token-file` holds: its text, trimmed; an empty file is refused.
pub(crate) fn read_token(path: &std::path::Path) -> Result<String> {
    // A regular file of a few KiB: a FIFO or a device named here (at the start, or on a
    // SIGHUP) would hang the reader or fill its memory.
    const MOST: u64 = 4 << 10;
    let (file, len) = crate::logs::open_regular(path).context("reading the token file")?;
    if len > MOST {
        bail!(
            "the token file {} holds {len} bytes: a token is a line of at most {MOST}",
            path.display()
        );
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MOST), &mut text)
        .with_context(|| format!("reading the token file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        bail!(
            "the token file {} must hold one token (no spaces), and holds {}",
            path.display(),
            if token.is_empty() {
                "nothing"
            } else {
                "several words"
            }
        );
    }
    Ok(token.to_owned())
}

/// The token a listener needs: required beyond loopback, optional on it.
pub(crate) fn token_for(listen: SocketAddr, file: Option<&std::path::Path>) -> Result<Token> {
    match file {
        Some(f) => Ok(Token {
            token: Some(read_token(f)?),
            file: Some(f.to_owned()),
        }),
        None if !listen.ip().is_loopback() => bail!(
            "{listen} is beyond loopback: anyone who reaches it could write events, so give \
             --token-file FILE (exporters send it as OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer …\")"
        ),
        None => Ok(Token::default()),
    }
}

/// The receiver's metrics as Prometheus text.
pub(crate) fn metrics_text(t: &mut Text, prefix: &str, c: &Counters) {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    t.labelled(
        (&format!("{prefix}_otlp_requests_total"), Kind::Counter),
        "OTLP requests answered, by HTTP status.",
        "status",
        Counters::STATUSES
            .iter()
            .copied()
            .zip(c.answered.iter().map(load)),
    );
    t.labelled(
        (
            &format!("{prefix}_otlp_events_refused_total"),
            Kind::Counter,
        ),
        "Log records that were no agent event, by reason (OTLP partial success).",
        "reason",
        Refused::ALL
            .iter()
            .map(|r| r.label())
            .zip(c.refused.iter().map(load)),
    );
    #[rustfmt::skip]
    let singles = [
        ("otlp_events_written_total", Kind::Counter, "Agent events written to the sink.", load(&c.written)),
        ("otlp_bytes_total", Kind::Counter, "Request body bytes received, as they arrived.", load(&c.bytes)),
        ("otlp_in_flight", Kind::Gauge, "Requests being handled now.", load(&c.in_flight)),
        ("otlp_sink_failures_total", Kind::Counter, "Writes the sink failed (answered 503: the exporter sends again).", load(&c.sink_failures)),
    ];
    t.ones(prefix, &singles);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_compared_whole() {
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, "s3cret"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cret"),
        );
        assert!(authorized(&h, "s3cret"));
        assert!(!authorized(&h, "s3cre"));
        assert!(!authorized(&h, "s3crets"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic s3cret"),
        );
        assert!(!authorized(&h, "s3cret"));
    }
}
