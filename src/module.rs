//! A module instance: the `.wasm` in `fluvio-smartengine`, run as a Fluvio SPU runs it (params,
//! look-back, invocations of a batch of records each), or the native library, which gives the
//! same output (SPEC §6.8) and can be checkpointed.

use std::path::{Path, PathBuf};
use std::task::{Context, Poll, Waker};

use agent_fold_core::{Processor, View};
use anyhow::{Context as _, Result, anyhow, bail};
use fluvio_smartengine::metrics::SmartModuleChainMetrics;
use fluvio_smartengine::{
    Lookback, SmartEngine, SmartModuleChainBuilder, SmartModuleChainInstance, SmartModuleConfig,
};
use fluvio_smartmodule::Record;
use fluvio_smartmodule::dataplane::smartmodule::SmartModuleInput;

use crate::record::{Rec, emitted, inputs};

/// The module refused an invocation (`malformed=fail`): the offset of the record it refused,
/// and its message as the engine (or the native library) words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub offset: i64,
    pub text: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Refusal {}

/// Where the project's build puts the SmartModule, unless `AGENT_FOLD_WASM` names another.
pub fn default_wasm_path() -> PathBuf {
    if let Some(p) = std::env::var_os("AGENT_FOLD_WASM") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/wasm/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm")
}

/// Reads a `.wasm`, saying how to build it when it is missing.
pub fn read_wasm(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| {
        format!(
            "cannot read the SmartModule at {} (build it with scripts/build-wasm.sh)",
            path.display()
        )
    })
}

/// Drives a future that is ready at once (the engine's look-back over records in memory).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A module instance in the engine: one consumer stream's worth of state.
pub struct Instance {
    chain: SmartModuleChainInstance,
}

/// Fluvio records at their offsets: in an invocation each carries its offset within it (as in
/// an SPU's batch); in look-back, whose input has base offset 0, each carries its own.
fn fluvio_records(records: &[Rec], first: i64) -> Vec<Record> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut rec = r.to_fluvio();
            rec.preamble.set_offset_delta(first + i as i64);
            rec
        })
        .collect()
}

impl Instance {
    /// Loads the module with params; when `history` is given, it goes through `look_back`
    /// first, as a transform with `lookback: {last: N}` does in a cluster, its records at the
    /// offsets from `history_base` on.
    pub fn new(
        wasm: &[u8],
        params: &[(String, String)],
        history: Option<(&[Rec], i64)>,
    ) -> Result<Self> {
        let engine = SmartEngine::new();
        let mut config = SmartModuleConfig::builder();
        config.smartmodule_names(vec!["agent-fold".to_string()]);
        for (k, v) in params {
            config.param(k.clone(), v.clone());
        }
        if let Some((h, _)) = history {
            config.lookback(Some(Lookback::Last(h.len().max(1) as u64)));
        }
        let config = config.build().map_err(|e| anyhow!("{e}"))?;
        let mut builder = SmartModuleChainBuilder::default();
        builder.add_smart_module(config, wasm.to_vec());
        let mut chain = builder.initialize(&engine).map_err(|e| anyhow!("{e:#}"))?;
        if let Some((h, base)) = history {
            let records = fluvio_records(h, base);
            block_on(chain.look_back(|_| {
                let records = records.clone();
                async move { Ok(records) }
            }))
            .map_err(|e| anyhow!("look_back: {e:#}"))?;
        }
        Ok(Instance { chain })
    }

    /// One invocation, its first record at `base_offset`; a refusal is a [`Refusal`].
    pub fn process(&mut self, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
        let mut input = SmartModuleInput::try_from_records(fluvio_records(records, 0), 22)?;
        input.set_base_offset(base_offset);
        let output = self.chain.process(input)?;
        if let Some(err) = output.error {
            return Err(Refusal {
                offset: err.offset,
                text: err.to_string(),
            }
            .into());
        }
        Ok(output.successes.iter().map(Rec::from_fluvio).collect())
    }

