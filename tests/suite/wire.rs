//! The SmartModule's hand-written wire reader and writer against Fluvio's codec, byte for byte
//! (`agent_fold_testkit::checks::wire` says what is held): every attribute value, header counts
//! and deltas at every varint width and past ±2^31, every key shape, every version where a field
//! comes or goes, an input cut at every byte and with every byte overwritten, encodings longer
//! than Fluvio writes, the refusals where Fluvio's decoder would trap; the engine's own inputs
//! pass as copies; and the calls against the module as it was with Fluvio's decoder and encoder.

use agent_fold::corpus::{Corpus, CorpusConfig};
use agent_fold::module::Instance;
use agent_fold::record::Rec;
use agent_fold_core::Processor;
use agent_fold_smartmodule::wire::{self, Why};
use agent_fold_smartmodule::{array_map, look_back};
use agent_fold_testkit::checks::{
    KeyShape, ReaderOutcome, Wide, WireCase, WireRecord, check_reader, check_wire,
    check_wire_input, fluvio_array_map, fluvio_look_back, refusal, without_backtrace,
};
use agent_fold_testkit::{Drawn, GenLog, seeded_bytes};
use fluvio_smartmodule::dataplane::core::Encoder;
use fluvio_smartmodule::dataplane::smartmodule::SmartModuleInput;

fn log() -> GenLog {
    GenLog {
        frames: Vec::new(),
        cuts: vec![1],
        keyed: false,
    }
}

fn case(records: Vec<WireRecord>) -> WireCase {
    WireCase {
        version: 0, // 22
        base_offset: 1000,
        base_timestamp: 1_700_000_000_000,
        params: Vec::new(),
        lookback: None,
        join_record: Vec::new(),
        records,
        log: log(),
        edits: Vec::new(),
        cut: None,
    }
}

fn record(value: &[u8]) -> WireRecord {
    WireRecord {
        attributes: 0,
        timestamp_delta: Wide::Small(0),
        offset_delta: None,
        key: KeyShape::None,
        headers: Wide::Small(0),
        value: Some(value.to_vec()),
    }
}

/// Every check on `case`'s bytes; how the readers took them.
fn check(case: &WireCase) -> ReaderOutcome {
    let bytes = case.bytes();
    let read = check_reader(&bytes, case.version());
    check_wire_input(
        &bytes,
        case.version(),
        0,
        &[0, 0, 1, 0, 2, 0],
        &[b"{}".to_vec()],
    );
    read
}

#[test]
fn every_attribute_value() {
    for a in i8::MIN..=i8::MAX {
        let mut r = record(b"{\"type\":\"x\"}");
        r.attributes = a;
        assert_eq!(
            check(&case(vec![r])),
            ReaderOutcome::Taken,
            "attributes {a}"
        );
    }
}

#[test]
fn header_counts_and_deltas_at_every_varint_width() {
    let taken = wire::varint_edges();
    let wide = [
        i32::MAX as i64 + 1,
        i32::MIN as i64 - 1,
        1 << 40,
        -(1 << 61),
    ];
    for v in taken.iter().copied().chain(wide) {
        for field in 0..3 {
            let mut r = record(b"1");
            let w = Wide::Big(v);
            match field {
                0 => r.headers = w,
                1 => r.timestamp_delta = w,
                _ => r.offset_delta = Some(w),
            }
            let read = check(&case(vec![record(b"0"), r]));
            // Fluvio's encoder writes a value past ±2^31 as other bytes, which then read as
            // some other value: refused where it reads outside ±2^31, taken where not.
            if taken.contains(&v) {
                assert_eq!(read, ReaderOutcome::Taken, "field {field} = {v}");
            } else {
                assert!(
                    matches!(
                        read,
                        ReaderOutcome::Taken | ReaderOutcome::RefusedUnchecked(Why::Range)
                    ),
                    "field {field} = {v}: {read:?}"
                );
            }
        }
    }
}

