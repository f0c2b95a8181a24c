//! Host tools for agent-fold, layered one way (no file imports one that imports it back:
//! tests/suite/layering.rs): the command line ([`cli`]) → the subcommands (`run`, `accuracy`,
//! `inspect`, [`corpus`], `collect`, `relay`, `serve`, `statusline`) → shared host modules
//! ([`module`]: an instance, `.wasm` in fluvio-smartengine or native; `params`: the module
//! params typed once; `otlp`: the OTLP/HTTP receiver `collect` and `serve --otlp` share;
//! `topics`: connecting to Fluvio and laying out topics; `flags`; `logs` (with `opencode_db`,
//! OpenCode's database, and `homes`, where each agent keeps its sessions); `settings`; `plot`;
//! `checkpoint`; [`heap`]: the counting allocator the bench and the memory tests measure with;
//! `service`: the HTTP listener, Host check, metrics and logs that `serve`, `relay` and
//! `collect` share) → records ([`record`], `jsonl`) → the core.
//!
//! The face is narrow: [`cli`] for the binary; [`module`] and [`record`], running the module
//! over records; [`corpus`] and [`heap`], what the benches drive and measure with; and
//! [`testing`], the one door the tests, the fuzz targets and the lab come through.

pub mod cli;
pub mod corpus;
pub mod heap;
pub mod module;
pub mod record;
pub mod testing;

mod accuracy;
mod collect;
mod flags;
mod homes;
mod inspect;
mod jsonl;
mod logs;
mod opencode_db;
mod otlp;
mod params;
mod plot;
mod relay;
mod resume;
mod run;
mod serve;
mod service;
mod settings;
mod statusline;
mod topics;
