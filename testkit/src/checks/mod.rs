//! The fuzz properties, one function per fuzz target (contract §5 and §6): each takes the fuzzer's
//! bytes and panics, saying which property broke, when one does.
//!
//! The fuzz targets are thin wrappers around these, and `tests/suite/fuzz_regressions.rs` replays the
//! seed corpus and every minimised crash through them, so `cargo test` checks the same
//! properties the fuzzers do.

mod adapters;
mod checkpoint;
mod fold_bytes;
mod fold_invariants;
mod frames;
mod hostile;
mod pressure;
mod readers;
mod surface;
mod wire;

use std::ops::Range;

use agent_fold_core::{Config, Emit, Processor, RecordIn};

pub use adapters::{adapters_config, check_adapters};
pub use checkpoint::check_checkpoint_restore;
pub use fold_bytes::{check_fold_bytes, fold_bytes_config, fold_bytes_invocations};
pub use fold_invariants::check_fold_invariants;
pub use frames::check_frames_invocation;
pub use hostile::{check_hostile, check_hostile_log, hostile_config};
pub use pressure::check_pressure_invocation;
pub use readers::check_readers;
pub use surface::check_surface_ranges;
pub use wire::{
    KeyShape, ReaderOutcome, Wide, WireCase, WireRecord, check_reader, check_wire,
    check_wire_input, fluvio_array_map, fluvio_decodes, fluvio_look_back, refusal,
    without_backtrace,
};

use crate::GenRecord;

/// Records as the core reads them, each at its offset in the log.
pub fn inputs(recs: &[GenRecord]) -> Vec<RecordIn<'_>> {
    recs.iter()
        .enumerate()
        .map(|(i, (k, v))| RecordIn::new(k.as_deref(), v).at(i as i64))
        .collect()
}

/// `on` when bit `bit` of `p` is set, else `off`: how the targets draw params from a byte.
pub fn pick<T>(p: u8, bit: u8, off: T, on: T) -> T {
    if p & bit == 0 { off } else { on }
}

/// A small `max_sessions` (1 + the two bits from `shift`) when `bit` is set, else the default.
pub fn small_cap(p: u8, bit: u8, shift: u8) -> usize {
    pick(
        p,
        bit,
        Config::default().max_sessions,
        1 + ((p >> shift) & 3) as usize,
    )
}

/// Replays `records` through `p` in the invocations `batches` cut, handing each page and its
/// answer to `each`; returns every record out.
pub fn replay(
    p: &mut Processor,
    records: &[RecordIn],
    batches: Vec<Range<usize>>,
    mut each: impl FnMut(&mut Processor, &[RecordIn], &[Emit]),
) -> Vec<GenRecord> {
    let mut all = Vec::new();
    for b in batches {
        let page = &records[b];
        let out = p.process(page).expect("malformed=pass/drop never fails");
        each(p, page, &out);
        all.extend(materialise(page, &out));
    }
    all
}

/// What an invocation emitted, as `(key, value)` records.
pub fn materialise(records: &[RecordIn], out: &[Emit]) -> Vec<GenRecord> {
    out.iter()
        .map(|e| match e {
            Emit::Pass(i) => (
                records[*i].key.map(<[u8]>::to_vec),
                records[*i].value.to_vec(),
            ),
            Emit::Replace(i, v) => (records[*i].key.map(<[u8]>::to_vec), v.clone()),
            Emit::New { key, value, .. } => (Some(key.clone()), value.clone()),
        })
        .collect()
}

/// A record, shortened for a panic message.
pub fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.len() > 400 {
        format!("{}…", &s[..s.floor_char_boundary(400)])
    } else {
        s.into_owned()
    }
}

/// A fresh processor restored from `checkpoint`, which this build wrote.
fn restored(config: &Config, checkpoint: &str) -> Processor {
    let mut p = Processor::new(config);
    if let Err(e) = p.restore(checkpoint) {
        panic!(
            "a checkpoint this build wrote is refused: {e}\n{}",
            show(checkpoint.as_bytes())
        );
    }
    p
}

/// Checkpoint → restore → checkpoint gives the same text.
fn assert_round_trip(config: &Config, checkpoint: &str) {
    let again = restored(config, checkpoint).checkpoint();
    assert_eq!(
        again, checkpoint,
        "restoring a checkpoint and writing it again changed it"
    );
}

/// `look_back` over each invocation's records in turn leaves the state `process` leaves (contract
/// §4: it replays records into the state without emitting), and after the first the rest is
/// answered alike; a look-back cut into several calls (as the relay feeds a long one) is the
/// same replay.
fn assert_look_back_matches(config: &Config, records: &[RecordIn], batches: &[Range<usize>]) {
    let Some(first) = batches.first() else {
        return;
    };
    let mut processed = Processor::new(config);
    let mut replayed = Processor::new(config);
    for (i, batch) in batches.iter().enumerate() {
        processed
            .process(&records[batch.clone()])
            .expect("malformed=pass/drop never fails");
        replayed.look_back(&records[batch.clone()]);
        assert_eq!(
            replayed.checkpoint(),
            processed.checkpoint(),
            "look_back over invocations 0..={i} left another state than process"
        );
    }
    let mut processed = Processor::new(config);
    let mut replayed = Processor::new(config);
    processed
        .process(&records[first.clone()])
        .expect("malformed=pass/drop never fails");
    replayed.look_back(&records[first.clone()]);
    let rest = &records[first.end..];
    assert_eq!(
        replayed.process(rest),
        processed.process(rest),
        "after look_back the rest was answered differently"
    );
}
