//! Target `wire`: the SmartModule's hand-written reader and writer
//! ([`agent_fold_smartmodule::wire`], and the calls built on them) against Fluvio's own decoder
//! and encoder, byte for byte.
//!
//! On any input bytes: where the hand reader takes the input, Fluvio's decoder takes it too,
//! reads the same base offset, timestamp and records, and Fluvio's encoder writes those records
//! as the hand writer does; where the hand reader refuses, Fluvio's decoder refuses too, or
//! would trap (a negative or huge length, a varint past 10 bytes, an age past `u64::MAX`
//! seconds: Fluvio is not run on those), or the refusal is of a field outside ±2^31, which
//! Fluvio's encoder cannot write back. A whole call (`array_map`, `look_back`) answers as the
//! module did when Fluvio decoded and encoded for it.

use std::io::Cursor;

use agent_fold_core::{Config, Emit, Malformed, Processor, RecordIn, View};
use agent_fold_smartmodule::wire::{self, Output, Stored, Why};
use agent_fold_smartmodule::{Reply, array_map, emitted_len, look_back, output};
use arbitrary::{Arbitrary, Unstructured};
use fluvio_smartmodule::dataplane::core::{Decoder, Encoder, EncoderVarInt};
use fluvio_smartmodule::dataplane::record::RecordHeader;
use fluvio_smartmodule::dataplane::smartmodule::{
    Lookback, SmartModuleExtraParams, SmartModuleInput, SmartModuleKind, SmartModuleOutput,
    SmartModuleTransformErrorStatus, SmartModuleTransformRuntimeError,
};
use fluvio_smartmodule::{Record, eyre};

use super::pick;
use crate::{Drawn, GenLog};

/// A length Fluvio's decoder may be run on: it allocates a key or value's length before it
/// finds the bytes are not there.
const SAFE_ALLOC: i64 = 1 << 24;

/// The versions an input is read at: the engine's (22) and every one where a field comes or goes.
const VERSIONS: [i16; 9] = [22, 21, 20, 19, 16, 15, 1, 0, -1];

/// A delta or header count: small, within ±2^31, or wider (to 2^62: Fluvio's encoder never
/// stops on wider ones).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Wide {
    Small(i8),
    Mid(i32),
    Big(i64),
}

impl Wide {
    fn value(self) -> i64 {
        match self {
            Wide::Small(v) => v as i64,
            Wide::Mid(v) => v as i64,
            Wide::Big(v) => v % (1 << 62),
        }
    }
}

/// A record's key.
#[derive(Arbitrary, Debug, Clone)]
pub enum KeyShape {
    /// The generated frame's own (its session when the log is keyed).
    Frame,
    None,
    Empty,
    Bytes(Vec<u8>),
    /// `len` copies of a byte: long keys take a multi-byte length.
    Long(u8, u16),
}

/// One record's fields beside its value.
#[derive(Arbitrary, Debug, Clone)]
pub struct WireRecord {
    pub attributes: i8,
    pub timestamp_delta: Wide,
    pub offset_delta: Option<Wide>,
    pub key: KeyShape,
    pub headers: Wide,
    /// Arbitrary bytes, else the next generated frame.
    pub value: Option<Vec<u8>>,
}

/// A well-formed input, written by Fluvio's encoder, then perhaps damaged.
#[derive(Arbitrary, Debug, Clone)]
pub struct WireCase {
    pub version: u8,
    pub base_offset: i64,
    pub base_timestamp: i64,
    pub params: Vec<(String, String)>,
    pub lookback: Option<(u64, Option<(u64, u32)>)>,
    pub join_record: Vec<u8>,
    pub records: Vec<WireRecord>,
    pub log: GenLog,
    /// Bytes overwritten, at positions taken modulo the input's length.
    pub edits: Vec<(u16, u8)>,
    /// Where the input is cut short, modulo its length.
    pub cut: Option<u16>,
}

impl WireCase {
    /// A case drawn from `bytes`, when they make one.
    pub fn drawn(bytes: &[u8]) -> Option<WireCase> {
        WireCase::arbitrary(&mut Unstructured::new(bytes)).ok()
    }

    pub fn version(&self) -> i16 {
        VERSIONS[self.version as usize % VERSIONS.len()]
    }

