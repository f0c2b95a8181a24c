//! One module instance: the view its params chose, every session's state in one entry of one
//! cache (the adapter's and the view's together, evicted together), and the adapter that turns
//! records into frames first when param `input` names a log format.

mod entry;

use entry::Entry;

use crate::adapt::state::Track;
use crate::adapt::{self, LineRead};
use crate::config::{Config, Input, Malformed, ParamError, View};
use crate::frame::{Frame, Resume};
use crate::frames::fold::RunState;
use crate::frames::{self, Folder, Out, Role};
use crate::json;
use crate::pressure::{self, Outcome, Projector, Refusal};
use crate::record::{BatchError, Emit, MAX_KEY_LEN, RecordIn, session_key};
use crate::state::checkpoint::{self, CheckpointError, Document, Members, STATE_VERSION};
use crate::state::lru::{EntryId, Lru};

/// What a run over records is for: serving them (what comes out is the output), or replaying
/// history into the state (a look-back: nothing comes out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Serve,
    Replay,
}

type Page = frames::Page<EntryId>;

/// How far [`Processor::probe`] runs: each stage adds one phase of an invocation to the one
/// before it.
#[cfg(feature = "probe")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Each record walked as a JSON object, nothing read from its members.
    Walk,
    /// Each record read as a frame, and its session key taken.
    Scan,
    /// And its session's entry found (made when missing).
    Lookup,
    /// The whole view over the records (the fold, the projection), as `look_back` runs it:
    /// state kept, no record made.
    View,
    /// [`Processor::process`]: the records made too.
    Records,
}

/// One module instance.
pub struct Processor {
    view: View,
    malformed: Malformed,
    folder: Folder,
    projector: Projector,
    adapt: Option<adapt::Lines>,
    sessions: Lru<Entry>,
    /// Invocations so far: an adapter keeps, per session, what the latest one started from.
    epoch: u64,
}

impl Processor {
    pub fn new(config: &Config) -> Self {
        Processor {
            view: config.view,
            malformed: config.malformed,
            folder: Folder::new(config),
            projector: Projector::new(config),
            adapt: (config.input != Input::AgentFold).then(|| adapt::Lines::for_config(config)),
            sessions: Lru::new(config.max_sessions),
            epoch: 0,
        }
    }

