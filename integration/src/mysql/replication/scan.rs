//! Reading a binlog file event by event without loading it: [`EventFile`] reads headers and
//! then the body (whole, skipped or copied through), [`GroupTracker`] says where GTID groups
//! begin and end, [`leading_gtid_list`] reads a file's Gtid_list.
//!
//! Event layout (binlog v4, <https://mariadb.com/kb/en/2-binlog-event-header/>): a 19-byte
//! header `timestamp u32, type u8, server_id u32, event_size u32, log_pos u32, flags u16`
//! (little-endian), the body, and with CRC-32 checksums a 4-byte CRC at the end.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use surge_binlog::{BINLOG_MAGIC, ChecksumAlg, Event, EventBody, Gtid, GtidList, HEADER_LEN};

use super::error::ReplicationError;

/// Type codes the stream looks at (<https://mariadb.com/kb/en/2-binlog-event-header/>).
pub(crate) mod code {
    /// Query_event.
    pub(crate) const QUERY: u8 = 2;
    /// Rotate_event.
    pub(crate) const ROTATE: u8 = 4;
    /// Format_description_event.
    pub(crate) const FORMAT_DESCRIPTION: u8 = 15;
    /// Xid_event.
    pub(crate) const XID: u8 = 16;
    /// Heartbeat_log_event (never in a file; sent to idle replicas).
    pub(crate) const HEARTBEAT: u8 = 27;
    /// Gtid_event.
    pub(crate) const GTID: u8 = 162;
    /// Gtid_list_event.
    pub(crate) const GTID_LIST: u8 = 163;
}

/// An event's common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawHeader {
    /// The type code.
    pub(crate) type_code: u8,
    /// The originating server.
    pub(crate) server_id: u32,
    /// Header, body and checksum.
    pub(crate) size: u32,
}

impl RawHeader {
    /// Parses the 19 header bytes.
    pub(crate) fn parse(b: &[u8; HEADER_LEN]) -> RawHeader {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        RawHeader {
            type_code: b[4],
            server_id: u32_at(5),
            size: u32_at(9),
        }
    }
}

/// A binlog file read forward from an offset.
///
/// Invariant: `pos` is the file offset of the next byte `reader` returns.
#[derive(Debug)]
pub(crate) struct EventFile {
    reader: BufReader<File>,
    path: PathBuf,
    pos: u64,
}

/// Read buffer: large enough that a stream of small events costs few system calls.
const READ_BUFFER: usize = 256 * 1024;

impl EventFile {
    /// Opens `path`, checks the magic and stands at offset 4 (the first event).
    ///
    /// # Errors
    /// [`ReplicationError::Io`]; [`ReplicationError::Corrupt`] for a bad magic.
    pub(crate) fn open(path: &Path) -> Result<EventFile, ReplicationError> {
        let file = File::open(path).map_err(|e| ReplicationError::io("open", path, e))?;
        let mut reader = BufReader::with_capacity(READ_BUFFER, file);
        let mut magic = [0u8; 4];
        reader
            .read_exact(&mut magic)
            .map_err(|e| ReplicationError::io("read the magic of", path, e))?;
        if magic != BINLOG_MAGIC {
            return Err(ReplicationError::Corrupt {
                path: path.to_path_buf(),
                offset: 0,
                detail: format!("bad magic {magic:02x?}"),
            });
        }
        Ok(EventFile {
            reader,
            path: path.to_path_buf(),
            pos: 4,
        })
    }

    /// Opens `path` standing at `offset` (which must be an event boundary).
    ///
    /// # Errors
    /// As [`EventFile::open`], or the seek failed.
    pub(crate) fn open_at(path: &Path, offset: u64) -> Result<EventFile, ReplicationError> {
        let mut f = EventFile::open(path)?;
        if offset != 4 {
            f.reader
                .seek(SeekFrom::Start(offset))
                .map_err(|e| ReplicationError::io("seek in", path, e))?;
            f.pos = offset;
        }
        Ok(f)
    }

    /// The offset of the next event.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file's current length.
    ///
    /// # Errors
    /// [`ReplicationError::Io`].
    pub(crate) fn len(&self) -> Result<u64, ReplicationError> {
        self.reader
            .get_ref()
            .metadata()
            .map(|m| m.len())
            .map_err(|e| ReplicationError::io("stat", &self.path, e))
    }

