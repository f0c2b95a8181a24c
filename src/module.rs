//! A module instance: the `.wasm` in `fluvio-smartengine`, run as a Fluvio SPU runs it (params,
//! look-back, invocations of a batch of records each), or the native library, which gives the
//! same output (contract §6.8) and can be checkpointed.

use std::path::{Path, PathBuf};

use agent_fold_core::{Config, Processor};
use agent_fold_smartmodule::wire::{Output, Preamble, record_len};
use anyhow::{Context as _, Result, anyhow, bail};
use fluvio_smartengine::metrics::SmartModuleChainMetrics;
use fluvio_smartengine::{
    Lookback, SmartEngine, SmartModuleChainBuilder, SmartModuleChainInstance, SmartModuleConfig,
};
use fluvio_smartmodule::Record;
use fluvio_smartmodule::dataplane::smartmodule::{SmartModuleInput, SmartModuleOutput};

use crate::record::{Rec, emitted, inputs};

/// The module refused an invocation (`malformed=fail`): the offset of the record it refused,
/// and its message as the engine (or the native library) words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct InvocationRefused {
    pub offset: i64,
    pub text: String,
}

/// Where the project's build puts the SmartModule, unless `AGENT_FOLD_WASM` names another.
pub fn default_wasm_path() -> PathBuf {
    if let Some(p) = std::env::var_os("AGENT_FOLD_WASM") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/wasm/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm")
}

/// The largest `.wasm` read: the project's is well under a megabyte.
pub const MAX_WASM_BYTES: u64 = 64 << 20;

/// Reads a `.wasm`, saying how to build it when it is missing; anything but a regular file of
/// WebAssembly's binary format (its `\0asm` magic and version 1) is refused before it is read
/// whole, so a device or a text file never reaches the engine.
pub fn read_wasm(path: &Path) -> Result<Vec<u8>> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| {
        format!("cannot read the SmartModule at {shown} (build it with scripts/build-wasm.sh)")
    })?;
    if !meta.is_file() {
        bail!("the SmartModule {shown} is not a regular file");
    }
    if meta.len() > MAX_WASM_BYTES {
        bail!(
            "the SmartModule {shown} is {} bytes, over the limit of {MAX_WASM_BYTES}",
            meta.len()
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading the SmartModule {shown}"))?;
    if !bytes.starts_with(b"\0asm\x01\0\0\0") {
        bail!("{shown} is not WebAssembly (a .wasm starts with \\0asm and version 1)");
    }
    Ok(bytes)
}

/// Checks a `.wasm` the way a start would: read, compiled, and initialised with `config`.
pub fn check_wasm(path: &Path, config: &Config) -> Result<()> {
    let bytes = read_wasm(path)?;
    Instance::new(&bytes, &engine_params(config)?, None)
        .with_context(|| format!("the SmartModule {} does not load", path.display()))?;
    Ok(())
}

/// The most bytes (keys and values) one invocation hands the module, `look_back` included: the
/// engine's store is 1 GB and a `look_back` of 400 MB already asks it for 1.5 GB. A fetch of
/// the relay's brings as much at most.
pub const INVOCATION_BYTES: usize = 32 << 20;

/// `records` (the first at offset `first`) cut in order into runs of at most `max` bytes of
/// keys and values, each with its first offset; a record over `max` makes a run alone.
pub fn cuts(records: &[Rec], first: i64, max: usize) -> impl Iterator<Item = (&[Rec], i64)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = &records[at..];
        let (head, _) = rest.split_first()?;
        let mut bytes = head.bytes();
        let n = 1 + rest[1..]
            .iter()
            .take_while(|r| {
                bytes += r.bytes();
                bytes <= max
            })
            .count();
        let run = (&rest[..n], first + at as i64);
        at += n;
        Some(run)
    })
}

/// A module instance in the engine: one consumer stream's worth of state.
///
/// The offsets it hands the engine are relative to `origin`, the first offset of its life (its
/// look-back's first record, else its first invocation's): a `look_back` record carries its
/// offset as its `offset_delta`, which Fluvio encodes within ±2^31, so a partition past offset
/// 2^31 restarts as one at 0 does. The module compares offsets only with each other (contract
/// §1: a re-delivered line is one at or below its session's last), so moving them all by one
/// amount changes nothing it answers; a refusal's offset is given back absolute.
pub struct Instance {
    chain: SmartModuleChainInstance,
    origin: Option<i64>,
}

