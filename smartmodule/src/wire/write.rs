//! The output's writer: records encoded as Fluvio's encoder writes them, into one buffer sized
//! first.

use super::{Preamble, Stored};

/// Fluvio's zigzag encoding of `v`, the value its varint carries.
#[inline(always)]
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The bytes Fluvio's encoder writes for `v` (within ±2^31): its bits taken 7 at a time.
#[inline(always)]
pub(super) fn varint_len(v: i64) -> usize {
    (64 + 6 - (zigzag(v) | 1).leading_zeros() as usize) / 7
}

/// The values a varint's width turns on (within ±2^31, where Fluvio's record fields live): 0,
/// ±1, each side of every width's ends (one to five bytes), and `i32`'s own ends. What tests of
/// the readers and the writer walk, here beside the width they test.
pub fn varint_edges() -> Vec<i64> {
    let widths = (1..=4).flat_map(|w| {
        let end = 1i64 << (7 * w - 1);
        [end - 1, end, -end, -end - 1]
    });
    [0, 1, -1, i64::from(i32::MAX), i64::from(i32::MIN)]
        .into_iter()
        .chain(widths)
        .collect()
}

pub(super) fn put_varint(out: &mut Vec<u8>, v: i64) {
    debug_assert!((i32::MIN as i64..=i32::MAX as i64).contains(&v));
    let mut z = zigzag(v);
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// The body of a record (everything after its length prefix).
pub(super) fn body_len(p: &Preamble, key: Option<&[u8]>, value: &[u8], headers: i64) -> usize {
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