#[test]
fn every_key_shape() {
    let shapes = [
        KeyShape::None,
        KeyShape::Empty,
        KeyShape::Bytes(b"session-1".to_vec()),
        KeyShape::Bytes(vec![0xff, 0, 0x80]),
        KeyShape::Long(b'k', 127),
        KeyShape::Long(b'k', 128),
        KeyShape::Long(b'k', 16_384),
    ];
    for key in shapes {
        let mut r = record(br#"{"type":"thinking/tokens","estimated_tokens_delta":1}"#);
        r.key = key.clone();
        assert_eq!(
            check(&case(vec![r.clone(), r])),
            ReaderOutcome::Taken,
            "{key:?}"
        );
    }
}

#[test]
fn every_version_where_a_field_comes_or_goes() {
    for v in 0..9 {
        let mut c = case(vec![record(b"{}"), record(b"x")]);
        c.version = v;
        c.params = vec![("emit".into(), "frames".into()), ("k".into(), "中".into())];
        c.lookback = Some((100, Some((5, 7))));
        c.join_record = b"join".to_vec();
        let want = if c.version() < 0 {
            ReaderOutcome::Refused // nothing is read: no records
        } else {
            ReaderOutcome::Taken
        };
        assert_eq!(check(&c), want, "version {}", c.version());
    }
}

/// A small input with a key, a header count and a lookback with an age.
fn small() -> WireCase {
    let mut r = record(br#"{"type":"user/message","seq":1}"#);
    r.key = KeyShape::Bytes(b"s".to_vec());
    r.headers = Wide::Small(2);
    r.attributes = -3;
    let mut c = case(vec![r, record(b"{}")]);
    c.params = vec![("a".into(), "b".into())];
    c.lookback = Some((3, Some((1, 2))));
    c
}

#[test]
fn an_input_cut_at_every_byte_is_refused_by_both() {
    let c = small();
    let n = c.bytes().len();
    for cut in 0..n {
        let mut c = c.clone();
        c.cut = Some(cut as u16);
        assert_eq!(check(&c), ReaderOutcome::Refused, "cut at {cut} of {n}");
    }
}

#[test]
fn every_byte_overwritten() {
    let c = small();
    let n = c.bytes().len();
    let mut reads = std::collections::BTreeMap::new();
    for at in 0..n {
        for b in [0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff] {
            let mut c = c.clone();
            c.edits = vec![(at as u16, b)];
            *reads.entry(format!("{:?}", check(&c))).or_insert(0) += 1;
        }
    }
    // Damage is taken (a value byte), refused alike, and refused where Fluvio would trap.
    assert!(reads.len() >= 3, "{reads:?}");
}

/// A `SmartModuleInput` around `raw` records bytes, as Fluvio lays it out at version 22.
fn around(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    5i64.encode(&mut out, 22).unwrap();
    raw.to_vec().encode(&mut out, 22).unwrap();
    out.extend_from_slice(&[0, 0, 0]); // no params, no lookback
    Vec::<u8>::new().encode(&mut out, 22).unwrap();
    0i64.encode(&mut out, 22).unwrap();
    out
}

/// One record's raw bytes: count 1, then `record`.
fn one(record: &[u8]) -> Vec<u8> {
    let mut raw = 1i32.to_be_bytes().to_vec();
    raw.extend_from_slice(record);
    raw
}

#[test]
fn encodings_longer_than_fluvio_writes_are_read_and_written_back_as_fluvio_does() {
    // len, attributes, ts, offset, no key, value length, value, headers.
    let records: [&[u8]; 6] = [
        &[0x12, 0, 0, 0, 0, 0x06, b'a', b'b', b'c', 0], // canonical: 9 bytes
        &[0x92, 0x00, 0, 0, 0, 0, 0x06, b'a', b'b', b'c', 0], // its length in 2 bytes
        &[0x12, 0, 0x80, 0x80, 0x00, 0, 0, 0x06, b'a', b'b', b'c', 0], // ts in 3
        &[0x00, 0, 0, 0, 0, 0x06, b'a', b'b', b'c', 0], // a length of 0
        &[0x01, 0, 0, 0, 0, 0x06, b'a', b'b', b'c', 0], // a length of -1
        &[0x12, 0, 0, 0, 0, 0x86, 0x80, 0x00, b'a', b'b', b'c', 0], // value length in 3
    ];
    for (k, r) in records.iter().enumerate() {
        let bytes = around(&one(r));
        assert_eq!(check_reader(&bytes, 22), ReaderOutcome::Taken, "record {k}");
        check_wire_input(&bytes, 22, 0, &[0, 0], &[]);
        // The output is Fluvio's encoding: the canonical record, whatever came in.
        let reply = array_map(&mut Processor::new(&Default::default()), &bytes, 22);
        let out = reply.output.expect("an output");
        assert_eq!(&out[4..out.len() - 1], records[0], "record {k}");
    }
}

#[test]
fn refusals_where_fluvio_would_trap() {
    let cases: [(&[u8], Why); 4] = [
        (&[0x0c, 0, 0, 0, 0, 0x01, 0], Why::Length), // value length -1
        (
            &[0x0c, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0],
            Why::Length,
        ), // 2^34
        (&[0x8c; 11], Why::LongVarint),
        (
            &[0x0c, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0, 0],
            Why::Range,
        ), // ts 2^31
    ];
    for (r, why) in cases {
        let bytes = around(&one(r));
        let e = wire::input(&bytes, 22)
            .and_then(|i| i.collect().map(|_| ()))
            .expect_err("refused");
        assert_eq!(e.why, why, "{r:?}");
        assert_eq!(
            check_reader(&bytes, 22),
            ReaderOutcome::RefusedUnchecked(why)
        );
        let p = &mut Processor::new(&Default::default());
        // Refused in words, the byte and the reason kept (not a bare status).
        let said = refusal(&array_map(p, &bytes, 22), 22).expect("a refusal");
        assert!(
            said.contains(&format!("does not decode at byte {}: {why}", e.at)),
            "{said}"
        );
        assert_ne!(look_back(p, &bytes, 22).code, 0);
    }
    // An age whose nanoseconds carry its seconds past u64::MAX.
    let mut bytes = Vec::new();
    5i64.encode(&mut bytes, 22).unwrap();
    one(&[0x06, 0, 0, 0, 0, 0, 0])
        .encode(&mut bytes, 22)
        .unwrap();
    bytes.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 1]);
    bytes.extend_from_slice(&u64::MAX.to_be_bytes());
    bytes.extend_from_slice(&1_000_000_000u32.to_be_bytes());
    assert_eq!(
        check_reader(&bytes, 22),
        ReaderOutcome::RefusedUnchecked(Why::Age)
    );
}

