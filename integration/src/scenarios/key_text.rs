//! Keys as the demo prints them: short printable keys whole, long ones abbreviated.

use std::fmt::Write as _;

/// Longest key printed whole.
const WHOLE: usize = 24;

/// `key` as text: printable keys up to 24 bytes as they are; longer printable keys as their
/// first 12 bytes, `...`, and their length; other bytes as `0x` and upper-case hex.
pub(crate) fn key_text(key: &[u8]) -> String {
    if !key.iter().all(u8::is_ascii_graphic) {
        let mut s = String::from("0x");
        for b in key {
            let _ = write!(s, "{b:02X}");
        }
        return s;
    }
    let text = String::from_utf8_lossy(key);
    if key.len() <= WHOLE {
        text.into_owned()
    } else {
        format!("{}... ({} bytes)", &text[..12], key.len())
    }
}

#[cfg(test)]
mod tests {
    use super::key_text;

    #[test]
    fn keys_print_whole_abbreviated_or_in_hex() {
        let long = format!("fill/{:0>95}", 0);
        let cases: [(&[u8], &str); 4] = [
            (b"acct/0001", "acct/0001"),
            (long.as_bytes(), "fill/0000000... (100 bytes)"),
            (&[0x00, 0xff], "0x00FF"),
            (b"", ""),
        ];
        for (key, want) in cases {
            assert_eq!(key_text(key), want);
        }
    }
}
