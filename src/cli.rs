//! The command line: one subcommand a tool, each parsing its own flags (its `Args`) and
//! returning the process's exit code; `main.rs` only calls [`main`].

use clap::{Parser, Subcommand};

use crate::service::logging::{self, LogFormat};
use crate::{accuracy, collect, corpus, inspect, relay, run, serve, statusline};

/// agent-fold: folds an LLM coding agent's event stream into what its users look at, and
/// projects its context pressure.
#[derive(Parser)]
#[command(name = "agent-fold", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How the notes on stderr are written: lines for people, or JSON objects for machines
    /// (RUST_LOG filters them either way)
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human)]
    log_format: LogFormat,
}

#[derive(Subcommand)]
enum Command {
    /// Run the SmartModule over a JSONL agent log, one line per record (key: the line's
    /// session_id); every output record's value is printed as one line on stdout
    Run(run::Args),
    /// For each provider reading after a session's first, how far the figure shown just before
    /// it was: projectedTokens (rebased, calibrated, fixed) and a meter that only shows the last
    /// reading; every compaction listed, and the compaction level shown before each automatic one
    Accuracy(accuracy::Args),
    /// The census of an agent's log, for when a meter looks wrong: the agent and its versions,
    /// the sessions and the field that keyed them, every kind of line with its count and whether
    /// it was read, priced or passed over (naming each kind it does not know, with its first
    /// line), the readings, the compactions, the window and threshold and where each came from,
    /// and warnings in words
    Inspect(inspect::Args),
    /// Receive coding agents' OpenTelemetry log events (OTLP/HTTP, protobuf or JSON, gzip) and
    /// write each as a JSON record keyed by its session, to a Fluvio topic (acknowledged before
    /// success is answered) or a JSONL file; input=otel adapts them
    Collect(collect::Args),
    /// Write a deterministic corpus of realistic agent logs as JSONL on stdout
    Corpus(corpus::Args),
    /// Fill the sibling topic TOPIC-pressure from a live Fluvio cluster: the module with
    /// emit=pressure over the event topic, each record produced keyed by its session, the
    /// consumer offset committed only after the produce is acknowledged (at-least-once)
    Relay(relay::Args),
    /// Serve the fleet board: one row per live session, ranked by how close it is to compacting,
    /// each opening its meter and whole chart, with alerts; from agents' logs followed as they
    /// grow (a file or directory), pressure records on stdin (-), a Fluvio topic of them
    /// (--topic) or agents' OTLP exports (--otlp); prints the page's URL
    Serve(Box<serve::Args>),
    /// A Claude Code status line: reads the session's JSON on stdin, runs the module over its
    /// transcript (only what it gained since the last call) and prints one line: occupancy,
    /// ~used/window, how far the automatic compaction is
    Statusline(statusline::Args),
}

/// Parses the command line, runs the subcommand and exits with its code (1, with the reason
/// on stderr, when it fails).
pub fn main() -> ! {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let result = match &cli.command {
        Command::Run(a) => run::main(a),
        Command::Accuracy(a) => accuracy::main(a),
        Command::Inspect(a) => inspect::main(a),
        Command::Collect(a) => collect::main(a),
        Command::Corpus(a) => corpus::main(a),
        Command::Relay(a) => relay::main(a),
        Command::Serve(a) => serve::main(a),
        Command::Statusline(a) => statusline::main(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent-fold: {e:#}");
            std::process::exit(1);
        }
    }
}
