//! Reading a log: whole (a file, a session directory, a database) or as it comes (stdin, a
//! FIFO), and adapting its lines to frames on the host.

use std::path::Path;

use agent_fold_core::{Adapter, Input};
use anyhow::{Context, Result, bail};

use super::detect::{self, Verdict};
use super::files::{database, log_files, readable};
use super::merge::merge;
use crate::jsonl;
use crate::record::Rec;

/// Reads a log path as records, one a line (a FIFO to its end) or one a document
/// ([`jsonl::document`]); a directory as [`log_files`] merged; an OpenCode database (or the
/// directory holding one) as every session's export document ([`crate::opencode_db`]).
pub fn read_records(path: &Path) -> Result<Vec<Rec>> {
    read_records_in(path, None)
}

/// [`read_records`], of one session of an OpenCode database when `session` names one (a log
/// that is no database refuses it).
pub(crate) fn read_records_in(path: &Path, session: Option<&str>) -> Result<Vec<Rec>> {
    readable(path)?;
    read_files(path, session)
}

/// [`read_records`] of a path [`readable`] took.
fn read_files(path: &Path, session: Option<&str>) -> Result<Vec<Rec>> {
    if let Some(db) = database(path) {
        let db = crate::opencode_db::Db::open(&db)?;
        return Ok(db.records(session, crate::module::INVOCATION_BYTES)?);
    }
    if session.is_some() {
        bail!(
            "{} is not an OpenCode database: --session picks one session of one (opencode.db)",
            path.display()
        );
    }
    let mut files = Vec::new();
    for f in log_files(path)? {
        let text = std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?;
        files.push(jsonl::file_records(&text));
    }
    Ok(merge(files))
}

/// A log as the runner reads it: whole (a file, a session directory), or as it comes (stdin, a
/// FIFO): what one read brings is there to process at once, so that `tail -f log | agent-fold
/// run -` answers each line as it arrives, and memory holds what is not yet processed.
pub(crate) enum LogReader {
    Whole(std::vec::IntoIter<Rec>),
    Stream(Stream),
}

/// Lines of a stream, read as they come.
pub(crate) struct Stream {
    reader: Box<dyn std::io::BufRead>,
    lines: jsonl::Splitter,
    ready: std::collections::VecDeque<Rec>,
    ended: bool,
}

impl LogReader {
    /// [`LogReader::open`], of one session of an OpenCode database when `session` names one.
    pub(crate) fn open_in(path: Option<&Path>, session: Option<&str>) -> Result<LogReader> {
        let stream = |r: Box<dyn std::io::Read>| {
            LogReader::Stream(Stream {
                reader: Box::new(std::io::BufReader::with_capacity(1 << 20, r)),
                lines: jsonl::Splitter::new(usize::MAX),
                ready: Default::default(),
                ended: false,
            })
        };
        let Some(path) = path else {
            if session.is_some() {
                bail!("--session picks one session of an OpenCode database, not of stdin");
            }
            return Ok(stream(Box::new(std::io::stdin())));
        };
        if readable(path)? && session.is_none() {
            let f =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            return Ok(stream(Box::new(f)));
        }
        Ok(LogReader::Whole(read_files(path, session)?.into_iter()))
    }

    /// Lines in all, when known before they are read.
    pub(crate) fn known_len(&self) -> Option<usize> {
        match self {
            LogReader::Whole(lines) => Some(lines.len()),
            LogReader::Stream(_) => None,
        }
    }

    pub(crate) fn is_stream(&self) -> bool {
        matches!(self, LogReader::Stream(_))
    }

    /// The next lines, at most `max` of them; on a stream it waits for one read at most
    /// (`None`: the log ended).
    pub(crate) fn next_batch(&mut self, max: usize) -> Result<Option<Vec<Rec>>> {
        let max = max.max(1);
        match self {
            LogReader::Whole(lines) => {
                let batch: Vec<Rec> = lines.by_ref().take(max).collect();
                Ok((!batch.is_empty()).then_some(batch))
            }
            LogReader::Stream(s) => {
                while s.ready.is_empty() && !s.ended {
                    s.read()?;
                }
                if s.ready.is_empty() {
                    return Ok(None);
                }
                let n = max.min(s.ready.len());
                Ok(Some(s.ready.drain(..n).collect()))
            }
        }
    }

    /// The log's format from its first lines that tell ([`detect::DETECT_LINES`] at most; a
    /// stream is read that far, or to its end, first).
    pub(crate) fn detect(&mut self) -> Result<Option<Input>> {
        match self {
            LogReader::Whole(lines) => Ok(detect::detect(lines.as_slice())),
            LogReader::Stream(s) => loop {
                match detect::verdict(s.ready.make_contiguous()) {
                    Verdict::Told(input) => return Ok(Some(input)),
                    Verdict::Untold => return Ok(None),
                    Verdict::Waiting if s.ended => return Ok(None),
                    Verdict::Waiting => s.read()?,
                }
            },
        }
    }
}

impl Stream {
    /// One read: the lines it completes join `ready`; at the end, the last line too.
    fn read(&mut self) -> Result<()> {
        let ready = &mut self.ready;
        let mut take = |p: jsonl::Piece<'_>| {
            if let jsonl::Piece::Line(l) = p {
                ready.push_back(jsonl::line_record(l));
            }
        };
        let buf = match self.reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(anyhow::Error::new(e).context("reading the log")),
        };
        if buf.is_empty() {
            self.ended = true;
            self.lines.finish(&mut take);
            return Ok(());
        }
        let n = buf.len();
        self.lines.push(buf, &mut take);
        self.reader.consume(n);
        Ok(())
    }
}

/// The frames one chunk of lines becomes (the first line at offset `base`), each keyed by its
/// `session_id` as the runner keys frames read from a file.
pub(crate) fn adapt_chunk(adapter: &mut Adapter, lines: &[Rec], base: i64) -> Vec<Rec> {
    let mut frames = Vec::with_capacity(lines.len());
    for (i, r) in lines.iter().enumerate() {
        adapter.push(
            r.key.as_deref(),
            &r.value,
            Some(base + i as i64),
            &mut frames,
        );
    }
    frames.iter().map(|f| jsonl::line_record(f)).collect()
}

/// A whole log adapted at once.
pub fn adapt_all(config: &agent_fold_core::Config, lines: &[Rec]) -> Vec<Rec> {
    let mut a = Adapter::for_config(config);
    adapt_chunk(&mut a, lines, 0)
}

/// A frame's `type`, for summaries.
pub fn frame_type(value: &[u8]) -> String {
    match agent_fold_core::Frame::parse(value) {
        Some(f) => f.kind().unwrap_or("(no type)").to_owned(),
        None => "(not a JSON object)".to_owned(),
    }
}
