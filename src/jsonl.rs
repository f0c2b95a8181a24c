//! Agent logs as JSONL: one line, one record value; the key is the line's `session_id`.

use agent_fold_core::{Frame, session_key};

use crate::record::Rec;

/// One line as a record: its key is its frame's `session_id` string; a line that is not a
/// JSON object, or has none, has no key.
pub fn line_record(line: &[u8]) -> Rec {
    let frame = Frame::parse(line);
    let key = frame
        .as_ref()
        .filter(|f| f.session_id().is_some())
        .map(|f| session_key(None, Some(f)).into_owned());
    Rec {
        key,
        value: line.to_vec(),
    }
}

/// A file that is one JSON object written over several lines (Gemini CLI's saved chat,
/// `opencode export`): the whole of it as one record; `None` for anything else (JSONL, whose
/// first line is an object of its own, or what is not one JSON object).
pub(crate) fn document(text: &[u8]) -> Option<Rec> {
    let trimmed = text.trim_ascii();
    let first = trimmed.split(|b| *b == b'\n').next().unwrap_or_default();
    if !trimmed.starts_with(b"{")
        || first.len() == trimmed.len()
        || serde_json::from_slice::<serde::de::IgnoredAny>(first).is_ok()
        || serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_err()
    {
        return None;
    }
    Some(Rec {
        key: None,
        value: trimmed.to_vec(),
    })
}

/// A log file's records: the one a document is ([`document`]), else a record a line
/// ([`records`]).
pub(crate) fn file_records(text: &[u8]) -> Vec<Rec> {
    match document(text) {
        Some(doc) => vec![doc],
        None => records(text),
    }
}

/// The lines of a JSONL text (a trailing `\r` kept off, empty lines skipped).
pub fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

/// Every non-empty line of a JSONL text, as records.
pub fn records(text: &[u8]) -> Vec<Rec> {
    lines(text).map(line_record).collect()
}

/// What [`Splitter::push`] found, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// A complete line (its `\r` kept off), at most the splitter's limit.
    Line(&'a [u8]),
    /// A complete line of this many bytes, over the limit: skipped.
    Long(usize),
    /// A line still open grew over the limit: its bytes are dropped up to its newline.
    Open,
}

impl<'a> Piece<'a> {
    /// The line, or why a line `place` ("in FILE", "on stdin") was skipped; `max` is the
    /// limit it went over.
    pub(crate) fn line(self, place: &str, max: usize) -> Result<&'a [u8], String> {
        match self {
            Piece::Line(l) => Ok(l),
            Piece::Long(n) => Err(format!(
                "a line of {n} bytes {place}, over the limit of {max}"
            )),
            Piece::Open => Err(format!(
                "a line of over {max} bytes {place}: skipped up to its end"
            )),
        }
    }
}

/// Complete lines out of bytes that come in pieces (a file's appends, a pipe's reads), none
/// held over `max` bytes: a longer line is skipped, so memory stays bounded whatever is
/// written. A line counts once its newline has come; [`Splitter::finish`] gives the last.
/// Lines are numbered as a text's physical lines are, from 1, empty ones counted (and not
/// handed out).
#[derive(Debug)]
pub(crate) struct Splitter {
    max: usize,
    /// Bytes after the last newline: a line still being written.
    pending: Vec<u8>,
    /// The pending line grew over `max`: its bytes are dropped up to its newline.
    dropping: bool,
    /// Physical lines ended so far (by a newline, or by [`Splitter::finish`]).
    ended: u64,
}

impl Splitter {
    pub(crate) fn new(max: usize) -> Splitter {
        Splitter {
            max,
            pending: Vec::new(),
            dropping: false,
            ended: 0,
        }
    }

    /// A splitter that starts inside an over-long line: its bytes up to its newline are dropped
    /// (a reader resuming where it stopped while skipping one, [`Splitter::held`] `None`).
    pub(crate) fn dropping(max: usize) -> Splitter {
        Splitter {
            dropping: true,
            ..Splitter::new(max)
        }
    }

