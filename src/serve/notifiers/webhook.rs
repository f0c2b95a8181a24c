//! `--alert-webhook URL`: each alert notice POSTed as JSON, off the board's path.
//!
//! What holds: the notices wait in an [`Outbox`] (bounded, merging past the bound, a session's
//! notices in order); each of its [`LANES`] lanes is delivered one POST at a time, a POST
//! carrying up to [`super::outbox::NOTICES_PER_POST`] notices as a JSON array when more than
//! one waits, else the one notice as an object. [`post`] bounds each attempt by [`TIMEOUT`] and
//! tries for as long as the notices wait: a 2xx is delivered; a 408, a 429, a 5xx, a timeout or
//! a connection failure is tried again after a pause that doubles from [`PAUSE`] up to
//! [`MAX_PAUSE`], each drawn at random in its upper half (so that boards restarted together do
//! not knock in step); any other answer is final. A receiver that is down keeps its lane's
//! notices waiting, within the outbox's bound, until it answers (docs/serve.md, "Delivery").
//! `--alertmanager` posts with it too.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::{Method, Request, StatusCode, Uri, header};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::outbox::{Outbox, Outcomes};

/// Lanes, so POSTs at once at most.
pub(crate) const LANES: usize = 4;
/// One attempt's bound, connection and answer included.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);
/// The pause before the second attempt; it doubles up to [`MAX_PAUSE`].
pub(crate) const PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two attempts: a receiver back from an outage hears from each lane
/// within this (and its first answer's time).
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(8);

/// An `http://` URL (TLS is not linked into this binary: send to a local forwarder for an
/// `https://` receiver).
pub(crate) fn url(s: &str) -> Result<Uri, String> {
    let uri: Uri = s.parse().map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(uri),
        Some("https") => Err(format!(
            "{s:?}: https is not supported (no TLS in this binary); POST to an http:// forwarder"
        )),
        _ => Err(format!("{s:?}: give an http://HOST[:PORT]/PATH URL")),
    }
}

/// A client for [`post`].
pub(crate) fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Starts the deliverer on the current runtime: the outbox the board pushes to.
pub(crate) fn start(url: Uri) -> Arc<Outbox> {
    let outbox = Outbox::new("webhook", LANES);
    let client = client();
    for lane in 0..LANES {
        let (outbox, client, url) = (Arc::clone(&outbox), client.clone(), url.clone());
        tokio::spawn(async move {
            loop {
                let batch = outbox.next(lane).await;
                let out = &outbox.outcomes;
                let n = batch.len() as u64;
                // A notice is typed and its record raw JSON text: encoding it cannot fail, and
                // were it to, the notices count as failed rather than the deliverer stopping.
                let body = match &batch[..] {
                    [one] => serde_json::to_vec(one),
                    many => serde_json::to_vec(many),
                };
                let sent = match body {
                    Ok(body) => post(&client, &url, body, out)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("the notices did not encode: {e}")),
                };
                match sent {
                    Ok(()) => out.delivered.fetch_add(n, Ordering::Relaxed),
                    Err(e) => {
                        if let Some(first) = batch.first() {
                            tracing::warn!(session = %first.session, rule = first.rule, notices = n, "the alert webhook refused them: {e}");
                        }
                        out.failed.fetch_add(n, Ordering::Relaxed)
                    }
                };
            }
        });
    }
    outbox
}

pub(crate) type HttpClient =
    Client<hyper_util::client::legacy::connect::HttpConnector, Full<bytes::Bytes>>;

/// Why a POST was given up on: the receiver's final answer.
#[derive(Debug, thiserror::Error)]
#[error("answered {status} (a refusal: not tried again)")]
pub(crate) struct Refused {
    pub status: StatusCode,
}

/// Whether an answer is worth trying again: the receiver was busy (408, 429) or failed (5xx).
pub(crate) fn retried(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The pause after an attempt when the nominal one is `pause`: drawn in `[pause/2, pause]` by a
/// hash keyed afresh each call (std's `RandomState`).
pub(crate) fn jittered(pause: Duration) -> Duration {
    use std::hash::BuildHasher;
    let r = std::hash::RandomState::new().hash_one(pause.as_nanos());
    let half = pause / 2;
    half + Duration::from_nanos(r % (half.as_nanos().max(1) as u64))
}

/// POSTs `body` as JSON to `url` until it is delivered or refused for good (see the module's
/// notes): `Err` only for a final answer.
pub(crate) async fn post(
    client: &HttpClient,
    url: &Uri,
    body: Vec<u8>,
    out: &Outcomes,
) -> Result<(), Refused> {
    let body = bytes::Bytes::from(body);
    let mut pause = PAUSE;
    let mut failures: u64 = 0;
    loop {
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(
                header::USER_AGENT,
                concat!("agent-fold/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body.clone()));
        let why = match req {
            // The URL was checked at the start and the headers are fixed; were the request not
            // to build, that is final, never a panic.
            Err(_) => {
                return Err(Refused {
                    status: StatusCode::BAD_REQUEST,
                });
            }
            Ok(req) => match tokio::time::timeout(TIMEOUT, client.request(req)).await {
                Err(_) => format!("no answer within {}s", TIMEOUT.as_secs()),
                Ok(Err(e)) => format!("{e}"),
                Ok(Ok(res)) => {
                    let status = res.status();
                    if status.is_success() {
                        if failures > 0 {
                            tracing::info!(%url, failures, "the alert receiver answers again");
                        }
                        return Ok(());
                    }
                    if !retried(status) {
                        return Err(Refused { status });
                    }
                    format!("answered {status}")
                }
            },
        };
        failures += 1;
        if failures == 1 {
            tracing::warn!(%url, "the alert receiver failed ({why}): trying again for as long \
                as its notices wait");
        } else {
            tracing::debug!(%url, failures, "the alert receiver failed again: {why}");
        }
        out.retried.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(jittered(pause)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::super::alert::Alert;
    use super::*;

    fn notice(session: &str, seq: u64) -> Alert {
        Alert::firing(session, seq, "{}".into())
    }

    /// Notices that wait go in one POST, as an array in the order they came; one alone goes as
    /// an object; every one is counted delivered.
    #[test]
    fn notices_that_wait_go_together_in_order() {
        let hook = agent_fold_testkit::webhook::Receiver::start(false).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let url: Uri = format!("http://127.0.0.1:{}/hook", hook.port)
                .parse()
                .unwrap();
            let tx = start(url);
            let out = Arc::clone(&tx.outcomes);
            // Queued before the deliverer first runs: they wait together (one session, one
            // lane).
            for seq in 0..10 {
                tx.push(notice("a", seq));
            }
            while out.delivered.load(Ordering::Relaxed) < 10 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tx.push(notice("b", 0));
            while out.delivered.load(Ordering::Relaxed) < 11 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let seqs: Vec<u64> = hook
            .bodies()
            .iter()
            .map(|b| b["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
        assert_eq!(hook.posts(), 2, "ten waited together, one came alone");
    }

    #[test]
    fn only_http_urls_are_taken_and_https_is_refused_in_words() {
        assert!(url("http://127.0.0.1:9000/hook").is_ok());
        assert!(
            url("https://hooks.example/x")
                .unwrap_err()
                .contains("https is not supported")
        );
        assert!(url("ftp://x/y").unwrap_err().contains("http://"));
        assert!(url("not a url").unwrap_err().contains("not a URL"));
    }
}
