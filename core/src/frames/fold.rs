//! The counter fold (contract §2): one state machine that both the streaming view and the page API
//! drive, so a page and a stream of invocations fold the same way.
//!
//! A run may be folded only from its first counter that follows a main frame that is no
//! counter: a page whose front cuts inside a running turn serves its leading counters as
//! themselves, so a later page's fold nests inside or around an earlier one, never crosses it.

use crate::frame::MAX_SAFE;

/// What one valid counter adds to a foldable part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub delta: u64,
    /// How many original counters it stands for (`folded_frames`, else 1).
    pub frames: u64,
}

/// Where a value stands in its record: `start..end` as offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

/// What a fold takes from a counter, marked as the page reads it, so that making a folded
/// frame reads no record again: where its three fold fields' values stand (the newest
/// counter's, spliced), and where the stamp a fold starting at it keeps stands (the oldest's).
/// Carried by the part itself, set as each counter joins it, so that a record that folds
/// nothing keeps none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub places: [Option<Span>; 3],
    pub oldest: Option<Span>,
}

/// A foldable part that has closed: the frames at `oldest..=newest` (by page index) it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    /// Page index of its oldest counter, whose stamp (or `folded_from`) the fold keeps.
    pub oldest: usize,
    /// Page index of its newest counter, where the folded frame stands.
    pub newest: usize,
    /// How many counters of the page it holds; a part of one is served as itself.
    pub members: u64,
    pub delta: u64,
    pub frames: u64,
    /// The newest counter's places and the oldest counter's stamp, as the page sets them
    /// (the page API's parts keep none).
    pub marks: Marks,
}

/// How a counter fed to [`RunState::counter`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fed {
    /// It joined (or opened) a foldable part: it stands for nothing on its own until the
    /// part closes as a part of one.
    InRun,
    /// It is served as itself.
    Alone,
}

/// One session's fold state. Between pages only `after_non_counter` survives: whether the last main
/// frame was a non-counter, so that the next page's leading counters may fold.
///
/// The open part lives only within a page, so it is boxed: every session keeps its state
/// between pages, and a `None` box costs it 8 bytes where an inline part would cost 80.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunState {
    pub after_non_counter: bool,
    pub part: Option<Box<Part>>,
}

impl RunState {
    /// A main frame that is no counter: the open part closes, and a new one may start.
    pub(crate) fn other(&mut self) -> Option<Box<Part>> {
        self.after_non_counter = true;
        self.part.take()
    }

    /// A main counter at page index `at`; `tally` is `None` for a counter that cannot be
    /// folded (unstamped, bad delta, bad fold fields). Returns how it went, and the part it
    /// closed, if any (boxed as it was kept: a part handed back by value is copied out).
    pub(crate) fn counter(&mut self, at: usize, tally: Option<Tally>) -> (Fed, Option<Box<Part>>) {
        let Some(t) = tally else {
            self.after_non_counter = false;
            return (Fed::Alone, self.part.take());
        };
        match &mut self.part {
            Some(p) => {
                let delta = p.delta + t.delta;
                let frames = p.frames + t.frames;
                if delta > MAX_SAFE || frames > MAX_SAFE {
                    self.after_non_counter = false;
                    return (Fed::Alone, self.part.take());
                }
                p.newest = at;
                p.members += 1;
                p.delta = delta;
                p.frames = frames;
                (Fed::InRun, None)
            }
            None if self.after_non_counter => {
                self.part = Some(Box::new(Part {
                    oldest: at,
                    newest: at,
                    members: 1,
                    delta: t.delta,
                    frames: t.frames,
                    marks: Marks::default(),
                }));
                (Fed::InRun, None)
            }
            None => (Fed::Alone, None),
        }
    }

    /// The page ends: the open part closes. A page that ended inside a run leaves the next
    /// page's leading counters unfoldable, since their run's start was served already.
    pub(crate) fn end_page(&mut self) -> Option<Box<Part>> {
        let part = self.part.take();
        if part.is_some() {
            self.after_non_counter = false;
        }
        part
    }
}

