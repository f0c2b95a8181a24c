//! Fuzz target `fold_invariants`: the property lives in `agent_fold_testkit::checks::check_fold_invariants`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_fold_invariants(data));
