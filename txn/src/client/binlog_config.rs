//! [`BinlogOptions`]: the binlog a coordinator ([`crate::TxnClient`]) owns.

use std::path::PathBuf;

use surge_binlog::{BinlogConfig, DEFAULT_LARGE_COMMIT_THRESHOLD, DEFAULT_MAX_BINLOG_SIZE};

/// Where and how a coordinator writes its binlog (set in [`crate::ClientConfig::binlog`]).
///
/// One directory belongs to one coordinator: it holds the MariaDB binlog files, their index,
/// the transaction caches that spilled (`#binlog_cache_files/`) and the coordinator's
/// prepare journal (`surge-txn.prepare`, see the crate README, "Binlog at commit"). Give each
/// coordinator its own `server_id` and GTID domain, as each MariaDB primary has its own.
///
/// Build it with [`BinlogOptions::new`] (or [`BinlogOptions::default`] and
/// [`BinlogOptions::with_dir`]) and the `with_*` methods, or assign the public fields of such
/// a value: the struct is `#[non_exhaustive]`, so later settings can be added without
/// breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinlogOptions {
    /// The directory (created if absent).
    pub dir: PathBuf,
    /// Server id in every event header and GTID. Default 1.
    pub server_id: u32,
    /// GTID domain of the coordinator's transactions. Default 0.
    pub gtid_domain: u32,
    /// A transaction whose cache spilled past this many bytes commits by renaming its cache
    /// file into a new binlog file (MariaDB 11.7's `binlog_large_commit_threshold`, at least
    /// 1 MiB). Default 128 MiB.
    pub large_commit_threshold: u64,
    /// Whether large caches commit by rename at all (`false`: always copied, for
    /// comparisons). Default true.
    pub commit_by_rename: bool,
    /// Binlog files rotate at this size (4096 ..= 1 GiB). Default 1 GiB.
    pub max_binlog_size: u64,
}

impl Default for BinlogOptions {
    /// The defaults of [`BinlogOptions::new`] without a directory, which opening the binlog
    /// refuses: set it with [`BinlogOptions::with_dir`].
    fn default() -> BinlogOptions {
        BinlogOptions {
            dir: PathBuf::new(),
            server_id: 1,
            gtid_domain: 0,
            large_commit_threshold: DEFAULT_LARGE_COMMIT_THRESHOLD,
            commit_by_rename: true,
            max_binlog_size: DEFAULT_MAX_BINLOG_SIZE,
        }
    }
}

impl BinlogOptions {
    /// Defaults in `dir`: server 1, domain 0, 128 MiB rename threshold, 1 GiB files.
    pub fn new(dir: impl Into<PathBuf>) -> BinlogOptions {
        BinlogOptions::default().with_dir(dir)
    }

    /// Sets [`BinlogOptions::dir`].
    #[must_use]
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> BinlogOptions {
        self.dir = dir.into();
        self
    }

    /// Sets [`BinlogOptions::server_id`].
    #[must_use]
    pub fn with_server_id(mut self, id: u32) -> BinlogOptions {
        self.server_id = id;
        self
    }

    /// Sets [`BinlogOptions::gtid_domain`].
    #[must_use]
    pub fn with_gtid_domain(mut self, domain: u32) -> BinlogOptions {
        self.gtid_domain = domain;
        self
    }

    /// Sets [`BinlogOptions::large_commit_threshold`].
    #[must_use]
    pub fn with_large_commit_threshold(mut self, bytes: u64) -> BinlogOptions {
        self.large_commit_threshold = bytes;
        self
    }

    /// Sets [`BinlogOptions::commit_by_rename`].
    #[must_use]
    pub fn with_commit_by_rename(mut self, on: bool) -> BinlogOptions {
        self.commit_by_rename = on;
        self
    }

    /// Sets [`BinlogOptions::max_binlog_size`].
    #[must_use]
    pub fn with_max_binlog_size(mut self, bytes: u64) -> BinlogOptions {
        self.max_binlog_size = bytes;
        self
    }

    /// The `surge-binlog` settings these options stand for.
    pub(crate) fn binlog_config(&self) -> BinlogConfig {
        BinlogConfig::new(&self.dir)
            .with_server_id(self.server_id)
            .with_domain_id(self.gtid_domain)
            .with_large_commit_threshold(self.large_commit_threshold)
            .with_commit_by_rename(self.commit_by_rename)
            .with_max_binlog_size(self.max_binlog_size)
    }
}
