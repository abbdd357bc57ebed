//! [`SnapshotStreamError`]: why a snapshot stream could not be written or read.

/// Why a snapshot stream could not be written or read. Every variant read from a stream
/// names the byte offset (from the stream's first byte) where the problem was found.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotStreamError {
    /// The stream does not start with the format's magic.
    #[error("snapshot stream: no magic SGSNAPS1 at byte 0 (found {found:02x?})")]
    BadMagic {
        /// The first eight bytes found.
        found: [u8; 8],
    },
    /// The stream ends before a record is complete, or before its end record.
    #[error("snapshot stream truncated at byte {offset}: {what} incomplete")]
    Truncated {
        /// Where the incomplete part starts.
        offset: u64,
        /// What is incomplete.
        what: &'static str,
    },
    /// A record's tag is none of the format's.
    #[error("snapshot stream: unknown record type {tag} at byte {offset}")]
    UnknownRecord {
        /// Where the record starts.
        offset: u64,
        /// The tag found.
        tag: u8,
    },
    /// A record claims a payload above [`crate::SNAPSHOT_STREAM_MAX_RECORD`] (or would
    /// need one, when writing).
    #[error("snapshot stream: record at byte {offset} of {len} bytes, above the limit of {max}")]
    Oversized {
        /// Where the record starts.
        offset: u64,
        /// Its payload's length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A stored CRC does not match the bytes it covers.
    #[error(
        "snapshot stream: {what} checksum mismatch at byte {offset} \
         (stored {stored:#010x}, computed {computed:#010x})"
    )]
    Checksum {
        /// Where the record starts.
        offset: u64,
        /// `record` (the record's own CRC) or `stream` (the end record's).
        what: &'static str,
        /// The CRC in the stream.
        stored: u32,
        /// The CRC of the bytes read.
        computed: u32,
    },
    /// A record's payload does not hold what its type needs.
    #[error("snapshot stream: malformed {what} record at byte {offset}: {reason}")]
    Malformed {
        /// Where the record starts.
        offset: u64,
        /// The record's type.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A record where another was expected (a second header, an entry before the header).
    #[error("snapshot stream: {found} record at byte {offset} where {expected} was expected")]
    OutOfOrder {
        /// Where the record starts.
        offset: u64,
        /// The record's type.
        found: &'static str,
        /// What the format has there.
        expected: &'static str,
    },
    /// The end record's counts differ from what the stream held.
    #[error(
        "snapshot stream: end record at byte {offset} counts {stored} {what}, \
         the stream held {found}"
    )]
    CountMismatch {
        /// Where the end record starts.
        offset: u64,
        /// `entries` or `data bytes`.
        what: &'static str,
        /// The count in the end record.
        stored: u64,
        /// The count of what was read.
        found: u64,
    },
    /// An entry's key lies outside the header's range.
    #[error("snapshot stream: entry at byte {offset} has a key outside the region's range")]
    OutOfRange {
        /// Where the entry starts.
        offset: u64,
    },
    /// Bytes follow the end record.
    #[error("snapshot stream: bytes after the end record, at byte {offset}")]
    TrailingBytes {
        /// Where the extra bytes start.
        offset: u64,
    },
    /// Reading the stream failed.
    #[error("snapshot stream: reading at byte {offset}: {detail}")]
    Io {
        /// Where the read started.
        offset: u64,
        /// The I/O error.
        detail: String,
    },
    /// The sink refused a piece (the receiver went away): the stream is over.
    #[error("snapshot stream: the sink refused the piece at byte {offset}: {detail}")]
    Sink {
        /// Where the refused piece starts.
        offset: u64,
        /// The sink's error.
        detail: String,
    },
}