#[test]
fn the_engines_own_inputs_pass_as_copies_of_their_records() {
    let corpus: Vec<Rec> = Corpus::new(CorpusConfig {
        seed: 3,
        ..CorpusConfig::default()
    })
    .take(2_000)
    .collect();
    let input = Instance::input(&corpus, 40);
    let mut bytes = Vec::new();
    input.encode(&mut bytes, 22).unwrap();
    assert_eq!(check_reader(&bytes, 22), ReaderOutcome::Taken);
    let read = wire::input(&bytes, 22).unwrap();
    let mut out = wire::Output::with_capacity(0);
    read.collect().unwrap().iter().for_each(|r| out.pass(r));
    let mut want = input.raw_bytes().to_vec();
    want.push(0);
    assert_eq!(out.finish(), want);
    // And the calls answer as the module did with Fluvio's codec, both views.
    for view in ["frames", "pressure"] {
        let p = || Processor::from_params([("emit", view)]).unwrap();
        let reply = array_map(&mut p(), &bytes, 22);
        assert!(reply.code > 0, "{view}");
        assert_eq!(reply, fluvio_array_map(&mut p(), &bytes, 22), "{view}");
    }
}

#[test]
fn the_hosts_inputs_are_what_fluvios_encoder_writes() {
    let mut records: Vec<Rec> = Corpus::new(CorpusConfig {
        seed: 5,
        ..CorpusConfig::default()
    })
    .take(500)
    .collect();
    // Every key shape, an empty value, and a value whose length needs a 3-byte varint.
    records.push(Rec::new(None, b""));
    records.push(Rec::new(Some(b""), b"{}"));
    records.push(Rec::new(Some(b"k"), &vec![b'x'; 70_000]));
    for n in [0, 1, 7, records.len()] {
        let cut = &records[..n];
        let input = Instance::input(cut, 1_234);
        let fluvio = cut.iter().map(Rec::to_fluvio).enumerate();
        let at_offsets = fluvio.map(|(i, mut r)| {
            r.preamble.set_offset_delta(i as i64);
            r
        });
        let want = SmartModuleInput::try_from_records(at_offsets.collect(), 22).unwrap();
        assert_eq!(input.raw_bytes(), want.raw_bytes(), "{n} records");
        assert_eq!((input.base_offset(), input.base_timestamp()), (1_234, 0));
    }
}

