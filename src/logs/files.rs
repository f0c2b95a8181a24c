//! Which files a log path holds, and which paths are readable as logs at all: a Claude Code
//! session directory's files, a directory of logs, OpenCode's database told by its first
//! bytes, and the refusals of what is no regular file (a FIFO, a device, a socket) before a
//! byte is read.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The files of a log path: the file itself; or, for a Claude Code session directory
/// `<id>/`, the transcript `<id>.jsonl` beside it (when there) followed by `<id>/subagents/*.jsonl`
/// (and any `*.jsonl` directly in the directory), sorted by name.
pub fn log_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    let beside = transcript_beside(path).unwrap_or_else(|| path.with_extension("jsonl"));
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
pub(crate) fn is_tree(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let Some(beside) = transcript_beside(path) else {
        return true;
    };
    !beside.is_file() && !path.join("subagents").is_dir()
}

/// Where a Claude Code session directory `<id>/` keeps its transcript: `<id>.jsonl` beside it
/// (`None` for a path with no name, such as `/`).
fn transcript_beside(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?;
    Some(dir.with_file_name(format!("{}.jsonl", name.to_string_lossy())))
}

/// The most files a directory of logs is followed in.
pub(crate) const TREE_FILES: usize = 100_000;
/// How deep below a directory of logs files are looked for.
pub(crate) const TREE_DEPTH: usize = 8;

/// Every log below `root` — `*.jsonl`, `*.json` (Gemini CLI's chats, OpenCode's storage; a
/// JSON file that is no agent's log is left alone when read) and OpenCode's `opencode.db` —
/// symbolic links not followed, [`TREE_DEPTH`] levels at most, [`TREE_FILES`] files at most
/// (past it the rest are left out, with a warning), sorted. The `storage/` beside an
/// `opencode.db` is left out: OpenCode ≥ 1.2 moved what it held into the database, and its
/// sessions would be read twice.
pub(crate) fn tree_files(root: &Path) -> Result<Vec<PathBuf>> {
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

/// What a log path is, for a reader that reads it through: a regular file or a directory, or
/// a FIFO (read as a stream until its writer closes it: `Ok(true)`); anything else is refused,
/// so that a device such as /dev/zero is never read into memory.
pub(crate) fn readable(path: &Path) -> Result<bool> {
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

/// The first bytes of every SQLite database file (sqlite.org/fileformat.html, 1.3).
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether the file at `path` is an SQLite database, by its first bytes (an agent's database:
/// OpenCode's `opencode.db`). One that cannot be read is none.
pub(crate) fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let Ok((f, _)) = open_regular(path) else {
        return false;
    };
    let mut head = [0u8; 16];
    f.take(16).read_exact(&mut head).is_ok() && &head == SQLITE_MAGIC
}

/// Whether a path's name is a database's (`opencode.db`, `*.db`, `*.sqlite`): a path that does
/// not exist yet is waited for as a database, not as lines.
pub(crate) fn names_database(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == crate::opencode_db::FILE_NAME)
        || path
            .extension()
            .is_some_and(|x| x == "db" || x == "sqlite" || x == "sqlite3")
}

/// The OpenCode database a log path names: the file itself when it is an SQLite database or
/// named as one ([`names_database`]: a damaged one is then refused in words when opened, never
/// read as lines), or the `opencode.db` a directory holds (`$XDG_DATA_HOME/opencode`).
pub(crate) fn database(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let db = path.join(crate::opencode_db::FILE_NAME);
        return is_database(&db).then_some(db);
    }
    (is_database(path) || (path.is_file() && names_database(path))).then(|| path.to_owned())
}

/// A path a tool was given to read as a log that is no regular file: refused before anything is
/// read (a FIFO would wait for a writer, a device never ends, a directory has no lines).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error("{path} is {kind}, not a regular file: give a log file")]
    NotRegular { path: String, kind: &'static str },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What a file that is not regular is, in words.
pub(crate) fn file_kind(t: std::fs::FileType) -> &'static str {
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
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, u64), OpenError> {
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
pub(crate) fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
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
    use crate::logs::reader::read_records;

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
