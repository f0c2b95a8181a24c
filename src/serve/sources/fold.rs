//! The module over a followed log: an `emit=pressure` instance for the meters and an
//! `emit=frames` instance for the folded-frames lists, both fed every line at its offset (its
//! place in the log, counted up across polls), so the module's adapter (`input`) knows a line
//! it has seen from a new one.

use std::collections::BTreeMap;

use agent_fold_core::{Frame, Input, View};
use anyhow::Result;

use crate::flags::BATCH;
use crate::logs::{DETECT_LINES, Verdict, detect};
use crate::module::{Build, Module, check_wasm};
use crate::params::{ModuleParams, Told};
use crate::record::Rec;
use crate::settings;

/// What a batch of lines gave.
#[derive(Debug, Default)]
pub(crate) struct BatchOutput {
    /// The pressure instance's records.
    pub pressure: Vec<Rec>,
    /// The frames instance's frames.
    pub frames: Vec<Rec>,
    /// Why each skipped line was skipped.
    pub skipped: Vec<String>,
}

/// The two module instances over a followed log (the pressure view and the frames view), and
/// how the log's lines reach them.
pub(crate) struct ViewPair {
    build: Build,
    /// The user's params (no `emit`: each instance has its own).
    params: ModuleParams,
    /// Where the log's format comes from; the module adapts it (its `input` param) either way.
    told: Told,
    /// The format once known (auto: once a line tells).
    input: Option<Input>,
    views: Option<(Module, Module)>,
    /// Lines held while auto-detection waits for a line that tells.
    held: Vec<Rec>,
    /// The next line's offset.
    next: i64,
}

impl ViewPair {
    /// Checks the params and the module now, so that a bad one fails before the server starts.
    pub(crate) fn new(build: Build, params: ModuleParams, told: Told) -> Result<ViewPair> {
        if let Build::Wasm(path) = &build {
            check_wasm(path, &params.view(View::Pressure))?;
        }
        Ok(ViewPair {
            build,
            params,
            told,
            input: told.named(),
            views: None,
            held: Vec::new(),
            next: 0,
        })
    }

    /// The module, for the status line.
    pub(crate) fn module(&self) -> String {
        match &self.build {
            Build::Wasm(p) => format!("SmartModule {} in fluvio-smartengine", p.display()),
            Build::Native => "native library".to_owned(),
        }
    }

    /// The log's format, once known.
    pub(crate) fn input(&self) -> Option<Input> {
        self.input
    }

    /// Forgets everything: new instances for a log read again from its start.
    pub(crate) fn reset(&mut self) {
        self.views = None;
        self.held.clear();
        self.next = 0;
        if self.told == Told::Detect {
            self.input = None;
        }
    }

    /// The pair of instances (pressure, frames), with `input` the format once told, and the
    /// compaction point the agent's settings on this machine move (`crate::settings`, read
    /// once for both), under the user's own params.
    fn instances(&self) -> Result<(Module, Module)> {
        let mut params = self.params.clone();
        if let Some(input) = self.input {
            params.input_under(input);
            params.settings_under(&settings::for_agent(
                input,
                &settings::Homes::from_env(),
                None,
            ));
        }
        Ok((
            Module::new(&self.build, &params.view(View::Pressure), None)?,
            Module::new(&self.build, &params.view(View::Frames), None)?,
        ))
    }

    /// Runs new lines through both instances. While the format is not yet told (auto), lines
    /// wait; after `DETECT_LINES` (200) that do not tell, the log is read as agent-fold frames.
    pub(crate) fn push(&mut self, lines: Vec<Rec>) -> Result<BatchOutput> {
        let mut lines = lines;
        if self.views.is_none() {
            if self.input.is_none() {
                self.held.append(&mut lines);
                self.input = match detect::verdict(&self.held) {
                    Verdict::Told(f) => Some(f),
                    Verdict::Untold => {
                        tracing::warn!(
                            "the log's first {DETECT_LINES} lines do not tell its format: read \
                             as agent-fold frames (--input FORMAT names another)"
                        );
                        Some(Input::AgentFold)
                    }
                    Verdict::Waiting => return Ok(BatchOutput::default()),
                };
                lines = std::mem::take(&mut self.held);
            }
            self.views = Some(self.instances()?);
        }
        let Some((pressure, frames)) = &mut self.views else {
            unreachable!("made above")
        };
        let mut out = BatchOutput::default();
        for chunk in lines.chunks(BATCH) {
            let base = self.next;
            self.next += chunk.len() as i64;
            let mut bad: BTreeMap<usize, String> = chunk
                .iter()
                .enumerate()
                .filter(|(_, r)| Frame::parse(&r.value).is_none())
                .map(|(i, _)| {
                    (
                        i,
                        format!("line {}: not a JSON object", base + i as i64 + 1),
                    )
                })
                .collect();
            out.pressure.extend(invoke(pressure, chunk, base, &mut bad));
            out.frames.extend(invoke(frames, chunk, base, &mut bad));
            out.skipped.extend(bad.into_values());
        }
        Ok(out)
    }

    /// Lines held while the format is not yet told.
    pub(crate) fn waiting(&self) -> bool {
        self.views.is_none()
    }

    /// Whether it tells the format from the log's own lines (`--input auto`).
    pub(crate) fn is_auto(&self) -> bool {
        self.told == Told::Detect
    }

    /// A pair configured as this one is, with nothing read: for files read again from their
    /// start, whose sessions this one holds.
    pub(crate) fn fresh(&self) -> Result<ViewPair> {
        ViewPair::new(self.build.clone(), self.params.clone(), self.told)
    }

    /// A pair like this one, for lines of `format` (a directory of logs tells each file's own).
    pub(crate) fn for_format(&self, format: Input) -> Result<ViewPair> {
        ViewPair::new(self.build.clone(), self.params.clone(), Told::Flag(format))
    }
}

/// One invocation; when it fails as a whole (`malformed=fail`), line by line again, so that a
/// bad line costs only itself (the pressure view takes a line given again as a re-delivery; the
/// frames view serves it again). The failing lines are noted in `bad`.
fn invoke(m: &mut Module, chunk: &[Rec], base: i64, bad: &mut BTreeMap<usize, String>) -> Vec<Rec> {
    if let Ok(out) = m.process(chunk, base) {
        return out;
    }
    let mut out = Vec::new();
    for (i, r) in chunk.iter().enumerate() {
        let at = base + i as i64;
        match m.process(std::slice::from_ref(r), at) {
            Ok(o) => out.extend(o),
            Err(e) => {
                bad.entry(i)
                    .or_insert_with(|| format!("line {}: {e:#}", at + 1));
            }
        }
    }
    out
}
