//! `--alert-webhook URL`: each alert POSTed as JSON, off the board's path.
//!
//! What holds: the board hands an alert over with `try_send` into a queue of [`QUEUE`] (a full
//! queue drops the alert and counts it: the board never waits); at most [`IN_FLIGHT`] POSTs run
//! at once, each attempt bounded by [`TIMEOUT`], at most [`ATTEMPTS`] attempts an alert with a
//! doubling pause between them. A 2xx is delivered; a 429, a 5xx, a timeout or a connection
//! failure is tried again; any other answer is final.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use axum::http::{Method, Request, StatusCode, Uri, header};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{Semaphore, mpsc};

use super::board::Alert;

/// Alerts waiting for delivery at most.
pub const QUEUE: usize = 1024;
/// POSTs at once at most.
pub const IN_FLIGHT: usize = 4;
/// One attempt's bound, connection and answer included.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per alert at most.
pub const ATTEMPTS: u32 = 3;
/// The pause before the second attempt; it doubles.
const PAUSE: Duration = Duration::from_millis(250);

/// What became of the alerts handed over.
#[derive(Debug, Default)]
pub struct Outcomes {
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
    pub retried: AtomicU64,
}

/// `--alert-webhook`: an `http://` URL (TLS is not linked into this binary: send to a local
/// forwarder for an `https://` receiver).
pub fn url(s: &str) -> Result<Uri, String> {
    let uri: Uri = s.parse().map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(uri),
        Some("https") => Err(format!(
            "{s:?}: https is not supported (no TLS in this binary); POST to an http:// forwarder"
        )),
        _ => Err(format!("{s:?}: give an http://HOST[:PORT]/PATH URL")),
    }
}

/// Starts the deliverer on the current runtime: the queue's sender for the board, and the
/// outcomes for `/metrics`.
pub fn start(url: Uri) -> (mpsc::Sender<Alert>, Arc<Outcomes>) {
    let (tx, mut rx) = mpsc::channel::<Alert>(QUEUE);
    let outcomes = Arc::new(Outcomes::default());
    let out = Arc::clone(&outcomes);
    tokio::spawn(async move {
        let client: Client<_, Full<bytes::Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let slots = Arc::new(Semaphore::new(IN_FLIGHT));
        while let Some(alert) = rx.recv().await {
            let permit = Arc::clone(&slots)
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            let (client, url, out) = (client.clone(), url.clone(), Arc::clone(&out));
            tokio::spawn(async move {
                let body = serde_json::to_vec(&alert).expect("an alert serialises");
                match deliver(&client, &url, body, &out).await {
                    Ok(()) => out.delivered.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        tracing::warn!(session = %alert.session, rule = alert.rule, "the alert webhook failed: {e:#}");
                        out.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
                drop(permit);
            });
        }
    });
    (tx, outcomes)
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<bytes::Bytes>>;

async fn deliver(client: &HttpClient, url: &Uri, body: Vec<u8>, out: &Outcomes) -> Result<()> {
    let body = bytes::Bytes::from(body);
    let mut pause = PAUSE;
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        if attempt > 1 {
            out.retried.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(
                header::USER_AGENT,
                concat!("agent-fold/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body.clone()))?;
        match tokio::time::timeout(TIMEOUT, client.request(req)).await {
            Err(_) => last = format!("no answer within {}s", TIMEOUT.as_secs()),
            Ok(Err(e)) => last = format!("{e}"),
            Ok(Ok(res)) => {
                let status = res.status();
                if status.is_success() {
                    return Ok(());
                }
                last = format!("answered {status}");
                if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
                    bail!("{last} (not retried)");
                }
            }
        }
    }
    bail!("{last}, after {ATTEMPTS} attempts")
}

#[cfg(test)]
mod tests {
    use super::url;

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
