//! `surgedb bench locks`: the write-only workload in the four ways of writing a
//! transaction's locks, side by side at each client count.

use serde::Serialize;
use surge_txn::ClientConfig;
use surge_txn::workload::{Schedule, SliceObserver, WriteMode, load, measure};

use super::stats::Latency;
use super::target::BenchTarget;
use super::{BenchError, Progress};

/// What `bench locks` runs.
///
/// Build it with [`LocksOptions::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct LocksOptions {
    /// Client counts, one point per mode each.
    pub clients: Vec<usize>,
    /// The modes compared.
    pub modes: Vec<WriteMode>,
    /// Measured time per point, taken in slices that rotate through the modes, so that a
    /// burst of outside load on a shared machine hits every mode alike.
    pub seconds: f64,
    /// Length of one slice.
    pub slice: f64,
    /// Unmeasured time at the start of each slice (clients started, caches warm).
    pub warmup: f64,
    /// Rows in the table.
    pub rows: u64,
}

impl Default for LocksOptions {
    fn default() -> LocksOptions {
        LocksOptions {
            clients: vec![1, 8, 32],
            modes: WriteMode::ALL.to_vec(),
            seconds: 4.0,
            slice: 2.0,
            warmup: 0.3,
            rows: 10_000,
        }
    }
}

impl LocksOptions {
    /// How each point is measured.
    fn schedule(&self) -> Schedule {
        Schedule {
            modes: self.modes.clone(),
            seconds: self.seconds,
            slice: self.slice,
            warmup: self.warmup,
            rows: self.rows,
            rounds: 1,
        }
    }

    /// How many progress steps [`run_locks`] reports: one per slice.
    pub fn steps(&self) -> u64 {
        (self.clients.len() * self.schedule().slices_per_point()) as u64
    }

    /// Sets [`LocksOptions::clients`].
    #[must_use]
    pub fn with_clients(mut self, clients: Vec<usize>) -> Self {
        self.clients = clients;
        self
    }

    /// Sets [`LocksOptions::modes`].
    #[must_use]
    pub fn with_modes(mut self, modes: Vec<WriteMode>) -> Self {
        self.modes = modes;
        self
    }

    /// Sets [`LocksOptions::seconds`].
    #[must_use]
    pub fn with_seconds(mut self, seconds: f64) -> Self {
        self.seconds = seconds;
        self
    }

    /// Sets [`LocksOptions::slice`].
    #[must_use]
    pub fn with_slice(mut self, slice: f64) -> Self {
        self.slice = slice;
        self
    }

    /// Sets [`LocksOptions::warmup`].
    #[must_use]
    pub fn with_warmup(mut self, warmup: f64) -> Self {
        self.warmup = warmup;
        self
    }

    /// Sets [`LocksOptions::rows`].
    #[must_use]
    pub fn with_rows(mut self, rows: u64) -> Self {
        self.rows = rows;
        self
    }
}

/// One (mode, clients) point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocksPoint {
    /// `optimistic`, `sync`, `pipelined` or `in-memory`.
    pub mode: &'static str,
    /// Concurrent clients.
    pub clients: usize,
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions committed while measured.
    pub committed: u64,
    /// Transactions that failed while measured (conflicts, timeouts).
    pub aborted: u64,
    /// Committed transactions per second.
    pub tps: f64,
    /// Latency of the committed transactions.
    pub latency: Latency,
    /// Raft entry bytes proposed per committed transaction.
    pub raft_bytes_per_txn: u64,
    /// Of those, bytes of pessimistic lock records.
    pub lock_raft_bytes_per_txn: u64,
    /// Locks written to a leader's memory only.
    pub in_memory_locks: u64,
    /// In-memory lock attempts that fell back because a table was full.
    pub in_memory_full: u64,
}

/// Shows each slice on the progress bar.
struct Steps<'a>(&'a mut dyn Progress);

impl SliceObserver for Steps<'_> {
    fn starting(&mut self, mode: WriteMode, clients: usize) {
        self.0
            .message(&format!("{} x {clients} clients", mode.name()));
    }

    fn finished(&mut self) {
        self.0.step();
    }
}

/// Loads the table, then measures every (mode, clients) point (`surge_txn::workload`, the
/// `write_only` example's workload), calling `progress` around each slice.
///
/// # Errors
/// [`BenchError::Load`] if loading fails, [`BenchError::Cluster`] if a lock mode cannot be
/// set.
pub fn run_locks(
    target: &BenchTarget,
    opts: &LocksOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<LocksPoint>, BenchError> {
    let client = target.txn_client(ClientConfig::default());
    progress.message(&format!("loading {} rows", opts.rows));
    load(&client, opts.rows, 8).map_err(|e| BenchError::Load(e.to_string()))?;
    let schedule = opts.schedule();
    let mut points = Vec::new();
    let mut seed = 7u64;
    for &clients in &opts.clients {
        let per_mode = measure(
            target,
            &client,
            clients,
            &schedule,
            &mut seed,
            &mut Steps(progress),
        )
        .map_err(|e| BenchError::Cluster(e.to_string()))?;
        for (mode, s) in opts.modes.iter().zip(per_mode) {
            points.push(LocksPoint {
                mode: mode.name(),
                clients,
                seconds: s.seconds,
                committed: s.committed,
                aborted: s.aborted,
                tps: s.tps(),
                raft_bytes_per_txn: s.per_txn(s.counters.raft_bytes),
                lock_raft_bytes_per_txn: s.per_txn(s.counters.lock_raft_bytes),
                in_memory_locks: s.counters.in_memory_success,
                in_memory_full: s.counters.in_memory_full,
                latency: Latency::of(s.latencies_us),
            });
        }
    }
    Ok(points)
}