    /// The records as Fluvio holds them.
    pub fn fluvio_records(&self) -> Vec<Record> {
        let mut frames = self.log.records().into_iter().cycle();
        self.records
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let (frame_key, frame) = frames.next().unwrap_or_default();
                let mut r = Record::new(w.value.clone().unwrap_or(frame));
                r.key = match &w.key {
                    KeyShape::Frame => frame_key,
                    KeyShape::None => None,
                    KeyShape::Empty => Some(Vec::new()),
                    KeyShape::Bytes(b) => Some(b.clone()),
                    KeyShape::Long(b, n) => Some(vec![*b; *n as usize]),
                }
                .map(Into::into);
                let offset = w.offset_delta.map_or(i as i64, Wide::value);
                r.preamble = header(w.attributes, w.timestamp_delta.value(), offset);
                r.headers = w.headers.value();
                r
            })
            .collect()
    }

    /// The input's bytes: a `SmartModuleInput` field by field (its params and join record
    /// are not settable), each written by Fluvio's encoder, then the edits and the cut.
    pub fn bytes(&self) -> Vec<u8> {
        let v = self.version();
        let mut raw = Vec::new();
        self.fluvio_records()
            .encode(&mut raw, v)
            .expect("records encode");
        let mut params = SmartModuleExtraParams::new(self.params.iter().cloned().collect(), None);
        params.set_lookback(self.lookback.map(|(last, age)| Lookback {
            last,
            age: age.map(|(s, n)| std::time::Duration::new(s >> 1, n % 1_000_000_000)),
        }));
        let mut out = Vec::new();
        let mut put =
            |e: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| e(&mut out).expect("encodes");
        if v >= 0 {
            put(&|o| self.base_offset.encode(o, v));
            put(&|o| raw.encode(o, v));
        }
        if (0..=22).contains(&v) {
            put(&|o| params.encode(o, v));
        }
        if (16..=22).contains(&v) {
            put(&|o| self.join_record.encode(o, v));
        }
        if v >= 22 {
            put(&|o| self.base_timestamp.encode(o, v));
        }
        if !out.is_empty() {
            let n = out.len();
            for &(at, b) in &self.edits {
                out[at as usize % n] = b;
            }
            if let Some(cut) = self.cut {
                out.truncate(cut as usize % n);
            }
        }
        out
    }
}

/// A record header as Fluvio decodes it (its attributes have no setter).
fn header(attributes: i8, timestamp_delta: i64, offset_delta: i64) -> RecordHeader {
    let mut b = vec![attributes as u8];
    timestamp_delta.encode_varint(&mut b).expect("encodes");
    offset_delta.encode_varint(&mut b).expect("encodes");
    RecordHeader::decode_from(&mut Cursor::new(b), 0).expect("decodes")
}

/// What Fluvio's decoder reads: the base offset and timestamp, and the records.
pub(super) type Decoded = (i64, i64, Vec<Record>);

pub fn fluvio_decodes(bytes: &[u8], version: i16) -> Option<Decoded> {
    let mut input = SmartModuleInput::default();
    input.decode(&mut Cursor::new(bytes), version).ok()?;
    let (base, stamp) = (input.base_offset(), input.base_timestamp());
    #[allow(deprecated)]
    let records = input.try_into_records(version).ok()?;
    Some((base, stamp, records))
}

/// Whether Fluvio's decoder can be run on an input the hand reader refused with `e`, without
/// trapping or allocating a bad length.
fn fluvio_runs_safely(bytes: &[u8], e: &wire::Undecodable) -> bool {
    match e.why {
        Why::Short | Why::Tag | Why::Utf8 => true,
        Why::Length => {
            let mut len = 0i64;
            let mut c = Cursor::new(&bytes[e.at..]);
            fluvio_smartmodule::dataplane::core::DecoderVarInt::decode_varint(&mut len, &mut c)
                .is_ok()
                && (0..SAFE_ALLOC).contains(&len)
        }
        Why::LongVarint | Why::Range | Why::Age => false,
    }
}

/// Fluvio's encoding of an output with these records and no error.
fn fluvio_output(successes: Vec<Record>, version: i16) -> Vec<u8> {
    let mut out = Vec::new();
    SmartModuleOutput::new(successes)
        .encode(&mut out, version)
        .expect("an output encodes");
    out
}

/// How the two readers took an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderOutcome {
    /// Both took it, alike.
    Taken,
    /// Both refused it.
    Refused,
    /// The hand reader refused it, and Fluvio's decoder was not run on it (see the module's
    /// note).
    RefusedUnchecked(Why),
}