    /// The bytes held of a line still being written (a reader that resumes later starts again
    /// this far back); `None` while an over-long one is being dropped.
    pub(crate) fn held(&self) -> Option<usize> {
        (!self.dropping).then_some(self.pending.len())
    }

    /// Takes the next bytes and hands `each` what they complete.
    pub(crate) fn push(&mut self, new: &[u8], mut each: impl FnMut(Piece<'_>)) {
        self.push_numbered(new, |_, p| each(p));
    }

    /// As [`Splitter::push`], each piece with its line's number (an [`Piece::Open`] line's is
    /// the number it will have).
    pub(crate) fn push_numbered(&mut self, mut new: &[u8], mut each: impl FnMut(u64, Piece<'_>)) {
        if self.dropping {
            match new.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    new = &new[i + 1..];
                    self.dropping = false;
                    self.ended += 1;
                }
                None => return,
            }
        }
        let Some(end) = new.iter().rposition(|b| *b == b'\n') else {
            self.hold(new, &mut each);
            return;
        };
        let (done, rest) = new.split_at(end + 1);
        if self.pending.is_empty() {
            self.lines(done, &mut each);
        } else {
            let mut text = std::mem::take(&mut self.pending);
            text.extend_from_slice(done);
            self.lines(&text, &mut each);
        }
        self.hold(rest, &mut each);
    }

