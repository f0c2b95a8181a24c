//! Shared helpers for the integration tests: the built `.wasm` loaded once, records, a case run
//! natively and in Fluvio's engine invocation by invocation, outputs rendered as text for
//! snapshots; the frames view's checks in [`frames`], the pressure view's in [`pressure`].
//! Every helper takes the module's params as given, so any view's tests may use them.

pub(crate) mod fluvio;
pub(crate) mod frames;
pub(crate) mod pressure;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agent_fold::module::{Instance, default_wasm_path, native_process};
pub(crate) use agent_fold::record::Rec;
use agent_fold::record::inputs;
use agent_fold_core::Processor;

/// A file of the repository's own test data (`tests/data`).
pub(crate) fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// A file of the real agent logs and reproducers beside the repository (`../shared/`), or
/// `None` with the reason printed where it is absent — and under `CI=true` a failure: CI is
/// meant to have them.
pub(crate) fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel);
    if p.exists() {
        return Some(p);
    }
    skip(&format!(
        "{} is absent (the real logs and reproducers live in ../shared beside the repository)",
        p.display()
    ));
    None
}

/// A prerequisite is missing: under `CI=true` the test fails (CI is meant to have it);
/// elsewhere it prints why and the caller returns, the test passing.
pub(crate) fn skip(reason: &str) {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "CI=true, and the test cannot run: {reason}"
    );
    println!("skipped: {reason}");
}

/// A real agent log of `../shared/data/real` (see [`shared`]).
pub(crate) fn real_data(rel: &str) -> Option<PathBuf> {
    shared(&format!("data/real/{rel}"))
}

/// Module params as literals: `&[("emit", "frames"), ...]`.
pub(crate) type Params<'a> = &'a [(&'a str, &'a str)];

/// The built SmartModule, read once per test binary.
pub(crate) fn wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let path = default_wasm_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "no SmartModule at {} ({e}): run scripts/build-wasm.sh",
                path.display()
            )
        })
    })
}

