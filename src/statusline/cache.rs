//! The status line's per-transcript cache: where the last call stopped reading (bytes and
//! lines), the module's state there (its own checkpoint codec), and the session's latest record.
//! One small file per transcript, written whole and renamed into place; a file that does not
//! read, or belongs to another file or other params, is ignored and the transcript read anew.

use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_fold_core::Config;

use crate::logs::file_id;

/// The cache's own format.
const VERSION: u64 = 2;
/// Cache files not touched for this long are removed when a new one is made.
const STALE: Duration = Duration::from_secs(30 * 24 * 3600);

/// What a cached state was read from: the transcript (path, device and inode where the platform
/// has them) and the module's params. A transcript replaced, or read with other params, is read
/// from its start again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Identity {
    pub transcript: PathBuf,
    pub file: Option<(u64, u64)>,
    /// The module's params as the engine would take them, `key=value` joined by `&`.
    pub params: String,
}

impl Identity {
    pub(super) fn of(path: &Path, meta: &Metadata, config: &Config) -> Identity {
        let params: Vec<String> = config
            .params()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        Identity {
            transcript: path.to_owned(),
            file: file_id(meta),
            params: params.join("&"),
        }
    }
}

/// One transcript's cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Cached {
    pub version: u64,
    pub identity: Identity,
    /// Bytes of the transcript read (whole lines).
    pub offset: u64,
    /// The call stopped inside a line over the limit: its rest up to its newline is skipped.
    #[serde(default)]
    pub skipping: bool,
    /// Lines read: the next line's offset in the module's numbering.
    pub lines: i64,
    /// The module's checkpoint after them.
    pub checkpoint: String,
    /// The session's latest `context/pressure` record.
    pub latest: Option<Value>,
}

impl Cached {
    pub(super) fn fresh(identity: Identity) -> Cached {
        Cached {
            version: VERSION,
            identity,
            offset: 0,
            skipping: false,
            lines: 0,
            checkpoint: String::new(),
            latest: None,
        }
    }
}

/// The cache file of a transcript: named by a hash of its path.
fn path_of(dir: &Path, transcript: &Path) -> PathBuf {
    let h = agent_fold_core::fnv1a(transcript.as_os_str().as_encoded_bytes());
    dir.join(format!("{h:016x}.json"))
}

/// The cached state of this transcript, if one reads and still fits it: the same file and
/// params, and no longer than the file is now (`len`, from the file the caller opened).
pub(super) fn load(dir: &Path, identity: &Identity, len: u64) -> Option<Cached> {
    let text = std::fs::read_to_string(path_of(dir, &identity.transcript)).ok()?;
    let c: Cached = serde_json::from_str(&text).ok()?;
    (c.version == VERSION && c.identity == *identity && c.offset <= len).then_some(c)
}

/// Writes the state (a temporary file renamed into place); failing to is only said on stderr:
/// the next call reads the transcript from its start.
pub(super) fn store(dir: &Path, c: &Cached) {
    let result = (|| -> std::io::Result<()> {
        let fresh = !dir.exists();
        std::fs::create_dir_all(dir)?;
        let path = path_of(dir, &c.identity.transcript);
        if fresh || !path.exists() {
            prune(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec(c)?)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        eprintln!(
            "agent-fold statusline: cannot write the cache in {}: {e}",
            dir.display()
        );
    }
}

/// Removes cache files no call has touched in a month.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > STALE));
        if old && e.path().extension().is_some_and(|x| x == "json") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