    /// The last line, when the bytes ended without a newline (nothing if it was over `max`).
    pub(crate) fn finish(&mut self, mut each: impl FnMut(Piece<'_>)) {
        self.finish_numbered(|_, p| each(p));
    }

    /// As [`Splitter::finish`], the line with its number.
    pub(crate) fn finish_numbered(&mut self, mut each: impl FnMut(u64, Piece<'_>)) {
        let text = std::mem::take(&mut self.pending);
        self.dropping = false;
        if !text.is_empty() {
            let mut text = text;
            text.push(b'\n');
            self.lines(&text, &mut each);
        }
    }

    /// `text` ends with a newline: each physical line in it, numbered.
    fn lines(&mut self, text: &[u8], each: &mut impl FnMut(u64, Piece<'_>)) {
        let body = text.strip_suffix(b"\n").unwrap_or(text);
        for l in body.split(|b| *b == b'\n') {
            self.ended += 1;
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            if l.is_empty() {
                continue;
            }
            each(
                self.ended,
                if l.len() <= self.max {
                    Piece::Line(l)
                } else {
                    Piece::Long(l.len())
                },
            );
        }
    }

    fn hold(&mut self, rest: &[u8], each: &mut impl FnMut(u64, Piece<'_>)) {
        if self.pending.len() + rest.len() > self.max {
            self.pending = Vec::new();
            self.dropping = true;
            each(self.ended + 1, Piece::Open);
        } else {
            self.pending.extend_from_slice(rest);
        }
    }
}

/// What [`read_lines`] hands on: a line and its number, or a line skipped and why.
pub(crate) type Numbered<'a> = (u64, Result<&'a [u8], String>);

/// Reads `reader` to its end, handing `each` its lines as a [`Splitter`] of `max` cuts them —
/// each complete line with its number, each line over `max` as why it was skipped (`place`
/// names where: "in FILE") — so that memory stays within `max` and one read's buffer whatever
/// the input's size (a line of a gigabyte is skipped having held `max`). `each` returning
/// `false` stops the reading. The one line reader of the tools that read a log whole
/// (`inspect`); `serve` follows a log through a [`Splitter`] of its own.
pub(crate) fn read_lines(
    mut reader: impl std::io::Read,
    max: usize,
    place: &str,
    mut each: impl FnMut(Numbered<'_>) -> bool,
) -> std::io::Result<()> {
    let mut split = Splitter::new(max);
    let mut buf = vec![0u8; 1 << 16];
    let mut go = true;
    while go {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        split.push_numbered(&buf[..n], |at, piece| {
            if go {
                go = each((at, piece.line(place, max)));
            }
        });
    }
    if go {
        split.finish_numbered(|at, piece| {
            if go {
                go = each((at, piece.line(place, max)));
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, pieces: &[&[u8]]) -> Vec<String> {
        let mut s = Splitter::new(max);
        let mut out = Vec::new();
        let mut take = |p: Piece<'_>| {
            out.push(match p {
                Piece::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Piece::Long(n) => format!("<long {n}>"),
                Piece::Open => "<open>".to_owned(),
            })
        };
        for p in pieces {
            s.push(p, &mut take);
        }
        s.finish(&mut take);
        out
    }

    #[test]
    fn lines_come_whole_however_the_bytes_are_cut() {
        let text = b"one\r\ntwo\n\nthree\nfour";
        let want = ["one", "two", "three", "four"];
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(split(100, &[a, b]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split(100, &bytes), want);
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_and_holds_no_more_than_the_limit() {
        assert_eq!(split(4, &[b"abcdefg\nok\n"]), ["<long 7>", "ok"]);
        // Open, in pieces: dropped up to its newline, the next line kept.
        assert_eq!(
            split(4, &[b"abc", b"defg", b"hij\nok", b"\n"]),
            ["<open>", "ok"]
        );
        let mut s = Splitter::new(4);
        for _ in 0..1000 {
            s.push(b"xxxxxxxx", |_| {});
            assert!(s.pending.len() <= 4);
        }
        // A last line over the limit without its newline: nothing more said.
        assert_eq!(split(4, &[b"ok\nabcdefgh"]), ["ok", "<open>"]);
    }

    /// Lines are numbered as the text's physical lines, empty and skipped ones counted, however
    /// the bytes come; `read_lines` reads a stream so, holding no more than the limit.
    #[test]
    fn lines_are_numbered_as_the_text_s_and_a_reader_holds_the_limit() {
        let text = b"a\n\nxxxxxxxx\r\nb\nyyyyyyyyyyyy\nc";
        let want = ["1 a", "3 skipped", "4 b", "5 skipped", "6 c"];
        for cut in 1..text.len() {
            let mut got = Vec::new();
            let reader = std::io::Read::chain(&text[..cut], &text[cut..]);
            read_lines(reader, 4, "in t", |(n, l)| {
                got.push(match l {
                    Ok(l) => format!("{n} {}", String::from_utf8_lossy(l)),
                    Err(why) => {
                        assert!(why.contains("in t"), "{why}");
                        format!("{n} skipped")
                    }
                });
                true
            })
            .unwrap();
            assert_eq!(got, want, "cut at {cut}");
        }
        // Stopped when asked.
        let mut n = 0;
        read_lines(&text[..], 4, "", |_| {
            n += 1;
            false
        })
        .unwrap();
        assert_eq!(n, 1);
        // An endless line (`/dev/zero`'s bytes) holds the limit, not the input.
        let mut zero = std::io::Read::take(std::io::repeat(0), 64 << 20);
        let mut said = 0;
        read_lines(&mut zero, 1 << 20, "", |(_, l)| {
            assert!(l.is_err());
            said += 1;
            true
        })
        .unwrap();
        assert_eq!(said, 1, "one line, skipped");
    }

    /// What a reader resuming later needs: the bytes of a line still being written, and
    /// whether an over-long one is being dropped; a splitter made dropping drops to the newline.
    #[test]
    fn held_bytes_and_dropping_carry_a_reader_across_calls() {
        let mut s = Splitter::new(8);
        let mut got = Vec::new();
        s.push(b"{\"a\":1}\n{\"b", |p| got.push(format!("{p:?}")));
        assert_eq!(s.held(), Some(3), "{{\"b");
        s.push(b"xxxxxxxxxxxx", |p| got.push(format!("{p:?}")));
        assert_eq!(s.held(), None, "over the limit: dropping");
        let mut resumed = Splitter::dropping(8);
        let mut lines = Vec::new();
        resumed.push(b"yyy\n{}\n", |p| {
            if let Piece::Line(l) = p {
                lines.push(l.to_vec());
            }
        });
        assert_eq!(lines, [b"{}".to_vec()], "the long line's rest is dropped");
        assert_eq!(resumed.held(), Some(0));
    }
}
