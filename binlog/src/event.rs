//! One binlog event: header plus typed body, with its encoder and decoder.

use crate::error::DecodeError;
use crate::fde::FormatDescription;
use crate::gtid::{GtidEvent, GtidList};
use crate::header::{
    CHECKSUM_LEN, ChecksumAlg, EventHeader, EventType, FLAG_SUPPRESS_USE, HEADER_LEN, event_crc,
};
use crate::query::{BinlogCheckpoint, QueryEvent, Rotate};
use crate::rows::{RowsEvent, RowsKind, TableMap};
use crate::wire::Cursor;

/// The body of an event, by type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventBody {
    /// Format_description (15).
    FormatDescription(FormatDescription),
    /// Gtid_list (163).
    GtidList(GtidList),
    /// Binlog_checkpoint (161).
    BinlogCheckpoint(BinlogCheckpoint),
    /// GTID (162).
    Gtid(GtidEvent),
    /// Query (2).
    Query(QueryEvent),
    /// Annotate_rows (160): the statement text.
    AnnotateRows(Vec<u8>),
    /// Table_map (19).
    TableMap(TableMap),
    /// Write/Update/Delete_rows v1 (23/24/25).
    Rows(RowsEvent),
    /// Xid (16): commit of a transactional group, with the transaction's xid.
    Xid(u64),
    /// Rotate (4).
    Rotate(Rotate),
}

impl EventBody {
    /// The event type this body is written as.
    pub fn event_type(&self) -> EventType {
        match self {
            EventBody::FormatDescription(_) => EventType::FormatDescription,
            EventBody::GtidList(_) => EventType::GtidList,
            EventBody::BinlogCheckpoint(_) => EventType::BinlogCheckpoint,
            EventBody::Gtid(_) => EventType::Gtid,
            EventBody::Query(_) => EventType::Query,
            EventBody::AnnotateRows(_) => EventType::AnnotateRows,
            EventBody::TableMap(_) => EventType::TableMap,
            EventBody::Rows(r) => match r.kind {
                RowsKind::Write => EventType::WriteRows,
                RowsKind::Update => EventType::UpdateRows,
                RowsKind::Delete => EventType::DeleteRows,
            },
            EventBody::Xid(_) => EventType::Xid,
            EventBody::Rotate(_) => EventType::Rotate,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            EventBody::FormatDescription(b) => b.encode(out),
            EventBody::GtidList(b) => b.encode(out),
            EventBody::BinlogCheckpoint(b) => b.encode(out),
            EventBody::Gtid(b) => b.encode(out),
            EventBody::Query(b) => b.encode(out),
            EventBody::AnnotateRows(b) => out.extend_from_slice(b),
            EventBody::TableMap(b) => b.encode(out),
            EventBody::Rows(b) => b.encode(out),
            EventBody::Xid(x) => out.extend_from_slice(&x.to_le_bytes()),
            EventBody::Rotate(b) => b.encode(out),
        }
    }

    fn decode(t: EventType, body: &[u8]) -> Result<Self, DecodeError> {
        Ok(match t {
            EventType::FormatDescription => {
                EventBody::FormatDescription(FormatDescription::decode(body)?)
            }
            EventType::GtidList => EventBody::GtidList(GtidList::decode(body)?),
            EventType::BinlogCheckpoint => {
                EventBody::BinlogCheckpoint(BinlogCheckpoint::decode(body)?)
            }
            EventType::Gtid => EventBody::Gtid(GtidEvent::decode(body)?),
            EventType::Query => EventBody::Query(QueryEvent::decode(body)?),
            EventType::AnnotateRows => EventBody::AnnotateRows(body.to_vec()),
            EventType::TableMap => EventBody::TableMap(TableMap::decode(body)?),
            EventType::WriteRows => EventBody::Rows(RowsEvent::decode(RowsKind::Write, body)?),
            EventType::UpdateRows => EventBody::Rows(RowsEvent::decode(RowsKind::Update, body)?),
            EventType::DeleteRows => EventBody::Rows(RowsEvent::decode(RowsKind::Delete, body)?),
            EventType::Xid => {
                let mut c = Cursor::new(body, "Xid");
                let x = c.u64("xid")?;
                if c.remaining() != 0 {
                    return Err(c.malformed("trailing bytes"));
                }
                EventBody::Xid(x)
            }
            EventType::Rotate => EventBody::Rotate(Rotate::decode(body)?),
        })
    }
}

/// The header [`Event::new`] gives `body`: `log_pos` 0 and the flags MariaDB sets for its
/// type.
fn new_header(body: &EventBody, timestamp: u32, server_id: u32) -> EventHeader {
    let flags = match body {
        EventBody::Gtid(_) => FLAG_SUPPRESS_USE,
        _ => 0,
    };
    EventHeader {
        timestamp,
        event_type: body.event_type(),
        server_id,
        event_size: 0,
        log_pos: 0,
        flags,
    }
}

