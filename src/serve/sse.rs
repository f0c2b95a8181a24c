//! `/events` as a body of Server-Sent Events: each frame the hub's own shared bytes, taken one
//! at a time, so a client that does not read holds what hyper queued for its socket and no more.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::watch;

use super::events::{Client, Hub, Next};

/// EventSource waits about 3 s before reconnecting, unless told: the first frame tells it 1 s.
const RETRY: &str = "retry: 1000\n";
/// A comment on an idle stream keeps proxies from closing it.
const KEEP_ALIVE: &str = ": keep-alive\n\n";

struct Reader {
    hub: Arc<Hub>,
    rx: watch::Receiver<u64>,
    after: Option<u64>,
    first: bool,
    keep_alive: Duration,
    _client: Client,
}

/// The response to `GET /events`: resumes after `last` (an SSE id), else a snapshot first;
/// a comment every `keep_alive` while nothing happens.
pub fn response(hub: Arc<Hub>, last: Option<&str>, keep_alive: Duration) -> Response {
    let reader = Reader {
        after: last.and_then(|id| hub.parse_id(id)),
        rx: hub.subscribe(),
        _client: hub.client(),
        hub,
        first: true,
        keep_alive,
    };
    let stream = futures_util::stream::unfold(reader, |mut r| async move {
        if r.first {
            // Its own frame, no blank line: it belongs to the event that follows.
            r.first = false;
            return Some((Ok::<_, Infallible>(Bytes::from_static(RETRY.as_bytes())), r));
        }
        loop {
            // Seen before looking, so a publish after the look still wakes us.
            r.rx.borrow_and_update();
            match r.hub.next_after(r.after) {
                Next::Event(e) => {
                    r.after = Some(e.id);
                    return Some((Ok(e.wire), r));
                }
                Next::Snapshot { id, wire } => {
                    r.after = Some(id);
                    return Some((Ok(wire), r));
                }
                Next::Wait => {}
            }
            tokio::select! {
                changed = r.rx.changed() => if changed.is_err() { return None },
                _ = tokio::time::sleep(r.keep_alive) => {
                    return Some((Ok(Bytes::from_static(KEEP_ALIVE.as_bytes())), r));
                }
            }
        }
    });
    let mut res = Body::from_stream(stream).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}
