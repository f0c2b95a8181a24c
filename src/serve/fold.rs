//! The module over a followed log: an `emit=pressure` instance for the meters and an
//! `emit=frames` instance for the folded-frames lists, both fed every line at its offset (its
//! place in the log, counted up across polls), so the module's adapter (`input`) knows a line
//! it has seen from a new one.

use std::collections::BTreeMap;

use agent_fold_core::{Config, Frame, Input, View};
use anyhow::Result;

use crate::flags::{BATCH, Format};
use crate::logs::{self, DETECT_LINES};
use crate::module::{Module, Source, check_wasm, with_emit};
use crate::record::Rec;
use crate::settings;

/// What a batch of lines gave.
#[derive(Debug, Default)]
pub struct BatchOutput {
    /// The pressure instance's records.
    pub pressure: Vec<Rec>,
    /// The frames instance's frames.
    pub frames: Vec<Rec>,
    /// Why each skipped line was skipped.
    pub skipped: Vec<String>,
}

/// The two module instances over a followed log (the pressure view and the frames view), and
/// how the log's lines reach them.
pub struct ViewPair {
    source: Source,
    /// The user's params (no `emit`: each instance has its own).
    params: Vec<(String, String)>,
    /// `--input`: a format to adapt with the module's `input` param, or auto; `None`: the
    /// params decide.
    format: Option<Format>,
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
    pub fn new(
        source: Source,
        params: Vec<(String, String)>,
        format: Option<Format>,
    ) -> Result<ViewPair> {
        let config = Config::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        if let Source::Wasm(path) = &source {
            check_wasm(path, &with_emit(&params, View::Pressure))?;
        }
        let input = match format {
            Some(Format::Is(f)) => Some(f),
            Some(Format::Auto) => None,
            None => Some(config.input),
        };
        Ok(ViewPair {
            source,
            params,
            format,
            input,
            views: None,
            held: Vec::new(),
            next: 0,
        })
    }

    /// The module, for the status line.
    pub fn module(&self) -> String {
        match &self.source {
            Source::Wasm(p) => format!("SmartModule {} in fluvio-smartengine", p.display()),
            Source::Native => "native library".to_owned(),
        }
    }

    /// The log's format, once known.
    pub fn input(&self) -> Option<Input> {
        self.input
    }

    /// Forgets everything: new instances for a log read again from its start.
    pub fn reset(&mut self) {
        self.views = None;
        self.held.clear();
        self.next = 0;
        if self.format == Some(Format::Auto) {
            self.input = None;
        }
    }

    /// An instance of `view`, with `input` set when --input names the format, and the
    /// compaction point the agent's settings on this machine move (`crate::settings`), under
    /// the user's own params.
    fn instance(&self, view: View) -> Result<Module> {
        let mut params: Vec<(String, String)> = self.params.clone();
        if let (Some(_), Some(input)) = (self.format, self.input) {
            params.push(("input".into(), input.name().into()));
        }
        if let Some(input) = self.input {
            let found = settings::for_agent(input, &settings::Homes::from_env(), None);
            for (k, v) in found.params {
                if !params.iter().any(|(n, _)| *n == k) {
                    params.push((k, v));
                }
            }
        }
        Module::new(&self.source, &with_emit(&params, view), None)
    }

    /// Runs new lines through both instances. While the format is not yet told (auto), lines
    /// wait; after `DETECT_LINES` (200) that do not tell, the log is read as agent-fold frames.
    pub fn push(&mut self, lines: Vec<Rec>) -> Result<BatchOutput> {
        let mut lines = lines;
        if self.views.is_none() {
            if self.input.is_none() {
                self.held.append(&mut lines);
                self.input = match logs::detect(&self.held) {
                    Some(f) => Some(f),
                    None if self.held.len() >= DETECT_LINES => {
                        tracing::warn!(
                            "the log's first {DETECT_LINES} lines do not tell its format: read \
                             as agent-fold frames (--input FORMAT names another)"
                        );
                        Some(Input::AgentFold)
                    }
                    None => return Ok(BatchOutput::default()),
                };
                lines = std::mem::take(&mut self.held);
            }
            self.views = Some((self.instance(View::Pressure)?, self.instance(View::Frames)?));
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
    pub fn waiting(&self) -> bool {
        self.views.is_none()
    }

    /// Whether it tells the format from the log's own lines (`--input auto`).
    pub fn is_auto(&self) -> bool {
        self.format == Some(Format::Auto)
    }

    /// A pair configured as this one is, with nothing read: for files read again from their
    /// start, whose sessions this one holds.
    pub fn fresh(&self) -> Result<ViewPair> {
        ViewPair::new(self.source.clone(), self.params.clone(), self.format)
    }

    /// A pair like this one, for lines of `format` (a directory of logs tells each file's own).
    pub fn for_format(&self, format: Input) -> Result<ViewPair> {
        ViewPair::new(
            self.source.clone(),
            self.params.clone(),
            Some(Format::Is(format)),
        )
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
