//! Fuzz target `checkpoint_restore`: the property lives in `agent_fold_testkit::checks::check_checkpoint_restore`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_checkpoint_restore(data));
