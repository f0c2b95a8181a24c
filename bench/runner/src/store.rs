//! The engine's store memory: how much of it one call needs, found as the smallest store limit
//! under which the call still runs. The store's memory is the module's linear memory, which
//! grows and never shrinks; the engine refuses growth past the limit, and the call fails.

use agent_fold::corpus::{Corpus, CorpusConfig};
use agent_fold::module::Instance;
use agent_fold::record::Rec;
use anyhow::Result;

/// The store limits tried are multiples of this.
const STEP: usize = 1 << 20;

/// The engine's default store limit (fluvio-smartengine 0.50.1).
pub(crate) const DEFAULT_STORE: usize = 1_000_000_000;

/// The smallest store, to a MiB, in which a fresh instance of `wasm` with `params` runs `calls`;
/// `None` when even the default store is too small.
pub(crate) fn least_store(
    wasm: &[u8],
    params: &[(String, String)],
    calls: impl Fn(&mut Instance) -> Result<()>,
) -> Option<usize> {
    let runs = |limit: usize| {
        Instance::in_store(wasm, params, Some(limit)).is_ok_and(|mut i| calls(&mut i).is_ok())
    };
    let (mut lo, mut hi) = (0, DEFAULT_STORE.div_ceil(STEP));
    if !runs(hi * STEP) {
        return None;
    }
    // `lo` fails (a store of nothing holds no module), `hi` runs.
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if runs(mid * STEP) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi * STEP)
}

/// The least store in which one session of `n` user messages (pages of 10,000, the pressure
/// view at its default params) runs through a fresh instance.
pub(crate) fn long_session(wasm: &[u8], n: usize) -> Option<usize> {
    let params = vec![("emit".to_owned(), "pressure".to_owned())];
    least_store(wasm, &params, |i| {
        for start in (0..n).step_by(10_000) {
            let page: Vec<Rec> = (start..n.min(start + 10_000))
                .map(|seq| {
                    let line = format!(
                        r#"{{"type":"user/message","session_id":"s","seq":{seq},"message":{{"role":"user","content":"message {seq}"}}}}"#
                    );
                    Rec::new(Some(b"s"), line.as_bytes())
                })
                .collect();
            i.process(&page, start as i64)?;
        }
        Ok(())
    })
}

/// What one measurement ran, and the store it needed.
pub(crate) struct StoreRow {
    pub what: String,
    /// Keys and values handed over, per call.
    pub bytes: usize,
    pub store: Option<usize>,
}

/// A module measured: its name, `.wasm` and params.
pub(crate) type Subject<'a> = (&'a str, &'a [u8], Vec<(String, String)>);

/// For each of `pages`, two `array_map` calls of `records` each (the second while the first's
/// output is still held, as in a stream); for each of `look_backs`, one `look_back` of
/// `history`.
pub(crate) fn measure(
    pages: &[Subject],
    look_backs: &[Subject],
    records: [&[Rec]; 2],
    history: &[Rec],
) -> Vec<StoreRow> {
    let mut rows = Vec::new();
    for (name, wasm, params) in pages {
        rows.push(StoreRow {
            what: format!("{name}: 2 × array_map of {} records", records[0].len()),
            bytes: records[0].iter().map(Rec::bytes).sum(),
            store: least_store(wasm, params, |i| {
                i.process(records[0], 0)?;
                i.process(records[1], records[0].len() as i64)?;
                Ok(())
            }),
        });
    }
    for (name, wasm, params) in look_backs {
        rows.push(StoreRow {
            what: format!("{name}: look_back of {} records", history.len()),
            bytes: history.iter().map(Rec::bytes).sum(),
            store: least_store(wasm, params, |i| i.look_back(history, 0)),
        });
    }
    rows
}

/// One look_back call's outcome in the default store: what ran, how many bytes of records, and
/// the engine's error when it failed.
pub(crate) struct LookBack {
    pub what: String,
    pub bytes: usize,
    pub error: Option<String>,
}

/// One `look_back` call of about `bytes` of generated records (keys and values) for each of
/// `subjects`, in the engine's default store.
pub(crate) fn one_look_back(subjects: &[Subject], bytes: usize, seed: u64) -> Vec<LookBack> {
    let mut total = 0;
    let history: Vec<Rec> = Corpus::new(CorpusConfig {
        seed,
        ..CorpusConfig::default()
    })
    .take_while(|r| {
        total += r.bytes();
        total <= bytes
    })
    .collect();
    let bytes = history.iter().map(Rec::bytes).sum();
    subjects
        .iter()
        .map(|(name, wasm, params)| {
            let ran = Instance::new(wasm, params, None).and_then(|mut i| i.look_back(&history, 0));
            LookBack {
                what: format!("{name}: look_back of {} records", history.len()),
                bytes,
                error: ran.err().map(|e| format!("{e:#}")),
            }
        })
        .collect()
}
