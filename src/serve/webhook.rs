//! `--alert-webhook URL`: each alert notice POSTed as JSON, off the board's path.
//!
//! What holds: the notices wait in an [`Outbox`] (bounded, merging past the bound, a session's
//! notices in order); each of its [`LANES`] lanes is delivered one POST at a time, a POST
//! carrying up to [`super::outbox::NOTICES_PER_POST`] notices as a JSON array when more than
//! one waits, else the one notice as an object. [`post`] bounds each attempt by [`TIMEOUT`], tries [`ATTEMPTS`]
//! times with a doubling pause: a 2xx is delivered; a 429, a 5xx, a timeout or a connection
//! failure is tried again; any other answer is final. `--alertmanager` posts with it too.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, bail};
use axum::http::{Method, Request, StatusCode, Uri, header};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::outbox::{Outbox, Outcomes};

/// Lanes, so POSTs at once at most.
pub const LANES: usize = 4;
/// One attempt's bound, connection and answer included.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per POST at most.
pub const ATTEMPTS: u32 = 3;
/// The pause before the second attempt; it doubles.
const PAUSE: Duration = Duration::from_millis(250);

/// An `http://` URL (TLS is not linked into this binary: send to a local forwarder for an
/// `https://` receiver).
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

/// A client for [`post`].
pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Starts the deliverer on the current runtime: the outbox the board pushes to.
pub fn start(url: Uri) -> Arc<Outbox> {
    let outbox = Outbox::new("webhook", LANES);
    let client = client();
    for lane in 0..LANES {
        let (outbox, client, url) = (Arc::clone(&outbox), client.clone(), url.clone());
        tokio::spawn(async move {
            loop {
                let batch = outbox.next(lane).await;
                let body = match &batch[..] {
                    [one] => serde_json::to_vec(one),
                    many => serde_json::to_vec(many),
                }
                .expect("a notice serialises");
                let out = &outbox.outcomes;
                let n = batch.len() as u64;
                match post(&client, &url, body, out).await {
                    Ok(()) => out.delivered.fetch_add(n, Ordering::Relaxed),
                    Err(e) => {
                        let first = &batch[0];
                        tracing::warn!(session = %first.session, rule = first.rule, notices = n, "the alert webhook failed: {e:#}");
                        out.failed.fetch_add(n, Ordering::Relaxed)
                    }
                };
            }
        });
    }
    outbox
}

pub type HttpClient =
    Client<hyper_util::client::legacy::connect::HttpConnector, Full<bytes::Bytes>>;

/// POSTs `body` as JSON to `url`, with the attempts and pauses above.
pub async fn post(client: &HttpClient, url: &Uri, body: Vec<u8>, out: &Outcomes) -> Result<()> {
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
    use super::super::board::Alert;
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