    /// Reads the next event's header if the whole event lies before `limit`: `None` when
    /// fewer than 19 bytes or less than the whole event remain before it (nothing is
    /// consumed then). On `Some`, the header's 19 bytes are consumed and returned with it.
    ///
    /// # Errors
    /// I/O, or an event size smaller than a header (a damaged file).
    pub(crate) fn next_header(
        &mut self,
        limit: u64,
    ) -> Result<Option<(RawHeader, [u8; HEADER_LEN])>, ReplicationError> {
        if self.pos + HEADER_LEN as u64 > limit {
            return Ok(None);
        }
        let mut b = [0u8; HEADER_LEN];
        let at = self.pos;
        // A short read here means the file is shorter than `limit` said: report it.
        self.reader
            .read_exact(&mut b)
            .map_err(|e| ReplicationError::io("read an event header of", &self.path, e))?;
        let h = RawHeader::parse(&b);
        if (h.size as usize) < HEADER_LEN {
            return Err(ReplicationError::Corrupt {
                path: self.path.clone(),
                offset: at,
                detail: format!("event size {} is smaller than its header", h.size),
            });
        }
        if at + u64::from(h.size) > limit {
            self.reader
                .seek_relative(-(HEADER_LEN as i64))
                .map_err(|e| ReplicationError::io("seek in", &self.path, e))?;
            return Ok(None);
        }
        self.pos = at + HEADER_LEN as u64;
        Ok(Some((h, b)))
    }

    /// Reads the body (and checksum) of the event whose header was just read: the whole
    /// event is returned, header first.
    ///
    /// # Errors
    /// I/O.
    pub(crate) fn read_rest(
        &mut self,
        h: &RawHeader,
        head: &[u8; HEADER_LEN],
    ) -> Result<Vec<u8>, ReplicationError> {
        let mut ev = vec![0u8; h.size as usize];
        ev[..HEADER_LEN].copy_from_slice(head);
        self.reader
            .read_exact(&mut ev[HEADER_LEN..])
            .map_err(|e| ReplicationError::io("read an event of", &self.path, e))?;
        self.pos += u64::from(h.size) - HEADER_LEN as u64;
        Ok(ev)
    }

    /// Skips the body of the event whose header was just read.
    ///
    /// # Errors
    /// I/O.
    pub(crate) fn skip_rest(&mut self, h: &RawHeader) -> Result<(), ReplicationError> {
        let rest = u64::from(h.size) - HEADER_LEN as u64;
        self.reader
            .seek_relative(rest as i64)
            .map_err(|e| ReplicationError::io("seek in", &self.path, e))?;
        self.pos += rest;
        Ok(())
    }

    /// A reader of the body of the event whose header was just read, which the caller
    /// must read to its end (exactly `h.size - 19` bytes).
    pub(crate) fn body_reader(&mut self, h: &RawHeader) -> impl Read + '_ {
        let rest = u64::from(h.size) - HEADER_LEN as u64;
        self.pos += rest;
        (&mut self.reader).take(rest)
    }
}

/// Where an event stands in the GTID groups of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not in a group (Format_description, Gtid_list, Binlog_checkpoint, Rotate).
    Outside,
    /// A GTID event: a group begins.
    Begin,
    /// Inside a group, not its last event.
    Inside,
    /// The group's last event (Xid, COMMIT, or a standalone group's statement).
    End,
}

/// Follows the events of a file and says where each stands.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupTracker {
    /// `Some(standalone)` while a group is open.
    open: Option<bool>,
}

impl GroupTracker {
    /// Whether a group is open (begun, not ended).
    #[cfg(test)]
    pub(crate) fn in_group(&self) -> bool {
        self.open.is_some()
    }

    /// The place of the next event: `type_code`, and for a Query event whether its text
    /// is `COMMIT` (or `ROLLBACK`), which ends a non-transactional engine's group.
    pub(crate) fn observe(&mut self, type_code: u8, gtid_flags: u8, ends_txn: bool) -> Place {
        if type_code == code::GTID {
            // GTID_FL_STANDALONE: one statement, no COMMIT or Xid follows.
            self.open = Some(gtid_flags & 0x01 != 0);
            return Place::Begin;
        }
        match self.open {
            None => Place::Outside,
            Some(standalone) => {
                if standalone || type_code == code::XID || (type_code == code::QUERY && ends_txn) {
                    self.open = None;
                    Place::End
                } else {
                    Place::Inside
                }
            }
        }
    }
}

/// The GTID a Gtid event carries, and its flags byte. `event` is the whole event.
///
/// # Errors
/// The event does not decode (named by `path` and `offset`).
pub(crate) fn gtid_of(
    event: &[u8],
    path: &Path,
    offset: u64,
) -> Result<(Gtid, u8), ReplicationError> {
    match Event::decode(event, ChecksumAlg::Crc32) {
        Ok(Event {
            header,
            body: EventBody::Gtid(g),
        }) => Ok((
            Gtid {
                domain_id: g.domain_id,
                server_id: header.server_id,
                seq_no: g.seq_no,
            },
            g.flags2,
        )),
        Ok(other) => Err(ReplicationError::Corrupt {
            path: path.to_path_buf(),
            offset,
            detail: format!("expected a Gtid event, found {:?}", other.header.event_type),
        }),
        Err(e) => Err(ReplicationError::Corrupt {
            path: path.to_path_buf(),
            offset,
            detail: e.to_string(),
        }),
    }
}

