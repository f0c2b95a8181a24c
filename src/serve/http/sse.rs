//! `/events` as a body of Server-Sent Events: the whole board first, then coalesced deltas, at
//! most one message per [`MIN_INTERVAL`]. Each message is the board's own shared bytes, taken
//! one at a time, so a page that does not read holds what hyper queued for its socket and no
//! more, and when it reads again it gets the latest rows, not the ones it missed.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::serve::board::{Board, Client, Next};

/// The least time between two messages to one page: ten a second at most, a human's rate.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// EventSource waits about 3 s before reconnecting, unless told: the first frame tells it 1 s.
const RETRY: &str = "retry: 1000\n";
/// A comment on an idle stream keeps proxies from closing it.
const KEEP_ALIVE: &str = ": keep-alive\n\n";

struct Reader {
    board: Arc<Board>,
    rx: watch::Receiver<u64>,
    after: Option<u64>,
    first: bool,
    last_sent: Option<Instant>,
    keep_alive: Duration,
    _client: Client,
}

/// The response to `GET /events`: resumes after `last` (an SSE id), else the whole board
/// first; a comment every `keep_alive` while nothing happens.
pub(crate) fn response(board: Arc<Board>, last: Option<&str>, keep_alive: Duration) -> Response {
    let reader = Reader {
        after: last.and_then(|id| board.parse_id(id)),
        rx: board.subscribe(),
        _client: board.client(),
        board,
        first: true,
        last_sent: None,
        keep_alive,
    };
    let stream = futures_util::stream::unfold(reader, |mut r| async move {
        if r.first {
            // Its own frame, no blank line: it belongs to the event that follows.
            r.first = false;
            return Some((Ok::<_, Infallible>(Bytes::from_static(RETRY.as_bytes())), r));
        }
        loop {
            // The page's rate: what changes meanwhile is coalesced into the next message.
            if let Some(t) = r.last_sent {
                tokio::time::sleep_until(t + MIN_INTERVAL).await;
            }
            // Seen before looking, so a change after the look still wakes us.
            r.rx.borrow_and_update();
            match r.board.next_after(r.after) {
                Next::Delta { version, wire } | Next::Board { version, wire } => {
                    r.after = Some(version);
                    r.last_sent = Some(Instant::now());
                    r.board
                        .counters
                        .messages
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
