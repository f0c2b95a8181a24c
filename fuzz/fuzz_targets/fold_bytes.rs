//! Fuzz target `fold_bytes`: the property lives in `agent_fold_testkit::checks::check_fold_bytes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_fold_bytes(data));
