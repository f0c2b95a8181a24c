//! Fluvio's SmartModule wire format, read in place and written directly: the input's records as
//! borrowed slices of the buffer the engine wrote, the output encoded once into one buffer.
//!
//! It accepts what fluvio-protocol 0.50's decoder accepts (`SmartModuleInput`, then the
//! `Vec<Record>` in its `raw_bytes`, at the call's version), with three refusals where that
//! decoder would trap or write back something else: a key or value length that is negative or
//! runs past the buffer (the decoder allocates it first), a varint longer than the 10 bytes an
//! `i64` needs (its shifts overflow), and a record field outside ±2^31 (Fluvio's varint encoder
//! writes those wrongly, or never stops). A record whose encoding is exactly what Fluvio's
//! encoder writes for it leaves as a copy of its bytes; any other is written field by field.

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

/// A cursor over the input; every read checks the bytes are there.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn fail<T>(&self, why: Why) -> Res<T> {
        Err(Undecodable { at: self.i, why })
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        match self.b.get(self.i..self.i.saturating_add(n)) {
            Some(s) => {
                self.i += n;
                Ok(s)
            }
            None => self.fail(Why::Short),
        }
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> Res<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    #[inline(always)]
    fn u8(&mut self) -> Res<u8> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    fn i32(&mut self) -> Res<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    #[inline]
    fn i64(&mut self) -> Res<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// A bool as Fluvio encodes it: one byte, 0 or 1.
    #[inline(always)]
    fn bool(&mut self) -> Res<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => {
                self.i -= 1;
                self.fail(Why::Tag)
            }
        }
    }

    /// A zigzag varint, as Fluvio's decoder reads it (bits shifted past 64 are dropped), and
    /// whether Fluvio's encoder writes this value as these bytes.
    #[inline(always)]
    fn varint(&mut self) -> Res<(i64, bool)> {
        // One byte, the usual case: canonical whatever its value.
        if let Some(&b) = self.b.get(self.i)
            && b < 0x80
        {
            self.i += 1;
            return Ok((((b >> 1) as i64) ^ -((b & 1) as i64), true));
        }
        // Two, the length of a record or value of 64 B to 8 KiB: canonical when the second
        // byte is not zero (else one byte would have held it).
        if let Some(&[lo, hi]) = self.b.get(self.i..self.i + 2)
            && hi < 0x80
        {
            self.i += 2;
            let z = (lo & 0x7f) as u64 | (hi as u64) << 7;
            return Ok((((z >> 1) as i64) ^ -((z & 1) as i64), hi != 0));
        }
        let (value, canonical, next) = long_varint(self.b, self.i)?;
        self.i = next;
        Ok((value, canonical))
    }

    /// A varint that must be within ±2^31 (see the module's note).
    #[inline(always)]
    fn field(&mut self) -> Res<(i64, bool)> {
        let start = self.i;
        let (v, canonical) = self.varint()?;
        if !(i32::MIN as i64..=i32::MAX as i64).contains(&v) {
            self.i = start;
            return self.fail(Why::Range);
        }
        Ok((v, canonical))
    }

    /// `Vec<u8>` as Fluvio encodes it: an `i32` count (below 1: empty), then the bytes.
    fn bytes(&mut self) -> Res<&'a [u8]> {
        let n = self.i32()?;
        if n < 1 {
            Ok(&[])
        } else {
            self.take(n as usize)
        }
    }

    /// A `String`: an `i16` length (below 1: empty), then UTF-8.
    fn string(&mut self) -> Res<()> {
        let n = i16::from_be_bytes(self.array()?);
        if n > 0 {
            let at = self.i;
            if std::str::from_utf8(self.take(n as usize)?).is_err() {
                self.i = at;
                return self.fail(Why::Utf8);
            }
        }
        Ok(())
    }

    /// A key or value: a varint length, then the bytes.
    #[inline(always)]
    fn data(&mut self) -> Res<(&'a [u8], bool)> {
        let start = self.i;
        let (n, canonical) = self.varint()?;
        let why = match usize::try_from(n) {
            Ok(n) if n > self.b.len() - self.i => Why::Length,
            Ok(n) if n > i32::MAX as usize => Why::Range,
            Ok(n) => return Ok((self.take(n)?, canonical)),
            Err(_) => Why::Length,
        };
        self.i = start;
        self.fail(why)
    }
}

/// A varint of three bytes or more at `start` (see [`Cursor::varint`]), and the index after it.
/// A function of the bytes and an index, not of the cursor: a cursor passed to a call that is
/// not inlined lives in memory, and every read of the records would reload it.
#[inline(never)]
fn long_varint(b: &[u8], start: usize) -> Res<(i64, bool, usize)> {
    let mut i = start;
    let mut num: u64 = 0;
    for k in 0..10 {
        let Some(&byte) = b.get(i) else {
            return Err(Undecodable {
                at: i,
                why: Why::Short,
            });
        };
        i += 1;
        num |= ((byte & 0x7f) as u64) << (7 * k);
        if byte & 0x80 == 0 {
            // Fluvio's zigzag, on an `i64` (its shift is arithmetic).
            let value = ((num as i64) >> 1) ^ -((num & 1) as i64);
            let canonical = num >> 32 == 0 && i - start == varint_len(value);
            return Ok((value, canonical, i));
        }
    }
    Err(Undecodable {
        at: start,
        why: Why::LongVarint,
    })
}

