//! MariaDB's binary `DECIMAL(p,s)` format (`NEWDECIMAL`, type 246), as documented with
//! `decimal2bin` in MariaDB's `strings/decimal.c`
//! (<https://github.com/MariaDB/server/blob/10.11/strings/decimal.c>):
//!
//! - the integer part (`p - s` digits) and the fraction (`s` digits) are each cut into
//!   groups of 9 digits, counted from the decimal point; each full group is a 4-byte
//!   big-endian number, the leftover digits of the integer part (at its left) and of the
//!   fraction (at its right) take 1-4 bytes (`DIG2BYTES`);
//! - a negative number has every byte inverted; then the top bit of the first byte is
//!   flipped, so that the bytes sort as the numbers do.

/// Bytes that hold `n` (0..=9) decimal digits.
const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
/// Digits in one 4-byte group.
const DIGITS_PER_GROUP: usize = 9;

/// Largest precision MariaDB allows.
pub(crate) const MAX_PRECISION: u8 = 65;
/// Largest scale MariaDB allows.
pub(crate) const MAX_SCALE: u8 = 38;

/// The byte length of a `DECIMAL(precision, scale)` value.
pub(crate) fn bin_size(precision: u8, scale: u8) -> usize {
    let intg = usize::from(precision - scale);
    let frac = usize::from(scale);
    (intg / DIGITS_PER_GROUP) * 4
        + DIG2BYTES[intg % DIGITS_PER_GROUP]
        + (frac / DIGITS_PER_GROUP) * 4
        + DIG2BYTES[frac % DIGITS_PER_GROUP]
}

/// The digits of `text` (`-?[0-9]+(\.[0-9]*)?` or `-?\.[0-9]+`): sign, integer digits
/// without leading zeros, fraction digits.
fn parse(text: &str) -> Result<(bool, &str, &str), String> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return Err(format!("{text:?} is not a decimal number"));
    }
    Ok((negative, int.trim_start_matches('0'), frac))
}

/// Appends `digits` (all ASCII digits, at most 9) as a big-endian number of `bytes` bytes.
fn put_group(out: &mut Vec<u8>, digits: &str, bytes: usize) {
    let v = digits
        .bytes()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    out.extend_from_slice(&v.to_be_bytes()[4 - bytes..]);
}

