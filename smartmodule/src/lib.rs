//! The agent-fold SmartModule: a thin adapter between Fluvio's records and
//! [`agent_fold_core::Processor`].
//!
//! `array_map` is exported by hand rather than through `#[smartmodule(array_map)]`: the derive
//! calls the user function once per record, but the fold's page is one invocation's records, so
//! the module must see the whole batch at once. `init` is hand-written too, to see every param's
//! name (the derive's params type cannot list them) and refuse unknown ones. The records are
//! read in place and the output written directly ([`wire`]); each call below is safe code from
//! the input's bytes to what goes back to the engine, so that it runs natively in tests.

use std::collections::BTreeMap;
use std::io::Cursor;

use agent_fold_core::{BatchError, Emit, ParamError, Processor, RecordIn};
use fluvio_smartmodule::dataplane::core::{Decoder, Encoder};
use fluvio_smartmodule::dataplane::smartmodule::{
    SmartModuleInitErrorStatus, SmartModuleInitOutput, SmartModuleInitRuntimeError,
    SmartModuleKind, SmartModuleLookbackErrorStatus, SmartModuleOutput,
    SmartModuleTransformErrorStatus, SmartModuleTransformRuntimeError,
};
use fluvio_smartmodule::{Record, RecordData, eyre};

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(feature = "probe")]
pub mod probe;
pub mod wire;

use wire::{Meta, Output, Stored};

/// What one call hands back to the engine: its return code, and the bytes `copy_records`
/// points the engine at, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: i32,
    pub output: Option<Vec<u8>>,
}

impl Reply {
    fn code(code: i32) -> Reply {
        Reply { code, output: None }
    }

    /// `value` encoded, or `encoding_failed` if it does not encode.
    fn encoded<E: Encoder>(code: i32, value: &E, version: i16, encoding_failed: i32) -> Reply {
        let mut out = Vec::new();
        match value.encode(&mut out, version) {
            Ok(()) => Reply {
                code,
                output: Some(out),
            },
            Err(_) => Reply::code(encoding_failed),
        }
    }
}

/// `init`: reads the params into a fresh `p` (the input's trailing look-back is not read); an
/// unknown one or a bad value is refused with its name, and `p` left as it was.
pub fn init(p: &mut Processor, input: &[u8], version: i16) -> Reply {
    let mut params = BTreeMap::<String, String>::new();
    if params.decode(&mut Cursor::new(input), version).is_err() {
        return Reply::code(SmartModuleInitErrorStatus::DecodingInput as i32);
    }
    match Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(processor) => {
            *p = processor;
            Reply::code(0)
        }
        Err(e) => init_refusal(&e, version),
    }
}

fn init_refusal(e: &ParamError, version: i16) -> Reply {
    // An SPU's log names no module: the message does.
    let output = SmartModuleInitOutput {
        error: SmartModuleInitRuntimeError::new(eyre!("agent-fold: {e}")),
    };
    Reply::encoded(
        SmartModuleInitErrorStatus::InitError as i32,
        &output,
        version,
        SmartModuleInitErrorStatus::EncodingOutput as i32,
    )
}

/// Where an input's records stand, to make each a record as the core reads it: at
/// `base_offset` + its delta, saturating.
#[derive(Debug, Clone, Copy)]
struct Offsets {
    base_offset: i64,
    /// Whether `base_offset` is near enough i64's ends that an offset may saturate (a delta is
    /// within ±2^31, see [`wire`]): elsewhere it adds plainly.
    near_ends: bool,
}

impl Offsets {
    fn new(base_offset: i64) -> Offsets {
        let near_ends = base_offset.checked_add(1 << 31).is_none()
            || base_offset.checked_sub(1 << 31).is_none();
        Offsets {
            base_offset,
            near_ends,
        }
    }

    #[inline(always)]
    fn record_in(self, r: Stored<'_>) -> RecordIn<'_> {
        let offset = if self.near_ends {
            self.base_offset.saturating_add(r.offset_delta)
        } else {
            // Never wraps: see `near_ends`.
            self.base_offset.wrapping_add(r.offset_delta)
        };
        RecordIn::new(r.key, r.value).at(offset)
    }
}

/// An input read for `array_map`, in one pass: its records as the core reads them, and beside
/// each, at the same index, what writing it back takes.
pub(crate) struct ReadInput<'a> {
    pub base_offset: i64,
    pub inputs: Vec<RecordIn<'a>>,
    metas: Vec<Meta<'a>>,
}

impl<'a> ReadInput<'a> {
    pub(crate) fn new(input: &'a [u8], version: i16) -> Result<ReadInput<'a>, wire::Undecodable> {
        let i = wire::input(input, version)?;
        let offsets = Offsets::new(i.base_offset);
        let (inputs, metas) = i.split(|r| offsets.record_in(r))?;
        Ok(ReadInput {
            base_offset: i.base_offset,
            inputs,
            metas,
        })
    }

    /// Input record `i`, if there is one.
    pub(crate) fn get(&self, i: usize) -> Option<Stored<'a>> {
        (i < self.metas.len()).then(|| self.records()(i))
    }

    /// Input record `i` as the writer reads it, for each `i`: one bounds check each (the two
    /// vectors' lengths are seen to be equal).
    #[inline(always)]
    pub(crate) fn records(&self) -> impl Fn(usize) -> Stored<'a> + '_ {
        let metas = &self.metas[..];
        let inputs = &self.inputs[..metas.len()];
        move |i| {
            let m = metas[i];
            let r = &inputs[i];
            m.with(r.key, r.value)
        }
    }

    /// The records `emits` make of these, as [`write`] writes them.
    pub(crate) fn write(&self, emits: &[Emit]) -> Output {
        write(self.records(), emits)
    }
}

