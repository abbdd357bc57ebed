//! [`SnapshotStreamReader`]: decodes a snapshot stream record by record, checking each.

use std::io::{self, BufRead, BufReader, Read};

use crc32fast::Hasher;

use super::error::SnapshotStreamError;
use super::format::{
    END_PAYLOAD, ENTRY_FIXED, HEADER_FIXED, MAGIC, RECORD_CRC, RECORD_HEAD,
    SNAPSHOT_STREAM_MAX_RECORD, TAG_END, TAG_ENTRY, TAG_HEADER, cf_of_code, tag_name,
};
use crate::engine::cf::Cf;
use crate::engine::key_codec::encode_key;
use crate::engine::region_record::RegionRecord;

/// Bytes read from the input at a time.
const READ_BUFFER: usize = 256 << 10;

/// A payload buffer that grew past this (a large record) is given back after its record.
const KEEP_PAYLOAD: usize = 4 << 20;

/// What a snapshot stream's header holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotStreamHeader {
    /// The applied index of the engine the entries were read from (at most the Raft index
    /// of the snapshot: entries without data do not reach the engine).
    pub applied_index: u64,
    /// The region's range and state.
    pub record: RegionRecord,
}

/// One entry of a snapshot stream, borrowed from the reader until its next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotStreamEntry<'a> {
    /// The column family.
    pub cf: Cf,
    /// The engine key (inside the header's range).
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

/// Reads a snapshot stream written by [`crate::SnapshotStreamWriter`]: the header when
/// opened, then one entry per [`SnapshotStreamReader::next_entry`] until the end record.
///
/// # Invariants
/// - An entry is returned only after its record's CRC matched and its key was found inside
///   the header's range; `next_entry` returns `None` only after the end record matched and
///   the input ended there. So a caller that applies entries as they come has applied a
///   complete, undamaged snapshot exactly when `None` is returned.
/// - Memory is one read buffer and the largest record's payload; a record's claimed length
///   is checked against [`crate::SNAPSHOT_STREAM_MAX_RECORD`] before anything is allocated for it,
///   and its payload buffer grows only as bytes actually arrive.
pub struct SnapshotStreamReader<'a> {
    input: BufReader<&'a mut dyn Read>,
    /// Stream offset of the next byte to read.
    offset: u64,
    /// CRC-32 of every byte read so far.
    stream_crc: Hasher,
    header: SnapshotStreamHeader,
    /// The header's range as engine keys: `[start, end)`, no end: to the last key.
    start: Vec<u8>,
    end: Option<Vec<u8>>,
    /// The last record's payload.
    payload: Vec<u8>,
    entries: u64,
    data_bytes: u64,
    /// Set once the end record was read and checked.
    ended: bool,
}

impl std::fmt::Debug for SnapshotStreamReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotStreamReader")
            .field("offset", &self.offset)
            .field("entries", &self.entries)
            .field("ended", &self.ended)
            .finish()
    }
}

/// A record read and checked: its tag, where it starts, and the stream's CRC before it.
struct RecordAt {
    tag: u8,
    offset: u64,
    crc_before: u32,
}

