//! The readers of a record: the cursor every general read goes through, the canonical
//! record's reader, and the general one that answers for every other and every refusal.

use super::write::varint_len;
use super::{Res, Stored, Undecodable, Why};

/// A cursor over the input; every read checks the bytes are there.
pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn fail<T>(&self, why: Why) -> Res<T> {
        Err(Undecodable { at: self.i, why })
    }

    #[inline(always)]
    pub(super) fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        match self.b.get(self.i..self.i.saturating_add(n)) {
            Some(s) => {
                self.i += n;
                Ok(s)
            }
            None => self.fail(Why::Short),
        }
    }

    #[inline(always)]
    pub(super) fn array<const N: usize>(&mut self) -> Res<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    #[inline(always)]
    pub(super) fn u8(&mut self) -> Res<u8> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    pub(super) fn i32(&mut self) -> Res<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub(super) fn i64(&mut self) -> Res<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// A bool as Fluvio encodes it: one byte, 0 or 1.
    #[inline(always)]
    pub(super) fn bool(&mut self) -> Res<bool> {
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
    pub(super) fn varint(&mut self) -> Res<(i64, bool)> {
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
    pub(super) fn field(&mut self) -> Res<(i64, bool)> {
        let start = self.i;
        let (v, canonical) = self.varint()?;
        if !(i32::MIN as i64..=i32::MAX as i64).contains(&v) {
            self.i = start;
            return self.fail(Why::Range);
        }
        Ok((v, canonical))
    }

    /// `Vec<u8>` as Fluvio encodes it: an `i32` count (below 1: empty), then the bytes.
    pub(super) fn bytes(&mut self) -> Res<&'a [u8]> {
        let n = self.i32()?;
        if n < 1 {
            Ok(&[])
        } else {
            self.take(n as usize)
        }
    }

    /// A `String`: an `i16` length (below 1: empty), then UTF-8.
    pub(super) fn string(&mut self) -> Res<()> {
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
    pub(super) fn data(&mut self) -> Res<(&'a [u8], bool)> {
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

/// The record at `i` in `b` when Fluvio's encoder wrote it so and each of its varints takes
/// at most three bytes (deltas and header count within ±2^20, key and value under 1 MiB), and
/// where it ends; `None` for any other. The common record's reader: few bounds checks, nothing to
/// undo, no error to carry. What it takes, [`record`] takes alike, as canonical, so where it
/// gives up the general reader reads the record from its start and answers for it.
#[inline(always)]
pub(super) fn canonical(b: &[u8], i: usize) -> Option<(Stored<'_>, usize)> {
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
pub(super) fn record(b: &[u8], i: usize) -> Res<(Stored<'_>, usize)> {
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