/// Whether a Query event (whole, with a CRC-32) is `COMMIT` or `ROLLBACK`.
///
/// Body: thread_id u32, exec_time u32, db_len u8, error_code u16, status_vars_len u16,
/// status vars, db, NUL, query text (<https://mariadb.com/kb/en/query_event/>).
pub(crate) fn query_ends_txn(event: &[u8]) -> bool {
    let Some(body) = event.get(HEADER_LEN..event.len().saturating_sub(4)) else {
        return false;
    };
    if body.len() < 13 {
        return false;
    }
    let db_len = usize::from(body[8]);
    let vars = usize::from(u16::from_le_bytes([body[11], body[12]]));
    let text = body.get(13 + vars + db_len + 1..).unwrap_or_default();
    text.eq_ignore_ascii_case(b"COMMIT") || text.eq_ignore_ascii_case(b"ROLLBACK")
}

/// Query events longer than this are statements, never a `COMMIT`: not read to check.
pub(crate) const SMALL_QUERY: u32 = 256;

/// The Gtid_list at the start of `path` (the GTID state before its first group).
///
/// # Errors
/// I/O, or the file does not start with a Format_description and a Gtid_list.
pub(crate) fn leading_gtid_list(path: &Path) -> Result<GtidList, ReplicationError> {
    let mut f = EventFile::open(path)?;
    let limit = f.len()?;
    let bad = |offset: u64, detail: String| ReplicationError::Corrupt {
        path: path.to_path_buf(),
        offset,
        detail,
    };
    let Some((fd, _)) = f.next_header(limit)? else {
        return Err(bad(4, "no Format_description event".into()));
    };
    if fd.type_code != code::FORMAT_DESCRIPTION {
        return Err(bad(
            4,
            format!(
                "first event has type {}, not Format_description",
                fd.type_code
            ),
        ));
    }
    f.skip_rest(&fd)?;
    let at = f.pos();
    let Some((h, head)) = f.next_header(limit)? else {
        return Err(bad(
            at,
            "no Gtid_list event after the Format_description".into(),
        ));
    };
    if h.type_code != code::GTID_LIST {
        return Err(bad(
            at,
            format!("second event has type {}, not Gtid_list", h.type_code),
        ));
    }
    let bytes = f.read_rest(&h, &head)?;
    match Event::decode(&bytes, ChecksumAlg::Crc32) {
        Ok(Event {
            body: EventBody::GtidList(list),
            ..
        }) => Ok(list),
        Ok(_) => Err(bad(at, "Gtid_list decoded as another type".into())),
        Err(e) => Err(bad(at, e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_places() {
        let mut t = GroupTracker::default();
        assert_eq!(t.observe(code::GTID_LIST, 0, false), Place::Outside);
        assert_eq!(t.observe(code::GTID, 0x04, false), Place::Begin);
        assert!(t.in_group());
        assert_eq!(t.observe(code::QUERY, 0, false), Place::Inside);
        assert_eq!(t.observe(19, 0, false), Place::Inside);
        assert_eq!(t.observe(code::XID, 0, false), Place::End);
        assert!(!t.in_group());
        // Standalone: the statement after the GTID ends the group.
        assert_eq!(t.observe(code::GTID, 0x01, false), Place::Begin);
        assert_eq!(t.observe(code::QUERY, 0, false), Place::End);
        // A COMMIT query ends a non-transactional group.
        assert_eq!(t.observe(code::GTID, 0, false), Place::Begin);
        assert_eq!(t.observe(code::QUERY, 0, true), Place::End);
        assert_eq!(t.observe(code::ROTATE, 0, false), Place::Outside);
    }

    #[test]
    fn commit_query_is_recognised() {
        let mut q = surge_binlog::QueryEvent::new("", "COMMIT");
        let ev = Event::new(EventBody::Query(q.clone()), 0, 1).encode(ChecksumAlg::Crc32);
        assert!(query_ends_txn(&ev));
        q.query = b"CREATE TABLE t (a INT)".to_vec();
        q.database = b"shop".to_vec();
        let ev = Event::new(EventBody::Query(q), 0, 1).encode(ChecksumAlg::Crc32);
        assert!(!query_ends_txn(&ev));
        assert!(!query_ends_txn(&[1, 2, 3]));
    }
}
