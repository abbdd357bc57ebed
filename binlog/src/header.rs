//! The 19-byte common event header, event type codes, header flags and the checksum rule.

use crate::error::DecodeError;
use crate::wire::{Cursor, put_u16, put_u32};

/// The four bytes every binlog file starts with (`"\xfebin"`).
pub const BINLOG_MAGIC: [u8; 4] = [0xfe, b'b', b'i', b'n'];
/// Length of the common event header (binlog v4).
pub const HEADER_LEN: usize = 19;
/// Length of the CRC-32 appended to every event when checksums are on.
pub const CHECKSUM_LEN: usize = 4;
/// Header flag on the Format_description event: the file is open for writing (or its writer
/// crashed). Masked out when the event's CRC is computed, so it can be flipped in place.
pub const FLAG_BINLOG_IN_USE: u16 = 0x0001;
/// Header flag: the event does not depend on the current database (set on GTID events).
pub const FLAG_SUPPRESS_USE: u16 = 0x0008;
/// Header flag: an artificial event (only on the replication wire).
pub const FLAG_ARTIFICIAL: u16 = 0x0020;
/// Offset in a file of the low byte of the Format_description header's flags.
pub const IN_USE_FLAG_OFFSET: u64 = 4 + 17;

/// Checksum algorithm of a binlog file, announced by its Format_description event. MariaDB
/// may define more (so match with a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlg {
    /// No checksum on events (the Format_description still carries four CRC bytes).
    Off,
    /// CRC-32 (IEEE, as zlib) of header and body, appended little-endian.
    Crc32,
}

impl ChecksumAlg {
    /// The byte stored in the Format_description event.
    pub fn code(self) -> u8 {
        match self {
            ChecksumAlg::Off => 0,
            ChecksumAlg::Crc32 => 1,
        }
    }

    /// Length of the trailer this algorithm adds to non-FD events.
    pub fn trailer_len(self) -> usize {
        match self {
            ChecksumAlg::Off => 0,
            ChecksumAlg::Crc32 => CHECKSUM_LEN,
        }
    }
}

/// The event types this crate encodes and decodes (binlog v4, MariaDB flavour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventType {
    /// 2: a statement (DDL, or `BEGIN`/`COMMIT`).
    Query,
    /// 4: the last event of a file, naming the next one.
    Rotate,
    /// 15: the first event of every file.
    FormatDescription,
    /// 16: commit of a transactional event group.
    Xid,
    /// 19: maps a table id to a table definition for the rows events after it.
    TableMap,
    /// 23: inserted rows (v1).
    WriteRows,
    /// 24: updated rows, before and after images (v1).
    UpdateRows,
    /// 25: deleted rows (v1).
    DeleteRows,
    /// 160: the SQL text behind the next rows events (MariaDB).
    AnnotateRows,
    /// 161: the oldest file crash recovery must read (MariaDB).
    BinlogCheckpoint,
    /// 162: starts an event group and carries its GTID (MariaDB).
    Gtid,
    /// 163: the GTID state at the start of the file (MariaDB).
    GtidList,
}

impl EventType {
    /// The type byte in the header.
    pub fn code(self) -> u8 {
        match self {
            EventType::Query => 2,
            EventType::Rotate => 4,
            EventType::FormatDescription => 15,
            EventType::Xid => 16,
            EventType::TableMap => 19,
            EventType::WriteRows => 23,
            EventType::UpdateRows => 24,
            EventType::DeleteRows => 25,
            EventType::AnnotateRows => 160,
            EventType::BinlogCheckpoint => 161,
            EventType::Gtid => 162,
            EventType::GtidList => 163,
        }
    }

    /// The type for a header byte, if known.
    pub fn from_code(code: u8) -> Option<EventType> {
        Some(match code {
            2 => EventType::Query,
            4 => EventType::Rotate,
            15 => EventType::FormatDescription,
            16 => EventType::Xid,
            19 => EventType::TableMap,
            23 => EventType::WriteRows,
            24 => EventType::UpdateRows,
            25 => EventType::DeleteRows,
            160 => EventType::AnnotateRows,
            161 => EventType::BinlogCheckpoint,
            162 => EventType::Gtid,
            163 => EventType::GtidList,
            _ => return None,
        })
    }

