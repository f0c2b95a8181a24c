//! Host tools for agent-fold, layered one way, no cycles: the subcommands ([`run`],
//! [`accuracy`], [`inspect`], [`corpus`], [`relay`], [`serve`], [`statusline`]) → shared host modules ([`module`]: an
//! instance, `.wasm` in fluvio-smartengine or native; [`flags`], [`logs`], [`plot`],
//! [`checkpoint`], [`service`]: the HTTP listener, Host check, metrics and logs that `serve`
//! and `relay` share) → records ([`record`], [`jsonl`]) → the core.

pub mod accuracy;
pub mod checkpoint;
pub mod collect;
pub mod corpus;
pub mod flags;
pub mod heap;
pub mod inspect;
pub mod jsonl;
pub mod logs;
pub mod module;
pub mod otlp;
pub mod plot;
pub mod record;
pub mod relay;
pub mod run;
pub mod serve;
pub mod service;
pub mod statusline;
pub mod topics;
