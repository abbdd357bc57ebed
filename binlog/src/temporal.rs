//! MariaDB's binary forms of `DATE`, `DATETIME(fsp)` and `TIMESTAMP(fsp)` in row images
//! (the formats of `sql/field.cc` and `sql-common/my_time.c`, the MySQL 5.6 temporal
//! format MariaDB writes by default, `mysql56_temporal_format=ON`:
//! <https://mariadb.com/kb/en/server-system-variables/#mysql56_temporal_format>):
//!
//! - `DATE` (type 10): 3 bytes little-endian, `day | month << 5 | year << 9`;
//! - `DATETIME2` (type 18): 5 bytes big-endian, `(((year * 13 + month) << 5 | day) << 17 |
//!   hour << 12 | minute << 6 | second) + 2^39`, then the fraction;
//! - `TIMESTAMP2` (type 17): 4 bytes big-endian seconds since the epoch, then the fraction;
//! - the fraction of `fsp` digits: none for 0, 1 byte (`micros / 10000`) for 1-2, 2 bytes
//!   big-endian (`micros / 100`) for 3-4, 3 bytes big-endian (`micros`) for 5-6.

use crate::value::{BinlogDate, BinlogDateTime};

/// Added to a packed `DATETIME2` so that the stored integer is never negative.
const DATETIMEF_INT_OFS: u64 = 1 << 39;

/// Bytes of the fraction of a `fsp`-digit value.
pub(crate) fn frac_len(fsp: u8) -> usize {
    usize::from(fsp).div_ceil(2)
}

/// Checks that a `fsp`-digit column can hold `micros` exactly.
pub(crate) fn check_micros(micros: u32, fsp: u8) -> Result<(), String> {
    let unit = 10u32.pow(6 - u32::from(fsp.min(6)));
    if micros > 999_999 || !micros.is_multiple_of(unit) {
        return Err(format!(
            "{micros} microseconds do not fit {fsp} fractional digits (round first)"
        ));
    }
    Ok(())
}

fn put_frac(out: &mut Vec<u8>, micros: u32, fsp: u8) {
    match fsp {
        1 | 2 => out.push((micros / 10_000) as u8),
        3 | 4 => out.extend_from_slice(&((micros / 100) as u16).to_be_bytes()),
        5 | 6 => out.extend_from_slice(&micros.to_be_bytes()[1..]),
        _ => {}
    }
}

fn get_frac(bytes: &[u8], fsp: u8) -> Result<u32, String> {
    let v = bytes.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b));
    let micros = match fsp {
        1 | 2 => v * 10_000,
        3 | 4 => v * 100,
        _ => v,
    };
    check_micros(micros, fsp)?;
    Ok(micros)
}

/// Appends a `DATE`.
pub(crate) fn put_date(out: &mut Vec<u8>, d: &BinlogDate) {
    let v = u32::from(d.day) | u32::from(d.month) << 5 | u32::from(d.year) << 9;
    out.extend_from_slice(&v.to_le_bytes()[..3]);
}

/// Reads a `DATE` from 3 bytes.
pub(crate) fn get_date(b: &[u8]) -> Result<BinlogDate, String> {
    let v = b.iter().rev().fold(0u32, |acc, x| acc << 8 | u32::from(*x));
    let d = BinlogDate::new((v >> 9) as u16, ((v >> 5) & 0x0f) as u8, (v & 0x1f) as u8);
    d.check()?;
    Ok(d)
}

/// Appends a `DATETIME2` of `fsp` digits (the value is checked by the caller).
pub(crate) fn put_datetime(out: &mut Vec<u8>, t: &BinlogDateTime, fsp: u8) {
    let ym = u64::from(t.date.year) * 13 + u64::from(t.date.month);
    let ymd = ym << 5 | u64::from(t.date.day);
    let hms = u64::from(t.hour) << 12 | u64::from(t.minute) << 6 | u64::from(t.second);
    let packed = (ymd << 17 | hms) + DATETIMEF_INT_OFS;
    out.extend_from_slice(&packed.to_be_bytes()[3..]);
    put_frac(out, t.micros, fsp);
}

