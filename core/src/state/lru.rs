//! Per-session state under a cap: a slab of entries on an intrusive recency list, each key
//! held once (contract §4: memory is `max_sessions` × (key + state)).
//!
//! A busy topic carries an unbounded number of sessions; the least recently used is evicted
//! first, and its key's hash is remembered (a tombstone) so that the session, when it comes
//! back, is known to have lost its state. Lookups and evictions are O(1).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

const NIL: u32 = u32::MAX;

struct Slot<V> {
    key: Box<[u8]>,
    hash: u64,
    value: V,
    /// Towards the most recently used end.
    newer: u32,
    /// Towards the least recently used end.
    older: u32,
    /// The next entry whose key has the same hash.
    chain: u32,
}

/// The session index's hash: a multiply per eight bytes of key, several times cheaper than
/// SipHash on the 36-byte ids agents use, and on wasm32 made of its native 64-bit multiply (a
/// 128-bit product is a library call there, paid for every record's lookup). Seeded per map
/// from std's random state where the platform has one (in wasm32-unknown-unknown std's keys
/// are fixed, as SipHash's are).
#[derive(Clone, Copy)]
struct KeyHash(u64);

const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// One word into the state: a 64-bit multiply, its high half folded back down.
#[inline]
fn mix(h: u64, w: u64) -> u64 {
    let p = (h ^ w).wrapping_mul(MUL);
    p ^ (p >> 29)
}

