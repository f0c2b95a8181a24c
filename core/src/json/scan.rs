//! The kernels: a JSON string's end (escapes checked, control characters refused, UTF-8
//! checked on the runs of non-ASCII bytes, which are the only bytes that can be invalid) and
//! the estimate's plain run; each written once over [`Block`], wrapped per instruction set.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use super::block::Simd128;
#[cfg(target_arch = "x86_64")]
use super::block::{Avx2, Sse2};
use super::block::{Block, Isa, Kind, Swar, low_bits, tail};

/// Not JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad;

pub(crate) type Res<T> = Result<T, Bad>;

/// The end of the escape whose backslash is at `at`: `\uXXXX` needs four hex digits (a lone
/// surrogate is valid JSON), the others one of `"\/bfnrt`.
#[inline(always)]
fn escape_end(b: &[u8], at: usize) -> Res<usize> {
    match b.get(at + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
        Some(b'u') => match b.get(at + 2..at + 6) {
            Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => Ok(at + 6),
            _ => Err(Bad),
        },
        _ => Err(Bad),
    }
}

/// Checks the run of non-ASCII bytes at `at` as UTF-8 and returns where it ends. ASCII bytes
/// stand alone in UTF-8, so a text is valid exactly when each such run is.
#[cold]
fn utf8_run(b: &[u8], at: usize) -> Res<usize> {
    let end = b[at..]
        .iter()
        .position(|c| *c < 0x80)
        .map_or(b.len(), |n| at + n);
    match std::str::from_utf8(&b[at..end]) {
        Ok(_) => Ok(end),
        Err(_) => Err(Bad),
    }
}

/// The attention mask of the block at `i` (its bytes past the text's end left out); `Bad`
/// when the text ends there with nothing to look at, inside the string.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn block_mask<B: Block>(b: &[u8], i: usize) -> Res<u64> {
    if i + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `i` are inside `b`.
        return Ok(unsafe { B::load(b.as_ptr().add(i)) }.attention());
    }
    // SAFETY: the caller vouches for the instruction set.
    let (blk, shift, keep) = unsafe { tail::<B>(b, i) };
    match (blk.attention() >> shift) & keep {
        0 => Err(Bad),
        m => Ok(m),
    }
}

/// The attention mask of the 64 bytes from `i`, a block at a time. (Its methods are called
/// here, never passed as functions: a function value would not inline into a `target_feature`
/// caller, nor would the block's intrinsics then.)
///
/// # Safety
/// 64 bytes from `i` are inside `b`, and the CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn window<B: Block>(b: &[u8], i: usize) -> u64 {
    let mut m = 0;
    for k in 0..64 / B::LEN {
        // SAFETY: the caller vouches for the 64 bytes and the instruction set.
        m |= unsafe { B::load(b.as_ptr().add(i + k * B::LEN)) }.attention() << (k * B::LEN);
    }
    m
}

/// From `i`, just after a string's opening quote: the index after its closing quote, and
/// whether it holds an escape. Each byte that needs a look (a quote, an escape, a control
/// character, the start of a non-ASCII run) is found by the masks, dealt with, and the scan
/// goes on after it: a block at a time for the first 64 bytes (keys, ids and stamps end
/// there), then 64 bytes at a time.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(crate) unsafe fn string<B: Block>(b: &[u8], mut i: usize) -> Res<(usize, bool)> {
    let mut escaped = false;
    loop {
        let at = 'found: {
            for _ in 0..64 / B::LEN {
                // SAFETY: the caller vouches for the instruction set; `block_mask` reads within
                // the text (a block's bytes past its end left out, nothing left `Bad`).
                let m = unsafe { block_mask::<B>(b, i) }?;
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += B::LEN;
            }
            while i + 64 <= b.len() {
                // SAFETY: the caller vouches for the instruction set; the loop's test leaves the
                // window its 64 bytes.
                let m = unsafe { window::<B>(b, i) };
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += 64;
            }
            loop {
                // SAFETY: the caller vouches for the instruction set; `block_mask` reads within
                // the text (a block's bytes past its end left out, nothing left `Bad`).
                let m = unsafe { block_mask::<B>(b, i) }?;
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += B::LEN;
            }
        };
        // SAFETY: a mask marks bytes inside `b` only.
        let c = unsafe { *b.get_unchecked(at) };
        if c == b'"' {
            return Ok((at + 1, escaped));
        }
        match c {
            b'\\' => {
                escaped = true;
                i = escape_end(b, at)?;
            }
            0x80.. => i = utf8_run(b, at)?,
            _ => return Err(Bad), // a control character
        }
    }
}

/// From `i`, inside a string: the index of the first `"` or `\` (or the end), and how many
/// UTF-8 continuation bytes come before it.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn plain_run<B: Block>(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut continuation = 0;
    while i + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `i` are inside `b`.
        let blk = unsafe { B::load(b.as_ptr().add(i)) };
        let hits = blk.quote_or_backslash();
        let cont = blk.continuation();
        if hits != 0 {
            let k = hits.trailing_zeros();
            continuation += (cont & low_bits(k)).count_ones() as usize;
            return (i + k as usize, continuation);
        }
        continuation += cont.count_ones() as usize;
        i += B::LEN;
    }
    if i < b.len() {
        // SAFETY: the caller vouches for the instruction set.
        let (blk, shift, keep) = unsafe { tail::<B>(b, i) };
        let hits = (blk.quote_or_backslash() >> shift) & keep;
        let cont = (blk.continuation() >> shift) & keep;
        let k = if hits != 0 {
            hits.trailing_zeros()
        } else {
            (b.len() - i) as u32
        };
        continuation += (cont & low_bits(k)).count_ones() as usize;
        return (i + k as usize, continuation);
    }
    (i, continuation)
}