/// [`Event::encode_into`] of an event given as its parts (so a borrowed body encodes as an
/// owned one does).
fn encode_parts(
    header: EventHeader,
    body: &EventBody,
    out: &mut Vec<u8>,
    alg: ChecksumAlg,
) -> usize {
    let start = out.len();
    let mut h = header;
    h.event_type = body.event_type();
    h.write(out);
    body.encode(out);
    let is_fd = h.event_type == EventType::FormatDescription;
    let trailer = if is_fd {
        CHECKSUM_LEN
    } else {
        alg.trailer_len()
    };
    let size = out.len() - start + trailer;
    out[start + 9..start + 13].copy_from_slice(&(size as u32).to_le_bytes());
    if trailer > 0 {
        // A Format_description always carries a real CRC, whatever the algorithm it
        // announces (readers verify it only when that algorithm is CRC-32).
        let crc = event_crc(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    size
}

/// [`Event::encode_at`] of an event given as its parts: its size and the `log_pos` written.
fn encode_parts_at(
    header: EventHeader,
    body: &EventBody,
    offset: u64,
    alg: ChecksumAlg,
    out: &mut Vec<u8>,
) -> (usize, u32) {
    let start = out.len();
    let size = encode_parts(header, body, out, alg);
    let end = offset + size as u64;
    let log_pos = u32::try_from(end).unwrap_or(0);
    out[start + 13..start + 17].copy_from_slice(&log_pos.to_le_bytes());
    if header.event_type == EventType::FormatDescription || alg == ChecksumAlg::Crc32 {
        let crc = event_crc(&out[start..start + size - CHECKSUM_LEN]);
        out[start + size - CHECKSUM_LEN..start + size].copy_from_slice(&crc.to_le_bytes());
    }
    (size, log_pos)
}

/// A decoded (or to-be-encoded) event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The common header. `event_size` is recomputed on encode.
    pub header: EventHeader,
    /// The typed body.
    pub body: EventBody,
}

impl Event {
    /// An event with `log_pos` 0 and the flags MariaDB sets for its type.
    pub fn new(body: EventBody, timestamp: u32, server_id: u32) -> Self {
        Event {
            header: new_header(&body, timestamp, server_id),
            body,
        }
    }

    /// Encodes the event with `header.log_pos` as set, appending to `out`; returns its size.
    ///
    /// A Format_description always carries a CRC (computed with the in-use flag masked);
    /// other events carry one iff `alg` is CRC-32.
    pub fn encode_into(&self, out: &mut Vec<u8>, alg: ChecksumAlg) -> usize {
        encode_parts(self.header, &self.body, out, alg)
    }

    /// Appends the bytes of `Event::new(body.clone(), timestamp, server_id)` placed at
    /// `offset` (as [`Event::encode_at`] writes them) without cloning `body`; returns their
    /// size. For a writer that re-encodes events it keeps (a replica stream's).
    pub fn encode_body_at(
        body: &EventBody,
        timestamp: u32,
        server_id: u32,
        offset: u64,
        alg: ChecksumAlg,
        out: &mut Vec<u8>,
    ) -> usize {
        encode_parts_at(
            new_header(body, timestamp, server_id),
            body,
            offset,
            alg,
            out,
        )
        .0
    }

    /// Encodes the event to a new buffer.
    pub fn encode(&self, alg: ChecksumAlg) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out, alg);
        out
    }

    /// Encodes the event to be placed at `offset` of a file: `log_pos` becomes the end offset
    /// (or 0 past 4 GiB, where the 32-bit field cannot hold it).
    pub fn encode_at(&mut self, offset: u64, alg: ChecksumAlg, out: &mut Vec<u8>) -> usize {
        let (size, log_pos) = encode_parts_at(self.header, &self.body, offset, alg, out);
        self.header.log_pos = log_pos;
        self.header.event_size = size as u32;
        size
    }

    /// Decodes exactly one event from `bytes` (whose length must equal its `event_size`),
    /// verifying the CRC when `alg` (or, for a Format_description, its own byte) says so.
    ///
    /// # Errors
    /// A [`DecodeError`] naming what was wrong; never panics on any input.
    pub fn decode(bytes: &[u8], alg: ChecksumAlg) -> Result<Event, DecodeError> {
        let header = EventHeader::parse(bytes)?;
        let size = header.event_size as usize;
        let is_fd = header.event_type == EventType::FormatDescription;
        let trailer = if is_fd {
            CHECKSUM_LEN
        } else {
            alg.trailer_len()
        };
        if size < HEADER_LEN + trailer {
            return Err(DecodeError::BadLength {
                size: header.event_size,
            });
        }
        if bytes.len() < size {
            return Err(DecodeError::Truncated {
                needed: size as u64,
                available: bytes.len() as u64,
            });
        }
        if bytes.len() > size {
            return Err(DecodeError::BadLength {
                size: header.event_size,
            });
        }
        // Verify the CRC before parsing the body, so damage reads as damage, not as a
        // malformed field. A Format_description's own last body byte names its algorithm.
        let check = if is_fd {
            size > HEADER_LEN + CHECKSUM_LEN && bytes[size - CHECKSUM_LEN - 1] == 1
        } else {
            alg == ChecksumAlg::Crc32
        };
        if check {
            let mut s = [0u8; 4];
            s.copy_from_slice(&bytes[size - CHECKSUM_LEN..size]);
            let stored = u32::from_le_bytes(s);
            let computed = event_crc(&bytes[..size - CHECKSUM_LEN]);
            if stored != computed {
                return Err(DecodeError::BadChecksum { stored, computed });
            }
        }
        let body = &bytes[HEADER_LEN..size - trailer];
        let decoded = EventBody::decode(header.event_type, body)?;
        Ok(Event {
            header,
            body: decoded,
        })
    }
}
