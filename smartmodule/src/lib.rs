//! The agent-fold SmartModule: a thin adapter between Fluvio's records and
//! [`agent_fold_core::Processor`].
//!
//! `array_map` is exported by hand rather than through `#[smartmodule(array_map)]`: the derive
//! calls the user function once per record, but the fold's page is one invocation's records, so
//! the module must see the whole batch at once. `init` is hand-written too, to see every param's
//! name (the derive's params type cannot list them) and refuse unknown ones.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use agent_fold_core::{BatchError, Emit, ParamError, Processor, RecordIn};
use fluvio_smartmodule::Record;

#[cfg(target_arch = "wasm32")]
mod abi;

/// The instance's state: one per consumer stream, living as long as the stream.
static STATE: OnceLock<Mutex<Processor>> = OnceLock::new();

fn with_state<T>(f: impl FnOnce(&mut Processor) -> T) -> T {
    let cell = STATE.get_or_init(|| Mutex::new(Processor::new(&Default::default())));
    let mut guard = cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut guard)
}

/// `init`: reads the params; an unknown one or a bad value is refused with its name.
pub fn init(params: &BTreeMap<String, String>) -> Result<(), ParamError> {
    let processor = Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    with_state(|p| *p = processor);
    Ok(())
}

/// The records as the core reads them, each at its offset (`base_offset` + its delta).
fn inputs(records: &[Record], base_offset: i64) -> Vec<RecordIn<'_>> {
    records
        .iter()
        .map(|r| {
            RecordIn::new(r.key().map(|k| k.as_ref()), r.value().as_ref())
                .at(base_offset.saturating_add(r.preamble.offset_delta()))
        })
        .collect()
}

/// `array_map`: one invocation. Untouched frames leave as the very records that came in.
/// On error (`malformed=fail`) nothing is emitted; the error comes with the offending record
/// (boxed: the error path is cold, the `Ok` path should stay small).
pub fn process(
    records: Vec<Record>,
    base_offset: i64,
) -> Result<Vec<Record>, Box<(BatchError, Record)>> {
    let emits = match with_state(|p| p.process(&inputs(&records, base_offset))) {
        Ok(emits) => emits,
        Err(e) => {
            let record = records.into_iter().nth(e.index).unwrap_or_default();
            return Err(Box::new((e, record)));
        }
    };
    let mut slots: Vec<Option<Record>> = records.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(emits.len());
    for emit in emits {
        match emit {
            Emit::Pass(i) => out.push(slots[i].take().expect("each record passes once")),
            Emit::Replace(i, value) => {
                let mut r = slots[i].take().expect("each record passes once");
                r.value = value.into();
                out.push(r);
            }
            Emit::New { at, key, value } => {
                let mut r = Record::new_key_value(key, value);
                if let Some(src) = &slots[at] {
                    r.preamble = src.preamble.clone();
                }
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// `look_back`: replays history into the state, emitting nothing.
pub fn look_back(records: &[Record], base_offset: i64) {
    with_state(|p| p.look_back(&inputs(records, base_offset)));
}