    /// A processor from `key=value` params, as `init` receives them.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ParamError> {
        Ok(Processor::new(&Config::from_params(params)?))
    }

    /// One invocation. On error nothing is emitted and no state changes.
    ///
    /// With `input=agent-fold` the records are frames, and untouched ones come back as
    /// [`Emit::Pass`] (zero-copy). With another `input` each record is adapted and the view runs
    /// over the frames it became: every record out is then an [`Emit::New`] whose `at` is the
    /// input record it came from and whose key is that line's session.
    pub fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        if self.malformed == Malformed::Fail
            && let Some(index) = records.iter().position(|r| !json::is_object(r.value))
        {
            return Err(BatchError::not_an_object(index));
        }
        self.epoch += 1;
        Ok(match self.adapt.is_some() {
            false => self.run_frames(records, Pass::Serve),
            true => self.run_lines(records, Pass::Serve),
        })
    }

    /// Replays history into the state, emitting nothing. Offsets are trusted only when they
    /// rise through the call (an SPU hands look-back records their offsets within their batch).
    pub fn look_back(&mut self, records: &[RecordIn]) {
        self.epoch += 1;
        let rising = records
            .windows(2)
            .all(|w| matches!((w[0].offset, w[1].offset), (Some(a), Some(b)) if a < b));
        if rising {
            return self.replay(records);
        }
        let plain: Vec<RecordIn> = records
            .iter()
            .map(|r| RecordIn { offset: None, ..*r })
            .collect();
        self.replay(&plain);
    }

    fn replay(&mut self, records: &[RecordIn]) {
        match self.adapt.is_some() {
            false => self.run_frames(records, Pass::Replay),
            true => self.run_lines(records, Pass::Replay),
        };
    }

    /// The entry of `key`, made the most recently used; made when missing (evicting, when full,
    /// the least recently used, whose open fold part closes on `page`).
    fn entry(&mut self, key: &[u8], page: &mut Page) -> EntryId {
        if let Some(id) = self.sessions.peek(key) {
            self.sessions.touch(id);
            return id;
        }
        let returning = self.sessions.take_tombstone(key);
        let (id, evicted) = self.sessions.insert(
            key,
            Entry {
                returning,
                ..Entry::default()
            },
        );
        if let Some((_, e)) = evicted {
            page.evicted(e.fold);
        }
        id
    }

    /// One frame of session `key` through the pressure view, recording what it says in `out`
    /// (none in `look_back`). `line`: the entry its log line made (an adapter keeps one per
    /// line); without one a session's entry is made only by a frame that applies, so that a
    /// refused, re-delivered or ignored frame leaves the state as it was, recency included
    /// (contract §6.7).
    fn project(
        &mut self,
        at: usize,
        key: &[u8],
        line: Option<EntryId>,
        v: &Frame,
        mut out: Option<&mut Vec<Emit>>,
    ) {
        if !Projector::reads(v) {
            return;
        }
        if key.len() > MAX_KEY_LEN {
            if let Some(out) = out {
                let why = Refusal::LongKey(key.len());
                out.push(pressure::error_record(at, key, v.seq(), &why));
            }
            return;
        }
        let id = line.or_else(|| self.sessions.peek(key));
        let (session, returning) = match id {
            Some(id) => {
                let e = self.sessions.get_mut(id);
                (e.pressure.as_deref_mut(), e.returning)
            }
            None => (None, self.sessions.has_tombstone(key)),
        };
        // The record is written as the step finds the session shows something new: no
        // figures handed back by value.
        let outcome = self
            .projector
            .step(session, returning, v, |seq, now, names| {
                if let Some(out) = out.as_deref_mut() {
                    out.push(pressure::pressure_record(
                        at,
                        key,
                        seq,
                        v.stamp(),
                        now,
                        names,
                    ));
                }
            });
        match outcome {
            Outcome::Ignored => {}
            Outcome::Refused { seq, why } => {
                if let Some(out) = out {
                    out.push(pressure::error_record(at, key, seq, &why));
                }
            }
            Outcome::Applied => {
                if line.is_none() {
                    self.sessions
                        .touch(id.expect("an applied frame's session has an entry"));
                }
            }
            Outcome::Created { session } => match id {
                Some(id) => {
                    let e = self.sessions.get_mut(id);
                    e.pressure = Some(session);
                    e.returning = false;
                }
                None => {
                    self.sessions.take_tombstone(key);
                    self.sessions.insert(key, Entry::with_pressure(session));
                }
            },
        }
    }

    /// A record read as a frame, as far as the view reads it (the fold reads no `seq`).
    #[inline]
    fn read<'a>(&self, bytes: &'a [u8]) -> Option<Frame<'a>> {
        match self.view {
            View::Pressure => Frame::parse(bytes),
            View::Frames => Frame::parse_fold(bytes),
        }
    }

    /// Records that are frames (`input=agent-fold`).
    fn run_frames(&mut self, records: &[RecordIn], pass: Pass) -> Vec<Emit> {
        let replay = pass == Pass::Replay;
        if self.view == View::Pressure {
            let mut out = Vec::new();
            // One frame read into again and again (see `Frame::read_all`).
            let mut v = Frame::default();
            for (at, rec) in records.iter().enumerate() {
                if v.read_all(rec.value) {
                    let key = session_key(rec.key, Some(&v));
                    let sink = (!replay).then_some(&mut out);
                    self.project(at, &key, None, &v, sink);
                }
            }
            return out;
        }
        let mut page = Page::default();
        // One frame read into again and again (see `Frame::read_fold`).
        let mut frame = Frame::default();
        for rec in records {
            let v = self.read_fold(&mut frame, rec).then_some(&frame);
            self.fold_step(&mut page, v, rec.key, None, replay);
        }
        let mut emits = Vec::with_capacity(if replay { 0 } else { records.len() });
        self.finish(page, |o| {
            if replay {
                return;
            }
            emits.push(match o {
                Out::Pass(i) => Emit::Pass(i),
                Out::Fold {
                    newest,
                    oldest,
                    delta,
                    frames,
                    marks,
                } => Emit::Replace(
                    newest,
                    frames::folded(
                        records[newest].value,
                        records[oldest].value,
                        &marks,
                        delta,
                        frames,
                    ),
                ),
            })
        });
        emits
    }

    /// Where the frames view reads a record from; `None` for a keyed one it takes unread, that
    /// goes alike whether or not it is a frame, as a malformed one does (see
    /// `Folder::passes_unread`).
    #[inline(always)]
    fn fold_resume(&self, rec: &RecordIn) -> Option<Resume> {
        let resume = self.folder.resume(rec.value);
        let unread =
            resume == Resume::START && rec.key.is_some() && self.folder.passes_unread(rec.value);
        (!unread).then_some(resume)
    }

    /// A record into `frame` as the frames view reads it: `false` for one that is no JSON
    /// object, and for one it takes unread (see [`Processor::fold_resume`]).
    #[inline(always)]
    fn read_fold<'a>(&self, frame: &mut Frame<'a>, rec: &RecordIn<'a>) -> bool {
        self.fold_resume(rec)
            .is_some_and(|resume| frame.read_fold(rec.value, resume))
    }

    /// One frame through the fold: `line` is its line's entry and session, when an adapter made it.
    fn fold_step(
        &mut self,
        page: &mut Page,
        v: Option<&Frame>,
        key: Option<&[u8]>,
        line: Option<(EntryId, &[u8])>,
        replay: bool,
    ) {
        match self.folder.role(v, replay) {
            Role::Removed => page.skip(),
            Role::SubagentKept => page.pass(),
            role => {
                let (id, long) = match line {
                    Some((id, k)) => (Some(id), k.len() > MAX_KEY_LEN),
                    None => {
                        let k = session_key(key, v);
                        if k.len() > MAX_KEY_LEN {
                            (None, true)
                        } else {
                            (Some(self.entry(&k, page)), false)
                        }
                    }
                };
                match id {
                    // A session key over the limit: served as itself, no state kept.
                    Some(id) if !long => {
                        page.step(role, v, &mut self.sessions.get_mut(id).fold, id)
                    }
                    _ => page.pass(),
                }
            }
        }
    }

    /// The page ends (its sessions' open parts close): each out to `f` in order.
    fn finish(&mut self, page: Page, f: impl FnMut(Out)) {
        let sessions = &mut self.sessions;
        page.finish(|id| sessions.get_mut(id).fold.end_page(), f)
    }

    /// Records that are an agent's log lines: each adapted, its frames through the view.
    fn run_lines(&mut self, records: &[RecordIn], pass: Pass) -> Vec<Emit> {
        let replay = pass == Pass::Replay;
        let mut frames: Vec<Vec<u8>> = Vec::with_capacity(records.len());
        let mut origin: Vec<usize> = Vec::with_capacity(records.len());
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(records.len());
        let mut page = Page::default();
        let mut out = Vec::new();
        for (i, rec) in records.iter().enumerate() {
            let start = frames.len();
            let rules = self.adapt.as_mut().expect("lines are read with an adapter");
            let (key, id) = match rules.read(rec.key, rec.value) {
                LineRead::NotObject => {
                    frames.push(rec.value.to_vec());
                    (rec.key.unwrap_or_default().to_vec(), None)
                }
                LineRead::Object {
                    line,
                    key,
                    names,
                    more,
                } => {
                    let floor = rules.floor();
                    let id = (key.len() <= MAX_KEY_LEN).then(|| self.entry(&key, &mut page));
                    let rules = self.adapt.as_mut().expect("lines are read with an adapter");
                    let track = id.map(|id| {
                        let e = self.sessions.get_mut(id);
                        let returning = e.returning;
                        &mut **e
                            .track
                            .get_or_insert_with(|| Box::new(Track::new(returning, floor)))
                    });
                    rules.adapt(
                        track,
                        &line,
                        &more,
                        rec.key,
                        key.clone(),
                        names,
                        rec.offset,
                        self.epoch,
                        &mut frames,
                    );
                    (key, id)
                }
            };
            for (j, bytes) in frames.iter().enumerate().skip(start) {
                origin.push(i);
                let v = self.read(bytes);
                if self.view == View::Pressure {
                    if let Some(v) = &v {
                        let sink = (!replay).then_some(&mut out);
                        self.project(j, &key, id, v, sink);
                    }
                    continue;
                }
                let line = id.map(|id| (id, &key[..]));
                let long = key.len() > MAX_KEY_LEN;
                match (line, long) {
                    (Some(line), _) => {
                        self.fold_step(&mut page, v.as_ref(), None, Some(line), replay)
                    }
                    // Not an object (its record's key as its session), or a key over the limit.
                    (None, false) => {
                        self.fold_step(&mut page, v.as_ref(), Some(&key), None, replay)
                    }
                    (None, true) => match self.folder.role(v.as_ref(), replay) {
                        Role::Removed => page.skip(),
                        _ => page.pass(),
                    },
                }
            }
            keys.push(key);
        }
        if replay {
            self.finish(page, |_| {});
            return Vec::new();
        }
        let key_of = |j: usize| keys[origin[j]].clone();
        if self.view == View::Pressure {
            return out
                .into_iter()
                .map(|e| match e {
                    Emit::New { at, key, value } => Emit::New {
                        at: origin[at],
                        key,
                        value,
                    },
                    other => other,
                })
                .collect();
        }
        let mut outs = Vec::new();
        self.finish(page, |o| outs.push(o));
        let folded: Vec<Option<Vec<u8>>> = outs
            .iter()
            .map(|o| match *o {
                Out::Fold {
                    newest,
                    oldest,
                    delta,
                    frames: n,
                    marks,
                } => Some(frames::folded(
                    &frames[newest],
                    &frames[oldest],
                    &marks,
                    delta,
                    n,
                )),
                Out::Pass(_) => None,
            })
            .collect();
        outs.into_iter()
            .zip(folded)
            .map(|(o, f)| {
                let j = match o {
                    Out::Pass(j) => j,
                    Out::Fold { newest, .. } => newest,
                };
                let value = f.unwrap_or_else(|| std::mem::take(&mut frames[j]));
                Emit::New {
                    at: origin[j],
                    key: key_of(j),
                    value,
                }
            })
            .collect()
    }

    /// One invocation run only as far as `stage`, for the bench's count of each phase's fuel
    /// (`bench --phases`, docs/bench.md): no other caller. Records made are returned only at
    /// [`Probe::Records`]; every earlier stage returns none.
    #[cfg(feature = "probe")]
    #[doc(hidden)]
    pub fn probe(&mut self, records: &[RecordIn], stage: Probe) -> Vec<Emit> {
        match stage {
            // Each record the view reads checked as an object; the rest, taken unread.
            Probe::Walk => {
                for rec in records {
                    let unread = self.view == View::Frames && self.fold_resume(rec).is_none();
                    std::hint::black_box(!unread && json::is_object(rec.value));
                }
                Vec::new()
            }
            // Each record read as its view reads it (`run_frames`).
            Probe::Scan | Probe::Lookup => {
                let mut page = Page::default();
                let mut frame = Frame::default();
                for rec in records {
                    let v = match self.view {
                        View::Frames => self.read_fold(&mut frame, rec),
                        View::Pressure => frame.read_all(rec.value),
                    };
                    let v = v.then_some(&frame);
                    let k = session_key(rec.key, v);
                    if stage == Probe::Lookup && k.len() <= MAX_KEY_LEN {
                        std::hint::black_box(self.entry(&k, &mut page));
                    }
                    std::hint::black_box(k);
                }
                Vec::new()
            }
            Probe::View => {
                self.epoch += 1;
                self.replay(records);
                Vec::new()
            }
            Probe::Records => self.process(records).unwrap_or_default(),
        }
    }

    /// How many sessions hold state.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The whole state as a checkpoint document (`stateVersion` 4).
    pub fn checkpoint(&self) -> String {
        let mut w = Members::default();
        w.uint("stateVersion", STATE_VERSION);
        w.opt_str("view", Some(self.view.name()));
        if let Some(a) = &self.adapt {
            w.opt_str("input", Some(a.input.name()));
            w.uint("lines", a.lines);
            w.raw("last", &checkpoint::key_json(a.last.as_deref()));
        }
        let mut list = String::new();
        checkpoint::write_sessions(&mut list, self.sessions.iter_oldest_first(), self.view);
        w.raw("sessions", &list);
        w.object()
    }

    /// Replaces the state with a checkpoint's (`stateVersion` 5 to 1; a version 3 document keeps
    /// its adapter's state apart, and is merged by session). On error the state is unchanged.
    pub fn restore(&mut self, text: &str) -> Result<(), CheckpointError> {
        let doc = Document::read(text)?;
        let serves = self.view.name();
        match doc.view.as_deref() {
            Some(v) if v == serves => {}
            found => {
                return Err(match found {
                    Some(f @ ("frames" | "pressure")) => CheckpointError::View {
                        found: f.to_owned(),
                        serves,
                    },
                    _ => {
                        CheckpointError::Invalid("`view` must be \"frames\" or \"pressure\"".into())
                    }
                });
            }
        }
        // A version 3 document's adapter state is a document of its own.
        let v3 = match doc.adapter {
            Some(raw) => Some(Document::read_with(raw.get(), Some(3))?),
            None => None,
        };
        let found_input = doc
            .input
            .clone()
            .or_else(|| v3.as_ref().and_then(|d| d.input.clone()));
        match (&self.adapt, &found_input) {
            (None, Some(_)) => return Err(CheckpointError::UnexpectedAdapterState),
            (Some(a), None) => {
                return Err(CheckpointError::NoAdapterState {
                    reads: a.input.name(),
                });
            }
            (Some(a), Some(f)) if f != a.input.name() => {
                return Err(CheckpointError::Input {
                    found: f.clone(),
                    reads: a.input.name(),
                });
            }
            _ => {}
        }
        let mut sessions = Lru::new(self.sessions.cap());
        let Some(list) = doc.sessions else {
            return Err(CheckpointError::Invalid(
                "`sessions` must be an array".into(),
            ));
        };
        checkpoint::read_sessions::<Entry>(list, doc.version, self.view, |k, e| {
            sessions.insert(&k, e);
            Ok(())
        })?;
        let mut adapt = self.adapt.clone();
        if let (Some(a), Some(d)) = (&mut adapt, &v3) {
            if let Some(list) = d.sessions {
                checkpoint::read_sessions::<Track>(list, 3, (), |k, t| {
                    match sessions.peek(&k) {
                        Some(id) => sessions.get_mut(id).track = Some(Box::new(t)),
                        None => {
                            let e = Entry {
                                track: Some(Box::new(t)),
                                fold: RunState::default(),
                                ..Entry::default()
                            };
                            sessions.insert(&k, e);
                        }
                    }
                    Ok(())
                })?;
            }
            a.last = match d.last {
                Some(raw) => checkpoint::read_key(raw)?,
                None => None,
            };
            a.lines = d.lines;
        } else if let Some(a) = &mut adapt {
            a.last = match doc.last {
                Some(raw) => checkpoint::read_key(raw)?,
                None => None,
            };
            a.lines = doc.lines;
        }
        self.sessions = sessions;
        self.adapt = adapt;
        Ok(())
    }
}
