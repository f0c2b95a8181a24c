//! The one pseudo-random generator of the tree: splitmix64, seeded, the same stream on every
//! machine. It shapes generated data (the host's `corpus`, the testkit's logs and fuzz inputs);
//! the module itself never draws from it.

/// splitmix64: tiny, fast, good enough for shaping test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose stream `seed` names (mixed first, so that small seeds differ at once).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    /// A generator whose state is `state` as given (splitmix64's own seeding).
    pub fn from_state(state: u64) -> Rng {
        Rng(state)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// Log-uniform in `lo..=hi`: as many small values as big ones per decade.
    pub fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        ((a + u * (b - a)).exp() as u64).clamp(lo, hi)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }

    /// `len` bytes of the stream, each draw little-endian.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}