impl<'a> SnapshotStreamReader<'a> {
    /// Reads the magic and the header from `input`.
    ///
    /// # Errors
    /// [`SnapshotStreamError`] naming the offset when the stream does not start with a
    /// well-formed header, or cannot be read.
    pub fn open(input: &'a mut dyn Read) -> Result<SnapshotStreamReader<'a>, SnapshotStreamError> {
        let mut r = SnapshotStreamReader {
            input: BufReader::with_capacity(READ_BUFFER, input),
            offset: 0,
            stream_crc: Hasher::new(),
            header: SnapshotStreamHeader::default(),
            start: Vec::new(),
            end: None,
            payload: Vec::new(),
            entries: 0,
            data_bytes: 0,
            ended: false,
        };
        let mut magic = [0u8; 8];
        r.fill(&mut magic, "magic")?;
        if &magic != MAGIC {
            return Err(SnapshotStreamError::BadMagic { found: magic });
        }
        r.stream_crc.update(&magic);
        let Some(rec) = r.read_record()? else {
            return Err(SnapshotStreamError::Truncated {
                offset: r.offset,
                what: "header record",
            });
        };
        if rec.tag != TAG_HEADER {
            return Err(SnapshotStreamError::OutOfOrder {
                offset: rec.offset,
                found: tag_name(rec.tag),
                expected: "header",
            });
        }
        r.header = decode_header(&r.payload, rec.offset)?;
        r.start = encode_key(&r.header.record.start);
        r.end = (!r.header.record.end.is_empty()).then(|| encode_key(&r.header.record.end));
        Ok(r)
    }

    /// The stream's header.
    pub fn header(&self) -> &SnapshotStreamHeader {
        &self.header
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next entry, or `None` once the end record was read, matched the stream, and the
    /// input ended after it.
    ///
    /// # Errors
    /// [`SnapshotStreamError`] naming the offset when the stream is truncated, damaged or
    /// malformed, or cannot be read.
    pub fn next_entry(&mut self) -> Result<Option<SnapshotStreamEntry<'_>>, SnapshotStreamError> {
        if self.ended {
            return Ok(None);
        }
        let Some(rec) = self.read_record()? else {
            return Err(SnapshotStreamError::Truncated {
                offset: self.offset,
                what: "stream (no end record)",
            });
        };
        match rec.tag {
            TAG_ENTRY => self.entry(rec.offset).map(Some),
            TAG_END => {
                self.end(&rec)?;
                Ok(None)
            }
            tag => Err(SnapshotStreamError::OutOfOrder {
                offset: rec.offset,
                found: tag_name(tag),
                expected: "entry or end",
            }),
        }
    }

    /// The entry in the payload of the record at `offset`.
    fn entry(&mut self, offset: u64) -> Result<SnapshotStreamEntry<'_>, SnapshotStreamError> {
        let malformed = |reason| SnapshotStreamError::Malformed {
            offset,
            what: "entry",
            reason,
        };
        let p = &self.payload;
        if p.len() < ENTRY_FIXED {
            return Err(malformed("shorter than its fixed fields"));
        }
        let cf = cf_of_code(p[0]).ok_or(malformed("unknown column family"))?;
        let key_len = u32_at(p, 1) as usize;
        let key_end = ENTRY_FIXED
            .checked_add(key_len)
            .filter(|e| *e <= p.len())
            .ok_or(malformed("key longer than the record"))?;
        let key = &p[ENTRY_FIXED..key_end];
        let in_range =
            key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end);
        if !in_range {
            return Err(SnapshotStreamError::OutOfRange { offset });
        }
        self.entries += 1;
        self.data_bytes += (p.len() - ENTRY_FIXED) as u64;
        Ok(SnapshotStreamEntry {
            cf,
            key,
            value: &p[key_end..],
        })
    }

    /// Checks the end record `rec` against what was read, and that nothing follows it.
    fn end(&mut self, rec: &RecordAt) -> Result<(), SnapshotStreamError> {
        let p = &self.payload;
        if p.len() != END_PAYLOAD {
            return Err(SnapshotStreamError::Malformed {
                offset: rec.offset,
                what: "end",
                reason: "payload is not 20 bytes",
            });
        }
        let (entries, data_bytes, stream_crc) = (u64_at(p, 0), u64_at(p, 8), u32_at(p, 16));
        for (what, stored, found) in [
            ("entries", entries, self.entries),
            ("data bytes", data_bytes, self.data_bytes),
        ] {
            if stored != found {
                return Err(SnapshotStreamError::CountMismatch {
                    offset: rec.offset,
                    what,
                    stored,
                    found,
                });
            }
        }
        if stream_crc != rec.crc_before {
            return Err(SnapshotStreamError::Checksum {
                offset: rec.offset,
                what: "stream",
                stored: stream_crc,
                computed: rec.crc_before,
            });
        }
        if !self.at_eof()? {
            return Err(SnapshotStreamError::TrailingBytes {
                offset: self.offset,
            });
        }
        self.ended = true;
        Ok(())
    }

    /// Reads one record into `payload` and checks its tag, length and CRC; `None` when the
    /// input ends exactly where a record would start.
    fn read_record(&mut self) -> Result<Option<RecordAt>, SnapshotStreamError> {
        let offset = self.offset;
        if self.at_eof()? {
            return Ok(None);
        }
        let mut head = [0u8; RECORD_HEAD];
        self.fill(&mut head, "record head")?;
        let tag = head[0];
        if ![TAG_HEADER, TAG_ENTRY, TAG_END].contains(&tag) {
            return Err(SnapshotStreamError::UnknownRecord { offset, tag });
        }
        let len = u32_at(&head, 1);
        if len > SNAPSHOT_STREAM_MAX_RECORD {
            return Err(SnapshotStreamError::Oversized {
                offset,
                len: u64::from(len),
                max: u64::from(SNAPSHOT_STREAM_MAX_RECORD),
            });
        }
        if self.payload.capacity() > KEEP_PAYLOAD {
            self.payload = Vec::new();
        }
        self.payload.clear();
        // `take` + `read_to_end` grows the buffer as bytes arrive: a damaged length within
        // the limit costs no more memory than the input actually holds.
        let read = (&mut self.input)
            .take(u64::from(len))
            .read_to_end(&mut self.payload)
            .map_err(|e| io_error(offset + RECORD_HEAD as u64, &e))?;
        self.offset += read as u64;
        if read < len as usize {
            return Err(SnapshotStreamError::Truncated {
                offset,
                what: "record payload",
            });
        }
        let mut stored = [0u8; RECORD_CRC];
        self.fill(&mut stored, "record checksum")?;
        let mut crc = Hasher::new();
        crc.update(&head);
        crc.update(&self.payload);
        let computed = crc.clone().finalize();
        let stored_crc = u32::from_le_bytes(stored);
        if stored_crc != computed {
            return Err(SnapshotStreamError::Checksum {
                offset,
                what: "record",
                stored: stored_crc,
                computed,
            });
        }
        crc.update(&stored);
        let crc_before = self.stream_crc.clone().finalize();
        self.stream_crc.combine(&crc);
        Ok(Some(RecordAt {
            tag,
            offset,
            crc_before,
        }))
    }

    /// Whether the input has no byte left (read from it if need be).
    fn at_eof(&mut self) -> Result<bool, SnapshotStreamError> {
        loop {
            match self.input.fill_buf() {
                Ok(bytes) => return Ok(bytes.is_empty()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(self.offset, &e)),
            }
        }
    }

    /// Fills `buf` from the input; a short input is [`SnapshotStreamError::Truncated`] at
    /// the offset where `what` starts.
    fn fill(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), SnapshotStreamError> {
        let offset = self.offset;
        match self.input.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(SnapshotStreamError::Truncated { offset, what })
            }
            Err(e) => Err(io_error(offset, &e)),
        }
    }
}