/// Appends the binary form of `text` in a `DECIMAL(precision, scale)` column.
///
/// # Errors
/// A message when `text` is not a decimal number, has more integer digits than
/// `precision - scale` or more fraction digits than `scale` (round it first).
pub(crate) fn encode(
    text: &str,
    precision: u8,
    scale: u8,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let (negative, int, frac) = parse(text)?;
    let intg = usize::from(precision - scale);
    let scale_digits = usize::from(scale);
    if int.len() > intg {
        return Err(format!(
            "{text} has {} integer digits, DECIMAL({precision},{scale}) holds {intg}",
            int.len()
        ));
    }
    let frac_trimmed = frac.trim_end_matches('0');
    if frac_trimmed.len() > scale_digits {
        return Err(format!(
            "{text} has {} fraction digits, DECIMAL({precision},{scale}) holds {scale}",
            frac_trimmed.len()
        ));
    }
    let int_padded = format!("{int:0>intg$}");
    let frac_padded = format!("{frac_trimmed:0<scale_digits$}");
    let is_zero = int.is_empty() && frac_trimmed.is_empty();
    let start = out.len();
    let lead = intg % DIGITS_PER_GROUP;
    put_group(out, &int_padded[..lead], DIG2BYTES[lead]);
    for group in int_padded.as_bytes()[lead..].chunks(DIGITS_PER_GROUP) {
        put_group(out, std::str::from_utf8(group).unwrap_or("0"), 4);
    }
    let full = scale_digits / DIGITS_PER_GROUP * DIGITS_PER_GROUP;
    for group in frac_padded.as_bytes()[..full].chunks(DIGITS_PER_GROUP) {
        put_group(out, std::str::from_utf8(group).unwrap_or("0"), 4);
    }
    let tail = scale_digits - full;
    put_group(out, &frac_padded[full..], DIG2BYTES[tail]);
    // Minus zero is stored as zero.
    if negative && !is_zero {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
    if let Some(first) = out.get_mut(start) {
        *first ^= 0x80;
    }
    Ok(())
}

/// Reads a big-endian group of `bytes` bytes as a number of `digits` digits.
fn get_group(bytes: &[u8], digits: usize) -> Result<String, String> {
    if digits == 0 {
        return Ok(String::new());
    }
    let v = bytes.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
    if v >= 10u64.pow(digits as u32) {
        return Err(format!("group {v} has more than {digits} digits"));
    }
    Ok(format!("{v:0>digits$}"))
}

/// The text of the binary `DECIMAL(precision, scale)` value `bin` (exactly
/// [`bin_size`] bytes): no leading zeros, exactly `scale` fraction digits, `-` only for a
/// non-zero value.
///
/// # Errors
/// A message when a group holds more digits than it may.
pub(crate) fn decode(bin: &[u8], precision: u8, scale: u8) -> Result<String, String> {
    if bin.len() != bin_size(precision, scale) {
        return Err(format!(
            "{} bytes, DECIMAL({precision},{scale}) takes {}",
            bin.len(),
            bin_size(precision, scale)
        ));
    }
    let mut b = bin.to_vec();
    let Some(first) = b.first_mut() else {
        return Err("empty decimal".to_string());
    };
    let negative = *first & 0x80 == 0;
    *first ^= 0x80;
    if negative {
        for x in &mut b {
            *x = !*x;
        }
    }
    let intg = usize::from(precision - scale);
    let scale_digits = usize::from(scale);
    let mut at = 0;
    let mut take = |n: usize| {
        let s = &b[at..at + n];
        at += n;
        s.to_vec()
    };
    let mut int = String::new();
    let lead = intg % DIGITS_PER_GROUP;
    int.push_str(&get_group(&take(DIG2BYTES[lead]), lead)?);
    for _ in 0..intg / DIGITS_PER_GROUP {
        int.push_str(&get_group(&take(4), DIGITS_PER_GROUP)?);
    }
    let mut frac = String::new();
    for _ in 0..scale_digits / DIGITS_PER_GROUP {
        frac.push_str(&get_group(&take(4), DIGITS_PER_GROUP)?);
    }
    let tail = scale_digits % DIGITS_PER_GROUP;
    frac.push_str(&get_group(&take(DIG2BYTES[tail]), tail)?);
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let is_zero = int == "0" && frac.bytes().all(|d| d == b'0');
    let sign = if negative && !is_zero { "-" } else { "" };
    Ok(if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(text: &str, p: u8, s: u8) -> Vec<u8> {
        let mut out = Vec::new();
        encode(text, p, s, &mut out).expect("fits");
        out
    }

    #[test]
    fn known_encodings() {
        // DECIMAL(5,2): 3 integer digits in 2 bytes, 2 fraction digits in 1 byte.
        assert_eq!(enc("1.5", 5, 2), vec![0x80, 0x01, 0x32]);
        assert_eq!(enc("-1.5", 5, 2), vec![0x7f, 0xfe, 0xcd]);
        assert_eq!(enc("0", 5, 2), vec![0x80, 0x00, 0x00]);
        assert_eq!(enc("-0.00", 5, 2), vec![0x80, 0x00, 0x00]);
        // DECIMAL(14,4): 10 integer digits = 1 leading digit (1 byte) + one group (4
        // bytes), 4 fraction digits in 2 bytes.
        assert_eq!(
            enc("1234567890.1234", 14, 4),
            vec![0x81, 0x0d, 0xfb, 0x38, 0xd2, 0x04, 0xd2]
        );
        assert_eq!(bin_size(14, 4), 7);
        assert_eq!(bin_size(65, 30), 30);
        assert_eq!(bin_size(10, 0), 5);
    }

    #[test]
    fn bad_text_and_too_many_digits_are_refused() {
        let mut out = Vec::new();
        for (text, p, s) in [
            ("", 5, 2),
            ("-", 5, 2),
            ("1e5", 5, 2),
            ("1.2.3", 5, 2),
            ("+1", 5, 2),
            ("1000", 5, 2),
            ("1.005", 5, 2),
        ] {
            assert!(encode(text, p, s, &mut out).is_err(), "{text}");
        }
        // Trailing zeros beyond the scale are not digits that matter.
        assert!(encode("1.500", 5, 2, &mut out).is_ok());
    }

    fn decimal_text() -> impl Strategy<Value = (String, u8, u8)> {
        (1u8..=65)
            .prop_flat_map(|p| (Just(p), 0..=p.min(MAX_SCALE)))
            .prop_flat_map(|(p, s)| {
                let intg = usize::from(p - s);
                (
                    Just(p),
                    Just(s),
                    any::<bool>(),
                    proptest::collection::vec(0u8..10, intg..=intg),
                    proptest::collection::vec(0u8..10, usize::from(s)..=usize::from(s)),
                )
            })
            .prop_map(|(p, s, neg, int, frac)| {
                let digits = |v: &[u8]| v.iter().map(|d| char::from(b'0' + d)).collect::<String>();
                let int = digits(&int);
                let int = int.trim_start_matches('0');
                let int = if int.is_empty() { "0" } else { int };
                let frac = digits(&frac);
                let zero = int == "0" && frac.bytes().all(|d| d == b'0');
                let sign = if neg && !zero { "-" } else { "" };
                let text = if s == 0 {
                    format!("{sign}{int}")
                } else {
                    format!("{sign}{int}.{frac}")
                };
                (text, p, s)
            })
    }

    proptest! {
        #[test]
        fn canonical_text_round_trips((text, p, s) in decimal_text()) {
            let bin = enc(&text, p, s);
            prop_assert_eq!(bin.len(), bin_size(p, s));
            prop_assert_eq!(decode(&bin, p, s).expect("decodes"), text);
        }

        #[test]
        fn bytes_sort_as_numbers((a, p, s) in decimal_text(), b in any::<u64>()) {
            // Compare against a second value of the same column: the integer `b` cut to fit.
            let intg = u32::from(p - s).min(18);
            let b = if intg == 0 { 0 } else { b % 10u64.pow(intg) };
            let b_text = b.to_string();
            let (ba, bb) = (enc(&a, p, s), enc(&b_text, p, s));
            let av: f64 = a.parse().expect("number");
            let bv = b as f64;
            if av < bv { prop_assert!(ba <= bb); }
            if av > bv { prop_assert!(ba >= bb); }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bin in proptest::collection::vec(any::<u8>(), 7)) {
            let _ = decode(&bin, 14, 4);
        }
    }
}
