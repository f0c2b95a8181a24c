//! Host tools for agent-fold: run the built `.wasm` in `fluvio-smartengine` (the engine a
//! Fluvio SPU uses), read JSONL agent logs as records, and drive the runner.

pub mod accuracy;
pub mod corpus;
pub mod engine;
pub mod jsonl;
pub mod logs;
pub mod plot;
pub mod runner;
