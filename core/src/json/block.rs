//! Blocks of bytes classified many at a time: one trait, an implementation per instruction set
//! (SSE2 and AVX2 on x86_64, SIMD128 on wasm32 built with it, eight bytes in a `u64`
//! everywhere), so that each scanning kernel is written once over it (memchr's `Vector`
//! pattern). Masks carry byte `i` at bit `i`.

/// A block of `LEN` bytes and the byte classes the kernels look for.
pub(crate) trait Block: Copy {
    /// Bytes per block (at most 64).
    const LEN: usize;

    /// # Safety
    /// `LEN` bytes at `p` are readable, and the CPU has the block's instruction set.
    unsafe fn load(p: *const u8) -> Self;
    /// `"`, `\`, control characters (< 0x20) and bytes ≥ 0x80: where a JSON string needs a
    /// look (the last for UTF-8).
    fn attention(self) -> u64;
    /// `"` and `\`: where the estimate's plain run inside a string ends.
    fn quote_or_backslash(self) -> u64;
    /// Bytes equal to `c`.
    fn byte(self, c: u8) -> u64;
    /// JSON's whitespace: space, tab, line feed, carriage return.
    fn whitespace(self) -> u64;
    /// UTF-8 continuation bytes (`10xxxxxx`), which belong to a scalar already counted.
    fn continuation(self) -> u64;
    /// Bytes that begin one of `pairs`, `next` being the block one byte on.
    #[inline(always)]
    fn pairs(self, next: Self, pairs: [[u8; 2]; 4]) -> u64 {
        let mut m = 0;
        for [a, b] in pairs {
            m |= self.byte(a) & next.byte(b);
        }
        m
    }
}

