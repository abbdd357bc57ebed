//! [`ReplicationSource`]: the binlog a MySQL port serves to replicas.

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

/// A growing, ordered binlog: files of MariaDB binlog events (format v4, CRC-32), each
/// beginning with the magic, a Format_description, a Gtid_list (the GTID state before the
/// file's first group) and a Binlog_checkpoint.
///
/// # Contract
/// * Files only grow at the end of the last one; a file that is not the last never changes
///   again (so a replica may be sent all of it).
/// * Within [`end`](ReplicationSource::end) every event is whole and every GTID group is
///   complete: a replica is never sent a partial group. Bytes past it may be a group still
///   being written.
/// * A file may start with one large group only (a transaction committed by renaming its
///   spill file into the log): nothing limits the size of a file or of an event.
/// * The bytes of a GTID, once within `end`, never change: a replica that reconnects gets
///   the same group for the same GTID.
pub trait ReplicationSource: Send + Sync + Debug {
    /// The binlog files in order: (basename, path). Only the last may still grow.
    fn files(&self) -> Vec<(String, PathBuf)>;

    /// The end of the complete groups: (basename, offset). Bytes past it may be a group
    /// being written.
    fn end(&self) -> (String, u64);

    /// Blocks until [`end`](ReplicationSource::end) is past `(file, offset)` (a later file,
    /// or a larger offset in `file`) or `timeout` passed; returns `end()`.
    fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64);

    /// The server_id of the stream's events (the answer to
    /// `SHOW VARIABLES LIKE 'SERVER_ID'`).
    fn server_id(&self) -> u32;

    /// How long a replica asking to start after a GTID this source does not hold yet
    /// waits for it before it is refused with ERR 1236. MariaDB refuses at once (the
    /// default, zero); a source that may lag behind another serving the same stream (a
    /// replica moving to it after a failover) can give it time to catch up.
    fn start_grace(&self) -> Duration {
        Duration::ZERO
    }
}

/// Whether `end` is past `(file, offset)`: in another (later) file, or further in the same.
pub(crate) fn is_past(end: &(String, u64), file: &str, offset: u64) -> bool {
    end.0 != file || end.1 > offset
}
