//! Bytes as `mariadb-binlog -v` prints a string column: printable ASCII as it is, `'` and
//! `\` escaped with a backslash, every other byte as `\xNN`.

use std::fmt::Write as _;

/// `bytes` escaped, without quotes.
pub fn escaped(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            b' '..=b'~' => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn printable_bytes_stay_and_others_are_escaped() {
        let cases: [(&[u8], &str); 5] = [
            (b"alice", "alice"),
            (b"a b", "a b"),
            (&[0x00, 0xff, 0x10], "\\x00\\xff\\x10"),
            (b"it's \\", "it\\'s \\\\"),
            (b"", ""),
        ];
        for (bytes, want) in cases {
            assert_eq!(escaped(bytes), want, "{bytes:?}");
        }
    }
}
