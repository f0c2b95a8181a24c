//! The integration suite: one test binary, so that wasmtime, Fluvio's client, tokio and axum
//! are linked once. Each module is one subject; [`common`] runs cases natively and as the
//! built `.wasm` in fluvio-smartengine, [`harness`] starts the host tool's services.
//!
//! The binary's allocator counts per thread, only where a test switches it on
//! ([`agent_fold::heap`]); every other test runs on the system allocator as it is.

mod common;
mod harness;
mod records;

mod adapt;
mod browser;
mod checkpoint;
mod collect;
mod documents;
mod fold_example;
mod frames_properties;
mod frames_snapshots;
mod fuzz_regressions;
mod homes;
mod hostile;
mod lab;
mod layering;
mod long_session;
mod opencode_db;
mod params;
mod pressure_properties;
mod pressure_snapshots;
mod relay;
mod restore_memory;
mod runner;
mod serve;
mod statusline;
mod wasm_engine;
mod wire;

#[global_allocator]
static ALLOC: agent_fold::heap::Counting = agent_fold::heap::Counting;
