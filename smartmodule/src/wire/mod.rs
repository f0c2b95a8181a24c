//! Fluvio's SmartModule wire format, read in place and written directly: the input's records as
//! borrowed slices of the buffer the engine wrote, the output encoded once into one buffer.
//!
//! It accepts what fluvio-protocol 0.50's decoder accepts (`SmartModuleInput`, then the
//! `Vec<Record>` in its `raw_bytes`, at the call's version), with three refusals where that
//! decoder would trap or write back something else: a key or value length that is negative or
//! runs past the buffer (the decoder allocates it first), a varint longer than the 10 bytes an
//! `i64` needs (its shifts overflow), and a record field outside ±2^31 (Fluvio's varint encoder
//! writes those wrongly, or never stops). A record whose encoding is exactly what Fluvio's
//! encoder writes for it leaves as a copy of its bytes (contract §2, §6.2); any other is written
//! field by field.
//!
//! A record is read by one of two readers that agree wherever both read: `canonical`, for the
//! record Fluvio's encoder writes with varints of at most three bytes (every record an SPU hands
//! over, short of a key or value of 1 MiB), and the general `record` for every other, and for
//! every refusal with its byte.

mod read;
#[cfg(test)]
mod tests;
mod write;

use read::{Cursor, canonical, record};
pub use write::{Output, record_len, varint_edges};

/// Why an input does not decode, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the input does not decode at byte {at}: {why}")]
pub struct Undecodable {
    /// The byte offset in the input where reading stopped.
    pub at: usize,
    pub why: Why,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Why {
    /// The input ends inside a field.
    #[error("it ends inside a field")]
    Short,
    /// An `Option`'s tag is neither 0 nor 1.
    #[error("an option's tag is neither 0 nor 1")]
    Tag,
    /// A param string is not UTF-8.
    #[error("a param is not UTF-8")]
    Utf8,
    /// A varint runs past 10 bytes.
    #[error("a varint runs past 10 bytes")]
    LongVarint,
    /// A key or value length is negative or runs past the buffer.
    #[error("a key or value length is negative or runs past the input")]
    Length,
    /// A record field is outside ±2^31.
    #[error("a record field is outside ±2^31")]
    Range,
    /// A look-back age whose nanoseconds carry its seconds past `u64::MAX`.
    #[error("a look-back age overflows")]
    Age,
}

type Res<T> = Result<T, Undecodable>;

/// One invocation's input: its base offset and timestamp, and its records' encoding.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub base_offset: i64,
    /// Zero before version 22, which has none.
    pub base_timestamp: i64,
    /// `raw_bytes`: a `Vec<Record>` as Fluvio encodes it.
    raw: &'a [u8],
    /// Where `raw` starts in the input (for the offsets of [`Undecodable`]).
    raw_at: usize,
}

/// Reads a `SmartModuleInput` as Fluvio's decoder does at `version` (fields outside their
/// versions are absent; trailing bytes are ignored).
pub fn input(bytes: &[u8], version: i16) -> Res<Input<'_>> {
    let mut c = Cursor { b: bytes, i: 0 };
    let v = version;
    let mut input = Input {
        base_offset: 0,
        base_timestamp: 0,
        raw: &[],
        raw_at: 0,
    };
    if v >= 0 {
        input.base_offset = c.i64()?;
        // The count is read apart from the bytes to know where they start.
        input.raw_at = c.i + 4;
        input.raw = c.bytes()?;
    }
    // `params` (deprecated, up to version 22): a map of strings, then from version 20 an
    // optional look-back, whose age comes from version 21.
    if (0..=22).contains(&v) {
        let n = u16::from_be_bytes(c.array()?);
        for _ in 0..2 * n as u32 {
            c.string()?;
        }
        if v >= 20 && c.bool()? {
            c.take(8)?; // last
            if v >= 21 && c.bool()? {
                let secs = u64::from_be_bytes(c.array()?);
                let nanos = u32::from_be_bytes(c.array()?);
                if secs.checked_add((nanos / 1_000_000_000) as u64).is_none() {
                    c.i -= 12;
                    return c.fail(Why::Age);
                }
            }
        }
    }
    if (16..=22).contains(&v) {
        c.bytes()?; // join_record
    }
    if v >= 22 {
        input.base_timestamp = c.i64()?;
    }
    Ok(input)
}

/// One record as it stands in the input: its fields, with its key and value borrowed. Only the
/// reader makes one, so its deltas and header count are within ±2^31.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored<'a> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i64,
    pub key: Option<&'a [u8]>,
    pub value: &'a [u8],
    pub headers: i64,
    /// Its whole encoding, when that is what Fluvio's encoder writes for it.
    encoded: Option<&'a [u8]>,
}

