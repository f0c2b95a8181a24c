//! Fuzz target `surface_ranges`: the property lives in `agent_fold_testkit::checks::check_surface_ranges`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fold_testkit::checks::check_surface_ranges(data));