pub(crate) fn owned(params: Params) -> Vec<(String, String)> {
    params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The value a param takes in `params` (the last one given wins), else `default`.
pub(crate) fn param<'a>(params: Params<'a>, key: &str, default: &'a str) -> &'a str {
    params
        .iter()
        .rev()
        .find(|(k, _)| *k == key)
        .map_or(default, |(_, v)| v)
}

/// Look-back history stands before the input: offsets −n … −1.
fn history_base(history: &[Rec]) -> i64 {
    -(history.len() as i64)
}

/// A native instance, its history replayed through `look_back`.
pub(crate) fn processor(params: Params, history: Option<&[Rec]>) -> Processor {
    let mut p = Processor::from_params(params.iter().copied()).expect("valid params");
    if let Some(h) = history {
        p.look_back(&inputs(h, history_base(h)));
    }
    p
}

/// An instance of the built `.wasm` in fluvio-smartengine, its history through `look_back`.
pub(crate) fn engine(params: Params, history: Option<&[Rec]>) -> Instance {
    Instance::new(
        wasm(),
        &owned(params),
        history.map(|h| (h, history_base(h))),
    )
    .expect("the engine loads the module")
}

/// A `request/header` an adapter inferred rather than read off one line (a session's envelope
/// not in its log, its window, its compaction reserve: `extras.source_type` is `inferred`).
pub(crate) fn inferred(frame: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(frame)
        .is_ok_and(|v| v["type"] == "request/header" && v["extras"]["source_type"] == "inferred")
}

/// A record with an explicit key (`None`: no key).
pub(crate) fn rec(key: Option<&str>, value: &str) -> Rec {
    Rec::new(key.map(str::as_bytes), value.as_bytes())
}

/// Records cut into invocations of `batch` records (0: all at once).
pub(crate) fn split(records: &[Rec], batch: usize) -> Vec<Vec<Rec>> {
    let size = if batch == 0 {
        records.len().max(1)
    } else {
        batch
    };
    records.chunks(size).map(<[Rec]>::to_vec).collect()
}

/// One invocation's answer: its records, or the error text.
pub(crate) type Outcome = Result<Vec<Rec>, String>;

/// Runs invocations one after another on one native instance; each invocation's base offset
/// is the count of records before it. An error does not stop the run (the state must be as if
/// the failed invocation never came).
pub(crate) fn native_pages(p: &mut Processor, pages: &[Vec<Rec>]) -> Vec<Outcome> {
    let mut base = 0;
    pages
        .iter()
        .map(|page| {
            let out = native_process(p, page, base).map_err(|e| format!("{e:#}"));
            base += page.len() as i64;
            out
        })
        .collect()
}

/// [`native_pages`] on an instance of the `.wasm` in the engine.
pub(crate) fn engine_pages(i: &mut Instance, pages: &[Vec<Rec>]) -> Vec<Outcome> {
    let mut base = 0;
    pages
        .iter()
        .map(|page| {
            let out = i.process(page, base).map_err(|e| format!("{e:#}"));
            base += page.len() as i64;
            out
        })
        .collect()
}

/// Both answers to one invocation: equal records, or an error from each.
pub(crate) type Both = Result<Vec<Rec>, (String, String)>;

/// Runs the invocations natively and in the engine (fresh instances of `params`, `history`
/// through `look_back`), asserts that both give the same records byte for byte, keys too (or
/// both fail), and returns the answers.
pub(crate) fn run_both(params: Params, history: Option<&[Rec]>, pages: &[Vec<Rec>]) -> Vec<Both> {
    let native = native_pages(&mut processor(params, history), pages);
    let wasm = engine_pages(&mut engine(params, history), pages);
    native
        .into_iter()
        .zip(wasm)
        .enumerate()
        .map(|(i, (n, w))| match (n, w) {
            (Ok(n), Ok(w)) => {
                assert_eq!(
                    render(&n),
                    render(&w),
                    "invocation {i}: native and .wasm differ"
                );
                assert_eq!(
                    n, w,
                    "invocation {i}: native and .wasm differ (bytes or keys)"
                );
                Ok(n)
            }
            (Err(n), Err(w)) => Err((n, w)),
            (n, w) => panic!("invocation {i}: native {n:?} but .wasm {w:?}"),
        })
        .collect()
}

/// A key as text: `-` for none.
fn key_text(key: &Option<Vec<u8>>) -> String {
    match key {
        Some(k) => format!("{:?}", String::from_utf8_lossy(k)),
        None => "-".into(),
    }
}

/// Records as text, one a line: `key | value`.
pub(crate) fn render(records: &[Rec]) -> String {
    records
        .iter()
        .map(|r| {
            format!(
                "{} | {}\n",
                key_text(&r.key),
                String::from_utf8_lossy(&r.value)
            )
        })
        .collect()
}

/// A whole case as text: params, history, then each invocation's input and answer.
pub(crate) fn render_case(
    params: Params,
    history: Option<&[Rec]>,
    pages: &[Vec<Rec>],
    answers: &[Both],
) -> String {
    let mut s = String::from("params:");
    if params.is_empty() {
        s.push_str(" (defaults)");
    }
    for (k, v) in params {
        s.push_str(&format!(" {k}={v}"));
    }
    s.push('\n');
    if let Some(h) = history {
        s.push_str("look_back:\n");
        s.push_str(&render(h));
    }
    for (i, (page, answer)) in pages.iter().zip(answers).enumerate() {
        s.push_str(&format!("--- invocation {i} in:\n"));
        s.push_str(&render(page));
        match answer {
            Ok(out) => {
                s.push_str(&format!("--- invocation {i} out:\n"));
                s.push_str(&render(out));
            }
            Err((native, engine)) => {
                s.push_str(&format!("--- invocation {i} failed.\nnative: {native}\n"));
                s.push_str(&format!(".wasm in the engine: {engine}\n"));
            }
        }
    }
    s
}
