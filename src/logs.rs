//! Agents' own logs as the runner reads them: a file, stdin, a Claude Code session directory
//! (the main transcript beside it and its `subagents/`) or OpenCode's database, what format
//! each is (the one place a log's format is told: [`detect`], [`is_database`]), and the
//! adapters that turn their lines into frames.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use agent_fold_core::{Adapter, Input};
use anyhow::{Context, Result, bail};

use crate::jsonl;
use crate::record::Rec;

/// The files of a log path: the file itself; or, for a Claude Code session directory
/// `<id>/`, the transcript `<id>.jsonl` beside it (when there) followed by `<id>/subagents/*.jsonl`
/// (and any `*.jsonl` directly in the directory), sorted by name.
pub fn log_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    let beside = match path.file_name() {
        Some(name) => path.with_file_name(format!("{}.jsonl", name.to_string_lossy())),
        None => path.with_extension("jsonl"),
    };
    if beside.is_file() {
        files.push(beside.clone());
    }
    for dir in [path.to_owned(), path.join("subagents")] {
        if !dir.is_dir() {
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        found.sort();
        files.extend(found);
    }
    if files.is_empty() {
        bail!(
            "{} is a directory with no transcript beside it ({}) and no .jsonl in it or in subagents/",
            path.display(),
            beside.display()
        );
    }
    Ok(files)
}

/// Whether a path is a directory of logs (`~/.claude/projects`, `~/.codex/sessions`), each file
/// a log of its own, rather than one Claude Code session's directory (a transcript beside it,
/// or a `subagents/` in it).
pub fn is_tree(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let beside = match path.file_name() {
        Some(name) => path.with_file_name(format!("{}.jsonl", name.to_string_lossy())),
        None => return true,
    };
    !beside.is_file() && !path.join("subagents").is_dir()
}

/// The most files a directory of logs is followed in.
pub const TREE_FILES: usize = 100_000;
/// How deep below a directory of logs files are looked for.
pub const TREE_DEPTH: usize = 8;

/// Every log below `root` — `*.jsonl`, `*.json` (Gemini CLI's chats, OpenCode's storage; a
/// JSON file that is no agent's log is left alone when read) and OpenCode's `opencode.db` —
/// symbolic links not followed, [`TREE_DEPTH`] levels at most, [`TREE_FILES`] files at most
/// (past it the rest are left out, with a warning), sorted. The `storage/` beside an
/// `opencode.db` is left out: OpenCode ≥ 1.2 moved what it held into the database, and its
/// sessions would be read twice.
pub fn tree_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![(root.to_owned(), 0)];
    std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))?;
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let beside_db = dir.join(crate::opencode_db::FILE_NAME).is_file();
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            if kind.is_dir() && depth < TREE_DEPTH {
                if !(beside_db && e.file_name() == "storage") {
                    dirs.push((path, depth + 1));
                }
            } else if kind.is_file()
                && (path
                    .extension()
                    .is_some_and(|x| x == "jsonl" || x == "json")
                    || e.file_name() == crate::opencode_db::FILE_NAME)
            {
                if files.len() == TREE_FILES {
                    tracing::warn!(
                        "{} holds more than {TREE_FILES} logs: the rest are not followed",
                        root.display()
                    );
                    files.sort();
                    return Ok(files);
                }
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The line's `timestamp` in seconds since 1970, when it has an RFC 3339 one.
pub fn line_stamp(line: &[u8]) -> Option<f64> {
    let v = agent_fold_core::Frame::parse(line)?;
    let raw = v.stamp()?;
    agent_fold_core::time::parse_secs(raw.trim_matches('"'))
}

/// A file's head line in the merge: its time key, then its file's place (the first file first
/// on ties).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Head {
    key: f64,
    file: usize,
}

impl Eq for Head {}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(self.file.cmp(&other.file))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges files' lines into one log: each file keeps its order, and the next line is the
/// earliest head by timestamp (an unstamped line takes its predecessor's), the first file
/// first on ties. A session's sub-agent files interleave with the transcript as they ran.
/// Each line's stamp is read once and the heads wait in a heap: O(lines × log files).
pub fn merge(files: Vec<Vec<Rec>>) -> Vec<Rec> {
    if files.len() == 1 {
        return files.into_iter().next().unwrap_or_default();
    }
    let total = files.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = files
        .into_iter()
        .map(|f| f.into_iter().peekable())
        .collect();
    let key = |it: &mut std::iter::Peekable<std::vec::IntoIter<Rec>>, before: f64| {
        it.peek()
            .map(|head| line_stamp(&head.value).unwrap_or(before))
    };
    let mut heads: BinaryHeap<Reverse<Head>> = iters
        .iter_mut()
        .enumerate()
        .filter_map(|(file, it)| {
            Some(Reverse(Head {
                key: key(it, f64::NEG_INFINITY)?,
                file,
            }))
        })
        .collect();
    let mut out = Vec::with_capacity(total);
    while let Some(Reverse(head)) = heads.pop() {
        let it = &mut iters[head.file];
        out.extend(it.next());
        if let Some(next) = key(it, head.key) {
            heads.push(Reverse(Head {
                key: next,
                file: head.file,
            }));
        }
    }
    out
}

