//! [`ClusterConfig`]: the shape of a [`crate::LocalCluster`].

use std::path::PathBuf;
use std::time::Duration;

use surge_lock_table::BudgetConfig;

use crate::region::LockMode;

/// How a [`crate::LocalCluster`] is laid out.
///
/// There is no lock-wait setting here: how long a lock request waits is the client's
/// [`crate::ClientConfig::wait_for_lock_timeout`], carried by every request.
///
/// Build it with [`ClusterConfig::new`] (or [`ClusterConfig::default`] and
/// [`ClusterConfig::with_dir`]) and the `with_*` methods, or assign the public fields of such
/// a value: the struct is `#[non_exhaustive]`, so later settings can be added without
/// breaking callers.
#[non_exhaustive]
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
    /// Seed of the in-memory network's fault randomness.
    pub seed: u64,
    /// A voluntary leader transfer not done after this long is abandoned.
    pub transfer_timeout: Duration,
    /// A merge whose source holds more bytes of in-memory locks is refused.
    pub merge_max_lock_bytes: usize,
    /// Regions split in two once their data passes this many bytes (`None`: on request only).
    pub split_size: Option<u64>,
    /// Where the nodes keep their regions' data.
    pub engine: EngineKind,
    /// Every node's [`KvNodeConfig::gc_life_time`](crate::KvNodeConfig::gc_life_time)
    /// (`None`: no bound on timestamps and no GC).
    pub gc_life_time: Option<Duration>,
}

/// Where a node keeps its regions' data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// A [`crate::MemEngine`] per region, rebuilt from the Raft log and snapshots at a
    /// restart.
    Memory,
    /// One [`crate::FjallEngine`] per node (`node-<id>/engine`), with these settings: a
    /// restart replays only the log after each region's durable applied index.
    Disk(crate::FjallOptions),
}

impl ClusterConfig {
    /// Three nodes and 16 regions split evenly on the first key byte, in-memory locks,
    /// under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> ClusterConfig {
        ClusterConfig::default().with_dir(dir)
    }

    /// Sets [`ClusterConfig::dir`].
    #[must_use]
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> ClusterConfig {
        self.dir = dir.into();
        self
    }

    /// The same with `n` regions split evenly on the first key byte.
    #[must_use]
    pub fn with_regions(mut self, n: usize) -> ClusterConfig {
        self.split_keys = crate::placement::even_split_keys(n);
        self
    }

    /// Sets [`ClusterConfig::nodes`].
    #[must_use]
    pub fn with_nodes(mut self, n: u64) -> Self {
        self.nodes = n;
        self
    }

    /// Sets [`ClusterConfig::engine`].
    #[must_use]
    pub fn with_engine(mut self, engine: EngineKind) -> Self {
        self.engine = engine;
        self
    }

    /// Sets [`ClusterConfig::split_keys`].
    #[must_use]
    pub fn with_split_keys(mut self, keys: Vec<Vec<u8>>) -> Self {
        self.split_keys = keys;
        self
    }

    /// Sets [`ClusterConfig::lock_mode`].
    #[must_use]
    pub fn with_lock_mode(mut self, mode: LockMode) -> Self {
        self.lock_mode = mode;
        self
    }

    /// Sets [`ClusterConfig::budget`].
    #[must_use]
    pub fn with_budget(mut self, budget: BudgetConfig) -> Self {
        self.budget = budget;
        self
    }

    /// Sets [`ClusterConfig::tick`].
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets [`ClusterConfig::election_tick`].
    #[must_use]
    pub fn with_election_tick(mut self, ticks: u32) -> Self {
        self.election_tick = ticks;
        self
    }

    /// Sets [`ClusterConfig::snapshot_every`].
    #[must_use]
    pub fn with_snapshot_every(mut self, entries: u64) -> Self {
        self.snapshot_every = entries;
        self
    }

    /// Sets [`ClusterConfig::seed`].
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets [`ClusterConfig::transfer_timeout`].
    #[must_use]
    pub fn with_transfer_timeout(mut self, timeout: Duration) -> Self {
        self.transfer_timeout = timeout;
        self
    }

    /// Sets [`ClusterConfig::merge_max_lock_bytes`].
    #[must_use]
    pub fn with_merge_max_lock_bytes(mut self, bytes: usize) -> Self {
        self.merge_max_lock_bytes = bytes;
        self
    }

    /// Sets [`ClusterConfig::split_size`].
    #[must_use]
    pub fn with_split_size(mut self, bytes: Option<u64>) -> Self {
        self.split_size = bytes;
        self
    }

    /// Sets [`ClusterConfig::gc_life_time`].
    #[must_use]
    pub fn with_gc_life_time(mut self, life_time: Option<Duration>) -> Self {
        self.gc_life_time = life_time;
        self
    }
}

impl Default for ClusterConfig {
    /// The defaults of [`ClusterConfig::new`] without a directory, which
    /// [`crate::LocalCluster::start`] refuses: set it with [`ClusterConfig::with_dir`].
    fn default() -> ClusterConfig {
        ClusterConfig {
            dir: PathBuf::new(),
            nodes: 3,
            split_keys: crate::placement::even_split_keys(16),
            lock_mode: LockMode::InMemory,
            budget: BudgetConfig::default(),
            tick: Duration::from_millis(10),
            election_tick: 20,
            snapshot_every: 2000,
            seed: 1,
            transfer_timeout: Duration::from_secs(10),
            merge_max_lock_bytes: 7 << 20,
            split_size: Some(96 << 20),
            // Three nodes share one machine in a test: a small cache each.
            engine: EngineKind::Disk(
                crate::FjallOptions::default()
                    .with_cache_bytes(64 << 20)
                    .with_memtable_bytes(8 << 20)
                    .with_worker_threads(1),
            ),
            gc_life_time: None,
        }
    }
}