/// Reads a `DATETIME2` of `fsp` digits from `5 + frac_len(fsp)` bytes.
pub(crate) fn get_datetime(b: &[u8], fsp: u8) -> Result<BinlogDateTime, String> {
    let v = b[..5].iter().fold(0u64, |acc, x| acc << 8 | u64::from(*x));
    let packed = v
        .checked_sub(DATETIMEF_INT_OFS)
        .ok_or_else(|| "negative DATETIME".to_string())?;
    let ymd = packed >> 17;
    let hms = packed & ((1 << 17) - 1);
    let ym = ymd >> 5;
    let date = BinlogDate::new((ym / 13) as u16, (ym % 13) as u8, (ymd & 0x1f) as u8);
    let t = BinlogDateTime::new(
        date,
        (hms >> 12) as u8,
        ((hms >> 6) & 0x3f) as u8,
        (hms & 0x3f) as u8,
        get_frac(&b[5..], fsp)?,
    );
    t.check()?;
    Ok(t)
}

/// Appends a `TIMESTAMP2` of `fsp` digits.
pub(crate) fn put_timestamp(out: &mut Vec<u8>, seconds: u32, micros: u32, fsp: u8) {
    out.extend_from_slice(&seconds.to_be_bytes());
    put_frac(out, micros, fsp);
}

/// Reads a `TIMESTAMP2` of `fsp` digits from `4 + frac_len(fsp)` bytes.
pub(crate) fn get_timestamp(b: &[u8], fsp: u8) -> Result<(u32, u32), String> {
    let seconds = b[..4].iter().fold(0u32, |acc, x| acc << 8 | u32::from(*x));
    Ok((seconds, get_frac(&b[4..], fsp)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let mut out = Vec::new();
        put_date(&mut out, &BinlogDate::new(2024, 1, 31));
        // 31 | 1 << 5 | 2024 << 9 = 1036319 = 0x0fd03f
        assert_eq!(out, vec![0x3f, 0xd0, 0x0f]);
        out.clear();
        let t = BinlogDateTime::new(BinlogDate::new(2000, 1, 1), 0, 0, 0, 0);
        put_datetime(&mut out, &t, 0);
        // ((2000*13+1) << 5 | 1) << 17 = 0x19_6442_0000; plus 2^39.
        assert_eq!(out, vec![0x99, 0x64, 0x42, 0x00, 0x00]);
        out.clear();
        put_timestamp(&mut out, 1, 123_400, 4);
        assert_eq!(out, vec![0, 0, 0, 1, 0x04, 0xd2]);
        assert!(check_micros(123_450, 4).is_err());
        assert!(check_micros(1, 0).is_err());
        assert!(check_micros(999_999, 6).is_ok());
    }

    fn datetime() -> impl Strategy<Value = (BinlogDateTime, u8)> {
        (0u8..=6).prop_flat_map(|fsp| {
            let unit = 10u32.pow(6 - u32::from(fsp));
            (
                (0u16..=9999, 0u8..=12, 0u8..=31),
                (0u8..=23, 0u8..=59, 0u8..=59, 0..1_000_000 / unit),
                Just(fsp),
            )
                .prop_map(move |((y, mo, d), (h, mi, s, f), fsp)| {
                    (
                        BinlogDateTime::new(BinlogDate::new(y, mo, d), h, mi, s, f * unit),
                        fsp,
                    )
                })
        })
    }

    proptest! {
        #[test]
        fn datetimes_round_trip_and_sort((a, fsp) in datetime(), (b, _) in datetime()) {
            let (mut ea, mut eb) = (Vec::new(), Vec::new());
            put_datetime(&mut ea, &a, fsp);
            prop_assert_eq!(ea.len(), 5 + frac_len(fsp));
            prop_assert_eq!(get_datetime(&ea, fsp).expect("decodes"), a);
            let b = BinlogDateTime { micros: 0, ..b };
            put_datetime(&mut eb, &b, fsp);
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
        }

        #[test]
        fn dates_and_timestamps_round_trip(
            (y, m, d) in (0u16..=9999, 0u8..=12, 0u8..=31),
            secs in any::<u32>(),
            (micros, fsp) in (0u8..=6).prop_flat_map(|fsp| {
                let unit = 10u32.pow(6 - u32::from(fsp));
                ((0..1_000_000 / unit).prop_map(move |f| f * unit), Just(fsp))
            }),
        ) {
            let mut out = Vec::new();
            put_date(&mut out, &BinlogDate::new(y, m, d));
            prop_assert_eq!(get_date(&out).expect("decodes"), BinlogDate::new(y, m, d));
            out.clear();
            put_timestamp(&mut out, secs, micros, fsp);
            prop_assert_eq!(out.len(), 4 + frac_len(fsp));
            prop_assert_eq!(get_timestamp(&out, fsp).expect("decodes"), (secs, micros));
        }
    }
}
