//! Per-session state under a cap: a slab of entries on an intrusive recency list, each key
//! held once (contract §4: memory is `max_sessions` × (key + state)).
//!
//! A busy topic carries an unbounded number of sessions; the least recently used is evicted
//! first, and its key's hash is remembered (a tombstone) so that the session, when it comes
//! back, is known to have lost its state. Lookups and evictions are O(1).

use std::collections::HashSet;
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
}

/// The session index's hash: FxHash's step (a rotate, an xor and a 64-bit multiply) per eight
/// bytes of key, several times cheaper than SipHash on the 36-byte ids agents use, and on
/// wasm32 made of its native 64-bit multiply (a 128-bit product is a library call there, paid
/// for every record's lookup). Seeded per map from std's random state where the platform has
/// one (in wasm32-unknown-unknown std's keys are fixed, as SipHash's are).
#[derive(Clone, Copy)]
struct KeyHash(u64);

const MUL: u64 = 0x517c_c1b7_2722_0a95;

/// One word into the state. A multiply carries each bit only upwards; the rotate brings the
/// top bits of the state back down before the next word.
#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(MUL)
}

impl KeyHash {
    fn new() -> KeyHash {
        KeyHash(std::collections::hash_map::RandomState::new().hash_one(0x5e55_1015u64))
    }

    /// Every byte of the key reaches the hash: its words, the last one overlapping the one
    /// before when the length is no multiple of eight (no copy into a padded word), and its
    /// length, which tells overlapping keys apart. The last multiply's top half, where every
    /// bit of the key has reached, is folded onto the low bits the index takes its slot from.
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        let n = key.len();
        let w8 = |at: usize| crate::json::word(key, at);
        let w4 = |at: usize| u32::from_le_bytes(key[at..at + 4].try_into().expect("four bytes"));
        let mut h = self.0 ^ n as u64;
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        if (16..=48).contains(&n) {
            use std::arch::wasm32::{
                i64x2_mul, i64x2_splat, u64x2_extract_lane, u64x2_shr, v128, v128_load, v128_xor,
            };
            // Two lanes over the 16-byte chunks that cover the key (at 0, at 16 past 32
            // bytes, and the last): each chunk xored in and multiplied, the product's high bits
            // shifted back down (a `v128` has no 64-bit rotate); `mix` joins the lanes.
            // SAFETY: 16 bytes from `at ≤ n - 16` are inside the key.
            let chunk = |at: usize| unsafe { v128_load(key.as_ptr().add(at).cast::<v128>()) };
            let step = |acc: v128, c: v128| {
                let p = i64x2_mul(v128_xor(acc, c), i64x2_splat(MUL as i64));
                v128_xor(p, u64x2_shr(p, 29))
            };
            let mut acc = step(i64x2_splat(h as i64), chunk(0));
            if n > 32 {
                acc = step(acc, chunk(16));
            }
            acc = step(acc, chunk(n - 16));
            h = mix(u64x2_extract_lane::<0>(acc), u64x2_extract_lane::<1>(acc));
            return h ^ (h >> 32);
        }
        match n {
            0 => {}
            1..=3 => {
                let w = key[0] as u64 | (key[n / 2] as u64) << 8 | (key[n - 1] as u64) << 16;
                h = mix(h, w);
            }
            4..=7 => h = mix(h, w4(0) as u64 | (w4(n - 4) as u64) << 32),
            _ => {
                let mut i = 0;
                while i + 8 < n {
                    h = mix(h, w8(i));
                    i += 8;
                }
                h = mix(h, w8(n - 8));
            }
        }
        h ^ (h >> 32)
    }
}

/// Whether two keys are equal: [`crate::json::same`], but 16 bytes a compare where the module
/// has `v128`s (a key of 16 to 48 bytes, a session id among them, is two or three, with no
/// loop).
#[inline(always)]
fn key_eq(a: &[u8], b: &[u8]) -> bool {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if a.len() == b.len() && (16..=48).contains(&a.len()) {
        use std::arch::wasm32::{v128, v128_any_true, v128_load, v128_or, v128_xor};
        let n = a.len();
        // SAFETY: 16 bytes from `at ≤ n - 16` are inside both keys (of length `n`).
        let diff = |at: usize| unsafe {
            v128_xor(
                v128_load(a.as_ptr().add(at).cast::<v128>()),
                v128_load(b.as_ptr().add(at).cast::<v128>()),
            )
        };
        let mut d = v128_or(diff(0), diff(n - 16));
        if n > 32 {
            d = v128_or(d, diff(16));
        }
        return !v128_any_true(d);
    }
    crate::json::same(a, b)
}

/// The tombstones are keyed by hashes that are already mixed: they hash them as they are.
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

/// The index: entry ids in open addressing, probed linearly from a hash's low bits (an id's
/// hash is its entry's), at most half full so that a probe meets an empty slot soon. A lookup
/// is a few loads and compares, where a general map's probe groups cost several times that on
/// wasm32 (every record looks its session up).
#[derive(Default)]
struct Table {
    slots: Vec<u32>,
}

