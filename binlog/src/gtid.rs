//! MariaDB GTIDs: the GTID event (162) that starts every event group and the Gtid_list
//! event (163) that records the GTID state at the start of a file.

use std::fmt;

use crate::error::DecodeError;
use crate::header::{CHECKSUM_LEN, HEADER_LEN};
use crate::wire::{Cursor, put_u32, put_u64};

/// A MariaDB global transaction id, printed `domain-server-seq` (e.g. `0-1-42`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gtid {
    /// Replication domain.
    pub domain_id: u32,
    /// Server that first committed the transaction.
    pub server_id: u32,
    /// Sequence number within the domain.
    pub seq_no: u64,
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain_id, self.server_id, self.seq_no)
    }
}

/// GTID flags2 bit: the group is one statement without BEGIN/COMMIT (DDL).
pub const GTID_FL_STANDALONE: u8 = 0x01;
/// GTID flags2 bit: a commit id follows (group-commit parallel replication).
pub const GTID_FL_GROUP_COMMIT_ID: u8 = 0x02;
/// GTID flags2 bit: transactional (all tables are transactional).
pub const GTID_FL_TRANSACTIONAL: u8 = 0x04;
/// GTID flags2 bit: may be applied in parallel.
pub const GTID_FL_ALLOW_PARALLEL: u8 = 0x08;
/// GTID flags2 bit: DDL.
pub const GTID_FL_DDL: u8 = 0x20;

/// Minimal GTID body: seq_no, domain_id, flags2, then zeros up to 19 bytes.
pub const GTID_MIN_BODY: usize = 19;
/// Largest GTID event MariaDB can write (header + 187-byte body + CRC); the reservation in
/// a spilled cache must leave room for this after the file header.
pub const GTID_MAX_EVENT_LEN: u64 = (HEADER_LEN + 187 + CHECKSUM_LEN) as u64;

/// Body of a GTID event.
///
/// `tail` holds every byte after `flags2`: a commit id, an XA xid, flags_extra, or zero
/// padding. Readers parse what they know and ignore the rest, which is what lets a renamed
/// cache fill its reserved header space with one padded GTID event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GtidEvent {
    /// Sequence number.
    pub seq_no: u64,
    /// Replication domain.
    pub domain_id: u32,
    /// `GTID_FL_*` bits.
    pub flags2: u8,
    /// Bytes after flags2 (at least enough to make a 19-byte body).
    pub tail: Vec<u8>,
}

impl GtidEvent {
    /// A transactional GTID (flags2 = transactional | allow-parallel), minimal body.
    pub fn transactional(domain_id: u32, seq_no: u64) -> Self {
        GtidEvent {
            seq_no,
            domain_id,
            flags2: GTID_FL_TRANSACTIONAL | GTID_FL_ALLOW_PARALLEL,
            tail: vec![0; GTID_MIN_BODY - 13],
        }
    }

    /// Grows the zero padding so the whole event (header, body, CRC) is `event_len` bytes.
    /// Returns false (and changes nothing) if the event is already longer.
    pub fn pad_to_event_len(&mut self, event_len: u64, checksum_len: usize) -> bool {
        let body_len = 13 + self.tail.len() as u64;
        let now = (HEADER_LEN + checksum_len) as u64 + body_len.max(GTID_MIN_BODY as u64);
        if event_len < now {
            return false;
        }
        let extra = (event_len - now) as usize;
        let tail_len = self.tail.len().max(GTID_MIN_BODY - 13) + extra;
        self.tail.resize(tail_len, 0);
        true
    }

    /// The commit id, when `GTID_FL_GROUP_COMMIT_ID` is set.
    pub fn commit_id(&self) -> Option<u64> {
        if self.flags2 & GTID_FL_GROUP_COMMIT_ID != 0 && self.tail.len() >= 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.tail[..8]);
            Some(u64::from_le_bytes(b))
        } else {
            None
        }
    }

    /// Whether the group is a standalone statement (no Xid/COMMIT ends it).
    pub fn is_standalone(&self) -> bool {
        self.flags2 & GTID_FL_STANDALONE != 0
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        put_u64(out, self.seq_no);
        put_u32(out, self.domain_id);
        out.push(self.flags2);
        out.extend_from_slice(&self.tail);
        if out.len() - start < GTID_MIN_BODY {
            out.resize(start + GTID_MIN_BODY, 0);
        }
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Gtid");
        if body.len() < GTID_MIN_BODY {
            return Err(c.malformed("body shorter than 19 bytes"));
        }
        Ok(GtidEvent {
            seq_no: c.u64("seq_no")?,
            domain_id: c.u32("domain_id")?,
            flags2: c.u8("flags2")?,
            tail: c.rest().to_vec(),
        })
    }
}

/// Body of a Gtid_list event: the last GTID of each domain before this file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GtidList {
    /// The top four bits of the count word.
    pub flags: u8,
    /// One GTID per (domain, server).
    pub gtids: Vec<Gtid>,
}

impl GtidList {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let count = self.gtids.len() as u32 & 0x0fff_ffff;
        put_u32(out, count | (u32::from(self.flags & 0x0f) << 28));
        for g in &self.gtids {
            put_u32(out, g.domain_id);
            put_u32(out, g.server_id);
            put_u64(out, g.seq_no);
        }
        if self.gtids.is_empty() {
            // MariaDB writes two zero bytes after an empty list.
            out.extend_from_slice(&[0, 0]);
        }
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Gtid_list");
        let word = c.u32("count")?;
        let count = (word & 0x0fff_ffff) as usize;
        if c.remaining() / 16 < count {
            return Err(c.malformed("fewer entries than the count"));
        }
        let mut gtids = Vec::with_capacity(count);
        for _ in 0..count {
            gtids.push(Gtid {
                domain_id: c.u32("domain_id")?,
                server_id: c.u32("server_id")?,
                seq_no: c.u64("seq_no")?,
            });
        }
        Ok(GtidList {
            flags: (word >> 28) as u8,
            gtids,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_fills_exactly() {
        let mut g = GtidEvent::transactional(0, 7);
        assert!(g.pad_to_event_len(4096 - 340, 4));
        let mut body = Vec::new();
        g.encode(&mut body);
        assert_eq!(HEADER_LEN + body.len() + 4, 4096 - 340);
        assert!(!g.pad_to_event_len(30, 4));
    }

    #[test]
    fn display_is_domain_server_seq() {
        let g = Gtid {
            domain_id: 0,
            server_id: 1,
            seq_no: 42,
        };
        assert_eq!(g.to_string(), "0-1-42");
    }
}
