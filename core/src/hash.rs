//! The one hash of the tree: FNV-1a, 64 bits — small, stable across machines and versions, for
//! fingerprints the state keeps (the adapter's recent line ids) and names on disk (the status
//! line's cache files). Not for anything an adversary picks to collide with a purpose.

/// FNV-1a, 64 bits, fed in parts: the same as [`fnv1a`] of the parts joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    pub fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
    }

    pub fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a of `bytes`, 64 bits.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        let mut parts = super::Fnv1a::default();
        parts.write(b"foo");
        parts.write(b"");
        parts.write(b"bar");
        assert_eq!(parts.finish(), super::fnv1a(b"foobar"));
    }
}
