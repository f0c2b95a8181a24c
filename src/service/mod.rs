//! What `serve` and `relay --metrics` share as long-running services: the HTTP listener (a
//! header-read timeout and a connection cap, from hyper's own settings), the Host / Origin
//! check against DNS rebinding, the Prometheus text format ([`metrics`]) and the logs
//! ([`logging`]).

pub(crate) mod hosts;
pub(crate) mod logging;
pub(crate) mod metrics;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// How the listener bounds its connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections served at once; one more is closed as soon as it is accepted.
    pub connections: usize,
    /// A request's head must have arrived this long after the connection (or the previous
    /// response) began waiting for it, else the connection is closed.
    pub header_timeout: Duration,
}

impl Limits {
    /// `connections` at most, and never more than half the open-file limit: the process keeps
    /// descriptors for its files and its cluster connections.
    pub(crate) fn new(connections: usize, header_timeout: Duration) -> Limits {
        Limits {
            connections: connections.min(open_files() / 2).max(1),
            header_timeout,
        }
    }
}

/// Raises the soft limit on open files to the hard one (at most 65,536), so that a service
/// meant for a thousand clients is not held to a shell's 1,024; says what it could not.
pub(crate) fn raise_open_files() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write one rlimit, which lives here.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return;
        }
        let want = r.rlim_max.min(65_536);
        if want > r.rlim_cur {
            r.rlim_cur = want;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                tracing::debug!("could not raise the open-file limit to {want}");
            }
        }
    }
}

/// The soft limit on open files (1,024 when it cannot be read).
fn open_files() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given, which lives here.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    match ok {
        true => usize::try_from(r.rlim_cur).unwrap_or(usize::MAX),
        false => 1024,
    }
}

/// The listener's figures, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections accepted since the start.
    pub accepted: AtomicU64,
    /// Connections closed at once: the cap was reached.
    pub refused: AtomicU64,
}

/// Serves `app` on `listener` for ever: each connection on its own task, HTTP/1.1 with the
/// header-read timeout, at most `limits.connections` at once.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    figures: Arc<Connections>,
) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a connection reset before accept: wait, then go on.
                tracing::warn!("accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            figures.refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        // Small writes (an SSE delta, an OTLP answer) go at once, not after the peer's
        // delayed ACK.
        let _ = stream.set_nodelay(true);
        figures.accepted.fetch_add(1, Ordering::Relaxed);
        figures.open.fetch_add(1, Ordering::Relaxed);
        let service = TowerToHyperService::new(app.clone());
        let figures = Arc::clone(&figures);
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!("a connection ended: {e}");
            }
            figures.open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
}

/// SIGINT and SIGTERM, listened for from the moment this is made (inside the runtime).
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM.
    pub(crate) async fn recv(&mut self) {
        tokio::select! { _ = self.int.recv() => {}, _ = self.term.recv() => {} }
    }
}