/// The reader against Fluvio's decoder on `bytes` at `version`.
pub fn check_reader(bytes: &[u8], version: i16) -> ReaderOutcome {
    let ours = wire::input(bytes, version).and_then(|i| Ok((i, i.collect()?)));
    let (input, records) = match ours {
        Ok(read) => read,
        Err(e) => {
            assert!(e.at <= bytes.len(), "refused past the end: {e:?}");
            if !fluvio_runs_safely(bytes, &e) {
                return ReaderOutcome::RefusedUnchecked(e.why);
            }
            assert!(
                fluvio_decodes(bytes, version).is_none(),
                "refused ({e:?}) what Fluvio decodes: {bytes:?} at {version}"
            );
            return ReaderOutcome::Refused;
        }
    };
    let (base, stamp, fluvio) = fluvio_decodes(bytes, version)
        .unwrap_or_else(|| panic!("took what Fluvio refuses: {bytes:?} at {version}"));
    assert_eq!((input.base_offset, input.base_timestamp), (base, stamp));
    assert_eq!(records.len(), fluvio.len());
    for (r, f) in records.iter().zip(&fluvio) {
        assert_eq!(r.key, f.key().map(|k| k.as_ref()));
        assert_eq!(r.value, f.value().as_ref());
        assert_eq!(
            (r.timestamp_delta, r.offset_delta, r.headers),
            (f.timestamp_delta(), f.offset_delta(), f.headers)
        );
    }
    // Passed whole, the records leave as Fluvio writes them (attributes included).
    let size = records.iter().map(Stored::encoded_len).sum();
    let mut out = Output::with_capacity(size);
    records.iter().for_each(|r| out.pass(r));
    let out = out.finish();
    assert_eq!(out.len(), 4 + size + 1, "the records' sizes as encoded");
    assert_eq!(out, fluvio_output(fluvio, version));
    ReaderOutcome::Taken
}

/// Emits drawn from `ops` over `n` records, of every kind, with values from `values`.
fn draw_emits(ops: &[u8], n: usize, values: &[Vec<u8>]) -> Vec<Emit> {
    if n == 0 {
        return Vec::new();
    }
    let value = |k: usize| {
        values
            .get(k % values.len().max(1))
            .cloned()
            .unwrap_or_default()
    };
    ops.chunks(2)
        .enumerate()
        .map(|(k, op)| {
            let i = op.get(1).copied().unwrap_or(0) as usize % n;
            match op[0] % 3 {
                0 => Emit::Pass(i),
                1 => Emit::Replace(i, value(k)),
                _ => Emit::New {
                    at: i,
                    key: value(k + 1),
                    value: value(k),
                },
            }
        })
        .collect()
}

/// What the module emitted for `emits` when Fluvio's records and encoder made its output.
fn fluvio_emitted(records: &[Record], emits: &[Emit]) -> Vec<Record> {
    emits
        .iter()
        .map(|e| match e {
            Emit::Pass(i) => records[*i].clone(),
            Emit::Replace(i, value) => {
                let mut r = records[*i].clone();
                r.value = value.clone().into();
                r
            }
            Emit::New { at, key, value } => {
                let mut r = Record::new_key_value(key.clone(), value.clone());
                r.preamble = records[*at].preamble.clone();
                r
            }
        })
        .collect()
}

/// The writer against Fluvio's encoder: every kind of emit over records that decoded.
pub(super) fn check_writer(bytes: &[u8], version: i16, ops: &[u8], values: &[Vec<u8>]) {
    let Ok(input) = wire::input(bytes, version) else {
        return;
    };
    let Ok(records) = input.collect() else { return };
    let (_, _, fluvio) = fluvio_decodes(bytes, version).expect("the reader's check ran first");
    let emits = draw_emits(ops, records.len(), values);
    let out = output(&records, &emits);
    let size: usize = emits.iter().map(|e| emitted_len(e, &records)).sum();
    let out = out.finish();
    assert_eq!(out.len(), 4 + size + 1, "the emits' sizes as encoded");
    let want = fluvio_output(fluvio_emitted(&fluvio, &emits), version);
    assert_eq!(out, want, "emits {emits:?}");
}

/// `array_map` as the module answered it when Fluvio decoded its input and encoded its output.
pub fn fluvio_array_map(p: &mut Processor, bytes: &[u8], version: i16) -> Reply {
    let undecodable = Reply {
        code: SmartModuleTransformErrorStatus::DecodingBaseInput as i32,
        output: None,
    };
    let Some((base, _, records)) = fluvio_decodes(bytes, version) else {
        return undecodable;
    };
    let mut output = SmartModuleOutput::default();
    match p.process(&fluvio_inputs(&records, base)) {
        Ok(emits) => output.successes = fluvio_emitted(&records, &emits),
        Err(e) => {
            let record = records.get(e.index).cloned().unwrap_or_default();
            output.error = Some(SmartModuleTransformRuntimeError::new(
                &record,
                base,
                SmartModuleKind::ArrayMap,
                eyre!("{}", e.message),
            ));
        }
    }
    let mut out = Vec::new();
    output.encode(&mut out, version).expect("an output encodes");
    Reply {
        code: output.successes.len() as i32,
        output: Some(out),
    }
}

/// What `array_map` said when it refused its call: the runtime error's message, read as the
/// engine reads it (code 0, an output whose error carries the message); `None` for no refusal.
pub fn refusal(reply: &Reply, version: i16) -> Option<String> {
    if reply.code != 0 {
        return None;
    }
    let mut output = SmartModuleOutput::default();
    output
        .decode(&mut Cursor::new(reply.output.as_deref()?), version)
        .ok()?;
    output.error.map(|e| e.hint)
}