/// The bytes Fluvio's encoder writes for `v` (within ±2^31).
#[inline]
fn varint_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    (64 - (z | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    debug_assert!((i32::MIN as i64..=i32::MAX as i64).contains(&v));
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

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

/// One record as it stands in the input: its fields, with its key and value borrowed.
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

impl<'a> Input<'a> {
    /// The records read in one pass, held (the `Vec<Record>` reads its count's worth, ignoring
    /// what follows).
    pub fn collect(&self) -> Res<Vec<Stored<'a>>> {
        self.map(|r| r)
    }

    /// The records read in one pass, each held as `f` makes it: one that does not decode
    /// refuses the whole input, and none is handed over.
    pub fn map<T>(&self, mut f: impl FnMut(Stored<'a>) -> T) -> Res<Vec<T>> {
        let (mut c, n) = self.count()?;
        // A record takes 7 bytes at least: a count past that is refused as the reads go.
        let mut out = Vec::with_capacity(n.min(self.raw.len() / 7));
        for _ in 0..n {
            out.push(f(record(&mut c).map_err(|e| self.shift(e))?));
        }
        Ok(out)
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

/// One `Record`: a varint length (checked against what is left, as Fluvio does, and otherwise
/// unused), attributes, timestamp and offset deltas, an optional key, the value, the header count.
#[inline(always)]
fn record<'a>(c: &mut Cursor<'a>) -> Res<Stored<'a>> {
    let start = c.i;
    let (len, len_canonical) = c.varint()?;
    if len > (c.b.len() - c.i) as i64 {
        return c.fail(Why::Short);
    }
    let body = c.i;
    let attributes = c.u8()? as i8;
    let (timestamp_delta, ts_ok) = c.field()?;
    let (offset_delta, off_ok) = c.field()?;
    let (key, key_ok) = if c.bool()? {
        let (k, ok) = c.data()?;
        (Some(k), ok)
    } else {
        (None, true)
    };
    let (value, value_ok) = c.data()?;
    let (headers, headers_ok) = c.field()?;
    let canonical = len_canonical
        && len == (c.i - body) as i64
        && ts_ok
        && off_ok
        && key_ok
        && value_ok
        && headers_ok;
    Ok(Stored {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
        encoded: canonical.then(|| &c.b[start..c.i]),
    })
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
    pub fn encoded_len(&self) -> usize {
        match self.encoded {
            Some(e) => e.len(),
            None => record_len(&self.preamble(), self.key, self.value, self.headers),
        }
    }
}

/// The body of a record (everything after its length prefix).
fn body_len(p: &Preamble, key: Option<&[u8]>, value: &[u8], headers: i64) -> usize {
    let data = |d: &[u8]| varint_len(d.len() as i64) + d.len();
    1 + varint_len(p.timestamp_delta)
        + varint_len(p.offset_delta)
        + 1
        + key.map_or(0, data)
        + data(value)
        + varint_len(headers)
}

/// A record's encoding, length prefix included.
pub fn record_len(p: &Preamble, key: Option<&[u8]>, value: &[u8], headers: i64) -> usize {
    let body = body_len(p, key, value, headers);
    varint_len(body as i64) + body
}

/// A `SmartModuleOutput` with no error, written record by record into a buffer sized first.
pub struct Output {
    buf: Vec<u8>,
    count: u32,
}

impl Output {
    /// An output for records taking `bytes` in all (see [`Stored::encoded_len`],
    /// [`record_len`]): it never grows past them.
    pub fn with_capacity(bytes: usize) -> Output {
        let mut buf = Vec::with_capacity(4 + bytes + 1);
        buf.extend_from_slice(&[0; 4]);
        Output { buf, count: 0 }
    }

    /// An input record as it came in.
    pub fn pass(&mut self, r: &Stored) {
        match r.encoded {
            Some(e) => {
                self.buf.extend_from_slice(e);
                self.count += 1;
            }
            None => self.record(&r.preamble(), r.key, r.value, r.headers),
        }
    }

    /// A record of these fields.
    pub fn record(&mut self, p: &Preamble, key: Option<&[u8]>, value: &[u8], headers: i64) {
        let out = &mut self.buf;
        put_varint(out, body_len(p, key, value, headers) as i64);
        out.push(p.attributes as u8);
        put_varint(out, p.timestamp_delta);
        put_varint(out, p.offset_delta);
        match key {
            Some(k) => {
                out.push(1);
                put_varint(out, k.len() as i64);
                out.extend_from_slice(k);
            }
            None => out.push(0),
        }
        put_varint(out, value.len() as i64);
        out.extend_from_slice(value);
        put_varint(out, headers);
        self.count += 1;
    }

    /// Records written so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The encoded output: the record count, the records, and no error.
    pub fn finish(self) -> Vec<u8> {
        let mut buf = self.records();
        buf.push(0);
        buf
    }

    /// The records alone, as a `Vec<Record>` encodes (the count, then each): the
    /// `raw_bytes` of a `SmartModuleInput`, as a host hands them to the engine.
    pub fn records(mut self) -> Vec<u8> {
        self.buf[..4].copy_from_slice(&self.count.to_be_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_fluvio_writes_them() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            8191,
            -8193,
            i32::MAX as i64,
            i32::MIN as i64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut c = Cursor { b: &out, i: 0 };
            assert_eq!(c.varint(), Ok((v, true)), "{v}");
        }
        // Longer than it needs: read, and not canonical; past 10 bytes: refused.
        let mut c = Cursor {
            b: &[0x82, 0x80, 0x00],
            i: 0,
        };
        assert_eq!(c.varint(), Ok((1, false)));
        let long = [0x80; 11];
        let mut c = Cursor { b: &long, i: 0 };
        assert_eq!(c.varint().unwrap_err().why, Why::LongVarint);
    }
}
