//! Error types: one for decoding a single event, one for everything the log does.

use std::io;
use std::path::PathBuf;

/// Why bytes could not be decoded as a binlog event (without the file and offset; see
/// [`Error::Corrupt`] for those).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The file does not start with the binlog magic `FE 62 69 6E`.
    #[error("bad magic {found:02x?} (want fe 62 69 6e)")]
    BadMagic {
        /// The first bytes of the file.
        found: Vec<u8>,
    },
    /// The event (or the file) ends before the event's declared size.
    #[error("truncated event: need {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the event header declares (or the minimum header size).
        needed: u64,
        /// Bytes actually present.
        available: u64,
    },
    /// The declared event size is impossible (smaller than header plus checksum).
    #[error("bad event length {size}")]
    BadLength {
        /// The `event_size` field of the header.
        size: u32,
    },
    /// The stored CRC-32 does not match the event's bytes.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadChecksum {
        /// CRC stored in the last four bytes of the event.
        stored: u32,
        /// CRC computed over the header and body.
        computed: u32,
    },
    /// The event type is not one this crate knows.
    #[error("unknown event type {type_code}")]
    UnknownType {
        /// The type byte of the header.
        type_code: u8,
    },
    /// A known event type whose body does not parse.
    #[error("malformed {event} event: {what}")]
    Malformed {
        /// The event type's name.
        event: &'static str,
        /// What was wrong.
        what: &'static str,
    },
}

/// Everything that can go wrong in this crate.
///
/// Fatal errors (I/O failure while writing the log, [`Error::Poisoned`]) stop the log: later
/// commits fail until it is reopened, which runs recovery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call failed.
    #[error("binlog: {op} {path}: {source}")]
    Io {
        /// What was being done (`"open"`, `"fsync"`, ...).
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Bytes in a file did not decode.
    #[error("binlog: corrupt {file} at offset {offset}: {source}")]
    Corrupt {
        /// The file being read.
        file: PathBuf,
        /// Byte offset of the event (or of the magic) in the file.
        offset: u64,
        /// What was wrong.
        #[source]
        source: DecodeError,
    },
    /// A reader was asked to start at an offset where no event starts (inside an event, or
    /// inside the file's magic).
    #[error("binlog: offset {offset} in {file} is not an event boundary ({reason})")]
    NotEventBoundary {
        /// The file.
        file: PathBuf,
        /// The offset asked for.
        offset: u64,
        /// What the bytes there failed: the header check that refused them.
        reason: &'static str,
    },
    /// The log was shut down ([`crate::Binlog::shutdown`]); it accepts no more commits.
    #[error("binlog: the log was shut down; open it again to commit")]
    Closed,
    /// Another process (or another [`crate::Binlog`] in this one) has the directory open.
    #[error("binlog: {path} is locked by another writer")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// A configuration value is out of range.
    #[error("binlog: bad configuration: {what} ({detail})")]
    Config {
        /// The setting.
        what: &'static str,
        /// Why it was refused.
        detail: String,
    },
    /// An argument was refused (too long a key, unknown file name, ...).
    #[error("binlog: invalid argument {what}: {detail}")]
    Invalid {
        /// Which argument.
        what: &'static str,
        /// Why.
        detail: String,
    },
    /// A row value does not fit its column (wrong kind, out of range, too long), or a row
    /// has the wrong number of values: the statement was not added.
    #[error("binlog: table {table}, column {column}: {reason}")]
    BadValue {
        /// The table, as `db.table`.
        table: String,
        /// The column's name (or `#n` when the row has the wrong length).
        column: String,
        /// Why the value was refused.
        reason: String,
    },
    /// An earlier write or fsync failed; the log accepts no more commits until reopened.
    #[error("binlog: log closed after an earlier failure: {reason}")]
    Poisoned {
        /// The first failure.
        reason: String,
    },
}

impl Error {
    /// Builds an [`Error::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Corrupt`].
    pub(crate) fn corrupt(file: impl Into<PathBuf>, offset: u64, source: DecodeError) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset,
            source,
        }
    }

    /// Whether the error means the log itself is damaged or stopped (as opposed to a refused
    /// argument the caller can correct).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Error::Io { .. } | Error::Corrupt { .. } | Error::Poisoned { .. } | Error::Closed
        )
    }
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