    /// Feeds `records` in invocations of `batch`, concatenating what comes out.
    pub fn run(&mut self, records: &[Rec], batch: usize) -> Result<Vec<Rec>> {
        let mut out = Vec::new();
        for (i, chunk) in records.chunks(batch.max(1)).enumerate() {
            out.extend(self.process(chunk, (i * batch.max(1)) as i64)?);
        }
        Ok(out)
    }

    /// The engine's counters since the last call (fuel, invocations, records out).
    pub fn metrics(&self) -> Option<SmartModuleChainMetrics> {
        self.chain.metrics_export().remove("agent-fold")
    }
}

/// The native library's answer to one invocation, shaped as the engine's (its error, a
/// [`Refusal`], names the offset of the record it refuses).
pub fn native_process(p: &mut Processor, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
    let emits = p.process(&inputs(records, base_offset)).map_err(|e| {
        let offset = base_offset + e.index as i64;
        Refusal {
            offset,
            text: format!("offset {offset}: {}", e.message),
        }
    })?;
    Ok(emitted(records, emits))
}

/// `params` for a view: any `emit` they name is replaced by `emit=VIEW`.
pub fn with_emit(params: &[(String, String)], view: View) -> Vec<(String, String)> {
    let mut out: Vec<_> = params
        .iter()
        .filter(|(k, _)| k != "emit")
        .cloned()
        .collect();
    out.push(("emit".into(), view.name().into()));
    out
}

/// The module for `--wasm FILE` / `--native`: a named `.wasm`, the native library, else the
/// project's build, else the native library (it gives the same output) with a note on stderr.
pub fn choose(wasm: Option<&Path>, native: bool) -> Source {
    if native {
        return Source::Native;
    }
    match wasm {
        Some(p) => Source::Wasm(p.to_owned()),
        None if std::env::var_os("AGENT_FOLD_WASM").is_some() || default_wasm_path().exists() => {
            Source::Wasm(default_wasm_path())
        }
        None => {
            eprintln!(
                "agent-fold: no SmartModule build at {} (scripts/build-wasm.sh makes it): \
                 running the native library, which gives the same output",
                default_wasm_path().display()
            );
            Source::Native
        }
    }
}

/// Which module to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A `.wasm` in the engine.
    Wasm(PathBuf),
    /// The native library.
    Native,
}

/// One module instance, in the engine or native.
pub enum Module {
    Wasm(Box<Instance>),
    Native(Box<Processor>),
}

impl Module {
    /// An instance with `params`, its `history` (at the offsets from `history_base`) replayed
    /// through `look_back`.
    pub fn new(
        source: &Source,
        params: &[(String, String)],
        history: Option<(&[Rec], i64)>,
    ) -> Result<Module> {
        match source {
            Source::Native => {
                let mut p =
                    Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
                if let Some((h, base)) = history {
                    p.look_back(&inputs(h, base));
                }
                Ok(Module::Native(Box::new(p)))
            }
            Source::Wasm(path) => Ok(Module::Wasm(Box::new(Instance::new(
                &read_wasm(path)?,
                params,
                history,
            )?))),
        }
    }

    /// One invocation, its first record at `base_offset`.
    pub fn process(&mut self, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
        match self {
            Module::Wasm(i) => i.process(records, base_offset),
            Module::Native(p) => native_process(p, records, base_offset),
        }
    }

    /// The state as a checkpoint document; the engine's cannot leave it.
    pub fn checkpoint(&self) -> Result<String> {
        match self {
            Module::Native(p) => Ok(p.checkpoint()),
            Module::Wasm(_) => bail!("a module in the engine cannot be checkpointed"),
        }
    }

    /// Restores a checkpoint document (native only).
    pub fn restore(&mut self, text: &str) -> Result<()> {
        match self {
            Module::Native(p) => p.restore(text).map_err(|e| anyhow!("{e}")),
            Module::Wasm(_) => bail!("a module in the engine cannot be restored from a checkpoint"),
        }
    }
}