/// MurmurHash3's finaliser: every bit of the state reaches every bit of the hash (the index
/// takes its bucket from the low bits and its tag from the high ones).
#[inline]
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl KeyHash {
    fn new() -> KeyHash {
        KeyHash(std::collections::hash_map::RandomState::new().hash_one(0x5e55_1015u64))
    }

    fn hash(&self, key: &[u8]) -> u64 {
        let mut h = self.0 ^ key.len() as u64;
        let mut chunks = key.chunks_exact(8);
        for c in &mut chunks {
            h = mix(h, u64::from_le_bytes(c.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            h = mix(h, u64::from_le_bytes(w));
        }
        finish(h)
    }
}

/// The index is keyed by hashes that are already mixed: it hashes them as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Index<T> = HashMap<u64, T, BuildHasherDefault<Identity>>;

/// The hashes of evicted keys, in two generations of at most `cap` each: an evicted session
/// is recognised for at least `cap` further evictions, in bounded memory.
struct Tombstones {
    current: HashSet<u64, BuildHasherDefault<Identity>>,
    previous: HashSet<u64, BuildHasherDefault<Identity>>,
    cap: usize,
}

impl Tombstones {
    fn insert(&mut self, h: u64) {
        if self.current.len() >= self.cap {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(h);
    }

    fn contains(&self, h: u64) -> bool {
        self.current.contains(&h) || self.previous.contains(&h)
    }

    fn take(&mut self, h: u64) -> bool {
        self.current.remove(&h) | self.previous.remove(&h)
    }
}

/// A map from session key to state, least recently used first out.
pub(crate) struct Lru<V> {
    index: Index<u32>,
    entries: Vec<Slot<V>>,
    newest: u32,
    oldest: u32,
    cap: usize,
    hasher: KeyHash,
    gone: Tombstones,
}

/// A handle on an entry, valid until the next insertion.
pub(crate) type EntryId = u32;

/// An entry an insertion evicted: its key and value.
pub(crate) type Evicted<V> = (Box<[u8]>, V);

impl<V> Lru<V> {
    /// A map holding at most `cap` sessions (at least one).
    pub fn new(cap: usize) -> Self {
        let cap = cap.clamp(1, NIL as usize - 1);
        Lru {
            index: Index::default(),
            entries: Vec::new(),
            newest: NIL,
            oldest: NIL,
            cap,
            hasher: KeyHash::new(),
            gone: Tombstones {
                current: Default::default(),
                previous: Default::default(),
                cap,
            },
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The entry of `key`, without changing its recency. A run of records of one session finds
    /// it as the most recently used, without hashing.
    pub fn peek(&self, key: &[u8]) -> Option<EntryId> {
        if self.newest != NIL && crate::json::same(&self.entries[self.newest as usize].key, key) {
            return Some(self.newest);
        }
        let h = self.hasher.hash(key);
        let mut at = *self.index.get(&h)?;
        while at != NIL {
            let e = &self.entries[at as usize];
            if crate::json::same(&e.key, key) {
                return Some(at);
            }
            at = e.chain;
        }
        None
    }

    /// Makes the entry the most recently used.
    pub fn touch(&mut self, id: EntryId) {
        if id == self.newest {
            return;
        }
        self.unlink(id);
        self.link_newest(id);
    }

    /// Whether `key` was evicted and has not come back since.
    pub fn has_tombstone(&self, key: &[u8]) -> bool {
        self.gone.contains(self.hasher.hash(key))
    }

    /// Whether `key` was evicted (and not inserted since): its session lost its state. Asking
    /// forgets the tombstone, so ask once, when the session comes back.
    pub fn take_tombstone(&mut self, key: &[u8]) -> bool {
        let h = self.hasher.hash(key);
        self.gone.take(h)
    }

    /// Inserts a key that is not present, as the most recently used; when full, the least
    /// recently used entry is evicted (and tombstoned) and returned.
    pub fn insert(&mut self, key: &[u8], value: V) -> (EntryId, Option<Evicted<V>>) {
        debug_assert!(self.peek(key).is_none());
        let hash = self.hasher.hash(key);
        let entry = Slot {
            key: key.into(),
            hash,
            value,
            newer: NIL,
            older: NIL,
            chain: NIL,
        };
        let (id, evicted) = if self.entries.len() < self.cap {
            self.entries.push(entry);
            ((self.entries.len() - 1) as u32, None)
        } else {
            let id = self.oldest;
            self.unlink(id);
            self.unindex(id);
            let old = std::mem::replace(&mut self.entries[id as usize], entry);
            self.gone.insert(old.hash);
            (id, Some((old.key, old.value)))
        };
        let head = self.index.entry(hash).or_insert(NIL);
        self.entries[id as usize].chain = *head;
        *head = id;
        self.link_newest(id);
        (id, evicted)
    }

    pub fn get_mut(&mut self, id: EntryId) -> &mut V {
        &mut self.entries[id as usize].value
    }

    /// Entries from the least to the most recently used: inserting them in this order
    /// rebuilds the same recency.
    pub fn iter_oldest_first(&self) -> impl Iterator<Item = (&[u8], &V)> {
        let mut at = self.oldest;
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let e = &self.entries[at as usize];
            at = e.newer;
            Some((&*e.key, &e.value))
        })
    }

    /// Removes entry `id` from its hash chain.
    fn unindex(&mut self, id: EntryId) {
        let (hash, next) = {
            let e = &self.entries[id as usize];
            (e.hash, e.chain)
        };
        let Some(head) = self.index.get_mut(&hash) else {
            return;
        };
        if *head == id {
            if next == NIL {
                self.index.remove(&hash);
            } else {
                *head = next;
            }
            return;
        }
        let mut at = *head;
        while at != NIL {
            let c = self.entries[at as usize].chain;
            if c == id {
                self.entries[at as usize].chain = next;
                return;
            }
            at = c;
        }
    }

    fn unlink(&mut self, id: EntryId) {
        let (newer, older) = {
            let e = &self.entries[id as usize];
            (e.newer, e.older)
        };
        match newer {
            NIL => self.newest = older,
            n => self.entries[n as usize].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.entries[o as usize].newer = newer,
        }
    }

    fn link_newest(&mut self, id: EntryId) {
        let old_newest = self.newest;
        {
            let e = &mut self.entries[id as usize];
            e.newer = NIL;
            e.older = old_newest;
        }
        match old_newest {
            NIL => self.oldest = id,
            n => self.entries[n as usize].newer = id,
        }
        self.newest = id;
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    fn keys(l: &Lru<u32>) -> Vec<String> {
        l.iter_oldest_first()
            .map(|(k, v)| format!("{}={v}", String::from_utf8_lossy(k)))
            .collect()
    }

    #[test]
    fn evicts_least_recently_used_and_remembers_it() {
        let mut l = Lru::new(2);
        l.insert(b"a", 1);
        l.insert(b"b", 2);
        let a = l.peek(b"a").unwrap();
        l.touch(a);
        let (_, ev) = l.insert(b"c", 3);
        assert_eq!(ev.map(|(k, v)| (k.to_vec(), v)), Some((b"b".to_vec(), 2)));
        assert_eq!(keys(&l), ["a=1", "c=3"]);
        assert!(l.peek(b"b").is_none());
        assert!(!l.take_tombstone(b"c"));
        assert!(l.take_tombstone(b"b"));
        assert!(!l.take_tombstone(b"b"), "asking forgets");
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn cap_of_one_and_zero() {
        let mut l = Lru::new(0);
        assert_eq!(l.cap(), 1);
        l.insert(b"a", 1);
        let (id, ev) = l.insert(b"b", 2);
        assert!(ev.is_some());
        assert_eq!(*l.get_mut(id), 2);
        assert_eq!(keys(&l), ["b=2"]);
        assert!(l.peek(b"a").is_none() && l.peek(b"b").is_some());
    }

    #[test]
    fn touch_reorders() {
        let mut l = Lru::new(10);
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            l.insert(k.as_bytes(), i as u32);
        }
        for k in [b"b", b"a", b"a"] {
            let id = l.peek(k).unwrap();
            l.touch(id);
        }
        assert_eq!(keys(&l), ["c=2", "d=3", "b=1", "a=0"]);
    }

    #[test]
    fn many_keys_through_a_small_cap_stay_consistent() {
        let mut l = Lru::new(7);
        for i in 0..5_000u32 {
            let k = format!("session-{}", i % 23);
            match l.peek(k.as_bytes()) {
                Some(id) => {
                    *l.get_mut(id) += 1;
                    l.touch(id);
                }
                None => {
                    l.insert(k.as_bytes(), 0);
                }
            }
            assert!(l.len() <= 7);
            for (key, _) in l.iter_oldest_first() {
                assert!(l.peek(key).is_some());
            }
        }
    }
}