/// A record's fields beside its key and value: what writing it back takes, kept compact (a call
/// keeps one per input record, beside the record as the core reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta<'a> {
    encoded: Option<&'a [u8]>,
    timestamp_delta: i32,
    offset_delta: i32,
    headers: i32,
    attributes: i8,
}

impl<'a> Stored<'a> {
    /// Its fields beside its key and value.
    #[inline(always)]
    pub fn meta(&self) -> Meta<'a> {
        let fits = |v: i64| i32::try_from(v).is_ok();
        debug_assert!(fits(self.timestamp_delta) && fits(self.offset_delta) && fits(self.headers));
        Meta {
            encoded: self.encoded,
            timestamp_delta: self.timestamp_delta as i32,
            offset_delta: self.offset_delta as i32,
            headers: self.headers as i32,
            attributes: self.attributes,
        }
    }
}

impl<'a> Meta<'a> {
    /// The record of these fields, and this key and value (the ones it was read with).
    #[inline(always)]
    pub fn with(self, key: Option<&'a [u8]>, value: &'a [u8]) -> Stored<'a> {
        Stored {
            attributes: self.attributes,
            timestamp_delta: self.timestamp_delta as i64,
            offset_delta: self.offset_delta as i64,
            key,
            value,
            headers: self.headers as i64,
            encoded: self.encoded,
        }
    }
}

impl<'a> Input<'a> {
    /// The records read in one pass, held (the `Vec<Record>` reads its count's worth, ignoring
    /// what follows).
    pub fn collect(&self) -> Res<Vec<Stored<'a>>> {
        self.map(|r| r)
    }

    /// The records read in one pass, each held as `f` makes it: one that does not decode
    /// refuses the whole input, and none is handed over.
    pub fn map<T>(&self, mut f: impl FnMut(Stored<'a>) -> T) -> Res<Vec<T>> {
        let mut out = Vec::with_capacity(self.capacity());
        self.each(|r| out.push(f(r)))?;
        Ok(out)
    }

    /// As [`Input::map`], and beside each record (at the same index) its [`Meta`].
    pub fn split<T>(&self, mut f: impl FnMut(Stored<'a>) -> T) -> Res<(Vec<T>, Vec<Meta<'a>>)> {
        let n = self.capacity();
        let (mut out, mut metas) = (Vec::with_capacity(n), Vec::with_capacity(n));
        self.each(|r| {
            metas.push(r.meta());
            out.push(f(r));
        })?;
        Ok((out, metas))
    }

    /// Each record in turn, read by [`canonical`] where it can, else by [`record`].
    #[inline(always)]
    fn each(&self, mut f: impl FnMut(Stored<'a>)) -> Res<()> {
        let (c, n) = self.count()?;
        let (b, mut i) = (c.b, c.i);
        for _ in 0..n {
            // `f` in each arm: the common record's fields go to it as they were read.
            i = match canonical(b, i) {
                Some((r, end)) => {
                    f(r);
                    end
                }
                None => {
                    let (r, end) = record(b, i).map_err(|e| self.shift(e))?;
                    f(r);
                    end
                }
            };
        }
        Ok(())
    }

    /// The records to make room for: their count, bounded by what the bytes can hold (a
    /// record takes 7 bytes at least: a count past that is refused as the reads go).
    fn capacity(&self) -> usize {
        self.count().map_or(0, |(_, n)| n.min(self.raw.len() / 7))
    }

    /// A cursor after the records' count, and the count.
    fn count(&self) -> Res<(Cursor<'a>, usize)> {
        let mut c = Cursor { b: self.raw, i: 0 };
        let n = c.i32().map_err(|e| self.shift(e))?.max(0) as usize;
        Ok((c, n))
    }

    /// An error's place in the whole input.
    fn shift(&self, e: Undecodable) -> Undecodable {
        Undecodable {
            at: e.at + self.raw_at,
            ..e
        }
    }
}

/// What precedes a record's key: its attributes and deltas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preamble {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i64,
}

impl Stored<'_> {
    pub fn preamble(&self) -> Preamble {
        Preamble {
            attributes: self.attributes,
            timestamp_delta: self.timestamp_delta,
            offset_delta: self.offset_delta,
        }
    }

    /// The bytes this record takes in an output.
    #[inline(always)]
    pub fn encoded_len(&self) -> usize {
        match self.encoded {
            Some(e) => e.len(),
            None => record_len(&self.preamble(), self.key, self.value, self.headers),
        }
    }
}
