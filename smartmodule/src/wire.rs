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
//! A record is read by one of two readers that agree wherever both read: [`canonical`], for the
//! record Fluvio's encoder writes with varints of at most three bytes (every record an SPU hands
//! over, short of a key or value of 1 MiB), and the general [`record`] for every other, and for
//! every refusal with its byte.

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

/// Fluvio's zigzag encoding of `v`, the value its varint carries.
#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The bytes Fluvio's encoder writes for `v` (within ±2^31): its bits taken 7 at a time.
#[inline(always)]
fn varint_len(v: i64) -> usize {
    (64 + 6 - (zigzag(v) | 1).leading_zeros() as usize) / 7
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    debug_assert!((i32::MIN as i64..=i32::MAX as i64).contains(&v));
    let mut z = zigzag(v);
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

/// The record at `i` in `b` when Fluvio's encoder wrote it so and each of its varints takes
/// at most three bytes (deltas and header count within ±2^20, key and value under 1 MiB), and
/// where it ends; `None` for any other. The common record's reader: few bounds checks, nothing to
/// undo, no error to carry. What it takes, [`record`] takes alike, as canonical, so where it
/// gives up the general reader reads the record from its start and answers for it.
#[inline(always)]
fn canonical(b: &[u8], i: usize) -> Option<(Stored<'_>, usize)> {
    // The fields up to the key's bytes take 14 bytes at most (3 + 1 + 3 + 3 + 1 + 3): one check
    // of 16 bytes covers their reads. A record whose bytes stop sooner (the last few of an
    // input) is left to the general reader. Reads past the record's own length end past it
    // too, and are not taken (below).
    let rest = b.get(i..)?;
    let head: &[u8; 16] = rest.first_chunk()?;
    let (len, p) = short_len(head, 0)?;
    let encoded = rest.get(..p + len)?;
    let attributes = head[p] as i8;
    let (timestamp_delta, p) = short_varint(head, p + 1)?;
    let (offset_delta, p) = short_varint(head, p)?;
    let (key, p) = match head[p] {
        0 => (None, p + 1),
        1 => {
            let (n, p) = short_len(head, p + 1)?;
            (Some(encoded.get(p..p + n)?), p + n)
        }
        _ => return None,
    };
    let (value, p) = short_data(encoded, p)?;
    // The header count ends the record: all its bytes are the varint's.
    let headers = match *encoded.get(p..)? {
        [h] if h < 0x80 => h as u32,
        [_, _] | [_, _, _] => match short_varint(encoded, p)? {
            (h, end) if end == encoded.len() => h,
            _ => return None,
        },
        _ => return None,
    };
    let record = Stored {
        attributes,
        timestamp_delta: unzigzag(timestamp_delta),
        offset_delta: unzigzag(offset_delta),
        key,
        value,
        headers: unzigzag(headers),
        encoded: Some(encoded),
    };
    Some((record, i + encoded.len()))
}

/// A varint at `p` in `s` as Fluvio's encoder writes one of one to three bytes (no longer than
/// its value needs: a last byte of 0 after the first is not), as its zigzag encoding, and where
/// it ends; `None` for any other, or past `s`.
#[inline(always)]
fn short_varint(s: &[u8], p: usize) -> Option<(u32, usize)> {
    let b0 = *s.get(p)? as u32;
    if b0 < 0x80 {
        return Some((b0, p + 1));
    }
    let b1 = *s.get(p + 1)? as u32;
    if b1 < 0x80 {
        return (b1 != 0).then_some((b0 & 0x7f | b1 << 7, p + 2));
    }
    let b2 = *s.get(p + 2)? as u32;
    (1..0x80)
        .contains(&b2)
        .then_some((b0 & 0x7f | (b1 & 0x7f) << 7 | b2 << 14, p + 3))
}

/// A length as a [`short_varint`] that is not negative.
#[inline(always)]
fn short_len(s: &[u8], p: usize) -> Option<(usize, usize)> {
    let (z, p) = short_varint(s, p)?;
    (z & 1 == 0).then_some(((z >> 1) as usize, p))
}

/// A key or value in a record read by [`canonical`]: a [`short_len`], then the bytes.
#[inline(always)]
fn short_data(s: &[u8], p: usize) -> Option<(&[u8], usize)> {
    let (n, p) = short_len(s, p)?;
    Some((s.get(p..p + n)?, p + n))
}

/// Fluvio's zigzag decoding of a [`short_varint`].
#[inline(always)]
fn unzigzag(z: u32) -> i64 {
    ((z >> 1) as i32 ^ -((z & 1) as i32)) as i64
}

/// One `Record`: a varint length (checked against what is left, as Fluvio does, and otherwise
/// unused), attributes, timestamp and offset deltas, an optional key, the value, the header
/// count. Any record, and where the input is refused, why and at which byte.
#[cold]
#[inline(never)]
fn record(b: &[u8], i: usize) -> Res<(Stored<'_>, usize)> {
    let c = &mut Cursor { b, i };
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
    let record = Stored {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
        encoded: canonical.then(|| &b[start..c.i]),
    };
    Ok((record, c.i))
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
    #[inline(always)]
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

    /// The general reader of one record at `i` in `b`: the record and where it ends.
    fn general(b: &[u8], i: usize) -> Option<(Stored<'_>, usize)> {
        record(b, i).ok()
    }

    /// A record as Fluvio's encoder writes it, after `at` bytes of something else.
    fn written(at: usize, p: &Preamble, key: Option<&[u8]>, value: &[u8], headers: i64) -> Rec {
        let mut out = Output::with_capacity(0);
        out.record(p, key, value, headers);
        let mut b = vec![0xee; at];
        b.extend_from_slice(&out.records()[4..]);
        (at, b)
    }

    /// A record's bytes, and where it starts in them.
    type Rec = (usize, Vec<u8>);

    #[test]
    fn the_canonical_reader_reads_as_the_general_one() {
        let wide = [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            -8192,
            8192,
            (1 << 20) - 1,
            -(1 << 20),
            1 << 20,
            i32::MAX as i64,
            i32::MIN as i64,
        ];
        let long = vec![b'x'; (1 << 20) + 1];
        let mut records = Vec::new();
        for &v in &wide {
            let p = Preamble {
                attributes: -3,
                timestamp_delta: v,
                offset_delta: 0,
            };
            records.push(written(0, &p, None, b"{}", 0));
            let p = Preamble {
                offset_delta: v,
                ..Preamble::default()
            };
            records.push(written(3, &p, Some(b"s"), b"{}", 0));
            records.push(written(1, &Preamble::default(), Some(b""), b"", v));
        }
        for n in [0, 1, 63, 64, 8191, 8192, (1 << 20) - 1, 1 << 20] {
            records.push(written(2, &Preamble::default(), Some(&long[..n]), b"v", 0));
            records.push(written(0, &Preamble::default(), None, &long[..n], 0));
        }
        for (at, b) in &records {
            let (r, end) = general(b, *at).expect("decodes");
            assert_eq!(end, b.len());
            assert!(r.encoded.is_some());
            // Every varint in it takes three bytes at most.
            let body = body_len(&r.preamble(), r.key, r.value, r.headers);
            let key = r.key.map_or(0, <[u8]>::len);
            let short = [r.timestamp_delta, r.offset_delta, r.headers]
                .into_iter()
                .chain([key, r.value.len(), body].map(|n| n as i64))
                .all(|v| varint_len(v) <= 3);
            // Taken where 16 bytes follow its start, as where another record follows it.
            let taken = short.then_some((r, end));
            assert_eq!(canonical(b, *at), taken.filter(|_| end - at >= 16), "{r:?}");
            let mut followed = b.clone();
            followed.extend_from_slice(&[0; 16]);
            assert_eq!(canonical(&followed, *at), taken, "{r:?}");
        }
        // Damaged or cut short: taken alike, or left to the general reader.
        let agree = |b: &[u8]| {
            for at in 0..b.len() {
                if let Some(r) = canonical(b, at) {
                    assert_eq!(general(b, at), Some(r), "{b:?} at {at}");
                }
            }
        };
        for (_, b) in records.iter().filter(|(_, b)| b.len() < 64) {
            let mut b = b.clone();
            b.extend_from_slice(&[0; 16]);
            for cut in 0..b.len() {
                agree(&b[..cut]);
            }
            for k in 0..b.len() {
                for x in [0x00, 0x01, 0x02, 0x7f, 0x80, 0x81, 0xff] {
                    let mut b = b.clone();
                    b[k] = x;
                    agree(&b);
                }
            }
        }
    }
}
