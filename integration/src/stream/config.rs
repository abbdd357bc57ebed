//! [`StreamConfig`]: where and how a node keeps its copy of the replica stream.

use std::path::PathBuf;

use super::retention::Retention;

/// The stream's server id: what a replica sees as its primary's. It must differ from every
/// replica's own `server_id` (MariaDB drops events carrying its own id) and from the nodes'
/// ids, which their own binlogs use.
pub const DEFAULT_STREAM_SERVER_ID: u32 = 1000;
/// The stream's GTID domain.
pub const DEFAULT_STREAM_DOMAIN_ID: u32 = 0;
/// Files rotate once they pass this size (MariaDB's `max_binlog_size` is 1 GiB; smaller
/// files let a replica's restart find its position sooner).
pub const DEFAULT_STREAM_FILE_SIZE: u64 = 256 << 20;
/// A group at least this large gets a file of its own (see [`StreamConfig::large_group`]).
pub const DEFAULT_LARGE_GROUP: u64 = surge_binlog::DEFAULT_LARGE_COMMIT_THRESHOLD;
/// Base name of the stream's files: `surge-stream-bin.000001`, ...
pub const STREAM_BASE_NAME: &str = "surge-stream-bin";

/// A node's replica stream settings. Every node of a cluster must use the same shared
/// settings ([`StreamConfig::shared_settings`]: all fields but `dir`, `retention`,
/// `expire_logs` and `round_every`): the files are a function of the cluster's history and
/// of these settings alone, which is what makes every node's copy byte-identical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// The directory of the files and the cursor.
    pub dir: PathBuf,
    /// Server id of every event.
    pub server_id: u32,
    /// GTID domain of every group.
    pub domain_id: u32,
    /// Rotation size.
    pub max_file_size: u64,
    /// A group of at least this many bytes is written alone to a file of its own (built
    /// aside and renamed into place), as MariaDB 11.7 commits a large transaction by
    /// renaming its cache file into the next binlog file.
    pub large_group: u64,
    /// How long the cluster keeps records every node has, and who collects them. Not
    /// one of the shared settings: it changes what the store keeps, not the files' bytes
    /// (the collecting node's policy is the one applied).
    pub retention: Retention,
    /// Stream files last modified longer ago than this are removed (never the last one,
    /// nor one a replica is reading), as MariaDB's `binlog_expire_logs_seconds`; `None`
    /// (the default, as MariaDB's 0) keeps them all. Not a shared setting: each node's
    /// files are its own, and a replica asking for a GTID in a removed file gets 1236.
    pub expire_logs: Option<std::time::Duration>,
    /// Time from one follower round's start to the next (each round takes the cluster's
    /// watermark and reads the records below it: a few requests per table lane, on every
    /// node). Not a shared setting: it changes when a node's copy grows, not its bytes.
    ///
    /// Each round reads the last `max_record_skew` (5 s) of every lane's records again,
    /// so what rounds cost grows with the commit rate and shrinks with this interval,
    /// while a replica's lag grows with it: at 32 sysbench `oltp_write_only` threads the
    /// three nodes' readers took 201-323 us of CPU per committed transaction with 50 ms
    /// rounds and 82-92 us with 200 ms (the default).
    pub round_every: std::time::Duration,
}

/// [`StreamConfig::round_every`]'s default.
pub const DEFAULT_STREAM_ROUND: std::time::Duration = std::time::Duration::from_millis(200);

impl StreamConfig {
    /// The defaults, in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> StreamConfig {
        StreamConfig {
            dir: dir.into(),
            server_id: DEFAULT_STREAM_SERVER_ID,
            domain_id: DEFAULT_STREAM_DOMAIN_ID,
            max_file_size: DEFAULT_STREAM_FILE_SIZE,
            large_group: DEFAULT_LARGE_GROUP,
            retention: Retention::default(),
            expire_logs: None,
            round_every: DEFAULT_STREAM_ROUND,
        }
    }

    /// Sets [`StreamConfig::round_every`].
    #[must_use]
    pub fn with_round_every(mut self, every: std::time::Duration) -> StreamConfig {
        self.round_every = every;
        self
    }

    /// Sets [`StreamConfig::max_file_size`].
    #[must_use]
    pub fn with_max_file_size(mut self, bytes: u64) -> StreamConfig {
        self.max_file_size = bytes;
        self
    }

    /// Sets [`StreamConfig::large_group`].
    #[must_use]
    pub fn with_large_group(mut self, bytes: u64) -> StreamConfig {
        self.large_group = bytes;
        self
    }

    /// Sets [`StreamConfig::retention`].
    #[must_use]
    pub fn with_retention(mut self, retention: Retention) -> StreamConfig {
        self.retention = retention;
        self
    }

    /// Sets [`StreamConfig::expire_logs`].
    #[must_use]
    pub fn with_expire_logs(mut self, keep: Option<std::time::Duration>) -> StreamConfig {
        self.expire_logs = keep;
        self
    }

    /// Sets [`StreamConfig::server_id`].
    #[must_use]
    pub fn with_server_id(mut self, id: u32) -> StreamConfig {
        self.server_id = id;
        self
    }

    /// The settings every node of a cluster must share, as the text kept in the store
    /// (`TxnClient::stream_claim_settings`): the server and domain ids, the file size and
    /// the large-group bound.
    pub fn shared_settings(&self) -> String {
        format!(
            "server_id={} domain_id={} max_file_size={} large_group={}",
            self.server_id, self.domain_id, self.max_file_size, self.large_group
        )
    }

    /// The name of file number `n` (`surge-stream-bin.000001` for 1).
    pub fn file_name(n: u32) -> String {
        format!("{STREAM_BASE_NAME}.{n:06}")
    }

    /// The number of a stream file's name, `None` for any other name.
    pub fn file_number(name: &str) -> Option<u32> {
        let digits = name.strip_prefix(STREAM_BASE_NAME)?.strip_prefix('.')?;
        if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        assert_eq!(StreamConfig::file_name(1), "surge-stream-bin.000001");
        assert_eq!(
            StreamConfig::file_number("surge-stream-bin.000042"),
            Some(42)
        );
        assert_eq!(StreamConfig::file_number("surge-stream-bin.index"), None);
        assert_eq!(StreamConfig::file_number("surge-stream-bin.12"), None);
        assert_eq!(StreamConfig::file_number("other.000001"), None);
    }
}
