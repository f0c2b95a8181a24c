//! `core/examples/fold.rs`, the first pass of `scripts/demo.sh`: the frames view of a log
//! through the native library, the very records `agent-fold run --native` writes.

use std::path::PathBuf;
use std::process::Command;

/// The example as `cargo test` builds it (beside the test binary: `target/<profile>/examples`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile.join("examples").join("fold");
    assert!(
        path.exists(),
        "{} is missing: cargo test builds it",
        path.display()
    );
    path
}

fn output(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_example_writes_the_frames_the_tool_does() {
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    for params in [
        &[][..],
        &["subagents=keep", "counter_type=thinking/tokens"][..],
    ] {
        let native = output(Command::new(example()).arg(log).args(params));
        let mut tool = Command::new(env!("CARGO_BIN_EXE_agent-fold"));
        tool.args(["run", "--native", log]);
        for p in params {
            tool.args(["-e", p]);
        }
        assert_eq!(native, output(&mut tool), "{params:?}");
        assert!(
            native
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count()
                > 20
        );
    }
}

#[test]
fn the_example_refuses_a_bad_param_in_words() {
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    for (arg, said) in [("subagents", "KEY=VALUE"), ("emit=colour", "emit")] {
        let out = Command::new(example()).args([log, arg]).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{arg}: {err}");
    }
    let out = Command::new(example())
        .arg("/no/such/log")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/log"));
}
