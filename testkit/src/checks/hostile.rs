//! Target `hostile`: the shapes that broke the module once ([`HostileLog`]), through
//! [`Processor::process`] in invocations.

use agent_fold_core::{
    Adapter, Config, Emit, Frame, Input, MAX_KEY_LEN, Malformed, Processor, RecordIn, View,
};
use serde_json::Value;

use super::{
    assert_round_trip, check_frames_invocation, check_pressure_invocation, check_readers, inputs,
    materialise, pick, replay, restored, show, small_cap,
};
use crate::{Drawn, GenRecord, HostileLog};

/// The params a hostile log's first byte names.
pub fn hostile_config(log: &HostileLog) -> Config {
    let p = log.params;
    Config {
        view: pick(p, 1, View::Frames, View::Pressure),
        input: pick(p, 2, Input::AgentFold, Input::ClaudeCode),
        max_sessions: small_cap(p, 4, 3),
        malformed: pick(p, 32, Malformed::Pass, Malformed::Drop),
        ..Config::default()
    }
}

/// Whether a written checkpoint holds a session key over the limit.
fn holds_a_long_key(checkpoint: &str) -> bool {
    let doc: Value = serde_json::from_str(checkpoint).expect("a written checkpoint is JSON");
    let long = |s: &Value| {
        s["session"].as_str().is_some_and(|k| k.len() > MAX_KEY_LEN)
            || s["sessionBytes"]
                .as_array()
                .is_some_and(|b| b.len() > MAX_KEY_LEN)
    };
    doc["sessions"]
        .as_array()
        .is_some_and(|l| l.iter().any(long))
}

/// `hostile`: a [`HostileLog`] replayed in the invocations its cuts make. Never panics; every
/// record reads alike by the fast reader and the naive reference; the state stays within
/// `max_sessions` and keeps no key over 1,024 bytes; the frames view meets contract §5's accounting
/// identity and the pressure view's records agree with its checkpoint; checkpoints round-trip;
/// with room for every session, an invocation delivered again adds no `context/pressure` record
/// and changes nothing, and adapting inside the module gives what adapting first does.
pub fn check_hostile(data: &[u8]) {
    if let Ok(log) = HostileLog::from_bytes(data) {
        check_hostile_log(&log);
    }
}

pub fn check_hostile_log(log: &HostileLog) {
    let config = hostile_config(log);
    let roomy = config.max_sessions == Config::default().max_sessions;
    let recs = log.records();
    let records = inputs(&recs);
    let mut main = Processor::new(&config);
    let batches = log.batches(recs.len());
    let all_out = replay(&mut main, &records, batches, |main, page, out| {
        for r in page {
            check_readers(r.value);
        }
        let after = main.checkpoint();
        assert!(
            main.sessions() <= config.max_sessions,
            "{} sessions over a cap of {}",
            main.sessions(),
            config.max_sessions
        );
        assert!(
            !holds_a_long_key(&after),
            "state kept for a key over the limit"
        );
        match (config.view, config.input) {
            (View::Frames, Input::AgentFold) => check_frames_invocation(&config, page, out),
            (View::Pressure, Input::AgentFold) => {
                check_pressure_invocation(page, out, &after, &config);
            }
            (_, _) => check_adapted(&config, page, out),
        }
        assert_round_trip(&config, &after);
        if roomy {
            // The SPU's second pass over the same batch.
            let twin = restored(&config, &after);
            let again = main.process(page).expect("malformed=pass/drop never fails");
            if config.view == View::Pressure {
                assert_eq!(
                    main.checkpoint(),
                    after,
                    "a batch delivered again changed the state"
                );
                for e in &again {
                    let Emit::New { value, .. } = e else {
                        panic!("the pressure view passed a record: {e:?}")
                    };
                    assert!(
                        value.starts_with(br#"{"type":"context/error""#),
                        "delivered again, it answered anew: {}",
                        show(value)
                    );
                }
            }
            *main = twin;
        }
    });
    if roomy && config.input != Input::AgentFold {
        // Adapting inside the module gives what adapting first, then the module, gives.
        let mut adapter = Adapter::new(config.input, config.max_sessions);
        let direct = Config {
            input: Input::AgentFold,
            ..config.clone()
        };
        let mut p = Processor::new(&direct);
        let mut want: Vec<GenRecord> = Vec::new();
        for batch in log.batches(recs.len()) {
            let mut frames: Vec<GenRecord> = Vec::new();
            for i in batch {
                let (k, v) = &recs[i];
                let mut out = Vec::new();
                adapter.push(k.as_deref(), v, Some(i as i64), &mut out);
                frames.extend(out.into_iter().map(|f| (k.clone(), f)));
            }
            let ins: Vec<RecordIn> = frames
                .iter()
                .map(|(k, v)| RecordIn::new(k.as_deref(), v))
                .collect();
            want.extend(materialise(
                &ins,
                &p.process(&ins).expect("malformed=pass/drop never fails"),
            ));
        }
        let values = |r: &[GenRecord]| r.iter().map(|(_, v)| show(v)).collect::<Vec<_>>();
        let (got, want_values) = (values(&all_out), values(&want));
        if let Some(i) =
            (0..got.len().max(want_values.len())).find(|&i| got.get(i) != want_values.get(i))
        {
            panic!(
                "adapting inside the module ≠ adapting first, record {i} of {}/{}:\n{:?}\n{:?}",
                got.len(),
                want_values.len(),
                got.get(i),
                want_values.get(i)
            );
        }
        if config.view == View::Pressure {
            assert_eq!(all_out, want, "keys");
        }
    }
}

/// One invocation of an adapting instance: every record out is new, from a record of the page,
/// in order, keyed; an adapted frame is a JSON object; a line that is not one comes out as it
/// came (or not at all, under `malformed=drop`).
pub(super) fn check_adapted(config: &Config, page: &[RecordIn], out: &[Emit]) {
    let mut last = 0;
    for e in out {
        let Emit::New { at, value, .. } = e else {
            panic!("an adapting instance passed a record through: {e:?}")
        };
        assert!(*at < page.len() && *at >= last, "out of order: {at}");
        last = *at;
        let line = page[*at].value;
        match Frame::parse(value) {
            Some(_) => {}
            None => {
                assert!(
                    Frame::parse(line).is_none() && value == line,
                    "a line became no frame: {}",
                    show(line)
                );
                assert_eq!(
                    config.malformed,
                    Malformed::Pass,
                    "a malformed line passed under malformed=drop"
                );
            }
        }
    }
}
