//! RFC 3339 stamps, the one reader and writer: agents' logs stamp their lines with them
//! (`2026-02-12T14:11:57.624Z`, `…+02:00`), OTLP carries nanoseconds since 1970, and a board's
//! last activity is a stamp's time. Civil dates to days and back are Howard Hinnant's
//! algorithms (proleptic Gregorian).

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Nanoseconds since 1970 of an RFC 3339 stamp: `T`, `t` or a space between date and time, a
/// fraction of any length (to the nanosecond), `Z` or `±hh:mm` (none: UTC). `None` for anything
/// else.
pub fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0i64;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in r[..digits].bytes().take(9).enumerate() {
            nanos += i64::from(c - b'0') * 10i64.pow(8 - i as u32);
        }
        rest = &r[digits..];
    }
    let offset = match rest {
        "Z" | "z" | "" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().ok()? * 3600 + o[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Seconds since 1970 of an RFC 3339 stamp ([`parse`]), as a float.
pub fn parse_secs(s: &str) -> Option<f64> {
    parse(s).map(|n| n as f64 / 1e9)
}

/// A stamp in UTC with nine decimals (`2026-12-03T08:00:00.123456789Z`) of nanoseconds since
/// 1970: how OTLP's `timeUnixNano` reads as a log's `timestamp`.
pub fn format(nanos: u64) -> String {
    let secs = (nanos / 1_000_000_000) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        nanos % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_and_write_both_ways() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_secs("1970-01-02T00:00:01.5Z"), Some(86_401.5));
        assert_eq!(parse("2000-03-01T00:00:00Z"), Some(951_868_800_000_000_000));
        assert_eq!(
            parse("2000-03-01T02:00:00+02:00"),
            parse("2000-03-01T00:00:00Z")
        );
        assert_eq!(
            parse("2026-02-18 03:44:30.694Z"),
            Some(1_771_386_270_694_000_000)
        );
        for bad in [
            "yesterday",
            "2026-02-18T03:44",
            "2026-13-01T00:00:00Z",
            "2026-02-18T03:44:30.Z",
            "2026-02-18T03:44:30+0100",
            "+026-02-18T03:44:30Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(format(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            format(951_868_800_000_000_001),
            "2000-03-01T00:00:00.000000001Z"
        );
        for nanos in [0, 1_700_000_000_123_456_789, 4_102_444_799_999_999_999] {
            assert_eq!(parse(&format(nanos)), Some(nanos as i64));
        }
    }
}
