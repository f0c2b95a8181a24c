//! agent-fold's lab: each agent's own release, installed from the npm registry at a pinned
//! version (`lab/package-lock.json`), run in a scratch home against a local stand-in for its
//! model API, and agent-fold held to the stand-in's record of every request — the exact ground
//! truth of what each request carried and what the provider said (`docs/lab.md`).
//!
//! Layers, one way: [`http`] (a loopback HTTP/1.1 server) and [`tokens`] (the stand-ins'
//! count) → [`model`] (the script the stand-ins play and their record) → [`api`] (the four
//! model APIs) → [`agents`] (how each agent is configured and driven) and [`install`] →
//! [`scenario`] (what a session does) → [`check`] (agent-fold over the logs, scored against the
//! record) → [`report`].

pub mod agents;
pub mod api;
pub mod check;
pub mod http;
pub mod install;
pub mod model;
pub mod report;
pub mod scenario;
pub mod tokens;
