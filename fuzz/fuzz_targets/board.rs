//! Fuzz target `board`: the property lives in `agent_fold::testing::serve::fuzz::check_board`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold::testing::serve::fuzz::check_board(data));
