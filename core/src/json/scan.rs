//! The kernels: a JSON string's end (escapes checked, control characters refused, UTF-8
//! checked on the runs of non-ASCII bytes, which are the only bytes that can be invalid) and
//! the estimate's plain run; each written once over [`Block`], wrapped per instruction set.

use std::marker::PhantomData;

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
/// goes on after it: first a block (most strings end there), then 64 bytes at a time.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn string<B: Block>(b: &[u8], mut i: usize) -> Res<(usize, bool)> {
    let mut escaped = false;
    loop {
        // SAFETY (all three): the caller vouches for the instruction set; the window has its
        // 64 bytes.
        let at = 'found: {
            let m = unsafe { block_mask::<B>(b, i) }?;
            if m != 0 {
                break 'found i + m.trailing_zeros() as usize;
            }
            i += B::LEN;
            while i + 64 <= b.len() {
                let m = unsafe { window::<B>(b, i) };
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += 64;
            }
            loop {
                let m = unsafe { block_mask::<B>(b, i) }?;
                if m != 0 {
                    break 'found i + m.trailing_zeros() as usize;
                }
                i += B::LEN;
            }
        };
        match b[at] {
            b'"' => return Ok((at + 1, escaped)),
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

/// A validating cursor over JSON text: values at any depth, numbers of any size, its strings
/// scanned on `B`'s blocks (the kernel inlined into the scanner).
pub(crate) struct Scanner<'a, B> {
    pub b: &'a [u8],
    pub i: usize,
    blocks: PhantomData<B>,
}

impl<'a> Scanner<'a, Base> {
    /// A scanner on the blocks every machine has.
    pub fn base(b: &'a [u8]) -> Self {
        // SAFETY: `Base` is in every machine's instruction set (see its definition).
        unsafe { Scanner::new(b) }
    }
}

impl<'a, B: Block> Scanner<'a, B> {
    /// # Safety
    /// The CPU has `B`'s instruction set: every method leans on it.
    pub unsafe fn new(b: &'a [u8]) -> Self {
        Scanner {
            b,
            i: 0,
            blocks: PhantomData,
        }
    }

    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    pub fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// The rest of a string whose opening quote was eaten; true when it holds an escape.
    #[inline(always)]
    pub fn string(&mut self) -> Res<bool> {
        // SAFETY: a scanner of `B` is only made where the CPU has `B` (`new`).
        let (end, escaped) = unsafe { string::<B>(self.b, self.i) }?;
        self.i = end;
        Ok(escaped)
    }

    /// `"key" : value`, from the key's opening quote: the key as it stands between its quotes,
    /// whether it holds an escape, the value's text, and whether the value is a string without
    /// an escape (its text is then its quotes' inside, as the scan has seen).
    #[inline(always)]
    pub fn member(&mut self) -> Res<(&'a [u8], bool, &'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let escaped = self.string()?;
        let key = &self.b[start..self.i - 1];
        self.ws();
        self.eat(b':')?;
        self.ws();
        let vstart = self.i;
        let plain = if self.peek() == Some(b'"') {
            self.i += 1;
            !self.string()?
        } else {
            self.value()?;
            false
        };
        Ok((key, escaped, &self.b[vstart..self.i], plain))
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Res<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.i += 1;
                self.digits();
            }
            _ => return Err(Bad),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(Bad);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(Bad);
            }
        }
        Ok(())
    }

    #[inline]
    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Res<()> {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// `"key" :` inside a nested object, and the whitespace before its value.
    #[inline(always)]
    fn member_key(&mut self) -> Res<()> {
        self.eat(b'"')?;
        self.string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Ok(())
    }

    /// One value at the cursor (no whitespace before it), nested to any depth: the depth is
    /// a stack of bits on the heap, never the call stack. Inlined, as everything between an
    /// entry point and the blocks is, so that a `target_feature` entry point's blocks inline.
    #[inline(always)]
    pub fn value(&mut self) -> Res<()> {
        let mut stack = BitStack::default();
        loop {
            match self.peek().ok_or(Bad)? {
                b'"' => {
                    self.i += 1;
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b'n' => self.literal(b"null")?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                open @ (b'[' | b'{') => {
                    self.i += 1;
                    self.ws();
                    let close = if open == b'[' { b']' } else { b'}' };
                    if self.peek() == Some(close) {
                        self.i += 1;
                    } else {
                        stack.push(open == b'{');
                        if open == b'{' {
                            self.member_key()?;
                        }
                        continue;
                    }
                }
                _ => return Err(Bad),
            }
            // A value is complete: close what it completes, up to the next member.
            loop {
                let Some(object) = stack.top() else {
                    return Ok(());
                };
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.ws();
                        if object {
                            self.member_key()?;
                        }
                        break;
                    }
                    Some(b'}') if object => {
                        self.i += 1;
                        stack.pop();
                    }
                    Some(b']') if !object => {
                        self.i += 1;
                        stack.pop();
                    }
                    _ => return Err(Bad),
                }
            }
        }
    }
}

/// A stack of bits, in a word until 64 deep.
#[derive(Default)]
struct BitStack {
    word: u64,
    depth: usize,
    spill: Vec<u64>,
}

impl BitStack {
    #[inline]
    fn push(&mut self, bit: bool) {
        if self.depth > 0 && self.depth.is_multiple_of(64) {
            self.spill.push(self.word);
            self.word = 0;
        }
        self.word = (self.word << 1) | bit as u64;
        self.depth += 1;
    }

    #[inline]
    fn top(&self) -> Option<bool> {
        (self.depth > 0).then_some(self.word & 1 == 1)
    }

    #[inline]
    fn pop(&mut self) {
        self.depth -= 1;
        self.word >>= 1;
        if self.depth > 0 && self.depth.is_multiple_of(64) {
            self.word = self.spill.pop().unwrap_or(0);
        }
    }
}