/// The pairs of bytes [`last_sought`] looks for.
#[derive(Clone, Copy)]
pub(crate) struct Sought(pub [[u8; 2]; 4]);

/// The first bytes of the pairs in the block at `at`, bit 0 for byte `at`. `at + 1 + LEN ≤
/// b.len()`.
///
/// # Safety
/// As above, and the CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn sought_at<B: Block>(b: &[u8], at: usize, m: Sought) -> u64 {
    // SAFETY: the caller vouches for `LEN + 1` bytes from `at` and for the instruction set.
    let (x, y) = unsafe { (B::load(b.as_ptr().add(at)), B::load(b.as_ptr().add(at + 1))) };
    x.pairs(y, m.0)
}

/// Below `end`: the last index `k` where one of `m`'s pairs begins (`k + 1 < b.len()`), a
/// block at a time from the end (the first block read overlapping the one after, not byte by
/// byte).
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn last_sought_on<B: Block>(b: &[u8], end: usize, m: Sought) -> Option<usize> {
    let mut end = end.min(b.len().saturating_sub(1));
    // 64 bytes a step while they last, then a block at a time.
    while end >= 64 {
        let start = end - 64;
        let mut hits = 0;
        for k in 0..64 / B::LEN {
            // SAFETY: `start + 64 + 1 = end + 1 ≤ b.len()`; the caller vouches for the set.
            hits |= unsafe { sought_at::<B>(b, start + k * B::LEN, m) } << (k * B::LEN);
        }
        if hits != 0 {
            return Some(start + 63 - hits.leading_zeros() as usize);
        }
        end = start;
    }
    while end >= B::LEN {
        let start = end - B::LEN;
        // SAFETY: `start + LEN + 1 = end + 1 ≤ b.len()`; the caller vouches for the set.
        let hits = unsafe { sought_at::<B>(b, start, m) };
        if hits != 0 {
            return Some(start + 63 - hits.leading_zeros() as usize);
        }
        end = start;
    }
    if end == 0 {
        return None;
    }
    if b.len() > B::LEN {
        // SAFETY: as above, from 0; only its bits below `end` are new.
        let hits = unsafe { sought_at::<B>(b, 0, m) } & low_bits(end as u32);
        return (hits != 0).then(|| 63 - hits.leading_zeros() as usize);
    }
    (0..end)
        .rev()
        .find(|&k| m.0.iter().any(|p| p[0] == b[k] && p[1] == b[k + 1]))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn last_sought_avx2(b: &[u8], end: usize, m: Sought) -> Option<usize> {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { last_sought_on::<Avx2>(b, end, m) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn string_avx2(b: &[u8], i: usize) -> Res<(usize, bool)> {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { string::<Avx2>(b, i) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn plain_run_avx2(b: &[u8], i: usize) -> (usize, usize) {
    // SAFETY: as above.
    unsafe { plain_run::<Avx2>(b, i) }
}

/// Runs a kernel on `isa`'s blocks: AVX2 through its `target_feature` wrapper, SSE2 and SIMD128
/// directly (the x86_64 baseline; compiled in), SWAR everywhere.
macro_rules! per_isa {
    ($isa:expr, $kernel:ident, $avx2:ident, $($arg:expr),*) => {
        match $isa.0 {
            // SAFETY: an `Isa` of AVX2 is only made where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { $avx2($($arg),*) },
            // SAFETY: SSE2 is part of the x86_64 baseline.
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => unsafe { $kernel::<Sse2>($($arg),*) },
            // SAFETY: the module is built with simd128, which the engine checks when it loads it.
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            Kind::Simd128 => unsafe { $kernel::<Simd128>($($arg),*) },
            // SAFETY: SWAR needs no instruction set.
            Kind::Swar => unsafe { $kernel::<Swar>($($arg),*) },
        }
    };
}

/// [`string`] on `isa`.
#[inline]
pub(crate) fn string_end(isa: Isa, b: &[u8], i: usize) -> Res<(usize, bool)> {
    per_isa!(isa, string, string_avx2, b, i)
}

/// [`plain_run`] on `isa`.
#[inline]
pub(crate) fn plain(isa: Isa, b: &[u8], i: usize) -> (usize, usize) {
    per_isa!(isa, plain_run, plain_run_avx2, b, i)
}

/// [`last_sought_on`] on `isa`: the last index below `end` where one of `m`'s pairs begins.
#[inline]
pub(crate) fn last_sought(isa: Isa, b: &[u8], end: usize, m: Sought) -> Option<usize> {
    per_isa!(isa, last_sought_on, last_sought_avx2, b, end, m)
}

/// The blocks every machine that runs this build has: SSE2 on x86_64 (its baseline), SIMD128
/// in a wasm32 build with it, SWAR elsewhere.
#[cfg(target_arch = "x86_64")]
pub(crate) type Base = Sse2;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) type Base = Simd128;
#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
pub(crate) type Base = Swar;

/// The quotes of the block at `at`, bit 0 for byte `at` (none past the end of `b`).
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(crate) unsafe fn quotes<B: Block>(b: &[u8], at: usize) -> u64 {
    if at + B::LEN <= b.len() {
        // SAFETY: `LEN` bytes from `at` are inside `b`; the caller vouches for the set.
        return unsafe { B::load(b.as_ptr().add(at)) }.byte(b'"');
    }
    if at >= b.len() {
        return 0;
    }
    // SAFETY: the caller vouches for the instruction set.
    let (blk, shift, keep) = unsafe { tail::<B>(b, at) };
    (blk.byte(b'"') >> shift) & keep
}
