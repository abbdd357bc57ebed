//! Format_description (type 15): the first event of every file.

use crate::error::DecodeError;
use crate::header::{ChecksumAlg, HEADER_LEN};
use crate::wire::{Cursor, put_u16, put_u32};

/// Server version written into our Format_description events. Readers take the checksum
/// byte into account only for versions at or above 5.3.0 (MariaDB), so it must look like one.
pub const SERVER_VERSION: &str = "10.11.19-MariaDB-surgedb-log";

/// Post-header lengths per event type (index = type code − 1), as MariaDB 10.11 announces
/// them (171 types). Taken from the Format_description of a real 10.11.19 file
/// (`testdata/mdb-bin.000001`); a test compares the two.
pub const MARIADB_POST_HEADER_LENS: [u8; 171] = [
    56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 228, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
    10, 10, 10, 0, 0, 0, 0, 0, 0, 10, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10,
];

const VERSION_LEN: usize = 50;
/// binlog_version + server_version + create_timestamp + header_len.
const FIXED_LEN: usize = 2 + VERSION_LEN + 4 + 1;

/// Body of a Format_description event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatDescription {
    /// Always 4 for files this crate reads and writes.
    pub binlog_version: u16,
    /// Server version string (at most 50 bytes).
    pub server_version: String,
    /// Non-zero only in the first file written after a server start.
    pub create_timestamp: u32,
    /// Common header length, 19.
    pub header_len: u8,
    /// Post-header length per event type.
    pub post_header_lens: Vec<u8>,
    /// Checksum algorithm of every later event in the file.
    pub checksum_alg: ChecksumAlg,
}

impl FormatDescription {
    /// The description this crate writes: MariaDB 10.11 layout, given checksum algorithm.
    pub fn mariadb(checksum_alg: ChecksumAlg, create_timestamp: u32) -> Self {
        FormatDescription {
            binlog_version: 4,
            server_version: SERVER_VERSION.to_string(),
            create_timestamp,
            header_len: HEADER_LEN as u8,
            post_header_lens: MARIADB_POST_HEADER_LENS.to_vec(),
            checksum_alg,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u16(out, self.binlog_version);
        let v = self.server_version.as_bytes();
        let n = v.len().min(VERSION_LEN);
        out.extend_from_slice(&v[..n]);
        out.resize(out.len() + VERSION_LEN - n, 0);
        put_u32(out, self.create_timestamp);
        out.push(self.header_len);
        out.extend_from_slice(&self.post_header_lens);
        out.push(self.checksum_alg.code());
    }

    /// Decodes the body (without header and the always-present CRC trailer).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Format_desc");
        if body.len() < FIXED_LEN + 1 {
            return Err(c.malformed("body shorter than 58 bytes"));
        }
        let binlog_version = c.u16("binlog_version")?;
        if binlog_version != 4 {
            return Err(c.malformed("binlog_version is not 4"));
        }
        let raw = c.take(VERSION_LEN, "server_version")?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(VERSION_LEN);
        let server_version =
            String::from_utf8(raw[..end].to_vec()).map_err(|_| c.malformed("server_version"))?;
        if raw[end..].iter().any(|&b| b != 0) {
            return Err(c.malformed("server_version padding is not zero"));
        }
        let create_timestamp = c.u32("create_timestamp")?;
        let header_len = c.u8("header_len")?;
        if usize::from(header_len) != HEADER_LEN {
            return Err(c.malformed("common header length is not 19"));
        }
        let n = c.remaining() - 1;
        let post_header_lens = c.take(n, "post_header_lens")?.to_vec();
        let checksum_alg = match c.u8("checksum_alg")? {
            0 => ChecksumAlg::Off,
            1 => ChecksumAlg::Crc32,
            _ => return Err(c.malformed("unknown checksum algorithm")),
        };
        Ok(FormatDescription {
            binlog_version,
            server_version,
            create_timestamp,
            header_len,
            post_header_lens,
            checksum_alg,
        })
    }
}
