//! Where the board's records come from: agents' logs followed as they grow ([`follow`]) and
//! run through a pair of module instances ([`fold`]), pressure records on stdin or on a Fluvio
//! topic, agents' OTLP exports; each feed runs on its own and reports into the board
//! ([`feed`]).

pub(crate) mod feed;
pub(crate) mod fold;
pub(crate) mod follow;
