//! Per-session state with a cap: a slab of entries on an intrusive recency list.
//!
//! A busy topic carries an unbounded number of sessions; state is bounded by `max_sessions`,
//! and the least recently used session is evicted first. Lookups and evictions are O(1).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

const NIL: u32 = u32::MAX;

struct Entry<V> {
    key: Box<[u8]>,
    value: V,
    /// Towards the most recently used end.
    newer: u32,
    /// Towards the least recently used end.
    older: u32,
}

/// The session index's hash: a folded multiply per eight bytes of key, several times cheaper
/// than SipHash on the 36-byte ids agents use. Seeded per map from std's random state where
/// the platform has one (in wasm32-unknown-unknown std's keys are fixed, as SipHash's are).
#[derive(Clone, Copy)]
struct KeyHash(u64);

impl KeyHash {
    fn new() -> KeyHash {
        KeyHash(std::collections::hash_map::RandomState::new().hash_one(0x5e55_1015u64))
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

struct KeyHasher(u64);

const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    (p as u64) ^ ((p >> 64) as u64)
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
            self.0 = fold(self.0 ^ w, MUL);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.0 = fold(self.0 ^ u64::from_le_bytes(w), MUL);
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = fold(self.0 ^ n as u64, MUL);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.0, 0x2d35_8dcc_aa6c_78a5)
    }
}

/// A map from session key to state, least recently used first out.
pub struct Lru<V> {
    index: HashMap<Box<[u8]>, u32, KeyHash>,
    entries: Vec<Entry<V>>,
    newest: u32,
    oldest: u32,
    cap: usize,
}

/// A handle on an entry, valid until the next insertion.
pub type Slot = u32;

/// An entry an insertion evicted: its key and value.
pub type Evicted<V> = (Box<[u8]>, V);

impl<V> Lru<V> {
    /// A map holding at most `cap` sessions (at least one).
    pub fn new(cap: usize) -> Self {
        Lru {
            index: HashMap::with_hasher(KeyHash::new()),
            entries: Vec::new(),
            newest: NIL,
            oldest: NIL,
            cap: cap.clamp(1, NIL as usize - 1),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The entry of `key`, made the most recently used.
    pub fn touch(&mut self, key: &[u8]) -> Option<Slot> {
        let slot = *self.index.get(key)?;
        self.unlink(slot);
        self.link_newest(slot);
        Some(slot)
    }

    /// Makes the entry at `slot` the most recently used.
    pub fn touch_slot(&mut self, slot: Slot) {
        self.unlink(slot);
        self.link_newest(slot);
    }

    /// The entry of `key` without changing its recency.
    pub fn peek(&self, key: &[u8]) -> Option<Slot> {
        self.index.get(key).copied()
    }

    /// Inserts a key that is not present, as the most recently used; when full, the least
    /// recently used entry is evicted and returned.
    pub fn insert(&mut self, key: &[u8], value: V) -> (Slot, Option<Evicted<V>>) {
        debug_assert!(!self.index.contains_key(key));
        let key: Box<[u8]> = key.into();
        if self.entries.len() < self.cap {
            let slot = self.entries.len() as u32;
            self.entries.push(Entry {
                key: key.clone(),
                value,
                newer: NIL,
                older: NIL,
            });
            self.index.insert(key, slot);
            self.link_newest(slot);
            return (slot, None);
        }
        let slot = self.oldest;
        self.unlink(slot);
        let e = &mut self.entries[slot as usize];
        let old_key = std::mem::replace(&mut e.key, key.clone());
        let old_value = std::mem::replace(&mut e.value, value);
        self.index.remove(&old_key);
        self.index.insert(key, slot);
        self.link_newest(slot);
        (slot, Some((old_key, old_value)))
    }

    pub fn get(&self, slot: Slot) -> &V {
        &self.entries[slot as usize].value
    }

    pub fn get_mut(&mut self, slot: Slot) -> &mut V {
        &mut self.entries[slot as usize].value
    }

    pub fn key(&self, slot: Slot) -> &[u8] {
        &self.entries[slot as usize].key
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

    fn unlink(&mut self, slot: Slot) {
        let (newer, older) = {
            let e = &self.entries[slot as usize];
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

    fn link_newest(&mut self, slot: Slot) {
        let old_newest = self.newest;
        {
            let e = &mut self.entries[slot as usize];
            e.newer = NIL;
            e.older = old_newest;
        }
        match old_newest {
            NIL => self.oldest = slot,
            n => self.entries[n as usize].newer = slot,
        }
        self.newest = slot;
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
    fn evicts_least_recently_used() {
        let mut l = Lru::new(2);
        l.insert(b"a", 1);
        l.insert(b"b", 2);
        assert!(l.touch(b"a").is_some());
        let (_, ev) = l.insert(b"c", 3);
        assert_eq!(ev.map(|(k, v)| (k.to_vec(), v)), Some((b"b".to_vec(), 2)));
        assert_eq!(keys(&l), ["a=1", "c=3"]);
        assert!(l.touch(b"b").is_none());
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn cap_of_one_and_zero() {
        let mut l = Lru::new(0);
        assert_eq!(l.cap(), 1);
        l.insert(b"a", 1);
        let (slot, ev) = l.insert(b"b", 2);
        assert!(ev.is_some());
        assert_eq!(*l.get(slot), 2);
        assert_eq!(keys(&l), ["b=2"]);
    }

    #[test]
    fn touch_reorders() {
        let mut l = Lru::new(10);
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            l.insert(k.as_bytes(), i as u32);
        }
        l.touch(b"b");
        l.touch(b"a");
        assert_eq!(keys(&l), ["c=2", "d=3", "b=1", "a=0"]);
        l.touch(b"a");
        assert_eq!(keys(&l), ["c=2", "d=3", "b=1", "a=0"]);
    }
}
