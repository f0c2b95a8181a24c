//! The wire readers against Fluvio's encoding, value by value.
use super::read::Cursor;
use super::write::{body_len, put_varint, varint_len};
use super::*;

#[test]
fn varints_read_as_fluvio_writes_them() {
    for v in varint_edges() {
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
    let wide = varint_edges();
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
