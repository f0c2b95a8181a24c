//! Target `adapters`: records of any shape through each adapter inside the module — Gemini
//! CLI's chats and recordings, OpenCode's exports and storage files among them — in invocations.

use agent_fold_core::{Config, Input, Malformed, Processor, View};

use super::hostile::check_adapted;
use super::{assert_round_trip, fold_bytes_invocations, inputs, pick, small_cap};

/// The adapting inputs, by the low three bits of byte 0 (modulo their count).
const ADAPTED: [Input; 6] = [
    Input::ClaudeCode,
    Input::ClaudeStream,
    Input::Codex,
    Input::Otel,
    Input::GeminiCli,
    Input::OpenCode,
];

/// The params byte 0 names.
pub fn adapters_config(p: u8) -> Config {
    Config {
        input: ADAPTED[(p & 7) as usize % ADAPTED.len()],
        view: pick(p, 8, View::Frames, View::Pressure),
        malformed: pick(p, 16, Malformed::Pass, Malformed::Drop),
        max_sessions: small_cap(p, 32, 6),
        ..Config::default()
    }
}

/// `adapters`: byte 0 = the input (bits 0–2), the pressure view (bit 3), `malformed=drop` (bit
/// 4), a small `max_sessions` (bit 5; 1 + bits 6–7); then records, one a line, an empty line
/// between invocations.
///
/// Never panics; every record out is new, from a record of its invocation, in order, an adapted
/// frame a JSON object (`check_adapted`); the state stays within `max_sessions`; checkpoints
/// round-trip.
pub fn check_adapters(data: &[u8]) {
    let Some((&p, body)) = data.split_first() else {
        return;
    };
    let config = adapters_config(p);
    let mut main = Processor::new(&config);
    for recs in fold_bytes_invocations(body, false) {
        let records = inputs(&recs);
        let out = main
            .process(&records)
            .expect("malformed=pass/drop never fails");
        check_adapted(&config, &records, &out);
        assert!(
            main.sessions() <= config.max_sessions,
            "{} sessions over a cap of {}",
            main.sessions(),
            config.max_sessions
        );
        assert_round_trip(&config, &main.checkpoint());
    }
}