#[test]
fn a_refused_call_answers_as_fluvio_wrote_it() {
    let mut c = case(vec![record(b"{}"), record(b"not json"), record(b"{}")]);
    c.records[1].key = KeyShape::Bytes(b"k".to_vec());
    let bytes = c.bytes();
    let fail = || Processor::from_params([("malformed", "fail")]).unwrap();
    let reply = without_backtrace(array_map(&mut fail(), &bytes, 22), 22);
    assert_eq!(reply.code, 0);
    let want = without_backtrace(fluvio_array_map(&mut fail(), &bytes, 22), 22);
    assert_eq!(reply, want);
    let text = String::from_utf8_lossy(reply.output.as_deref().unwrap()).into_owned();
    assert!(text.contains("not json"), "{text}");
}

#[test]
fn generated_cases_and_bytes() {
    let mut reads = std::collections::BTreeMap::new();
    for seed in 0..400u64 {
        let bytes = seeded_bytes(seed, [64, 300, 1200, 4000][seed as usize % 4]);
        // Odd seeds: a drawn case; even: the bytes as an input.
        let mut data = vec![(seed as u8 & 0x6) | (seed as u8 & 1)];
        data.extend_from_slice(&bytes);
        check_wire(&data);
        if seed % 2 == 1
            && let Some(c) = WireCase::drawn(&bytes)
        {
            let read = check_reader(&c.bytes(), c.version());
            *reads.entry(format!("{read:?}")).or_insert(0) += 1;
        }
    }
    assert!(reads.contains_key("Taken"), "{reads:?}");
}

#[test]
fn look_back_leaves_the_state_fluvio_decoding_left() {
    for seed in 0..20 {
        let log = GenLog::from_seed(seed, 2000);
        let mut c = case(Vec::new());
        c.records = (0..log.frames.len())
            .map(|i| WireRecord {
                key: KeyShape::Frame,
                value: None,
                attributes: i as i8,
                ..record(b"")
            })
            .collect();
        c.log = log;
        let bytes = c.bytes();
        for view in ["frames", "pressure"] {
            let p = || Processor::from_params([("emit", view)]).unwrap();
            let (mut ours, mut theirs) = (p(), p());
            assert_eq!(look_back(&mut ours, &bytes, 22).code, 0);
            fluvio_look_back(&mut theirs, &bytes, 22);
            if view == "frames" {
                assert!(ours.sessions() > 0 || c.records.is_empty(), "seed {seed}");
            }
            assert_eq!(ours.checkpoint(), theirs.checkpoint(), "seed {seed} {view}");
        }
    }
}
