//! [`FjallOptions`]: the settings of a node's disk engine.

use super::error::EngineError;

/// Settings of a [`crate::FjallEngine`].
///
/// The defaults suit a 2-core, 24 GiB machine running up to three nodes (as `surgedb cluster
/// start` does): each node's block cache takes 1 GiB, so three nodes leave most of the
/// memory to the page cache and the Raft logs.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FjallOptions {
    /// Bytes of the block cache shared by the column families (default 1 GiB).
    pub cache_bytes: u64,
    /// Bytes of journal kept before the oldest memtables are flushed (at least 64 MiB, the
    /// default). A reopen replays at most this much, so it bounds restart time.
    pub max_journal_bytes: u64,
    /// Bytes a column family's memtable holds before it is flushed to a table file
    /// (default 4 MiB). Smaller memtables make each insert cheaper (a shallower skiplist,
    /// more of it in the CPU caches): the write-only benchmark's disk engine did 8.5%
    /// more transactions per second with 4 MiB than with 16 MiB (means of five and six
    /// runs), and 64 MiB fewer than 16 MiB (one run each, older engine code);
    /// point reads that miss the memtable go to more, smaller level-0 tables.
    pub memtable_bytes: u64,
    /// Bytes of memtables (active and sealed, all column families) above which a region's
    /// write waits for flushes (default 128 MiB; at least twice `memtable_bytes`; a
    /// snapshot's apply does not wait). fjall rotates a full memtable on its worker
    /// threads: while they flush and compact, a faster writer kept filling the active
    /// memtable past its size, and resident memory grew with the data written (387 MiB
    /// loaded into one view: 204 MiB resident without the stall, 32 MiB with a 16 MiB
    /// limit). RocksDB's `db_write_buffer_size` stall.
    pub max_write_buffer_bytes: u64,
    /// Background flush and compaction threads (default 2: one per core).
    pub worker_threads: usize,
    /// Keys whose newest write timestamp the engine remembers (default 65,536: by estimate,
    /// not measured, each costs its encoded key plus about 40 bytes, so a few MiB),
    /// so that a prewrite's conflict check skips its seek in the write column family when
    /// the key was last written before the transaction started. When more keys are
    /// written the memory is emptied and one bound, the newest timestamp, covers them all;
    /// 0 keeps only that bound.
    pub newest_write_keys: usize,
}

impl Default for FjallOptions {
    fn default() -> FjallOptions {
        FjallOptions {
            cache_bytes: 1 << 30,
            max_journal_bytes: 64 << 20,
            memtable_bytes: 4 << 20,
            max_write_buffer_bytes: 128 << 20,
            worker_threads: 2,
            newest_write_keys: 1 << 16,
        }
    }
}

impl FjallOptions {
    /// The smallest journal fjall accepts.
    pub const MIN_JOURNAL_BYTES: u64 = 64 << 20;

    /// Sets [`FjallOptions::cache_bytes`].
    #[must_use]
    pub fn with_cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Sets [`FjallOptions::max_journal_bytes`].
    #[must_use]
    pub fn with_max_journal_bytes(mut self, bytes: u64) -> Self {
        self.max_journal_bytes = bytes;
        self
    }

    /// Sets [`FjallOptions::memtable_bytes`].
    #[must_use]
    pub fn with_memtable_bytes(mut self, bytes: u64) -> Self {
        self.memtable_bytes = bytes;
        self
    }

    /// Sets [`FjallOptions::max_write_buffer_bytes`].
    #[must_use]
    pub fn with_max_write_buffer_bytes(mut self, bytes: u64) -> Self {
        self.max_write_buffer_bytes = bytes;
        self
    }

    /// Sets [`FjallOptions::worker_threads`].
    #[must_use]
    pub fn with_worker_threads(mut self, n: usize) -> Self {
        self.worker_threads = n;
        self
    }

    /// Sets [`FjallOptions::newest_write_keys`].
    #[must_use]
    pub fn with_newest_write_keys(mut self, n: usize) -> Self {
        self.newest_write_keys = n;
        self
    }

    /// Checks the settings fjall would otherwise refuse with a panic.
    ///
    /// # Errors
    /// [`EngineError::Open`] naming the setting.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |detail: String| {
            Err(EngineError::Open {
                path: "options".into(),
                detail,
            })
        };
        if self.max_journal_bytes < Self::MIN_JOURNAL_BYTES {
            return bad(format!(
                "max_journal_bytes {} is below fjall's minimum {}",
                self.max_journal_bytes,
                Self::MIN_JOURNAL_BYTES
            ));
        }
        if self.worker_threads == 0 {
            return bad("worker_threads must be at least 1".into());
        }
        if self.memtable_bytes < 1 << 20 {
            return bad(format!(
                "memtable_bytes {} is below 1 MiB",
                self.memtable_bytes
            ));
        }
        if self.max_write_buffer_bytes < 2 * self.memtable_bytes {
            return bad(format!(
                "max_write_buffer_bytes {} is below twice memtable_bytes {}",
                self.max_write_buffer_bytes, self.memtable_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_settings_are_named() {
        assert_eq!(FjallOptions::default().validate(), Ok(()));
        let cases = [
            (
                FjallOptions::default().with_max_journal_bytes(1 << 20),
                "max_journal_bytes",
            ),
            (
                FjallOptions::default().with_worker_threads(0),
                "worker_threads",
            ),
            (
                FjallOptions::default().with_memtable_bytes(10),
                "memtable_bytes",
            ),
            (
                FjallOptions::default()
                    .with_memtable_bytes(16 << 20)
                    .with_max_write_buffer_bytes(16 << 20),
                "max_write_buffer_bytes",
            ),
        ];
        for (opts, name) in cases {
            let err = opts.validate().expect_err(name).to_string();
            assert!(err.contains(name), "{err}");
        }
    }
}