/// The low `n` bits set (`n` ≤ 64).
#[inline(always)]
pub(crate) fn low_bits(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The fewer than `B::LEN` bytes from `i` to the end of `b` as a block, the shift that brings
/// byte `i` to bit 0 of its masks, and the mask of the bytes that are real (after the shift):
/// the last `LEN` bytes of `b` where it has as many (no copy), else a zero-padded copy.
///
/// # Safety
/// As [`Block::load`], for the instruction set.
#[inline(always)]
pub(crate) unsafe fn tail<B: Block>(b: &[u8], i: usize) -> (B, u32, u64) {
    let rem = b.len() - i;
    debug_assert!(rem < B::LEN);
    if let Some(start) = b.len().checked_sub(B::LEN) {
        // SAFETY: `LEN` bytes from `start` are inside `b`; the caller vouches for the set.
        let blk = unsafe { B::load(b.as_ptr().add(start)) };
        return (blk, (i - start) as u32, low_bits(rem as u32));
    }
    let mut buf = [0u8; 64];
    buf[..rem].copy_from_slice(&b[i..]);
    // SAFETY: `buf` holds 64 ≥ LEN bytes; the caller vouches for the instruction set.
    (unsafe { B::load(buf.as_ptr()) }, 0, low_bits(rem as u32))
}

/// Eight bytes in a `u64`, little-endian: byte `i` of the block is byte `i` of memory. Every
/// test is exact per byte (no borrow crosses a byte), so every set bit is a real hit.
#[derive(Clone, Copy)]
pub(crate) struct Swar(u64);

/// 0x01 in each byte of a word.
pub(crate) const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES * 0x80;
const LOW7: u64 = ONES * 0x7f;

/// Each byte of `x` that is no ASCII digit, nonzero; each digit, zero: a digit's high nibble
/// is 3, and stays 3 when 6 is added. (A byte of 0xFA or more carries into the bytes after it,
/// never before: the lowest nonzero byte is always the first that is no digit.)
#[inline(always)]
pub(crate) fn non_digits(x: u64) -> u64 {
    ((x & (ONES * 0xF0)) ^ (ONES * 0x30))
        | ((x.wrapping_add(ONES * 0x06) & (ONES * 0xF0)) ^ (ONES * 0x30))
}

impl Swar {
    /// High bit of each byte set where the byte is zero.
    #[inline(always)]
    fn zero(x: u64) -> u64 {
        !(((x & LOW7) + LOW7) | x) & HIGH
    }

    /// The high bit of each byte, gathered to one bit per byte.
    #[inline(always)]
    fn gather(x: u64) -> u64 {
        ((x & HIGH) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }

    /// The high bit of each byte that is `"`, `\` or a control character.
    #[inline(always)]
    fn special_flags(self) -> u64 {
        let x = self.0;
        // A byte below 0x20: high bit clear, and adding 0x60 to its low seven bits stays below 0x80.
        let control = !(((x & LOW7) + ONES * 0x60) | x) & HIGH;
        Swar::zero(x ^ (ONES * b'"' as u64)) | Swar::zero(x ^ (ONES * b'\\' as u64)) | control
    }
}

impl Block for Swar {
    const LEN: usize = 8;

    #[inline(always)]
    unsafe fn load(p: *const u8) -> Swar {
        // SAFETY: the caller vouches for 8 readable bytes.
        Swar(u64::from_le(unsafe {
            std::ptr::read_unaligned(p as *const u64)
        }))
    }

    #[inline(always)]
    fn attention(self) -> u64 {
        // The high bit of each byte: set for a special byte's flag, and for a byte ≥ 0x80.
        Swar::gather(self.special_flags() | self.0)
    }

    #[inline(always)]
    fn quote_or_backslash(self) -> u64 {
        let x = self.0;
        Swar::gather(Swar::zero(x ^ (ONES * b'"' as u64)) | Swar::zero(x ^ (ONES * b'\\' as u64)))
    }

    #[inline(always)]
    fn byte(self, c: u8) -> u64 {
        Swar::gather(Swar::zero(self.0 ^ (ONES * c as u64)))
    }

    #[inline(always)]
    fn whitespace(self) -> u64 {
        let x = self.0;
        let is = |c: u8| Swar::zero(x ^ (ONES * c as u64));
        Swar::gather(is(b' ') | is(b'\t') | is(b'\n') | is(b'\r'))
    }

    #[inline(always)]
    fn continuation(self) -> u64 {
        // Bit 7 set and bit 6 clear: shifted left, bit 6 lands on bit 7 of the same byte.
        Swar::gather(self.0 & !(self.0 << 1))
    }
}

/// A block in an x86_64 vector register, its classes from one compare each: written once, for
/// SSE2 (16 bytes, part of the x86_64 baseline) and AVX2 (32 bytes, used behind a runtime check).
#[cfg(target_arch = "x86_64")]
macro_rules! x86_block {
    ($name:ident, $reg:ident, $len:literal, $load:ident, $set1:ident, $eq:ident, $min:ident,
     $or:ident, $and:ident, $mask:ident) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name($reg);

        impl $name {
            /// All ones in each lane that is `"`, `\\` or a control character.
            #[inline(always)]
            fn special_lanes(self) -> $reg {
                // SAFETY: a block exists only where the CPU has its instruction set.
                unsafe {
                    let v = self.0;
                    let quote_or_backslash =
                        $or($eq(v, $set1(b'"' as i8)), $eq(v, $set1(b'\\' as i8)));
                    // v ≤ 0x1f, unsigned.
                    let control = $eq($min(v, $set1(0x1f)), v);
                    $or(quote_or_backslash, control)
                }
            }
        }

        impl Block for $name {
            const LEN: usize = $len;

            #[inline(always)]
            unsafe fn load(p: *const u8) -> $name {
                // SAFETY: the caller vouches for LEN readable bytes and the instruction set.
                $name(unsafe { $load(p as *const $reg) })
            }

            #[inline(always)]
            fn attention(self) -> u64 {
                // SAFETY: a block exists only where the CPU has its instruction set.
                unsafe {
                    // The mask takes each byte's high bit: set in a special byte's lane, and
                    // in a byte ≥ 0x80 itself.
                    $mask($or(self.special_lanes(), self.0)) as u32 as u64
                }
            }

            #[inline(always)]
            fn quote_or_backslash(self) -> u64 {
                // SAFETY: as above.
                unsafe {
                    let v = self.0;
                    $mask($or($eq(v, $set1(b'"' as i8)), $eq(v, $set1(b'\\' as i8)))) as u32 as u64
                }
            }

            #[inline(always)]
            fn byte(self, c: u8) -> u64 {
                // SAFETY: as above.
                unsafe { $mask($eq(self.0, $set1(c as i8))) as u32 as u64 }
            }

            #[inline(always)]
            fn whitespace(self) -> u64 {
                // SAFETY: as above.
                unsafe {
                    let v = self.0;
                    let is = |c: u8| $eq(v, $set1(c as i8));
                    $mask($or($or(is(b' '), is(b'\t')), $or(is(b'\n'), is(b'\r')))) as u32 as u64
                }
            }

            #[inline(always)]
            fn continuation(self) -> u64 {
                // SAFETY: as above.
                unsafe {
                    $mask($eq($and(self.0, $set1(0xC0u8 as i8)), $set1(0x80u8 as i8))) as u32 as u64
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Block;

    x86_block!(
        Sse2,
        __m128i,
        16,
        _mm_loadu_si128,
        _mm_set1_epi8,
        _mm_cmpeq_epi8,
        _mm_min_epu8,
        _mm_or_si128,
        _mm_and_si128,
        _mm_movemask_epi8
    );
    x86_block!(
        Avx2,
        __m256i,
        32,
        _mm256_loadu_si256,
        _mm256_set1_epi8,
        _mm256_cmpeq_epi8,
        _mm256_min_epu8,
        _mm256_or_si256,
        _mm256_and_si256,
        _mm256_movemask_epi8
    );
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Sse2};

/// A block in a WebAssembly `v128`, for modules built with `simd128` (the engine then runs it
/// or refuses the module at load: there is no check at run time to make).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm {
    use std::arch::wasm32::*;

    use super::Block;

    #[derive(Clone, Copy)]
    pub(crate) struct Simd128(v128);

    impl Simd128 {
        #[inline(always)]
        fn quote_or_backslash_lanes(self) -> v128 {
            v128_or(
                u8x16_eq(self.0, u8x16_splat(b'"')),
                u8x16_eq(self.0, u8x16_splat(b'\\')),
            )
        }
    }

    impl Block for Simd128 {
        const LEN: usize = 16;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> Simd128 {
            // SAFETY: the caller vouches for 16 readable bytes (unaligned loads are allowed).
            Simd128(unsafe { v128_load(p as *const v128) })
        }

        #[inline(always)]
        fn attention(self) -> u64 {
            // Below 0x20 as a signed byte: a control character, or a byte ≥ 0x80.
            u8x16_bitmask(v128_or(
                self.quote_or_backslash_lanes(),
                i8x16_lt(self.0, i8x16_splat(0x20)),
            )) as u64
        }

        #[inline(always)]
        fn quote_or_backslash(self) -> u64 {
            u8x16_bitmask(self.quote_or_backslash_lanes()) as u64
        }

        #[inline(always)]
        fn byte(self, c: u8) -> u64 {
            u8x16_bitmask(u8x16_eq(self.0, u8x16_splat(c))) as u64
        }

        #[inline(always)]
        fn whitespace(self) -> u64 {
            let is = |c: u8| u8x16_eq(self.0, u8x16_splat(c));
            u8x16_bitmask(v128_or(
                v128_or(is(b' '), is(b'\t')),
                v128_or(is(b'\n'), is(b'\r')),
            )) as u64
        }

        #[inline(always)]
        fn continuation(self) -> u64 {
            let top = v128_and(self.0, u8x16_splat(0xC0));
            u8x16_bitmask(u8x16_eq(top, u8x16_splat(0x80))) as u64
        }

        #[inline(always)]
        fn pairs(self, next: Simd128, pairs: [[u8; 2]; 4]) -> u64 {
            // The lanes combined in the register, one bitmask for all four.
            let pair = |[a, b]: [u8; 2]| {
                v128_and(
                    u8x16_eq(self.0, u8x16_splat(a)),
                    u8x16_eq(next.0, u8x16_splat(b)),
                )
            };
            let [p, q, r, t] = pairs;
            u8x16_bitmask(v128_or(
                v128_or(pair(p), pair(q)),
                v128_or(pair(r), pair(t)),
            )) as u64
        }
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) use wasm::Simd128;

/// The instruction set a scan runs on. Only [`Isa::best`] and [`Isa::available`] make one, and
/// they offer only what the CPU has (memchr's way): safe code cannot pick an instruction set
/// the machine lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa(pub(super) Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// 32 bytes at a time (x86_64 with AVX2, checked at run time).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 16 bytes at a time (every x86_64).
    #[cfg(target_arch = "x86_64")]
    Sse2,
    /// 16 bytes at a time (wasm32 built with `simd128`).
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    Simd128,
    /// 8 bytes in a `u64`: any machine, and an engine without SIMD.
    Swar,
}

impl Isa {
    /// The widest the CPU has (std caches the check).
    #[inline]
    pub fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                return Isa(Kind::Avx2);
            }
            Isa(Kind::Sse2)
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            Isa(Kind::Simd128)
        }
        #[cfg(not(any(
            target_arch = "x86_64",
            all(target_arch = "wasm32", target_feature = "simd128")
        )))]
        Isa(Kind::Swar)
    }

    /// The portable one, which every machine runs.
    pub fn portable() -> Isa {
        Isa(Kind::Swar)
    }

    /// Every instruction set this CPU runs, the portable one first, for differential tests.
    pub fn available() -> Vec<Isa> {
        #[allow(unused_mut)] // a build with no vector set adds none
        let mut all = vec![Isa::portable()];
        #[cfg(target_arch = "x86_64")]
        {
            all.push(Isa(Kind::Sse2));
            if std::is_x86_feature_detected!("avx2") {
                all.push(Isa(Kind::Avx2));
            }
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        all.push(Isa(Kind::Simd128));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(bytes: &[u8], f: impl Fn(u8) -> bool) -> u64 {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| f(**b))
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    fn check<B: Block>(bytes: &[u8]) {
        // SAFETY: the test only instantiates blocks the CPU runs, over `LEN` bytes.
        let b = unsafe { B::load(bytes.as_ptr()) };
        let bytes = &bytes[..B::LEN];
        assert_eq!(
            b.attention(),
            naive(bytes, |c| c == b'"'
                || c == b'\\'
                || !(0x20..0x80).contains(&c))
        );
        assert_eq!(
            b.quote_or_backslash(),
            naive(bytes, |c| c == b'"' || c == b'\\')
        );
        assert_eq!(b.continuation(), naive(bytes, |c| c & 0xC0 == 0x80));
        assert_eq!(b.whitespace(), naive(bytes, |c| b" \t\n\r".contains(&c)));
        for c in [0, b'"', b'\\', 0x80, 0xff] {
            assert_eq!(b.byte(c), naive(bytes, |x| x == c));
        }
    }

    #[test]
    fn every_block_classifies_every_byte_exactly() {
        // Each byte value at each position, beside neighbours that provoke borrows.
        for v in 0..=255u8 {
            for n in [0u8, 0x1f, 0x20, b'"', b'\\', 0x7f, 0x80, 0xbf, 0xc0, 0xff] {
                let mut bytes = [n; 64];
                for (i, b) in bytes.iter_mut().enumerate() {
                    if i % 3 == 0 {
                        *b = v;
                    }
                }
                check::<Swar>(&bytes);
                #[cfg(target_arch = "x86_64")]
                {
                    check::<Sse2>(&bytes);
                    if std::is_x86_feature_detected!("avx2") {
                        check::<Avx2>(&bytes);
                    }
                }
            }
        }
    }
}