/// What a log path is, for a reader that reads it through: a regular file or a directory, or
/// a FIFO (read as a stream until its writer closes it: `Ok(true)`); anything else is refused,
/// so that a device such as /dev/zero is never read into memory.
pub fn readable(path: &Path) -> Result<bool> {
    let Ok(meta) = std::fs::metadata(path) else {
        // Missing or unreadable: the read that follows names the error.
        return Ok(false);
    };
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() {
        return Ok(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            tracing::info!(
                "{} is a FIFO: read as a stream, until its writer closes it",
                path.display()
            );
            return Ok(true);
        }
    }
    bail!(
        "{} is not a regular file (a device or a socket): give a log file, a session \
         directory, or - for stdin",
        path.display()
    )
}

/// Reads a log path as records, one a line (a FIFO to its end) or one a document
/// ([`jsonl::document`]); a directory as [`log_files`] merged; an OpenCode database (or the
/// directory holding one) as every session's export document ([`crate::opencode_db`]).
pub fn read_records(path: &Path) -> Result<Vec<Rec>> {
    read_records_in(path, None)
}

/// [`read_records`], of one session of an OpenCode database when `session` names one (a log
/// that is no database refuses it).
pub fn read_records_in(path: &Path, session: Option<&str>) -> Result<Vec<Rec>> {
    readable(path)?;
    read_files(path, session)
}

/// The first bytes of every SQLite database file (sqlite.org/fileformat.html, 1.3).
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether the file at `path` is an SQLite database, by its first bytes (an agent's database:
/// OpenCode's `opencode.db`). One that cannot be read is none.
pub fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let Ok((f, _)) = open_regular(path) else {
        return false;
    };
    let mut head = [0u8; 16];
    f.take(16).read_exact(&mut head).is_ok() && &head == SQLITE_MAGIC
}

/// Whether a path's name is a database's (`opencode.db`, `*.db`, `*.sqlite`): a path that does
/// not exist yet is waited for as a database, not as lines.
pub fn names_database(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == crate::opencode_db::FILE_NAME)
        || path
            .extension()
            .is_some_and(|x| x == "db" || x == "sqlite" || x == "sqlite3")
}

/// The OpenCode database a log path names: the file itself when it is an SQLite database or
/// named as one ([`names_database`]: a damaged one is then refused in words when opened, never
/// read as lines), or the `opencode.db` a directory holds (`$XDG_DATA_HOME/opencode`).
pub fn database(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let db = path.join(crate::opencode_db::FILE_NAME);
        return is_database(&db).then_some(db);
    }
    (is_database(path) || (path.is_file() && names_database(path))).then(|| path.to_owned())
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
pub enum LogReader {
    Whole(std::vec::IntoIter<Rec>),
    Stream(Stream),
}

/// Lines of a stream, read as they come.
pub struct Stream {
    reader: Box<dyn std::io::BufRead>,
    lines: jsonl::Splitter,
    ready: std::collections::VecDeque<Rec>,
    ended: bool,
}

impl LogReader {
    /// Opens a log path (`None`: stdin): a FIFO or stdin as a stream, anything else read whole.
    pub fn open(path: Option<&Path>) -> Result<LogReader> {
        LogReader::open_in(path, None)
    }