/// A failed read of the input at `offset`.
fn io_error(offset: u64, e: &io::Error) -> SnapshotStreamError {
    SnapshotStreamError::Io {
        offset,
        detail: e.to_string(),
    }
}

/// The header in the payload of the record at `offset`.
fn decode_header(p: &[u8], offset: u64) -> Result<SnapshotStreamHeader, SnapshotStreamError> {
    let malformed = |reason| SnapshotStreamError::Malformed {
        offset,
        what: "header",
        reason,
    };
    if p.len() < HEADER_FIXED {
        return Err(malformed("shorter than its fixed fields"));
    }
    let applied_index = u64_at(p, 0);
    // Each length is checked against what is left before the bytes are taken.
    let take = |at: usize, reason| -> Result<(&[u8], usize), SnapshotStreamError> {
        let len = u32_at(p, at) as usize;
        let start = at + 4;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= p.len())
            .ok_or(malformed(reason))?;
        Ok((&p[start..end], end))
    };
    let (start, next) = take(8, "start key longer than the record")?;
    if next + 4 > p.len() {
        return Err(malformed("no room for the end key's length"));
    }
    let (end, next) = take(next, "end key longer than the record")?;
    Ok(SnapshotStreamHeader {
        applied_index,
        record: RegionRecord {
            start: start.to_vec(),
            end: end.to_vec(),
            state: p[next..].to_vec(),
        },
    })
}

/// The little-endian u32 at `at` (the caller checked that `p` holds it).
fn u32_at(p: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&p[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The little-endian u64 at `at` (the caller checked that `p` holds it).
fn u64_at(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[at..at + 8]);
    u64::from_le_bytes(b)
}
