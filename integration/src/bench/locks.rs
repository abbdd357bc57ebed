//! `surgedb bench locks`: the write-only workload in the four ways of writing a
//! transaction's locks, side by side at each client count.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use surge_txn::{ClientConfig, LockMode, NodeCounters, TxnMode};

use super::stats::Latency;
use super::target::BenchTarget;
use super::write_only::{Rng, event, load};
use super::{BenchError, Progress};

/// How a benchmark transaction writes: optimistic, or pessimistic in one lock mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Optimistic transactions: no lock before prewrite.
    Optimistic,
    /// Pessimistic transactions with every node in this lock mode.
    Pessimistic(LockMode),
}

impl WriteMode {
    /// The four modes, in the write-up's order.
    pub const ALL: [WriteMode; 4] = [
        WriteMode::Optimistic,
        WriteMode::Pessimistic(LockMode::Sync),
        WriteMode::Pessimistic(LockMode::Pipelined),
        WriteMode::Pessimistic(LockMode::InMemory),
    ];

    /// `optimistic`, `sync`, `pipelined` or `in-memory`.
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Optimistic => "optimistic",
            WriteMode::Pessimistic(m) => m.as_str(),
        }
    }
}

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
    /// Slices per point.
    fn slices(&self) -> usize {
        ((self.seconds / self.slice.max(0.1)).ceil() as usize).max(1)
    }

    /// How many progress steps [`run_locks`] reports: one per slice.
    pub fn steps(&self) -> u64 {
        (self.clients.len() * self.modes.len() * self.slices()) as u64
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

/// A slice's raw figures.
#[derive(Debug, Default)]
struct Slice {
    seconds: f64,
    committed: u64,
    aborted: u64,
    latencies_us: Vec<u64>,
    counters: NodeCounters,
}

/// Loads the table, then measures every (mode, clients) point, calling `progress` after each
/// slice.
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
    let slice = opts.seconds / opts.slices() as f64;
    let mut points = Vec::new();
    let mut seed = 7u64;
    for &clients in &opts.clients {
        let mut per_mode: Vec<Slice> = opts.modes.iter().map(|_| Slice::default()).collect();
        for round in 0..opts.slices() {
            // Alternate the order each round so no mode always runs on a warmer cluster.
            let mut order: Vec<usize> = (0..opts.modes.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let mode = opts.modes[i];
                progress.message(&format!("{} x {clients} clients", mode.name()));
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let s = run_slice(target, &client, mode, clients, opts, slice, seed)?;
                let total = &mut per_mode[i];
                total.seconds += s.seconds;
                total.committed += s.committed;
                total.aborted += s.aborted;
                total.latencies_us.extend(s.latencies_us);
                total.counters = total.counters.add(&s.counters);
                progress.step();
            }
        }
        for (mode, s) in opts.modes.iter().zip(per_mode) {
            let per_txn = |b: u64| b.checked_div(s.committed).unwrap_or(0);
            points.push(LocksPoint {
                mode: mode.name(),
                clients,
                seconds: s.seconds,
                committed: s.committed,
                aborted: s.aborted,
                tps: s.committed as f64 / s.seconds.max(1e-9),
                latency: Latency::of(s.latencies_us),
                raft_bytes_per_txn: per_txn(s.counters.raft_bytes),
                lock_raft_bytes_per_txn: per_txn(s.counters.lock_raft_bytes),
                in_memory_locks: s.counters.in_memory_success,
                in_memory_full: s.counters.in_memory_full,
            });
        }
    }
    Ok(points)
}

/// `clients` threads run events in `mode` for the warmup and `seconds`; only the events that
/// finish while measured count.
fn run_slice(
    target: &BenchTarget,
    client: &surge_txn::TxnClient,
    mode: WriteMode,
    clients: usize,
    opts: &LocksOptions,
    seconds: f64,
    seed: u64,
) -> Result<Slice, BenchError> {
    let txn_mode = match mode {
        WriteMode::Optimistic => TxnMode::Optimistic,
        WriteMode::Pessimistic(m) => {
            target.set_lock_mode(m)?;
            TxnMode::Pessimistic
        }
    };
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..clients as u64)
            .map(|i| {
                let (stop, measuring) = (&stop, &measuring);
                s.spawn(move || {
                    let mut rng = Rng::new(seed ^ (i + 1).wrapping_mul(0x1234_5678_9abc));
                    let (mut ok, mut failed, mut lat) = (0u64, 0u64, Vec::new());
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        let r = event(client, txn_mode, &mut rng, opts.rows);
                        if measuring.load(Ordering::Relaxed) {
                            match r {
                                Ok(_) => {
                                    ok += 1;
                                    lat.push(t0.elapsed().as_micros() as u64);
                                }
                                Err(_) => failed += 1,
                            }
                        }
                    }
                    (ok, failed, lat)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(opts.warmup));
        let before = target.counters();
        let t0 = Instant::now();
        measuring.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        measuring.store(false, Ordering::SeqCst);
        let elapsed = t0.elapsed().as_secs_f64();
        let after = target.counters();
        stop.store(true, Ordering::SeqCst);
        let mut slice = Slice {
            seconds: elapsed,
            counters: after.since(&before),
            ..Slice::default()
        };
        for t in threads {
            let (ok, failed, lat) = t
                .join()
                .map_err(|_| BenchError::Cluster("a client thread panicked".into()))?;
            slice.committed += ok;
            slice.aborted += failed;
            slice.latencies_us.extend(lat);
        }
        Ok(slice)
    })
}
