//! The property the `board` fuzz target checks (`fuzz/fuzz_targets/board.rs`; replayed on its
//! seeds by `tests/suite/fuzz_regressions.rs`): whatever records a producer writes, the board
//! takes them and answers every route without a panic, each answer well-formed JSON (or
//! Prometheus text), within its bounds.
//!
//! An input is lines. Its first two bytes pick the alert rules and the bounds; then each line is a
//! record read as a source reads one (`PressureRecord::parse`, then applied), unless it starts
//! with `!`, when its second byte is an operation on the board:
//! `!s` a sweep, `!r…`/`!d…` a log of the comma-separated sessions read again / caught up,
//! `!R`/`!D` every session's, `!q…` an `/api/sessions` query string, `!e…` a page's next
//! message after a version, `!f…` a folded frame (`KEY\x1fFRAME`), `!h…` one session's
//! history; after each line every route's answer is checked: `/state`, `/api/sessions`,
//! `/events` (a new page's board and a delta), `/metrics`, `/healthz`, the notices waiting.

use std::sync::Arc;

use serde::de::IgnoredAny;

use super::board::{self, Board, Folded, Next, Policy, PressureRecord, Sessions};
use super::http::App;
use super::notifiers::alertmanager;
use super::notifiers::outbox::Outbox;
use crate::service::hosts::Hosts;

/// The rules an input may pick (bits 0–5 of its first byte, 0–3 of its second).
const RULES: [&str; 10] = [
    "until<20000",
    "occupancy>0.9",
    "used>150k",
    "pressure>=180000",
    "until<=0",
    "occupancy>=100%",
    "past>5%",
    "after>0.6",
    "reclaimed<10%",
    "thrash>=3",
];

/// Panics when the board breaks a promise on `data` (see the module's notes).
pub fn check_board(data: &[u8]) {
    let [first, second, rest @ ..] = data else {
        return;
    };
    let (first, second) = (*first, *second);
    // Rules 0–5 by the first byte's low bits, 6–9 by the second's.
    let chosen = u32::from(first & 0x3f) | u32::from(second & 0x0f) << 6;
    let rules = RULES
        .iter()
        .enumerate()
        .filter(|(i, _)| chosen & (1 << i) != 0)
        .filter_map(|(_, r)| board::alerts::Rule::parse(r).ok())
        .collect();
    let config = Policy {
        idle: std::time::Duration::from_secs(if first & 0x40 != 0 { 0 } else { 1800 }),
        max_sessions: if first & 0x80 != 0 { 3 } else { 64 },
        history_points: 1_000,
        rules,
        thrash_window: std::time::Duration::from_secs(if second & 0x10 != 0 { 0 } else { 900 }),
    };
    let outbox = Outbox::new("fuzz", 2);
    let b = Board::new(config, "fuzz", None, vec![Arc::clone(&outbox)]);
    let app = App {
        board: Arc::clone(&b),
        connections: Arc::default(),
        hosts: Arc::new(Hosts::new(1, &[])),
        receivers: vec![Arc::clone(&outbox)],
        otlp: Arc::default(),
    };
    let mut seen = None;
    for line in rest.split(|c| *c == b'\n') {
        match line {
            [b'!', op, arg @ ..] => operate(&b, *op, arg),
            _ => {
                let parsed = PressureRecord::parse(line);
                b.batch(|c| {
                    c.read(1);
                    match parsed {
                        Ok(r) => {
                            c.pressure(r);
                        }
                        Err(why) => c.skip(why.to_string()),
                    }
                });
            }
        }
        seen = answers(&app, &outbox, seen);
    }
}

/// The comma-separated session ids of `arg`.
fn ids(arg: &[u8]) -> Sessions {
    Sessions::These(
        arg.split(|c| *c == b',')
            .map(|id| Arc::from(String::from_utf8_lossy(id).as_ref()))
            .collect(),
    )
}

