//! `agent-fold-lab`: runs the lab's scenarios with the pinned releases (or the newest of each
//! agent) and prints what agent-fold made of each against the stand-in's record; with
//! `--newest`, also what changed since the pinned releases.

use std::path::PathBuf;

use agent_fold_lab::agents::Agent;
use agent_fold_lab::check::{Scored, score};
use agent_fold_lab::install::{self, Releases};
use agent_fold_lab::report;
use agent_fold_lab::scenario::{self, Scenario};
use anyhow::{Context, Result, bail};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "agent-fold-lab",
    about = "Run the agents' releases against local model stand-ins and score agent-fold on what they wrote"
)]
struct Args {
    /// The newest release of each agent on the registry instead of the pinned ones, and what
    /// changed since the pinned releases' last report
    #[arg(long)]
    newest: bool,
    /// Only these agents (claude-code, codex, gemini-cli, opencode; repeatable)
    #[arg(long = "agent", value_name = "AGENT", value_parser = |s: &str| Agent::parse(s).ok_or_else(|| format!("{s:?} is none of claude-code, codex, gemini-cli, opencode")))]
    agents: Vec<Agent>,
    /// Only these scenarios (repeatable)
    #[arg(long = "scenario", value_name = "NAME", value_parser = |s: &str| Scenario::parse(s).ok_or_else(|| format!("{s:?} is no scenario: {}", Scenario::ALL.map(Scenario::name).join(", "))))]
    scenarios: Vec<Scenario>,
    /// Print the scores as JSON
    #[arg(long)]
    json: bool,
}

fn main() {
    match run(Args::parse()) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent-fold-lab: {e:#}");
            std::process::exit(1);
        }
    }
}

fn report_path(releases: Releases) -> PathBuf {
    install::lab_dir().join(format!("report-{}.json", releases.name()))
}

fn run(args: Args) -> Result<i32> {
    let releases = if args.newest {
        Releases::Newest
    } else {
        Releases::Pinned
    };
    let installed = install::install(releases, &|s| eprintln!("{s}"))?;
    eprintln!("lab: {}", installed.describe());
    let agents = if args.agents.is_empty() {
        Agent::ALL.to_vec()
    } else {
        args.agents.clone()
    };
    let scenarios = if args.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        args.scenarios.clone()
    };
    let mut scored = Vec::new();
    for agent in &agents {
        for sc in &scenarios {
            let dir = install::lab_dir()
                .join("runs")
                .join(releases.name())
                .join(agent.name())
                .join(sc.name());
            let Some(outcome) = scenario::run(&installed, *agent, *sc, &dir)? else {
                continue;
            };
            let s = score(&outcome)?;
            eprintln!(
                "lab: {} {} {}: {} requests, {} compactions, {:.0} s{}",
                agent.name(),
                s.version,
                sc.name(),
                s.requests,
                s.compactions,
                s.seconds,
                s.failed
                    .as_ref()
                    .map_or(String::new(), |f| format!(" — stopped: {f}"))
            );
            scored.push(s);
        }
    }
    std::fs::write(report_path(releases), serde_json::to_vec_pretty(&scored)?)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&scored)?);
    } else {
        print!("{}", report::render(&scored));
    }
    if args.newest {
        let pinned = report_path(Releases::Pinned);
        if !pinned.is_file() {
            bail!(
                "no report of the pinned releases to compare with ({}): run the lab without --newest first",
                pinned.display()
            );
        }
        let before: Vec<Scored> = serde_json::from_slice(&std::fs::read(&pinned)?)
            .with_context(|| format!("reading {}", pinned.display()))?;
        println!("\n## What changed since the pinned releases\n");
        print!("{}", report::changes(&before, &scored));
    }
    Ok(0)
}