/// `look_back` as the module did it when Fluvio decoded its input.
pub fn fluvio_look_back(p: &mut Processor, bytes: &[u8], version: i16) {
    if let Some((base, _, records)) = fluvio_decodes(bytes, version) {
        p.look_back(&fluvio_inputs(&records, base));
    }
}

/// Fluvio's records as the core reads them, each at its offset (`base` + its delta).
fn fluvio_inputs(records: &[Record], base: i64) -> Vec<RecordIn<'_>> {
    records
        .iter()
        .map(|r| {
            RecordIn::new(r.key().map(|k| k.as_ref()), r.value().as_ref())
                .at(base.saturating_add(r.offset_delta()))
        })
        .collect()
}

/// The calls against the module as it was with Fluvio's codec: `look_back` leaves the same
/// state, `array_map` gives the same code and the same output bytes.
pub(super) fn check_calls(bytes: &[u8], version: i16, config: &Config, read: ReaderOutcome) {
    let (mut ours, mut theirs) = (Processor::new(config), Processor::new(config));
    let back = look_back(&mut ours, bytes, version);
    if let ReaderOutcome::RefusedUnchecked(_) = read {
        assert_ne!(back.code, 0, "look_back took an input the reader refused");
        let reply = array_map(&mut ours, bytes, version);
        let said = refusal(&reply, version).expect("a refusal in words");
        assert!(said.contains("does not decode at byte"), "{said}");
        return;
    }
    fluvio_look_back(&mut theirs, bytes, version);
    assert_eq!(
        ours.checkpoint(),
        theirs.checkpoint(),
        "the state after look_back"
    );
    let reply = array_map(&mut ours, bytes, version);
    let want = fluvio_array_map(&mut theirs, bytes, version);
    if want.code == SmartModuleTransformErrorStatus::DecodingBaseInput as i32 && version >= 0 {
        // Fluvio's codec gave a bare status; the module says where and why instead.
        let said = refusal(&reply, version)
            .unwrap_or_else(|| panic!("a refusal in words, not {reply:?} (version {version})"));
        assert!(said.contains("does not decode at byte"), "{said}");
        return;
    }
    assert_eq!(
        without_backtrace(reply, version),
        without_backtrace(want, version)
    );
}

/// A refusal's hint is eyre's report, which natively (not in WebAssembly) ends with a stack
/// backtrace of where it was made when `RUST_BACKTRACE` is set: that part is left out.
pub fn without_backtrace(mut reply: Reply, version: i16) -> Reply {
    let Some(bytes) = &reply.output else {
        return reply;
    };
    let mut output = SmartModuleOutput::default();
    if output.decode(&mut Cursor::new(bytes), version).is_err() {
        return reply;
    }
    if let Some(e) = &mut output.error
        && let Some(at) = e.hint.find("\n\nStack backtrace:")
    {
        e.hint.truncate(at);
        let mut out = Vec::new();
        output.encode(&mut out, version).expect("an output encodes");
        reply.output = Some(out);
    }
    reply
}

/// Params from a byte: the view, malformed records passed or refusing the call.
fn config(p: u8) -> Config {
    Config {
        view: pick(p, 1, View::Frames, View::Pressure),
        malformed: pick(p, 2, Malformed::Pass, Malformed::Fail),
        ..Config::default()
    }
}

/// One input through every check.
pub fn check_wire_input(bytes: &[u8], version: i16, p: u8, ops: &[u8], values: &[Vec<u8>]) {
    let read = check_reader(bytes, version);
    if read == ReaderOutcome::Taken {
        check_writer(bytes, version, ops, values);
    }
    check_calls(bytes, version, &config(p), read);
}

/// `wire`: byte 0 = the shape (bit 0: a [`WireCase`] drawn from the rest, else the rest is the
/// input itself) and the params (bits 1–2: see `config`); byte 1 = the version (an index into
/// the versions where a field comes or goes) when the rest is the input.
pub fn check_wire(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let p = head >> 1;
    if head & 1 == 0 {
        let Some((&v, bytes)) = rest.split_first() else {
            return;
        };
        let version = VERSIONS[v as usize % VERSIONS.len()];
        check_wire_input(bytes, version, p, bytes, &[bytes.to_vec()]);
        return;
    }
    let mut u = Unstructured::new(rest);
    let Ok(case) = WireCase::arbitrary(&mut u) else {
        return;
    };
    let ops: Vec<u8> = u.arbitrary().unwrap_or_default();
    let values: Vec<Vec<u8>> = case.log.records().into_iter().map(|(_, v)| v).collect();
    check_wire_input(&case.bytes(), case.version(), p, &ops, &values);
}
