//! Restoring a checkpoint holds the state it builds and little else. The suite's counting
//! allocator ([`agent_fold::heap`]) measures the peak of live heap while `Processor::restore` reads a checkpoint of one
//! session with a million surface nodes; it must stay under three times the checkpoint's text
//! (which the caller holds too: under four times in all).

use agent_fold::heap::HeapCount;
use agent_fold_core::Processor;

/// Restores a million-node surface whose nodes stand in the order `seqs` gives; returns the
/// peak over the text's size and the bytes held a node.
fn restore(seqs: impl Iterator<Item = usize>) -> (f64, f64) {
    let n = 1_000_000;
    let nodes: Vec<String> = seqs.map(|i| format!("[{i},1]")).collect();
    assert_eq!(nodes.len(), n);
    let text = format!(
        r#"{{"stateVersion":3,"view":"pressure","sessions":[{{"stateVersion":3,"session":"s-42","cursor":{},"partial":false,"floor":0,"systemTokens":1,"toolsTokens":1,"capacity":200000,"pressureTokens":5,"anchorTokens":5,"surface":[{}]}}]}}"#,
        n + 1,
        nodes.join(",")
    );
    drop(nodes);
    let mut p = Processor::from_params([("emit", "pressure")]).unwrap();
    let count = HeapCount::start();
    p.restore(&text).unwrap();
    let (peak, held) = (count.peak(), count.live());
    drop(count);
    println!(
        "checkpoint {} bytes: restore peaked at {peak} bytes ({:.2}×), holds {held} ({:.1} bytes a node)",
        text.len(),
        peak as f64 / text.len() as f64,
        held as f64 / n as f64
    );
    assert_eq!(p.sessions(), 1);
    assert!(
        held > 0,
        "nothing counted: the suite's global allocator is not agent_fold::heap's"
    );
    (peak as f64 / text.len() as f64, held as f64 / n as f64)
}

#[test]
fn a_million_node_checkpoint_restores_in_twice_its_size_or_three_times_after_a_compaction() {
    // Nodes in seq order: a session that never compacted.
    let (peak, per_node) = restore(0..1_000_000);
    assert!(peak < 2.0, "peak {peak:.2}× the text");
    assert!(per_node <= 16.5, "{per_node:.1} bytes a node");
    // After a compaction the summary (the highest seq) stands first: the ids are renumbered
    // in seq order, through one index of the nodes.
    let (peak, per_node) = restore(std::iter::once(1_000_000).chain(1..1_000_000));
    assert!(peak < 3.0, "peak {peak:.2}× the text");
    assert!(per_node <= 16.5, "{per_node:.1} bytes a node");
}