impl Table {
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }
}

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
    index: Table,
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
    pub(crate) fn new(cap: usize) -> Self {
        let cap = cap.clamp(1, NIL as usize - 1);
        Lru {
            index: Table::default(),
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

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// The entry of `key`, without changing its recency. A run of records of one session finds
    /// it as the most recently used, without hashing.
    pub(crate) fn peek(&self, key: &[u8]) -> Option<EntryId> {
        if self.newest != NIL {
            let newest = &self.entries[self.newest as usize].key;
            // Told apart by their first word most often (a session id's), without the compare
            // of the whole key.
            let first = |k: &[u8]| (k.len() >= 8).then(|| crate::json::word(k, 0));
            if first(newest) == first(key) && key_eq(newest, key) {
                return Some(self.newest);
            }
        }
        self.find(self.hasher.hash(key), key)
    }

    /// The entry of `key`, whose hash is `h`.
    #[inline]
    fn find(&self, h: u64, key: &[u8]) -> Option<EntryId> {
        let mask = self.index.mask();
        if self.index.slots.is_empty() {
            return None;
        }
        let mut at = h as usize & mask;
        loop {
            let id = self.index.slots[at];
            if id == NIL {
                return None;
            }
            let e = &self.entries[id as usize];
            if e.hash == h && key_eq(&e.key, key) {
                return Some(id);
            }
            at = (at + 1) & mask;
        }
    }

    /// Makes the entry the most recently used.
    pub(crate) fn touch(&mut self, id: EntryId) {
        if id == self.newest {
            return;
        }
        self.unlink(id);
        self.link_newest(id);
    }

    /// Whether `key` was evicted and has not come back since.
    pub(crate) fn has_tombstone(&self, key: &[u8]) -> bool {
        self.gone.contains(self.hasher.hash(key))
    }

    /// Whether `key` was evicted (and not inserted since): its session lost its state. Asking
    /// forgets the tombstone, so ask once, when the session comes back.
    pub(crate) fn take_tombstone(&mut self, key: &[u8]) -> bool {
        let h = self.hasher.hash(key);
        self.gone.take(h)
    }

    /// Inserts a key that is not present, as the most recently used; when full, the least
    /// recently used entry is evicted (and tombstoned) and returned.
    pub(crate) fn insert(&mut self, key: &[u8], value: V) -> (EntryId, Option<Evicted<V>>) {
        debug_assert!(self.peek(key).is_none());
        let hash = self.hasher.hash(key);
        let entry = Slot {
            key: key.into(),
            hash,
            value,
            newer: NIL,
            older: NIL,
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
        self.index_insert(id);
        self.link_newest(id);
        (id, evicted)
    }

    pub(crate) fn get_mut(&mut self, id: EntryId) -> &mut V {
        &mut self.entries[id as usize].value
    }

    /// Entries from the least to the most recently used: inserting them in this order
    /// rebuilds the same recency.
    pub(crate) fn iter_oldest_first(&self) -> impl Iterator<Item = (&[u8], &V)> {
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

    /// Puts entry `id` (in `entries` already) into the index, doubling the index first when it
    /// would pass half full (every entry placed again from its hash).
    fn index_insert(&mut self, id: EntryId) {
        if (self.entries.len() + 1) * 2 > self.index.slots.len() {
            let size = (self.entries.len() * 4).next_power_of_two().max(16);
            self.index.slots = vec![NIL; size];
            for k in 0..self.entries.len() as u32 {
                if k != id {
                    self.place(k);
                }
            }
        }
        self.place(id);
    }

    /// Entry `id` into the first empty slot from its hash's.
    fn place(&mut self, id: EntryId) {
        let mask = self.index.mask();
        let mut at = self.entries[id as usize].hash as usize & mask;
        while self.index.slots[at] != NIL {
            at = (at + 1) & mask;
        }
        self.index.slots[at] = id;
    }

    /// Removes entry `id` from the index: its slot emptied, and each entry after it in the probe
    /// run moved back into the hole when the hole lies between its home slot and where it
    /// stands (so that every entry stays reachable from its home without a marker).
    fn unindex(&mut self, id: EntryId) {
        let mask = self.index.mask();
        let mut hole = self.entries[id as usize].hash as usize & mask;
        while self.index.slots[hole] != id {
            hole = (hole + 1) & mask;
        }
        let mut at = hole;
        loop {
            at = (at + 1) & mask;
            let next = self.index.slots[at];
            if next == NIL {
                break;
            }
            let home = self.entries[next as usize].hash as usize & mask;
            if at.wrapping_sub(home) & mask >= at.wrapping_sub(hole) & mask {
                self.index.slots[hole] = next;
                hole = at;
            }
        }
        self.index.slots[hole] = NIL;
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

    #[test]
    fn the_index_finds_every_live_key_and_no_evicted_one_through_many_evictions() {
        let mut l = Lru::new(97);
        let mut live = std::collections::VecDeque::new();
        // A key order that revisits old keys, so that lookups, touches and evictions mix.
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = format!("{:x}", (x >> 33) % 400).into_bytes();
            match l.peek(&k) {
                Some(id) => {
                    l.touch(id);
                    let at = live.iter().position(|q| *q == k).expect("a live key");
                    live.remove(at);
                }
                None => {
                    assert!(!live.contains(&k), "a live key the index lost");
                    if l.insert(&k, 0).1.is_some() {
                        live.pop_front();
                    }
                }
            }
            live.push_back(k);
        }
        let order: Vec<Vec<u8>> = l.iter_oldest_first().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(order, Vec::from(live.clone()));
        for k in &live {
            assert!(l.peek(k).is_some());
        }
    }
}
