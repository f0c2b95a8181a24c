//! Host tools for agent-fold, layered one way, no cycles: the subcommands ([`run`],
//! [`accuracy`], [`inspect`], [`corpus`], [`collect`], [`relay`], [`serve`], [`statusline`]) →
//! shared host modules ([`module`]: an instance, `.wasm` in fluvio-smartengine or native;
//! [`otlp`]: the OTLP/HTTP receiver `collect` and `serve --otlp` share; [`topics`]: connecting
//! to Fluvio and laying out topics; [`flags`], [`logs`] (with [`opencode_db`], OpenCode's
//! database, and [`homes`], where each agent keeps its sessions), [`plot`], [`checkpoint`],
//! [`heap`]: the counting allocator the bench and the memory tests measure with; [`service`]:
//! the HTTP listener, Host check, metrics and logs that `serve`, `relay` and `collect` share) →
//! records ([`record`], [`jsonl`]) → the core.

pub mod accuracy;
pub mod checkpoint;
pub mod collect;
pub mod corpus;
pub mod flags;
pub mod heap;
pub mod homes;
pub mod inspect;
pub mod jsonl;
pub mod logs;
pub mod module;
pub mod opencode_db;
pub mod otlp;
pub mod params;
pub mod plot;
pub mod record;
pub mod relay;
pub mod run;
pub mod serve;
pub mod service;
pub mod settings;
pub mod statusline;
pub mod topics;
