//! [`SnapshotStreamWriter`]: encodes a snapshot stream into a sink, in bounded pieces.

use std::io;

use crc32fast::Hasher;

use super::error::SnapshotStreamError;
use super::format::{
    FLUSH_BYTES, MAGIC, SNAPSHOT_STREAM_MAX_PIECE, SNAPSHOT_STREAM_MAX_RECORD, TAG_END, TAG_ENTRY,
    TAG_HEADER, cf_code,
};
use crate::engine::cf::Cf;
use crate::engine::region_record::RegionRecord;

/// Writes a snapshot stream (its layout is drawn in `txn/src/engine/snapshot_stream/mod.rs`;
/// [`crate::SnapshotStreamReader`] reads it): the header when created, then one record per
/// [`SnapshotStreamWriter::entry`], then the end record in [`SnapshotStreamWriter::finish`].
///
/// # Invariants
/// - Records are buffered and handed to the sink once the buffer holds 512 KiB, in pieces
///   of at most [`crate::SNAPSHOT_STREAM_MAX_PIECE`]: memory stays at about one piece plus the
///   largest record, whatever the snapshot's size.
/// - After the sink refused a piece, every call fails: the stream is over.
pub struct SnapshotStreamWriter<'a> {
    sink: &'a mut dyn FnMut(&[u8]) -> io::Result<()>,
    /// Encoded records not yet handed to the sink.
    buf: Vec<u8>,
    /// Bytes handed to the sink so far (the stream offset of `buf`'s first byte).
    flushed: u64,
    /// CRC-32 of every byte encoded so far.
    stream_crc: Hasher,
    entries: u64,
    data_bytes: u64,
    /// Set once the sink refused a piece.
    refused: Option<SnapshotStreamError>,
}

impl std::fmt::Debug for SnapshotStreamWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotStreamWriter")
            .field("offset", &self.offset())
            .field("entries", &self.entries)
            .finish()
    }
}

impl<'a> SnapshotStreamWriter<'a> {
    /// Starts a stream into `sink` with the header: the region's `record` and the
    /// `applied_index` of the engine its entries come from.
    ///
    /// # Errors
    /// [`SnapshotStreamError::Oversized`] when the record does not fit one record.
    pub fn new(
        sink: &'a mut dyn FnMut(&[u8]) -> io::Result<()>,
        applied_index: u64,
        record: &RegionRecord,
    ) -> Result<SnapshotStreamWriter<'a>, SnapshotStreamError> {
        let mut w = SnapshotStreamWriter {
            sink,
            buf: Vec::with_capacity(FLUSH_BYTES + (64 << 10)),
            flushed: 0,
            stream_crc: Hasher::new(),
            entries: 0,
            data_bytes: 0,
            refused: None,
        };
        w.buf.extend_from_slice(MAGIC);
        w.stream_crc.update(MAGIC);
        w.record(
            TAG_HEADER,
            &[
                &applied_index.to_le_bytes(),
                &len_u32(&record.start).to_le_bytes(),
                &record.start,
                &len_u32(&record.end).to_le_bytes(),
                &record.end,
                &record.state,
            ],
        )?;
        Ok(w)
    }

    /// Adds one entry of `cf`.
    ///
    /// # Errors
    /// [`SnapshotStreamError::Sink`] when the sink refused a piece (now or before);
    /// [`SnapshotStreamError::Oversized`] when the entry does not fit one record.
    pub fn entry(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<(), SnapshotStreamError> {
        self.record(
            TAG_ENTRY,
            &[&[cf_code(cf)], &len_u32(key).to_le_bytes(), key, value],
        )?;
        self.entries += 1;
        self.data_bytes += (key.len() + value.len()) as u64;
        Ok(())
    }

    /// Writes the end record and hands the sink everything still buffered.
    ///
    /// # Errors
    /// [`SnapshotStreamError::Sink`] when the sink refused a piece (now or before).
    pub fn finish(mut self) -> Result<(), SnapshotStreamError> {
        let stream_crc = self.stream_crc.clone().finalize();
        self.record(
            TAG_END,
            &[
                &self.entries.to_le_bytes(),
                &self.data_bytes.to_le_bytes(),
                &stream_crc.to_le_bytes(),
            ],
        )?;
        self.flush()
    }

    /// The stream's length so far (handed to the sink or buffered).
    pub fn offset(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Encodes one record of `tag` whose payload is `parts` concatenated.
    fn record(&mut self, tag: u8, parts: &[&[u8]]) -> Result<(), SnapshotStreamError> {
        if let Some(e) = &self.refused {
            return Err(e.clone());
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let len = u32::try_from(len)
            .ok()
            .filter(|n| *n <= SNAPSHOT_STREAM_MAX_RECORD)
            .ok_or(SnapshotStreamError::Oversized {
                offset: self.offset(),
                len: len as u64,
                max: u64::from(SNAPSHOT_STREAM_MAX_RECORD),
            })?;
        let start = self.buf.len();
        self.buf.push(tag);
        self.buf.extend_from_slice(&len.to_le_bytes());
        for part in parts {
            self.buf.extend_from_slice(part);
        }
        // One pass over the record: its own CRC, then (with the CRC's bytes) the stream's.
        let mut crc = Hasher::new();
        crc.update(&self.buf[start..]);
        let own = crc.clone().finalize().to_le_bytes();
        crc.update(&own);
        self.buf.extend_from_slice(&own);
        self.stream_crc.combine(&crc);
        if self.buf.len() >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the buffer to the sink in pieces of at most [`SNAPSHOT_STREAM_MAX_PIECE`].
    fn flush(&mut self) -> Result<(), SnapshotStreamError> {
        for piece in self.buf.chunks(SNAPSHOT_STREAM_MAX_PIECE) {
            if let Err(e) = (self.sink)(piece) {
                let err = SnapshotStreamError::Sink {
                    offset: self.flushed,
                    detail: e.to_string(),
                };
                self.refused = Some(err.clone());
                return Err(err);
            }
            self.flushed += piece.len() as u64;
        }
        self.buf.clear();
        // A record larger than a piece grew the buffer; give that memory back.
        if self.buf.capacity() > 2 * SNAPSHOT_STREAM_MAX_PIECE {
            self.buf.shrink_to(FLUSH_BYTES + (64 << 10));
        }
        Ok(())
    }
}

/// `bytes`' length as the format's u32; a longer slice makes its record oversized anyway
/// (the record's length check refuses it), so the value written then does not matter.
fn len_u32(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.len()).unwrap_or(u32::MAX)
}
