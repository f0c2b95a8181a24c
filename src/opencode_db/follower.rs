//! A database followed as OpenCode writes it ([`super`], "A session as it runs").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::document::Documents;
use super::{Db, DbError, LIST_ROWS, PENDING_MAX};
use crate::record::Rec;

/// What a message's data says of whether it is still being written.
#[derive(Debug, Default, serde::Deserialize)]
struct Head {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    time: Option<Times>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct Times {
    #[serde(default)]
    completed: Option<serde::de::IgnoredAny>,
}

/// Whether a message is settled: a later message of its session exists, or it is an
/// assistant's that completed or failed. The second: whether it is an assistant's still
/// running (looked at again at every change; a user's waits for the next message row).
fn settled(data: &[u8], later: bool) -> (bool, bool) {
    if later {
        return (true, false);
    }
    let head: Head = serde_json::from_slice(data).unwrap_or_default();
    let assistant = head.role.as_deref() == Some("assistant");
    let done = head.time.is_some_and(|t| t.completed.is_some()) || head.error.is_some();
    (assistant && done, assistant && !done)
}

/// What one look at a followed database found.
#[derive(Debug, Default)]
pub(crate) struct Step {
    /// Documents of the sessions that gained settled messages, each keyed by its session (the
    /// record key is the session id: contract §1).
    pub records: Vec<Rec>,
    /// What was left out, and why.
    pub skipped: Vec<String>,
    /// More is waiting than one look reads: look again at once.
    pub more: bool,
    /// Another database stands where this one was (its oldest session is another): everything
    /// read from it is void.
    pub rewritten: bool,
}

/// A database followed as OpenCode writes it: see the module's notes.
pub(crate) struct Follower {
    db: Db,
    /// `PRAGMA data_version` at the last look.
    version: Option<i64>,
    /// The oldest session when first read.
    first: Option<Option<String>>,
    /// The highest message row listed (rowid and id).
    top: Option<(i64, String)>,
    /// Rows above `top` wait to be listed (the listing stopped at its bound).
    unlisted: bool,
    /// Per session, the messages listed and not yet read into a document, by id.
    pending: BTreeMap<String, BTreeSet<String>>,
    /// Sessions to look at: they gained a listed message, or their last one is an assistant's
    /// still running.
    dirty: BTreeSet<String>,
    running: BTreeSet<String>,
    /// Per session, the last message read into a document.
    read: HashMap<String, String>,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("path", &self.db.path)
            .field("version", &self.version)
            .field("top", &self.top)
            .field("waiting", &self.waiting())
            .field("sessions", &self.read.len())
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// Follows the database at `path` from its start.
    pub(crate) fn open(path: &Path) -> Result<Follower, DbError> {
        Ok(Follower {
            db: Db::open(path)?,
            version: None,
            first: None,
            top: None,
            unlisted: false,
            pending: BTreeMap::new(),
            dirty: BTreeSet::new(),
            running: BTreeSet::new(),
            read: HashMap::new(),
        })
    }

    /// Messages listed and waiting to be read.
    fn waiting(&self) -> usize {
        self.pending.values().map(BTreeSet::len).sum()
    }

    /// Lists the message rows written since the last listing.
    fn list(&mut self) -> Result<(), DbError> {
        let top = self.db.top()?;
        // The topmost rows deleted (a session reverted): the listing goes on from the highest
        // that remains, the row reusing the rowid above it checked by its id.
        if let (Some((at, _)), Some(now)) = (&self.top, &top)
            && now.0 < *at
        {
            self.top = Some(now.clone());
        }
        if top.is_none() {
            self.top = None;
        }
        self.unlisted = false;
        while self.waiting() < PENDING_MAX {
            let from = self.top.as_ref().map_or(0, |(r, _)| *r);
            let rows = self.db.listed(from)?;
            let full = rows.len() as i64 == LIST_ROWS;
            let mut new = 0;
            for (rowid, id, session) in rows {
                if self.top.as_ref() == Some(&(rowid, id.clone())) {
                    continue;
                }
                new += 1;
                self.top = Some((rowid, id.clone()));
                if self.read.get(&session).is_some_and(|r| *r >= id) {
                    // Read already (a row listed again after the top moved back).
                    continue;
                }
                self.pending.entry(session.clone()).or_default().insert(id);
                self.dirty.insert(session);
            }
            if !full || new == 0 {
                return Ok(());
            }
        }
        self.unlisted = true;
        Ok(())
    }

