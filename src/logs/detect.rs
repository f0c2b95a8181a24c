//! Telling a log's format: the one place every tool does it (`run`, `inspect`, `accuracy`,
//! `serve`'s followed files and its module pairs). Each line is asked what it is
//! ([`Input::detect`], the core's reading of one line); the first that tells decides; a log
//! whose first [`DETECT_LINES`] lines do not tell is none this build knows
//! (docs/adapters.md, "Telling a log's format").

use agent_fold_core::Input;

use crate::record::Rec;

/// Lines looked at to tell a log's format.
pub(crate) const DETECT_LINES: usize = 200;

/// What a log's first lines say of its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A line told it.
    Told(Input),
    /// None told yet, and fewer than [`DETECT_LINES`] lines seen: more may.
    Waiting,
    /// [`DETECT_LINES`] lines seen (or the log ended) and none told.
    Untold,
}

/// Fed a log's lines as they come (a stream, a callback over a file's lines).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Detector {
    seen: usize,
    told: Option<Input>,
}

impl Detector {
    /// One more line.
    pub(crate) fn line(&mut self, line: &[u8]) -> Verdict {
        if self.told.is_none() && self.seen < DETECT_LINES {
            self.seen += 1;
            self.told = Input::detect(line);
        }
        self.verdict()
    }

    /// What the lines so far say.
    pub(crate) fn verdict(&self) -> Verdict {
        match self.told {
            Some(input) => Verdict::Told(input),
            None if self.seen >= DETECT_LINES => Verdict::Untold,
            None => Verdict::Waiting,
        }
    }
}

/// What `records`, a log's first lines, say of its format.
pub(crate) fn verdict(records: &[Rec]) -> Verdict {
    let mut d = Detector::default();
    for r in records.iter().take(DETECT_LINES) {
        if let Verdict::Told(input) = d.line(&r.value) {
            return Verdict::Told(input);
        }
    }
    d.verdict()
}

/// The format of a whole log, from its first lines that tell.
pub(crate) fn detect(records: &[Rec]) -> Option<Input> {
    match verdict(records) {
        Verdict::Told(input) => Some(input),
        Verdict::Waiting | Verdict::Untold => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize, last: &str) -> Vec<Rec> {
        let mut v: Vec<Rec> = (0..n).map(|_| Rec::new(None, b"{\"x\":1}")).collect();
        v.push(Rec::new(None, last.as_bytes()));
        v
    }

    #[test]
    fn the_first_lines_that_tell_decide_and_no_more_are_looked_at() {
        let codex =
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s"}}"#;
        assert_eq!(
            verdict(&lines(3, codex)),
            Verdict::Told(Input::Codex),
            "{codex}"
        );
        assert_eq!(verdict(&lines(3, "{}")), Verdict::Waiting);
        assert_eq!(verdict(&lines(DETECT_LINES, codex)), Verdict::Untold);
        assert_eq!(detect(&lines(DETECT_LINES - 1, codex)), Some(Input::Codex));
        let mut d = Detector::default();
        for _ in 0..DETECT_LINES {
            assert_ne!(d.line(b"{}"), Verdict::Told(Input::Codex));
        }
        assert_eq!(d.line(codex.as_bytes()), Verdict::Untold);
    }
}
