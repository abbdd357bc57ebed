//! Segment files: a 16-byte header (magic, version, sequence) then framed records
//! `[len u32][crc u32][payload]`, where the CRC-32 is seeded by the segment sequence and
//! covers the length and the payload, so a record copied from another segment (or left
//! over in a reused file) fails verification.

use std::path::{Path, PathBuf};

pub(crate) const MAGIC: &[u8; 4] = b"SRWL";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 16;
pub(crate) const FRAME_LEN: usize = 8;

pub(crate) fn file_name(seq: u64) -> String {
    format!("wal-{seq:016x}.log")
}

pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

pub(crate) fn header(seq: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(MAGIC);
    h[4..8].copy_from_slice(&VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h
}

fn crc(seq: u64, len: u32, payload: &[u8]) -> u32 {
    let seed = (seq as u32) ^ ((seq >> 32) as u32) ^ 0x5352_574c;
    let mut h = crc32fast::Hasher::new_with_initial(seed);
    h.update(&len.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Appends a framed record to `out`. The caller keeps `payload` within the log's record
/// limit (at most `WalOptions::MAX_RECORD_BYTES`, so the length fits the `u32` prefix).
pub(crate) fn frame(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    debug_assert!(payload.len() <= crate::WalOptions::MAX_RECORD_BYTES);
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc(seq, len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Where and why a scan stopped early.
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) offset: u64,
    pub(crate) reason: &'static str,
    /// The stop is not a torn tail but an intact record the reader must not drop: one
    /// above the record limit (written under a larger `max_record_bytes`).
    pub(crate) intact: bool,
}

/// The verified records of one segment and, if the scan did not reach the end cleanly,
/// where it stopped.
#[derive(Debug)]
pub(crate) struct Scan<'a> {
    pub(crate) records: Vec<(u64, &'a [u8])>,
    pub(crate) stop: Option<Stop>,
}

/// Verifies the header and every frame of a segment's bytes; a frame longer than
/// `max_record` is not a record.
pub(crate) fn scan(bytes: &[u8], seq: u64, max_record: usize) -> Scan<'_> {
    let mut records = Vec::new();
    if bytes.len() < HEADER_LEN {
        return Scan {
            records,
            stop: Some(Stop {
                offset: 0,
                reason: "segment header is incomplete",
                intact: false,
            }),
        };
    }
    if &bytes[..4] != MAGIC {
        return Scan {
            records,
            stop: Some(Stop {
                offset: 0,
                reason: "bad segment magic",
                intact: false,
            }),
        };
    }
    let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    let mut s = [0u8; 8];
    s.copy_from_slice(&bytes[8..16]);
    if version != VERSION {
        return Scan {
            records,
            stop: Some(Stop {
                offset: 4,
                reason: "unsupported segment version",
                intact: false,
            }),
        };
    }
    if u64::from_le_bytes(s) != seq {
        return Scan {
            records,
            stop: Some(Stop {
                offset: 8,
                reason: "segment sequence does not match its file name",
                intact: false,
            }),
        };
    }
    let mut off = HEADER_LEN;
    while off < bytes.len() {
        let stop = |reason| {
            Some(Stop {
                offset: off as u64,
                reason,
                intact: false,
            })
        };
        if bytes.len() - off < FRAME_LEN {
            return Scan {
                records,
                stop: stop("record frame is incomplete"),
            };
        }
        let len = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]]);
        let want = u32::from_le_bytes([
            bytes[off + 4],
            bytes[off + 5],
            bytes[off + 6],
            bytes[off + 7],
        ]);
        if len == 0 && want == 0 && bytes[off..].iter().all(|b| *b == 0) {
            return Scan {
                records,
                stop: stop("zero padding"),
            };
        }
        let len_us = len as usize;
        let fits = bytes.len() - off - FRAME_LEN >= len_us;
        if len_us > max_record
            && fits
            && crc(seq, len, &bytes[off + FRAME_LEN..off + FRAME_LEN + len_us]) == want
        {
            // Not a tear: truncating would drop an acknowledged write.
            return Scan {
                records,
                stop: Some(Stop {
                    offset: off as u64,
                    reason: "record larger than max_record_bytes (was it lowered?)",
                    intact: true,
                }),
            };
        }
        if len_us > max_record || !fits {
            return Scan {
                records,
                stop: stop("record extends past the end of the file"),
            };
        }
        let payload = &bytes[off + FRAME_LEN..off + FRAME_LEN + len_us];
        if crc(seq, len, payload) != want {
            return Scan {
                records,
                stop: stop("record checksum mismatch"),
            };
        }
        records.push((off as u64, payload));
        off += FRAME_LEN + len_us;
    }
    Scan {
        records,
        stop: None,
    }
}

pub(crate) fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(file_name(seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_detect_damage() {
        let mut b = header(7).to_vec();
        frame(&mut b, 7, b"hello");
        frame(&mut b, 7, b"world");
        let s = scan(&b, 7, 1 << 20);
        assert!(s.stop.is_none());
        assert_eq!(s.records.len(), 2);
        // Wrong sequence (a record from another segment) fails the checksum.
        let mut other = header(8).to_vec();
        other.extend_from_slice(&b[HEADER_LEN..]);
        let s = scan(&other, 8, 1 << 20);
        assert_eq!(s.records.len(), 0);
        assert_eq!(s.stop.map(|s| s.reason), Some("record checksum mismatch"));
        // A torn tail stops at the last good record.
        let s = scan(&b[..b.len() - 2], 7, 1 << 20);
        assert_eq!(s.records.len(), 1);
        assert_eq!(
            s.stop.map(|s| s.offset),
            Some((HEADER_LEN + FRAME_LEN + 5) as u64)
        );
        // An intact record above the limit is reported as such, not as a tear.
        let s = scan(&b, 7, 4);
        assert_eq!(s.records.len(), 0);
        assert!(s.stop.is_some_and(|s| s.intact));
    }
}