/// `look_back`'s records: the engine takes them as Fluvio records (not bytes) and encodes them
/// itself; its input has base offset 0, so each carries its own offset, relative to the
/// instance's origin. (An invocation's input is written by [`Instance::input`].)
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
    /// offsets from `history_base` on (in calls of [`INVOCATION_BYTES`] at most).
    pub fn new(
        wasm: &[u8],
        params: &[(impl AsRef<str>, impl AsRef<str>)],
        history: Option<(&[Rec], i64)>,
    ) -> Result<Self> {
        let mut instance = Instance::in_store(wasm, params, None)?;
        if let Some((h, base)) = history {
            for (cut, first) in cuts(h, base, INVOCATION_BYTES) {
                instance.look_back(cut, first)?;
            }
        }
        Ok(instance)
    }

    /// Loads the module with params in a store of at most `store_bytes` of memory (the
    /// engine's default, 1 GB, when `None`).
    pub fn in_store(
        wasm: &[u8],
        params: &[(impl AsRef<str>, impl AsRef<str>)],
        store_bytes: Option<usize>,
    ) -> Result<Self> {
        let engine = SmartEngine::new();
        let mut config = SmartModuleConfig::builder();
        config.smartmodule_names(vec!["agent-fold".to_string()]);
        for (k, v) in params {
            config.param(k.as_ref(), v.as_ref());
        }
        // The engine calls a module's look_back only when the config asks for one; how many
        // records it names matters to an SPU only (the records come from the caller here).
        config.lookback(Some(Lookback::Last(1)));
        let config = config
            .build()
            .map_err(|e| anyhow!("configuring the SmartModule: {e}"))?;
        let mut builder = SmartModuleChainBuilder::default();
        if let Some(bytes) = store_bytes {
            builder.set_store_memory_limit(bytes);
        }
        builder.add_smart_module(config, wasm.to_vec());
        let chain = builder.initialize(&engine).map_err(|e| anyhow!("{e:#}"))?;
        Ok(Instance {
            chain,
            origin: None,
        })
    }

    /// One `look_back` call over `records`, at the offsets from `first` on: the whole input is
    /// in the engine's store at once (several times over), so callers cut it with [`cuts`].
    pub fn look_back(&mut self, records: &[Rec], first: i64) -> Result<()> {
        let origin = *self.origin.get_or_insert(first);
        let last = (first - origin).saturating_add(records.len() as i64);
        if !(i32::MIN as i64..=i32::MAX as i64).contains(&last) {
            bail!(
                "look_back: offsets {first}.. are more than 2^31 from this instance's first \
                 ({origin}), which a look-back record's offset delta cannot carry"
            );
        }
        let records = fluvio_records(records, first - origin);
        // The records are in memory: the future is ready at once, driven on this thread (which
        // may be one of a runtime's, where tokio's own block_on would refuse).
        futures_executor::block_on(self.chain.look_back(|_| {
            let records = records.clone();
            async move { Ok(records) }
        }))
        .map_err(|e| anyhow!("look_back: {e:#}"))
    }

    /// One invocation's input as an SPU hands it to the engine, its first record at
    /// `base_offset`: its records in Fluvio's encoding (each at its offset within the call),
    /// written once by the module's own codec (built apart from [`Instance::call`], so that a
    /// bench can time the engine alone).
    pub fn input(records: &[Rec], base_offset: i64) -> SmartModuleInput {
        let at = |i: usize| Preamble {
            offset_delta: i as i64,
            ..Preamble::default()
        };
        let len = records
            .iter()
            .enumerate()
            .map(|(i, r)| record_len(&at(i), r.key.as_deref(), &r.value, 0))
            .sum();
        let mut raw = Output::with_capacity(len);
        for (i, r) in records.iter().enumerate() {
            raw.record(&at(i), r.key.as_deref(), &r.value, 0);
        }
        SmartModuleInput::new(raw.records(), base_offset, 0)
    }

    /// The engine's answer to one input, as it comes out of the engine (a refusal is its
    /// `error`).
    pub fn call(&mut self, input: SmartModuleInput) -> Result<SmartModuleOutput> {
        self.chain.process(input)
    }

    /// One invocation, its first record at `base_offset`; a refusal is an [`InvocationRefused`].
    pub fn process(&mut self, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
        let origin = *self.origin.get_or_insert(base_offset);
        let output = self.call(Instance::input(records, base_offset - origin))?;
        if let Some(mut err) = output.error {
            err.offset += origin;
            return Err(InvocationRefused {
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
/// [`InvocationRefused`], names the offset of the record it refuses).
pub fn native_process(p: &mut Processor, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
    let emits = p.process(&inputs(records, base_offset)).map_err(|e| {
        let offset = base_offset + e.index as i64;
        InvocationRefused {
            offset,
            text: format!("offset {offset}: {}", e.message),
        }
    })?;
    Ok(emitted(records, emits))
}

/// The strings the engine hands the module's `init` for `config` (a SmartModule's params are
/// strings); `learn_restore` is no param, so a config without it runs natively only.
pub fn engine_params(config: &Config) -> Result<Vec<(&'static str, String)>> {
    if !config.learn_restore {
        bail!(
            "a config that does not learn what its agent restores runs in the native library only"
        );
    }
    Ok(config.params())
}

/// The module for `--wasm FILE` / `--native`: a named `.wasm`, the native library, else the
/// project's build, else the native library (it gives the same output) with a note on stderr.
pub fn choose(wasm: Option<&Path>, native: bool) -> Build {
    if native {
        return Build::Native;
    }
    match wasm {
        Some(p) => Build::Wasm(p.to_owned()),
        None if std::env::var_os("AGENT_FOLD_WASM").is_some() || default_wasm_path().exists() => {
            Build::Wasm(default_wasm_path())
        }
        None => {
            tracing::info!(
                "no SmartModule build at {} (scripts/build-wasm.sh makes it): \
                 running the native library, which gives the same output",
                default_wasm_path().display()
            );
            Build::Native
        }
    }
}

/// Which module to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
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
    /// An instance of `config`, its `history` (at the offsets from `history_base`) replayed
    /// through `look_back`.
    pub fn new(build: &Build, config: &Config, history: Option<(&[Rec], i64)>) -> Result<Module> {
        match build {
            Build::Native => {
                let mut m = Module::Native(Box::new(Processor::new(config)));
                if let Some((h, base)) = history {
                    m.look_back(h, base, INVOCATION_BYTES)?;
                }
                Ok(m)
            }
            Build::Wasm(path) => Ok(Module::Wasm(Box::new(Instance::new(
                &read_wasm(path)?,
                &engine_params(config)?,
                history,
            )?))),
        }
    }

    /// Replays `records` (at the offsets from `first` on) into the state, emitting nothing, in
    /// `look_back` calls of at most `max` bytes: the state is the one a single call leaves.
    pub fn look_back(&mut self, records: &[Rec], first: i64, max: usize) -> Result<()> {
        for (cut, first) in cuts(records, first, max) {
            match self {
                Module::Wasm(i) => i.look_back(cut, first)?,
                Module::Native(p) => p.look_back(&inputs(cut, first)),
            }
        }
        Ok(())
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
            Module::Native(p) => Ok(p.restore(text)?),
            Module::Wasm(_) => bail!("a module in the engine cannot be restored from a checkpoint"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(key: usize, value: usize) -> Rec {
        Rec::new(Some(&vec![b'k'; key]), &vec![b'v'; value])
    }

    #[test]
    fn a_wasm_file_that_is_no_webassembly_or_no_regular_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("agent-fold-wasm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("text.wasm");
        std::fs::write(&text, "(module)\n").unwrap();
        let err = read_wasm(&text).unwrap_err().to_string();
        assert!(err.contains("is not WebAssembly"), "{err}");
        let err = read_wasm(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        let err = read_wasm(&dir).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        let garbage = dir.join("garbage.wasm");
        std::fs::write(&garbage, b"\0asm\x01\0\0\0garbage").unwrap();
        let bytes = read_wasm(&garbage).unwrap();
        assert!(
            Instance::new(&bytes, &Config::default().params(), None).is_err(),
            "no module in it"
        );
        let err = format!(
            "{:#}",
            check_wasm(&garbage, &Config::default()).unwrap_err()
        );
        assert!(err.contains("does not load"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cuts_keep_order_and_offsets_and_stay_under_the_bound_but_for_a_record_alone() {
        let records: Vec<Rec> = (0..200).map(|i| rec(i % 5, (i * 37) % 300)).collect();
        for max in [0, 1, 150, 299, 300, 1000, 10_000, usize::MAX] {
            let runs: Vec<(&[Rec], i64)> = cuts(&records, 7, max).collect();
            let mut at = 0;
            for (run, first) in &runs {
                assert_eq!(*first, 7 + at as i64, "max {max}: the run's first offset");
                assert_eq!(*run, &records[at..at + run.len()], "max {max}: in order");
                let bytes: usize = run.iter().map(Rec::bytes).sum();
                assert!(bytes <= max || run.len() == 1, "max {max}: {bytes} bytes");
                at += run.len();
            }
            assert_eq!(at, records.len(), "max {max}: every record in a run");
            // Greedy: a run ends only where the next record would not fit.
            for w in runs.windows(2) {
                let bytes: usize = w[0].0.iter().chain(&w[1].0[..1]).map(Rec::bytes).sum();
                assert!(bytes > max, "max {max}: a run ended early");
            }
        }
        assert_eq!(cuts(&[], 0, 10).count(), 0);
        assert_eq!(rec(3, 4).bytes(), 7);
        assert_eq!(Rec::new(None, b"abc").bytes(), 3);
    }
}
