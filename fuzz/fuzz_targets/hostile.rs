//! Fuzz target `hostile`: the property lives in `agent_fold_testkit::checks::check_hostile`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_hostile(data));
