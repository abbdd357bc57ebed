//! [`ReplicationError`]: why a binlog dump cannot go on. A replica is told with ERR 1236
//! (`ER_MASTER_FATAL_ERROR_READING_BINLOG`), which stops its IO thread without a retry, as
//! MariaDB does for the same causes.

use std::io;
use std::path::{Path, PathBuf};

use surge_binlog::Gtid;

/// Why a binlog dump stopped (or could not start).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicationError {
    /// The replica asked to start after a GTID the binlog does not hold.
    #[error(
        "Error: connecting slave requested to start from GTID {}-{}-{}, which is not in the master's binlog",
        gtid.domain_id, gtid.server_id, gtid.seq_no
    )]
    GtidNotInBinlog {
        /// The requested GTID.
        gtid: Gtid,
    },
    /// No file's leading GTID state is covered by the request: the files it needs are gone.
    #[error(
        "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged."
    )]
    StateNotFound,
    /// `@slave_connect_state` did not parse.
    #[error("Error: {0}")]
    BadConnectState(#[from] super::gtid_pos::GtidPosError),
    /// A file/position request named a file the binlog does not list.
    #[error("Could not find first log file name in binary log index file ({file:?})")]
    NoSuchFile {
        /// The requested file name.
        file: String,
    },
    /// A file/position request named an offset that is not an event's start.
    #[error(
        "Client requested master to start replication from impossible position {offset} in {file:?}"
    )]
    BadPosition {
        /// The file.
        file: String,
        /// The offset.
        offset: u64,
    },
    /// The file being streamed left the binlog (purged) before the replica caught up.
    #[error("binlog file {file:?} is no longer in the binlog")]
    FileGone {
        /// The file.
        file: String,
    },
    /// The client never set `@master_binlog_checksum`, so it cannot handle the CRC-32
    /// every event of the binlog carries (MariaDB's wording).
    #[error(
        "Slave can not handle replication events with the checksum that master is configured to log; the first event '{file}' at {pos}"
    )]
    ChecksumUnaware {
        /// The first file asked for.
        file: String,
        /// The position asked for in it.
        pos: u64,
    },
    /// `PURGE BINARY LOGS TO` named a file the binlog does not list (MariaDB's 1373).
    #[error("Target log not found in binlog index ({file:?})")]
    PurgeTargetNotFound {
        /// The name given.
        file: String,
    },
    /// A purge could not be carried out.
    #[error("PURGE BINARY LOGS: {detail}")]
    PurgeFailed {
        /// Why.
        detail: String,
    },
    /// A binlog file could not be read.
    #[error("could not {what} binlog file {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A binlog file holds something that is not a valid event where one must be.
    #[error("binlog file {path} at offset {offset}: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The offset of the bad event.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
}

impl ReplicationError {
    /// A [`ReplicationError::Io`].
    pub(crate) fn io(what: &'static str, path: &Path, source: io::Error) -> ReplicationError {
        ReplicationError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}
