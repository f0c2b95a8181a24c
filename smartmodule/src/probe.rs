//! The bench's per-phase probe (feature `probe`; the shipped module is built without it): the
//! same module, with one more init param, `probe`, that stops each invocation after a phase and
//! hands back no records. `bench --phases` runs it at each stage and takes the differences of
//! the engine's fuel as each phase's cost (docs/bench.md, "The module in Fluvio's engine").
//!
//! Stages: `read` (the input decoded into records), `walk` (each walked as a JSON object), `scan` (each read as a frame, its session
//! key taken), `lookup` (its session's entry found), `view` (the fold or the projection, no
//! record made), `records` (the records made, not written); without `probe`, the whole call.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::atomic::{AtomicU8, Ordering};

use agent_fold_core::{Probe, Processor};
use fluvio_smartmodule::dataplane::core::Decoder;

use crate::{ReadInput, Reply};

/// The stage this instance stops after: 0 for none (the whole call), else 1 + a [`STAGES`] index.
static STAGE: AtomicU8 = AtomicU8::new(0);

const STAGES: [&str; 6] = ["read", "walk", "scan", "lookup", "view", "records"];

/// `init`, with param `probe` taken out before the rest reach the processor.
pub fn init(p: &mut Processor, input: &[u8], version: i16) -> Reply {
    let mut params = BTreeMap::<String, String>::new();
    if params.decode(&mut Cursor::new(input), version).is_err() {
        return Reply::code(-1);
    }
    let stage = params.remove("probe").map_or(0, |s| {
        STAGES.iter().position(|n| *n == s).map_or(0, |i| i + 1)
    });
    STAGE.store(stage as u8, Ordering::Relaxed);
    match Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(processor) => {
            *p = processor;
            Reply::code(0)
        }
        Err(_) => Reply::code(-1),
    }
}

/// `array_map` as far as the stage; the output holds no record.
pub fn array_map(p: &mut Processor, input: &[u8], version: i16) -> Reply {
    let stage = STAGE.load(Ordering::Relaxed);
    if stage == 0 {
        return crate::array_map(p, input, version);
    }
    let Ok(read) = ReadInput::new(input, version) else {
        return Reply::code(-1);
    };
    let inputs = &read.inputs;
    let probe = match stage {
        2 => Some(Probe::Walk),
        3 => Some(Probe::Scan),
        4 => Some(Probe::Lookup),
        5 => Some(Probe::View),
        6 => Some(Probe::Records),
        _ => None,
    };
    if let Some(probe) = probe {
        std::hint::black_box(p.probe(std::hint::black_box(inputs), probe));
    }
    std::hint::black_box(inputs);
    let out = read.write(&[]);
    Reply {
        code: 0,
        output: Some(out.finish()),
    }
}