    /// The name MariaDB uses for the type.
    pub fn name(self) -> &'static str {
        match self {
            EventType::Query => "Query",
            EventType::Rotate => "Rotate",
            EventType::FormatDescription => "Format_desc",
            EventType::Xid => "Xid",
            EventType::TableMap => "Table_map",
            EventType::WriteRows => "Write_rows_v1",
            EventType::UpdateRows => "Update_rows_v1",
            EventType::DeleteRows => "Delete_rows_v1",
            EventType::AnnotateRows => "Annotate_rows",
            EventType::BinlogCheckpoint => "Binlog_checkpoint",
            EventType::Gtid => "Gtid",
            EventType::GtidList => "Gtid_list",
        }
    }
}

/// The common 19-byte header of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    /// Seconds since the Unix epoch when the event (or its statement) was made.
    pub timestamp: u32,
    /// The event type.
    pub event_type: EventType,
    /// Server that first wrote the event.
    pub server_id: u32,
    /// Header + body + checksum, in bytes. Filled in by the encoder.
    pub event_size: u32,
    /// Offset of the end of the event in its file, or 0 (events written from a transaction
    /// cache carry 0 so their bytes, CRC included, stay valid wherever they land).
    pub log_pos: u32,
    /// Header flags (`FLAG_*`).
    pub flags: u16,
}

impl EventHeader {
    /// Parses the first 19 bytes of `buf`.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] if `buf` is shorter than a header,
    /// [`DecodeError::UnknownType`] for a type this crate does not know.
    pub fn parse(buf: &[u8]) -> Result<EventHeader, DecodeError> {
        if buf.len() < HEADER_LEN {
            return Err(DecodeError::Truncated {
                needed: HEADER_LEN as u64,
                available: buf.len() as u64,
            });
        }
        let mut c = Cursor::new(&buf[..HEADER_LEN], "header");
        let timestamp = c.u32("timestamp")?;
        let code = c.u8("type")?;
        let event_type =
            EventType::from_code(code).ok_or(DecodeError::UnknownType { type_code: code })?;
        Ok(EventHeader {
            timestamp,
            event_type,
            server_id: c.u32("server_id")?,
            event_size: c.u32("event_size")?,
            log_pos: c.u32("log_pos")?,
            flags: c.u16("flags")?,
        })
    }

    /// Appends the 19 header bytes.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        put_u32(out, self.timestamp);
        out.push(self.event_type.code());
        put_u32(out, self.server_id);
        put_u32(out, self.event_size);
        put_u32(out, self.log_pos);
        put_u16(out, self.flags);
    }
}

/// CRC-32 of an event's bytes (without its trailer). For a Format_description event the
/// in-use flag is masked out first, as MariaDB does, so flipping it never breaks the CRC.
pub(crate) fn event_crc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if bytes.len() > HEADER_LEN
        && bytes[4] == EventType::FormatDescription.code()
        && bytes[17] & FLAG_BINLOG_IN_USE as u8 != 0
    {
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&bytes[..HEADER_LEN]);
        head[17] &= !(FLAG_BINLOG_IN_USE as u8);
        h.update(&head);
        h.update(&bytes[HEADER_LEN..]);
    } else {
        h.update(bytes);
    }
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_code_round_trips() {
        for code in 0..=255u8 {
            if let Some(t) = EventType::from_code(code) {
                assert_eq!(t.code(), code);
                assert!(!t.name().is_empty());
            }
        }
    }

    #[test]
    fn unknown_type_is_named() {
        let mut buf = vec![0u8; HEADER_LEN];
        buf[4] = 99;
        assert_eq!(
            EventHeader::parse(&buf),
            Err(DecodeError::UnknownType { type_code: 99 })
        );
    }
}
