//! Settings of a [`crate::Binlog`].

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// When the leader of a commit group calls `fsync` on the binlog (MariaDB `sync_binlog`).
/// More policies may be added (so match with a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// After every group: a commit that returned is durable (`sync_binlog=1`).
    EveryGroup,
    /// After every N groups (`sync_binlog=N`): a crash may lose up to N−1 returned groups.
    EveryNGroups(NonZeroU32),
    /// Never (`sync_binlog=0`): left to the kernel; a power cut may lose returned commits.
    Never,
}

/// 1 GiB, MariaDB's default and largest `max_binlog_size`.
pub const DEFAULT_MAX_BINLOG_SIZE: u64 = 1 << 30;
/// 128 MiB, MariaDB's default `binlog_large_commit_threshold`.
pub const DEFAULT_LARGE_COMMIT_THRESHOLD: u64 = 128 << 20;
/// Smallest threshold accepted (MariaDB release builds: 10 MiB; we allow 1 MiB for tests).
pub const MIN_LARGE_COMMIT_THRESHOLD: u64 = 1 << 20;
/// 32 KiB, MariaDB's default `binlog_cache_size`.
pub const DEFAULT_CACHE_BUFFER_SIZE: usize = 32 << 10;

/// 4 MiB: default [`BinlogConfig::cache_sync_interval`].
pub const DEFAULT_CACHE_SYNC_INTERVAL: u64 = 4 << 20;

/// Settings of a [`crate::Binlog`]. Build with [`BinlogConfig::new`] (or
/// [`BinlogConfig::default`] and [`BinlogConfig::with_dir`]) and the `with_*` methods, or
/// assign the public fields of such a value: the struct is `#[non_exhaustive]`, so later
/// settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct BinlogConfig {
    /// Directory of the binlog files, the index and `#binlog_cache_files/`.
    pub dir: PathBuf,
    /// Files are `<base_name>.000001`, ...; the index is `<base_name>.index`.
    pub base_name: String,
    /// Server id written in every event header and GTID.
    pub server_id: u32,
    /// GTID domain of commits (a cache may choose another one).
    pub domain_id: u32,
    /// A file is rotated once it reaches this size (4096 ..= 1 GiB).
    pub max_binlog_size: u64,
    /// A spilled transaction cache larger than this commits by rename (>= 1 MiB).
    pub large_commit_threshold: u64,
    /// Whether commit by rename is used at all (MariaDB cannot switch it off; we can, for
    /// comparisons).
    pub commit_by_rename: bool,
    /// Fsync policy of commit groups.
    pub sync: SyncPolicy,
    /// In-memory part of each transaction cache before it spills to a file (>= 4096).
    pub cache_buffer_size: usize,
    /// A spilled cache fsyncs its file after every this many bytes (0: only before a
    /// rename). Not in MariaDB: without it, the fsync before a rename writes the whole
    /// cache at once and the small commits' fsyncs queue behind it at the device (measured
    /// here: 256 MiB → 74 ms stalls). Default 4 MiB.
    pub cache_sync_interval: u64,
}

impl Default for BinlogConfig {
    /// The defaults of [`BinlogConfig::new`] without a directory, which
    /// [`crate::Binlog::open`] refuses: set it with [`BinlogConfig::with_dir`].
    fn default() -> Self {
        BinlogConfig {
            dir: PathBuf::new(),
            base_name: "surge-bin".to_string(),
            server_id: 1,
            domain_id: 0,
            max_binlog_size: DEFAULT_MAX_BINLOG_SIZE,
            large_commit_threshold: DEFAULT_LARGE_COMMIT_THRESHOLD,
            commit_by_rename: true,
            sync: SyncPolicy::EveryGroup,
            cache_buffer_size: DEFAULT_CACHE_BUFFER_SIZE,
            cache_sync_interval: DEFAULT_CACHE_SYNC_INTERVAL,
        }
    }
}

impl BinlogConfig {
    /// Defaults: base name `surge-bin`, server 1, domain 0, 1 GiB files, 128 MiB threshold,
    /// rename on, fsync every group, 32 KiB cache buffers, spill files fsynced every 4 MiB.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        BinlogConfig::default().with_dir(dir)
    }

    /// Sets [`BinlogConfig::dir`].
    #[must_use]
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// Sets [`BinlogConfig::cache_sync_interval`].
    #[must_use]
    pub fn with_cache_sync_interval(mut self, bytes: u64) -> Self {
        self.cache_sync_interval = bytes;
        self
    }

    /// Sets [`BinlogConfig::base_name`].
    #[must_use]
    pub fn with_base_name(mut self, name: impl Into<String>) -> Self {
        self.base_name = name.into();
        self
    }

    /// Sets [`BinlogConfig::server_id`].
    #[must_use]
    pub fn with_server_id(mut self, id: u32) -> Self {
        self.server_id = id;
        self
    }

    /// Sets [`BinlogConfig::domain_id`].
    #[must_use]
    pub fn with_domain_id(mut self, id: u32) -> Self {
        self.domain_id = id;
        self
    }

    /// Sets [`BinlogConfig::max_binlog_size`].
    #[must_use]
    pub fn with_max_binlog_size(mut self, bytes: u64) -> Self {
        self.max_binlog_size = bytes;
        self
    }

    /// Sets [`BinlogConfig::large_commit_threshold`].
    #[must_use]
    pub fn with_large_commit_threshold(mut self, bytes: u64) -> Self {
        self.large_commit_threshold = bytes;
        self
    }

    /// Sets [`BinlogConfig::commit_by_rename`].
    #[must_use]
    pub fn with_commit_by_rename(mut self, on: bool) -> Self {
        self.commit_by_rename = on;
        self
    }

    /// Sets [`BinlogConfig::sync`].
    #[must_use]
    pub fn with_sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }

    /// Sets [`BinlogConfig::cache_buffer_size`].
    #[must_use]
    pub fn with_cache_buffer_size(mut self, bytes: usize) -> Self {
        self.cache_buffer_size = bytes;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what, detail: String| Err(Error::Config { what, detail });
        if self.dir.as_os_str().is_empty() {
            return bad(
                "dir",
                "empty: set it with BinlogConfig::with_dir".to_string(),
            );
        }
        let name_ok = !self.base_name.is_empty()
            && self.base_name.len() <= 200
            && self
                .base_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            return bad(
                "base_name",
                format!("{:?}: use 1-200 of [A-Za-z0-9_-]", self.base_name),
            );
        }
        if !(4096..=DEFAULT_MAX_BINLOG_SIZE).contains(&self.max_binlog_size) {
            return bad(
                "max_binlog_size",
                format!("{} not in 4096..=1073741824", self.max_binlog_size),
            );
        }
        if self.large_commit_threshold < MIN_LARGE_COMMIT_THRESHOLD {
            return bad(
                "large_commit_threshold",
                format!("{} below 1 MiB", self.large_commit_threshold),
            );
        }
        if self.cache_buffer_size < 4096 {
            return bad(
                "cache_buffer_size",
                format!("{} below 4096", self.cache_buffer_size),
            );
        }
        Ok(())
    }
}
