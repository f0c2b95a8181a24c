//! Fuzz target `adapters`: the property lives in `agent_fold_testkit::checks::check_adapters`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_adapters(data));
