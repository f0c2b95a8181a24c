//! `agent-fold`: the SmartModule run on a laptop, in Fluvio's own engine.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match agent_fold::runner::main_with(&args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent-fold: {e:#}");
            std::process::exit(1);
        }
    }
}
