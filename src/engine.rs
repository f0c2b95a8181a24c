//! The SmartModule run as a Fluvio SPU runs it: `fluvio-smartengine`, params, look-back,
//! invocations of a batch of records each.

use std::path::{Path, PathBuf};
use std::task::{Context, Poll, Waker};

use anyhow::{Context as _, Result, anyhow, bail};
use fluvio_smartengine::metrics::SmartModuleChainMetrics;
use fluvio_smartengine::{
    Lookback, SmartEngine, SmartModuleChainBuilder, SmartModuleChainInstance, SmartModuleConfig,
};
use fluvio_smartmodule::Record;
use fluvio_smartmodule::dataplane::smartmodule::SmartModuleInput;

/// One record as the host sees it: key and value bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

impl Rec {
    pub fn new(key: Option<&[u8]>, value: &[u8]) -> Rec {
        Rec {
            key: key.map(<[u8]>::to_vec),
            value: value.to_vec(),
        }
    }

    fn to_record(&self) -> Record {
        match &self.key {
            Some(k) => Record::new_key_value(k.clone(), self.value.clone()),
            None => Record::new(self.value.clone()),
        }
    }
}

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

/// A module instance in the engine: one consumer stream's worth of state.
pub struct Instance {
    chain: SmartModuleChainInstance,
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

impl Instance {
    /// Loads the module with params; when `history` is given, it goes through `look_back`
    /// first, as a transform with `lookback: {last: N}` does in a cluster.
    pub fn new(wasm: &[u8], params: &[(String, String)], history: Option<&[Rec]>) -> Result<Self> {
        let engine = SmartEngine::new();
        let mut config = SmartModuleConfig::builder();
        config.smartmodule_names(vec!["agent-fold".to_string()]);
        for (k, v) in params {
            config.param(k.clone(), v.clone());
        }
        if let Some(h) = history {
            config.lookback(Some(Lookback::Last(h.len().max(1) as u64)));
        }
        let config = config.build().map_err(|e| anyhow!("{e}"))?;
        let mut builder = SmartModuleChainBuilder::default();
        builder.add_smart_module(config, wasm.to_vec());
        let mut chain = builder.initialize(&engine).map_err(|e| anyhow!("{e:#}"))?;
        if let Some(h) = history {
            let records: Vec<Record> = h.iter().map(Rec::to_record).collect();
            block_on(chain.look_back(|_| {
                let records = records.clone();
                async move { Ok(records) }
            }))
            .map_err(|e| anyhow!("look_back: {e:#}"))?;
        }
        Ok(Instance { chain })
    }

    /// One invocation. `base_offset` is the first record's offset, for error reports.
    pub fn process(&mut self, records: &[Rec], base_offset: i64) -> Result<Vec<Rec>> {
        // Each record carries its offset within the invocation, as in an SPU's batch: the
        // module's error names `base_offset + offset_delta` of the record it refuses.
        let records: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut rec = r.to_record();
                rec.preamble.set_offset_delta(i as i64);
                rec
            })
            .collect();
        let mut input = SmartModuleInput::try_from_records(records, 22)?;
        input.set_base_offset(base_offset);
        let output = self.chain.process(input)?;
        if let Some(err) = output.error {
            bail!("{err}");
        }
        Ok(output
            .successes
            .into_iter()
            .map(|r| Rec {
                key: r.key().map(|k| k.as_ref().to_vec()),
                value: r.value().as_ref().to_vec(),
            })
            .collect())
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
