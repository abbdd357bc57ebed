//! [`ClusterConfig`]: the shape of a [`crate::LocalCluster`].

use std::path::PathBuf;
use std::time::Duration;

use surge_lock_table::BudgetConfig;

use crate::region::LockMode;

/// How a [`crate::LocalCluster`] is laid out.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Where the nodes keep their WALs (`node-<id>/` each).
    pub dir: PathBuf,
    /// Number of nodes (each holds a replica of every region).
    pub nodes: u64,
    /// Split keys of the data regions (sorted, distinct, non-empty); `regions` = len + 1.
    pub split_keys: Vec<Vec<u8>>,
    /// The pessimistic lock mode at start.
    pub lock_mode: LockMode,
    /// In-memory lock budgets.
    pub budget: BudgetConfig,
    /// Raft tick length.
    pub tick: Duration,
    /// Raft election timeout in ticks.
    pub election_tick: u32,
    /// Snapshot and compact a group's log after this many entries.
    pub snapshot_every: u64,
    /// Longest a lock request waits for another's lock.
    pub wait_for_lock_timeout: Duration,
    /// Seed of the in-memory network's fault randomness.
    pub seed: u64,
    /// A voluntary leader transfer not done after this long is abandoned.
    pub transfer_timeout: Duration,
    /// A merge whose source holds more bytes of in-memory locks is refused.
    pub merge_max_lock_bytes: usize,
    /// Regions split in two once their data passes this many bytes (`None`: on request only).
    pub split_size: Option<u64>,
}

impl ClusterConfig {
    /// Three nodes and 16 regions split evenly on the first key byte, in-memory locks,
    /// under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> ClusterConfig {
        ClusterConfig {
            dir: dir.into(),
            nodes: 3,
            split_keys: crate::placement::even_split_keys(16),
            lock_mode: LockMode::InMemory,
            budget: BudgetConfig::default(),
            tick: Duration::from_millis(10),
            election_tick: 20,
            snapshot_every: 2000,
            wait_for_lock_timeout: Duration::from_secs(1),
            seed: 1,
            transfer_timeout: Duration::from_secs(10),
            merge_max_lock_bytes: 7 << 20,
            split_size: Some(96 << 20),
        }
    }

    /// The same with `n` regions split evenly on the first key byte.
    pub fn with_regions(mut self, n: usize) -> ClusterConfig {
        self.split_keys = crate::placement::even_split_keys(n);
        self
    }

    /// The same with `mode`.
    pub fn with_lock_mode(mut self, mode: LockMode) -> ClusterConfig {
        self.lock_mode = mode;
        self
    }
}
