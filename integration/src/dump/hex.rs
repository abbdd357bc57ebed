//! Bytes printed as lower-case hex pairs separated by spaces (`fe 62 69 6e`), the one style
//! the dump's messages use for both the bytes they expected and the bytes they found.

use std::fmt;

/// A short byte string shown as `fe 62 69 6e`; empty shows as `no bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

impl fmt::Display for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no bytes");
        }
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::HexBytes;

    #[test]
    fn bytes_print_as_spaced_lower_case_pairs() {
        let cases: [(&[u8], &str); 3] = [
            (&[], "no bytes"),
            (&[0xfe], "fe"),
            (&[0xfe, 0x62, 0x69, 0x6e], "fe 62 69 6e"),
        ];
        for (bytes, want) in cases {
            assert_eq!(HexBytes(bytes.to_vec()).to_string(), want);
        }
    }
}
