//! Why a dump stopped, as one plain sentence naming the input and, for damage, the offset.

use surge_binlog::{BINLOG_MAGIC, DecodeError};

use super::HexBytes;

/// The binlog magic in the dump's hex style, for the messages below.
struct Magic;

impl std::fmt::Display for Magic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        HexBytes(BINLOG_MAGIC.to_vec()).fmt(f)
    }
}

/// Why a dump stopped. `input` is the file's path as given, or `standard input`.
///
/// Every message is one sentence a reader can act on; bytes expected and found print in the
/// same style ([`HexBytes`]).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The input could not be opened.
    #[error("cannot open {input}: {source}")]
    Open {
        /// The input's name.
        input: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The input is a directory.
    #[error(
        "{input} is a directory: `binlog dump` reads one file; to read every binlog file \
         under it run `surgedb binlog verify {input}`"
    )]
    IsDirectory {
        /// The input's name.
        input: String,
    },
    /// The input could not be read (or standard input could not be copied to a scratch file).
    #[error("cannot read {input}: {source}")]
    Read {
        /// The input's name.
        input: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The input has no bytes at all.
    #[error(
        "{input} is empty (0 bytes); a binlog file starts with the 4 bytes {}",
        Magic
    )]
    Empty {
        /// The input's name.
        input: String,
    },
    /// The input ends inside the 4-byte magic: it begins like a binlog file but was cut.
    #[error(
        "{input} is truncated: it holds only {found} ({} of the 4 bytes of the binlog magic {})",
        found.0.len(),
        Magic
    )]
    TruncatedMagic {
        /// The input's name.
        input: String,
        /// All the bytes the input holds (a proper prefix of the magic).
        found: HexBytes,
    },
    /// The input does not start with the binlog magic.
    #[error(
        "{input} is not a binlog file: it starts with {found}, a binlog file with {}",
        Magic
    )]
    NotBinlog {
        /// The input's name.
        input: String,
        /// The input's first bytes (up to 4).
        found: HexBytes,
    },
    /// The input ends inside an event: the file was cut (or is still being written).
    #[error(
        "{input} is truncated: the event at byte offset {offset} needs {needed} bytes but only \
         {available} remain"
    )]
    Truncated {
        /// The input's name.
        input: String,
        /// Byte offset of the cut event.
        offset: u64,
        /// Bytes the event needs (its declared size, or the 19-byte header).
        needed: u64,
        /// Bytes left in the input from `offset`.
        available: u64,
    },
    /// An event does not decode (bad checksum, bad length, unknown type, malformed body).
    #[error("{input} is damaged at byte offset {offset}: {reason}")]
    Damaged {
        /// The input's name.
        input: String,
        /// Byte offset of the event.
        offset: u64,
        /// What is wrong with it.
        reason: DecodeError,
    },
    /// Any other failure of the binlog reader.
    #[error("cannot dump {input}: {source}")]
    Binlog {
        /// The input's name.
        input: String,
        /// The reader's error.
        #[source]
        source: surge_binlog::Error,
    },
    /// Writing the output failed.
    #[error("cannot write the dump: {0}")]
    Output(#[source] std::io::Error),
}

impl DumpError {
    /// Turns an error of the binlog reader into the sentence for `input`: the reader's own
    /// message names the scratch file when `input` is standard input, so it is rebuilt here.
    pub(crate) fn from_binlog(input: &str, error: surge_binlog::Error) -> Self {
        let input = input.to_owned();
        match error {
            surge_binlog::Error::Corrupt {
                offset,
                source: DecodeError::Truncated { needed, available },
                ..
            } => DumpError::Truncated {
                input,
                offset,
                needed,
                available,
            },
            surge_binlog::Error::Corrupt { offset, source, .. } => DumpError::Damaged {
                input,
                offset,
                reason: source,
            },
            surge_binlog::Error::Io { source, .. } => DumpError::Read { input, source },
            source => DumpError::Binlog { input, source },
        }
    }

    /// Whether the error is only that the reader of the output went away (`surgedb binlog
    /// dump FILE | head`), which is no failure of the dump.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, DumpError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