    /// [`LogReader::open`], of one session of an OpenCode database when `session` names one.
    pub fn open_in(path: Option<&Path>, session: Option<&str>) -> Result<LogReader> {
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
    pub fn known_len(&self) -> Option<usize> {
        match self {
            LogReader::Whole(lines) => Some(lines.len()),
            LogReader::Stream(_) => None,
        }
    }

    pub fn is_stream(&self) -> bool {
        matches!(self, LogReader::Stream(_))
    }

    /// The next lines, at most `max` of them; on a stream it waits for one read at most
    /// (`None`: the log ended).
    pub fn next_batch(&mut self, max: usize) -> Result<Option<Vec<Rec>>> {
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

    /// The log's format from its first lines that tell ([`DETECT_LINES`] at most; a stream is
    /// read that far, or to its end, first).
    pub fn detect(&mut self) -> Result<Option<Input>> {
        match self {
            LogReader::Whole(lines) => Ok(detect(lines.as_slice())),
            LogReader::Stream(s) => loop {
                let ready = s.ready.make_contiguous();
                if let Some(f) = detect(ready) {
                    return Ok(Some(f));
                }
                if ready.len() >= DETECT_LINES || s.ended {
                    return Ok(None);
                }
                s.read()?;
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

/// Lines looked at to tell a log's format.
pub const DETECT_LINES: usize = 200;

/// The format of a log, from its first lines that tell.
pub fn detect(records: &[Rec]) -> Option<Input> {
    records
        .iter()
        .take(DETECT_LINES)
        .find_map(|r| Input::detect(&r.value))
}

/// The frames one chunk of lines becomes (the first line at offset `base`), each keyed by its
/// `session_id` as the runner keys frames read from a file.
pub fn adapt_chunk(adapter: &mut Adapter, lines: &[Rec], base: i64) -> Vec<Rec> {
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

/// A path a tool was given to read as a log that is no regular file: refused before anything is
/// read (a FIFO would wait for a writer, a device never ends, a directory has no lines).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{path} is {kind}, not a regular file: give a log file")]
    NotRegular { path: String, kind: &'static str },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What a file that is not regular is, in words.
pub fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

/// Opens a log that must be a regular file, with its length: what the path names is looked at
/// first (`stat`, which never waits), then opened without waiting (`O_NONBLOCK`: a FIFO put in
/// its place meanwhile does not block the open) and looked at again, so a FIFO, a device or a
/// directory is refused before a byte is read, and nothing hangs.
pub fn open_regular(path: &Path) -> Result<(std::fs::File, u64), OpenError> {
    let shown = || path.display().to_string();
    let io = |source| OpenError::Io {
        path: shown(),
        source,
    };
    let refuse = |t: std::fs::FileType| OpenError::NotRegular {
        path: shown(),
        kind: file_kind(t),
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    Ok((file, meta.len()))
}

/// Which file a path names now (device and inode where the platform has them): a log replaced
/// under the same name is another file.
#[cfg(unix)]
pub fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

/// Which file a path names now: unknown where the platform has no inodes.
#[cfg(not(unix))]
pub fn file_id(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_each_file_in_order() {
        let rec = |ts: Option<&str>, n: u32| {
            let line = match ts {
                Some(t) => format!(r#"{{"n":{n},"timestamp":"{t}"}}"#),
                None => format!(r#"{{"n":{n}}}"#),
            };
            Rec::new(None, line.as_bytes())
        };
        let main = vec![
            rec(Some("2026-01-01T00:00:01Z"), 1),
            rec(Some("2026-01-01T00:00:05Z"), 2),
            rec(Some("2026-01-01T00:00:03Z"), 3),
        ];
        let sub = vec![rec(Some("2026-01-01T00:00:02Z"), 10), rec(None, 11)];
        let out: Vec<String> = merge(vec![main, sub])
            .iter()
            .map(|r| String::from_utf8_lossy(&r.value).into_owned())
            .collect();
        let ns: Vec<&str> = out.iter().map(|l| &l[5..7]).collect();
        assert_eq!(ns, ["1,", "10", "11", "2,", "3,"]);
    }

    /// The merge before the heap: every step looks at every file's head.
    fn merge_by_scan(files: Vec<Vec<Rec>>) -> Vec<Rec> {
        let mut iters: Vec<_> = files
            .into_iter()
            .map(|f| f.into_iter().peekable())
            .collect();
        let mut keys = vec![f64::NEG_INFINITY; iters.len()];
        let mut out = Vec::new();
        loop {
            let mut best: Option<(usize, f64)> = None;
            for (i, it) in iters.iter_mut().enumerate() {
                let Some(head) = it.peek() else { continue };
                let k = line_stamp(&head.value).unwrap_or(keys[i]);
                if best.is_none_or(|(_, bk)| k < bk) {
                    best = Some((i, k));
                }
            }
            let Some((i, k)) = best else { break };
            keys[i] = k;
            out.extend(iters[i].next());
        }
        out
    }

    #[test]
    fn the_heap_merge_gives_the_scanning_merge_s_order() {
        // Files of stamped, unstamped and tied lines, in a scrambled but fixed pattern.
        let files: Vec<Vec<Rec>> = (0..13)
            .map(|f| {
                (0..(f * 7) % 11)
                    .map(|i| {
                        let line = match (f * 31 + i * 17) % 5 {
                            0 => format!(r#"{{"f":{f},"i":{i}}}"#),
                            s => format!(
                                r#"{{"f":{f},"i":{i},"timestamp":"2026-01-01T00:00:{:02}Z"}}"#,
                                (s * 7 + i * 3) % 60
                            ),
                        };
                        Rec::new(None, line.as_bytes())
                    })
                    .collect()
            })
            .collect();
        assert_eq!(merge(files.clone()), merge_by_scan(files));
    }

    #[test]
    fn a_device_is_refused_a_fifo_and_files_are_read() {
        let err = read_records(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a regular file"), "{err}");
        assert!(readable(Path::new("/dev/null")).is_err());
        assert!(
            readable(Path::new(env!("CARGO_MANIFEST_DIR"))).is_ok(),
            "a directory"
        );
    }
}
