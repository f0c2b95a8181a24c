//! agent-fold's test kit: generated agent logs ([`GenLog`], [`GenSession`]), the properties of
//! contract §5 and §6 as functions that panic on a violation ([`checks`]), naive references the
//! core's fast paths are checked against ([`reference`]), and the OpenTelemetry streams real
//! agent logs would have exported ([`otel`]).
//!
//! One generator serves the property tests (shaped from seeded bytes) and the fuzz targets
//! (shaped by libFuzzer), so `cargo test` explores the same space the fuzzers do.

pub mod checks;
mod hostile;
mod logs;
pub mod otel;
pub mod reference;
mod util;

pub use hostile::{HostileLog, HostileOp, Odd};
pub use logs::{
    Delta, Drawn, GenFrame, GenLog, GenRecord, GenSession, SeqPick, SurfaceOp, seeded_bytes,
};
pub use util::{append, strings_of};