/// `array_map`: one invocation of `p`. Untouched frames leave as the very bytes that came in
/// (contract §2); a refusal (`malformed=fail`) emits nothing and comes with the offending record.
pub fn array_map(p: &mut Processor, input: &[u8], version: i16) -> Reply {
    let read = match ReadInput::new(input, version) {
        Ok(read) => read,
        Err(e) => return undecodable(&e, version),
    };
    let emits = match p.process(&read.inputs) {
        Ok(emits) => emits,
        Err(e) => return refusal(&e, read.get(e.index), read.base_offset, version),
    };
    let out = read.write(&emits);
    Reply {
        code: out.count() as i32,
        output: Some(out.finish()),
    }
}

/// The records `emits` make of `records`, as `array_map` writes them.
pub fn output(records: &[Stored], emits: &[Emit]) -> Output {
    write(|i| records[i], emits)
}

/// The bytes `emit` takes in the output.
pub fn emitted_len(emit: &Emit, records: &[Stored]) -> usize {
    size(emit, |i| records[i])
}

/// The records `emits` make of the input's (`record(i)` is record `i`), written once into a
/// buffer of their size: a record passed is copied as its encoded bytes.
fn write<'a>(record: impl Fn(usize) -> Stored<'a>, emits: &[Emit]) -> Output {
    let mut out = Output::with_capacity(emits.iter().map(|e| size(e, &record)).sum());
    for emit in emits {
        match emit {
            Emit::Pass(i) => out.pass(&record(*i)),
            Emit::Replace(i, value) => {
                let r = record(*i);
                out.record(&r.preamble(), r.key, value, r.headers);
            }
            // A record of the module's own carries its source's offset and timestamp.
            Emit::New { at, key, value } => {
                out.record(&record(*at).preamble(), Some(key), value, 0)
            }
        }
    }
    out
}

/// The bytes `emit` takes in the output, `record(i)` being input record `i`.
#[inline(always)]
fn size<'a>(emit: &Emit, record: impl Fn(usize) -> Stored<'a>) -> usize {
    match emit {
        Emit::Pass(i) => record(*i).encoded_len(),
        Emit::Replace(i, value) => {
            let r = record(*i);
            wire::record_len(&r.preamble(), r.key, value, r.headers)
        }
        Emit::New { at, key, value } => {
            wire::record_len(&record(*at).preamble(), Some(key), value, 0)
        }
    }
}

/// The output of a refused invocation: no records, the error naming the offending one (the
/// cold path, so Fluvio's own types and encoder write it).
fn refusal(e: &BatchError, r: Option<Stored>, base_offset: i64, version: i16) -> Reply {
    let mut record = Record::default();
    if let Some(r) = r {
        record.key = r.key.map(RecordData::from);
        record.value = r.value.into();
        record.preamble.set_offset_delta(r.offset_delta);
    }
    let output = SmartModuleOutput {
        successes: Vec::new(),
        error: Some(SmartModuleTransformRuntimeError::new(
            &record,
            base_offset,
            SmartModuleKind::ArrayMap,
            eyre!("{}", e.message),
        )),
    };
    Reply::encoded(
        0,
        &output,
        version,
        SmartModuleTransformErrorStatus::EncodingOutput as i32,
    )
}

/// An input that does not decode: a runtime error saying where and why, which the engine
/// reports (a bare status would say only "decoding base input").
fn undecodable(e: &wire::Undecodable, version: i16) -> Reply {
    let output = SmartModuleOutput {
        successes: Vec::new(),
        error: Some(SmartModuleTransformRuntimeError::new(
            &Record::default(),
            0,
            SmartModuleKind::ArrayMap,
            eyre!("agent-fold: {e}"),
        )),
    };
    let bare = SmartModuleTransformErrorStatus::DecodingBaseInput as i32;
    match Reply::encoded(0, &output, version, bare) {
        // A version whose output carries nothing (negative) cannot say it: the bare status.
        Reply {
            output: Some(out), ..
        } if out.is_empty() => Reply::code(bare),
        reply => reply,
    }
}

/// `look_back`: replays the input's records into `p`'s state, emitting nothing.
pub fn look_back(p: &mut Processor, input: &[u8], version: i16) -> Reply {
    // One pass, the records held once, as the core reads them: a look-back is big.
    let decoded = wire::input(input, version).and_then(|i| {
        let offsets = Offsets::new(i.base_offset);
        i.map(|r| offsets.record_in(r))
    });
    let Ok(records) = decoded else {
        return Reply::code(SmartModuleLookbackErrorStatus::DecodingBaseInput as i32);
    };
    p.look_back(&records);
    Reply::code(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_saturate_at_i64s_ends_and_add_plainly_elsewhere() {
        let near = 1i64 << 31;
        let bases = [
            i64::MIN,
            i64::MIN + near - 1,
            i64::MIN + near,
            0,
            i64::MAX - near + 1,
            i64::MAX - near,
            i64::MAX,
        ];
        for base in bases {
            for delta in [i32::MIN as i64, -1, 0, 1, i32::MAX as i64] {
                let at = wire::Preamble {
                    offset_delta: delta,
                    ..Default::default()
                };
                let mut raw = Output::with_capacity(0);
                raw.record(&at, Some(b"k"), b"{}", 0);
                // Version 0: the base offset, the records, no params.
                let mut input = base.to_be_bytes().to_vec();
                let raw = raw.records();
                input.extend_from_slice(&(raw.len() as i32).to_be_bytes());
                input.extend_from_slice(&raw);
                input.extend_from_slice(&[0, 0]);
                let read = ReadInput::new(&input, 0).expect("reads");
                let want = Some(base.saturating_add(delta));
                assert_eq!(read.inputs[0].offset, want, "{base} + {delta}");
            }
        }
    }
}