fn operate(b: &Board, op: u8, arg: &[u8]) {
    match op {
        b's' => b.sweep(),
        b'r' => b.batch(|c| c.reread(&ids(arg), "fuzz")),
        b'd' => b.batch(|c| c.reread_done(&ids(arg))),
        b'R' => b.batch(|c| c.reread(&Sessions::All, "fuzz")),
        b'D' => b.batch(|c| c.reread_done(&Sessions::All)),
        b'q' => {
            if let Ok(q) = board::query::Query::from_query_string(arg) {
                json(&super::http::encode(&b.query(&q)), "/api/sessions");
            }
        }
        b'e' => {
            let after = std::str::from_utf8(arg).ok().and_then(|s| s.parse().ok());
            sse(&b.next_after(after));
        }
        b'f' => {
            let (key, frame) = match arg.iter().position(|c| *c == 0x1f) {
                Some(i) => (Some(&arg[..i]), &arg[i + 1..]),
                None => (None, arg),
            };
            if let Some(f) = Folded::parse(key, frame) {
                b.batch(|c| c.frame(f));
            }
        }
        b'h' => {
            let id = String::from_utf8_lossy(arg);
            if let Some(d) = b.session(&id, None) {
                json(&super::http::encode(&d), "/api/sessions/{id}");
            }
        }
        _ => {}
    }
}

/// Every route's answer, checked; returns the version a page is at after reading its next
/// message.
fn answers(app: &App, outbox: &Outbox, seen: Option<u64>) -> Option<u64> {
    let b = &app.board;
    json(&super::http::state_json(b), "/state");
    let all = board::query::Query {
        all: true,
        limit: usize::MAX,
        ..board::query::Query::default()
    };
    let answer = b.query(&all);
    for row in &answer.sessions {
        let _: IgnoredAny = serde_json::from_str(row.get()).expect("a row is JSON");
    }
    json(&super::http::encode(&answer), "/api/sessions");
    let held = b.held();
    assert!(held.sessions <= b.policy().max_sessions, "sessions bounded");
    assert!(held.points <= b.policy().history_points, "points bounded");
    let metrics = super::http::telemetry::render(app);
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap_or_default();
        assert!(value.parse::<f64>().is_ok(), "a sample's value: {line:?}");
    }
    // The notices the receivers would be sent, as they are sent.
    for lane in 0..2 {
        let batch = outbox.take(lane);
        let _ = serde_json::to_vec(&batch).expect("notices encode");
        let to = alertmanager::Target {
            url: axum::http::Uri::from_static("http://127.0.0.1:9/api/v2/alerts"),
            link: "http://127.0.0.1/".to_owned(),
            resend: alertmanager::RESEND,
        };
        alertmanager::body(&batch, &to, board::now_ms()).expect("alerts encode");
    }
    // A new page's board, and the next message of a page at `seen`.
    sse(&b.next_after(None));
    match b.next_after(seen) {
        Next::Delta { version, wire } | Next::Board { version, wire } => {
            sse_frame(&wire);
            Some(version)
        }
        Next::Wait => seen,
    }
}

fn json(body: &Result<Vec<u8>, serde_json::Error>, route: &str) {
    let body = body
        .as_ref()
        .unwrap_or_else(|e| panic!("{route} did not encode: {e}"));
    serde_json::from_slice::<IgnoredAny>(body)
        .unwrap_or_else(|e| panic!("{route} is not JSON: {e}"));
}

fn sse(next: &Next) {
    if let Next::Delta { wire, .. } | Next::Board { wire, .. } = next {
        sse_frame(wire);
    }
}

/// An SSE frame: `id`, `event`, one `data` line of JSON, a blank line; no CR anywhere (an
/// event stream breaks lines at CR as at LF: one inside the data would cut it).
fn sse_frame(wire: &[u8]) {
    let text = std::str::from_utf8(wire).expect("an SSE frame is UTF-8");
    assert!(!text.contains('\r'), "no CR in a frame: {text:?}");
    assert_eq!(
        text.matches('\n').count(),
        4,
        "four lines, the last blank: {text:?}"
    );
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("a data line");
    assert!(text.ends_with("\n\n"), "a frame ends with a blank line");
    serde_json::from_str::<IgnoredAny>(data).expect("an SSE message is JSON");
}
