//! agent-fold's test kit: generated agent logs ([`GenLog`], [`GenSession`]), the properties of
//! contract §5 and §6 as functions that panic on a violation ([`checks`]), naive references the
//! core's fast paths are checked against ([`mod@reference`]), the OpenTelemetry streams real agent
//! logs would have exported ([`otel`]) and OTLP/protobuf bodies built field by field
//! ([`protobuf`]); and what the browser tests and the board bench share: a
//! Chromium driver ([`cdp`]), the alerts a stream should raise ([`alerts`]) and a webhook
//! receiver ([`webhook`]).
//!
//! One generator serves the property tests (shaped from seeded bytes) and the fuzz targets
//! (shaped by libFuzzer), so `cargo test` explores the same space the fuzzers do.

pub mod alerts;
pub mod cdp;
pub mod checks;
mod hostile;
mod logs;
pub mod otel;
pub mod protobuf;
pub mod reference;
mod util;
pub mod webhook;

pub use hostile::{HostileLog, HostileOp, Odd};
pub use logs::{
    Delta, Drawn, GenFrame, GenLog, GenRecord, GenSession, SeqPick, SurfaceOp, seeded_bytes,
};
pub use util::{append, strings_of};