/// Splices a folded frame out of its newest counter's bytes: the three fold fields are
/// replaced in place where present, else appended in order before the closing brace.
///
/// `delta`, `from`, `frames` are the value ranges of the existing fields in `newest`;
/// `from_raw` is the JSON text of the oldest stamp.
pub(crate) fn splice(
    newest: &[u8],
    spans: [Option<Span>; 3],
    delta: u64,
    frames: u64,
    from_raw: &[u8],
) -> Vec<u8> {
    let (mut delta_buf, mut frames_buf) = ([0; 20], [0; 20]);
    let delta = crate::json::uint_text(delta, &mut delta_buf);
    let frames = crate::json::uint_text(frames, &mut frames_buf);
    let values: [&[u8]; 3] = [delta.as_bytes(), from_raw, frames.as_bytes()];
    const NAMES: [&str; 3] = ["estimated_tokens_delta", "folded_from", "folded_frames"];

    // The fields present, in the order they stand (no list allocated: three at most).
    let mut edits: [Option<(Span, &[u8])>; 3] = [None; 3];
    for ((edit, span), value) in edits.iter_mut().zip(spans).zip(values) {
        *edit = span.map(|r| (r, value));
    }
    let start = |e: &Option<(Span, &[u8])>| e.map(|(r, _)| r.start);
    for (a, b) in [(0, 1), (1, 2), (0, 1)] {
        if start(&edits[a]) > start(&edits[b]) {
            edits.swap(a, b);
        }
    }

    let close = newest
        .iter()
        .rposition(|b| *b == b'}')
        .unwrap_or(newest.len());
    let mut out = Vec::with_capacity(newest.len() + 96);
    let mut at = 0;
    for (r, value) in edits.into_iter().flatten() {
        out.extend_from_slice(&newest[at..r.start]);
        out.extend_from_slice(value);
        at = r.end;
    }
    out.extend_from_slice(&newest[at..close]);
    for ((span, value), name) in spans.iter().zip(values).zip(NAMES) {
        if span.is_none() {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(value);
        }
    }
    out.extend_from_slice(&newest[close..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(delta: u64) -> Option<Tally> {
        Some(Tally { delta, frames: 1 })
    }

    #[test]
    fn leading_counters_are_alone_until_a_break() {
        let mut s = RunState::default();
        assert_eq!(s.counter(0, t(1)), (Fed::Alone, None));
        assert_eq!(s.other(), None);
        assert_eq!(s.counter(2, t(2)).0, Fed::InRun);
        assert_eq!(s.counter(3, t(3)).0, Fed::InRun);
        let p = s.other().unwrap();
        assert_eq!(
            (p.oldest, p.newest, p.members, p.delta, p.frames),
            (2, 3, 2, 5, 2)
        );
    }

    #[test]
    fn a_bad_counter_ends_the_part_and_the_block() {
        let mut s = RunState {
            after_non_counter: true,
            part: None,
        };
        s.counter(0, t(1));
        let (fed, closed) = s.counter(1, None);
        assert_eq!(fed, Fed::Alone);
        assert_eq!(closed.unwrap().members, 1);
        assert_eq!(s.counter(2, t(1)), (Fed::Alone, None));
    }

    #[test]
    fn overflow_past_2_pow_53_ends_the_part() {
        let mut s = RunState {
            after_non_counter: true,
            part: None,
        };
        s.counter(0, t(MAX_SAFE));
        let (fed, closed) = s.counter(1, t(1));
        assert_eq!(fed, Fed::Alone);
        assert_eq!(closed.unwrap().delta, MAX_SAFE);
        assert!(!s.after_non_counter);
    }

    #[test]
    fn page_end_inside_a_run_blocks_the_next_page_front() {
        let mut s = RunState::default();
        s.other();
        s.counter(1, t(1));
        assert!(s.end_page().is_some());
        assert_eq!(s.counter(0, t(1)), (Fed::Alone, None));
        let mut s = RunState::default();
        s.other();
        assert!(s.end_page().is_none());
        assert!(s.after_non_counter);
    }

    #[test]
    fn splice_replaces_in_place_and_appends_in_order() {
        let rec = br#"{"type":"c","folded_frames":2,"estimated_tokens_delta":7,"x":1} "#;
        let at = |needle: &str| {
            let start = std::str::from_utf8(rec).unwrap().find(needle).unwrap() + needle.len();
            Span {
                start,
                end: start + 1,
            }
        };
        let d = at("\"estimated_tokens_delta\":");
        let f = at("\"folded_frames\":");
        assert_eq!(&rec[d.start..d.end], b"7");
        assert_eq!(&rec[f.start..f.end], b"2");
        let out = splice(rec, [Some(d), None, Some(f)], 12, 5, b"\"t0\"");
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"type":"c","folded_frames":5,"estimated_tokens_delta":12,"x":1,"folded_from":"t0"} "#
        );
    }
}
