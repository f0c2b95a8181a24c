//! `agent-fold`: the SmartModule run on a laptop, in Fluvio's own engine, and the tools around it.

fn main() {
    agent_fold::cli::main()
}
