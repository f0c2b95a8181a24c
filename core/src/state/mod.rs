//! Per-session state across invocations: the bounded cache every session lives in, and the
//! checkpoint codec that writes and restores it.

pub(crate) mod checkpoint;
mod error;
pub(crate) mod lru;