    /// Reads what changed since the last look: the settled messages of the sessions that
    /// gained some, in documents of at most `max` bytes, `budget` bytes in all at most (then
    /// `more`).
    pub(crate) fn poll(&mut self, max: usize, budget: usize) -> Result<Step, DbError> {
        let mut step = Step::default();
        let version = self.db.data_version()?;
        let changed = self.version != Some(version);
        self.version = Some(version);
        if changed {
            let first = self.db.first_session()?;
            match &self.first {
                Some(f) if f.is_some() && *f != first => {
                    step.rewritten = true;
                    return Ok(step);
                }
                _ => self.first = Some(first),
            }
            self.list()?;
            self.dirty.extend(self.running.iter().cloned());
        } else if self.dirty.is_empty() && !self.unlisted {
            return Ok(step);
        }
        if self.unlisted && self.waiting() < PENDING_MAX / 2 {
            self.list()?;
        }
        let mut bytes = 0;
        while let Some(session) = self.dirty.pop_first() {
            if bytes >= budget {
                self.dirty.insert(session);
                step.more = true;
                break;
            }
            self.running.remove(&session);
            let ids: Vec<String> = self
                .pending
                .get(&session)
                .map(|p| p.iter().cloned().collect())
                .unwrap_or_default();
            let mut doc = Documents::new(
                &session,
                self.db.info(&session)?,
                self.read.get(&session).cloned(),
                max,
            );
            let mut taken = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                let Some(m) = self.db.message(id)? else {
                    // Deleted since it was listed.
                    taken.push(id.clone());
                    continue;
                };
                let (ready, running) = settled(&m.data, i + 1 < ids.len());
                if !ready {
                    if running {
                        self.running.insert(session.clone());
                    }
                    break;
                }
                doc.push(&self.db, id, &m)?;
                taken.push(id.clone());
                if bytes + doc.bytes() >= budget && i + 1 < ids.len() {
                    // The rest next time.
                    self.dirty.insert(session.clone());
                    step.more = true;
                    break;
                }
            }
            if let Some(p) = self.pending.get_mut(&session) {
                for id in &taken {
                    p.remove(id);
                }
                if p.is_empty() {
                    self.pending.remove(&session);
                }
            }
            if let Some(last) = &doc.last {
                self.read.insert(session.clone(), last.clone());
            }
            bytes += doc.bytes();
            let (docs, said) = doc.finish();
            step.skipped.extend(said);
            step.records.extend(docs.into_iter().map(|d| Rec {
                key: Some(session.as_bytes().to_vec()),
                value: d,
            }));
        }
        step.more |= self.unlisted;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_settles_when_a_later_one_exists_or_it_completed() {
        let running = br#"{"role":"assistant","time":{"created":1}}"#;
        let done = br#"{"role":"assistant","time":{"created":1,"completed":2}}"#;
        let failed = br#"{"role":"assistant","time":{"created":1},"error":{"name":"APIError"}}"#;
        let user = br#"{"role":"user","time":{"created":1}}"#;
        assert_eq!(settled(running, false), (false, true));
        assert_eq!(settled(running, true), (true, false));
        assert_eq!(settled(done, false), (true, false));
        assert_eq!(settled(failed, false), (true, false));
        assert_eq!(settled(user, false), (false, false));
        assert_eq!(settled(b"not json", false), (false, false));
    }
}
