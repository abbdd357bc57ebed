//! [`measure`]: one (modes, clients) point of the write-only benchmark, measured in slices
//! that rotate through the modes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::error::WorkloadError;
use super::mode::WriteMode;
use super::rng::Rng;
use super::write_only::event;
use crate::{LocalCluster, LockMode, NodeCounters, TxnClient};

/// What the benchmark needs of the cluster besides a client: switching every node's lock
/// mode, and the nodes' summed counters.
pub trait WorkloadCluster {
    /// Sets the pessimistic lock mode on every node.
    ///
    /// # Errors
    /// The cluster's answer when a node could not be told.
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String>;

    /// The sum of every reachable node's counters.
    fn counters(&self) -> NodeCounters;
}

impl WorkloadCluster for LocalCluster {
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String> {
        LocalCluster::set_lock_mode(self, mode);
        Ok(())
    }

    fn counters(&self) -> NodeCounters {
        LocalCluster::counters(self)
    }
}

/// How a point is measured.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The modes compared.
    pub modes: Vec<WriteMode>,
    /// Measured seconds per mode, taken in slices that rotate through the modes (in
    /// alternating order), so that a burst of outside load on a shared machine hits every
    /// mode alike.
    pub seconds: f64,
    /// Seconds of one slice (at least 0.1).
    pub slice: f64,
    /// Unmeasured seconds at the start of each slice (clients started, caches warm).
    pub warmup: f64,
    /// Rows in the table.
    pub rows: u64,
    /// The whole rotation runs this many times (at least once) and the slices add up.
    pub rounds: usize,
}

impl Schedule {
    /// Slices per mode and round.
    pub fn slices(&self) -> usize {
        ((self.seconds / self.slice.max(0.1)).ceil() as usize).max(1)
    }

    /// Slices [`measure`] runs for one point: every mode, slice and round.
    pub fn slices_per_point(&self) -> usize {
        self.modes.len() * self.slices() * self.rounds.max(1)
    }
}

/// What a mode's slices measured, added up.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions committed while measured.
    pub committed: u64,
    /// Transactions that failed while measured (conflicts, timeouts).
    pub aborted: u64,
    /// Latency of each committed transaction, in microseconds, in no particular order.
    pub latencies_us: Vec<u64>,
    /// The nodes' counters over the measured time.
    pub counters: NodeCounters,
}

impl Measured {
    /// Adds `other`'s figures to these.
    pub fn add(&mut self, other: Measured) {
        self.seconds += other.seconds;
        self.committed += other.committed;
        self.aborted += other.aborted;
        self.latencies_us.extend(other.latencies_us);
        self.counters = self.counters.add(&other.counters);
    }

    /// Committed transactions per second.
    pub fn tps(&self) -> f64 {
        self.committed as f64 / self.seconds.max(1e-9)
    }

    /// `bytes` per committed transaction (0 when none committed).
    pub fn per_txn(&self, bytes: u64) -> u64 {
        bytes.checked_div(self.committed).unwrap_or(0)
    }
}

/// Told before and after each slice [`measure`] runs (a progress bar); both do nothing by
/// default.
pub trait SliceObserver {
    /// A slice of `mode` at `clients` clients starts.
    fn starting(&mut self, mode: WriteMode, clients: usize) {
        let _ = (mode, clients);
    }

    /// The slice ended.
    fn finished(&mut self) {}
}

impl SliceObserver for () {}

/// Measures every mode of `schedule` at `clients` concurrent clients of `client`, on a table
/// already loaded ([`super::load`]): the modes take turns in slices, in alternating order so
/// that no mode always runs on a warmer cluster, each slice setting its lock mode first.
/// Returns the figures per mode, in `schedule.modes` order. `seed` advances once per slice
/// (a linear congruential step), so consecutive points draw other rows.
///
/// # Errors
/// [`WorkloadError::LockMode`] when the cluster refuses a lock mode,
/// [`WorkloadError::ClientPanicked`] when a client thread panicked.
pub fn measure(
    cluster: &dyn WorkloadCluster,
    client: &TxnClient,
    clients: usize,
    schedule: &Schedule,
    seed: &mut u64,
    observer: &mut dyn SliceObserver,
) -> Result<Vec<Measured>, WorkloadError> {
    let mut per_mode: Vec<Measured> = schedule.modes.iter().map(|_| Measured::default()).collect();
    let slice_seconds = schedule.seconds / schedule.slices() as f64;
    for round in 0..schedule.slices() * schedule.rounds.max(1) {
        let mut order: Vec<usize> = (0..schedule.modes.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let mode = schedule.modes[i];
            observer.starting(mode, clients);
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if let Some(m) = mode.lock_mode() {
                cluster
                    .set_lock_mode(m)
                    .map_err(|detail| WorkloadError::LockMode { mode: m, detail })?;
            }
            let slice = run_slice(
                cluster,
                client,
                mode,
                clients,
                schedule,
                slice_seconds,
                *seed,
            )?;
            per_mode[i].add(slice);
            observer.finished();
        }
    }
    Ok(per_mode)
}

/// `clients` threads run events in `mode` for the warmup and `seconds`; only the events that
/// finish while measured count.
fn run_slice(
    cluster: &dyn WorkloadCluster,
    client: &TxnClient,
    mode: WriteMode,
    clients: usize,
    schedule: &Schedule,
    seconds: f64,
    seed: u64,
) -> Result<Measured, WorkloadError> {
    let txn_mode = mode.txn_mode();
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..clients as u64)
            .map(|i| {
                let (stop, measuring) = (&stop, &measuring);
                s.spawn(move || {
                    let mut rng = Rng::new(seed ^ (i + 1).wrapping_mul(0x1234_5678_9abc));
                    let mut m = Measured::default();
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        let r = event(client, txn_mode, &mut rng, schedule.rows);
                        if measuring.load(Ordering::Relaxed) {
                            match r {
                                Ok(_) => {
                                    m.committed += 1;
                                    m.latencies_us.push(t0.elapsed().as_micros() as u64);
                                }
                                Err(_) => m.aborted += 1,
                            }
                        }
                    }
                    m
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(schedule.warmup));
        let before = cluster.counters();
        let t0 = Instant::now();
        measuring.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        measuring.store(false, Ordering::SeqCst);
        let elapsed = t0.elapsed().as_secs_f64();
        let after = cluster.counters();
        stop.store(true, Ordering::SeqCst);
        let mut slice = Measured {
            seconds: elapsed,
            counters: after.since(&before),
            ..Measured::default()
        };
        for t in threads {
            let m = t.join().map_err(|_| WorkloadError::ClientPanicked)?;
            slice.committed += m.committed;
            slice.aborted += m.aborted;
            slice.latencies_us.extend(m.latencies_us);
        }
        Ok(slice)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{ClientConfig, ClusterConfig};

    /// A `LocalCluster` that records the lock modes it is given.
    struct Recording {
        cluster: LocalCluster,
        modes: Mutex<Vec<LockMode>>,
    }

    impl WorkloadCluster for Recording {
        fn set_lock_mode(&self, mode: LockMode) -> Result<(), String> {
            self.modes.lock().map_err(|e| e.to_string())?.push(mode);
            self.cluster.set_lock_mode(mode);
            Ok(())
        }

        fn counters(&self) -> NodeCounters {
            self.cluster.counters()
        }
    }

    #[derive(Default)]
    struct Count {
        started: Vec<WriteMode>,
        finished: usize,
    }

    impl SliceObserver for Count {
        fn starting(&mut self, mode: WriteMode, clients: usize) {
            assert_eq!(clients, 1);
            self.started.push(mode);
        }

        fn finished(&mut self) {
            self.finished += 1;
        }
    }

    /// Every mode gets its slices, in alternating order, each with its lock mode set first;
    /// each commits, and only the sync mode's locks reach Raft. One client: no conflict or
    /// lock wait can leave a short slice without a commit.
    #[test]
    fn modes_take_turns_and_each_is_measured() {
        let dir = tempfile::tempdir().expect("dir");
        let cluster =
            LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(4)).expect("cluster");
        let client = TxnClient::new(cluster.router(), ClientConfig::default());
        let target = Recording {
            cluster,
            modes: Mutex::new(Vec::new()),
        };
        let (opt, sync, mem) = (
            WriteMode::Optimistic,
            WriteMode::Pessimistic(LockMode::Sync),
            WriteMode::Pessimistic(LockMode::InMemory),
        );
        let schedule = Schedule {
            modes: vec![opt, sync, mem],
            seconds: 0.4,
            slice: 0.2,
            warmup: 0.05,
            rows: 256,
            rounds: 1,
        };
        super::super::load(&client, schedule.rows, 2).expect("load");
        let (mut seed, mut count) = (7, Count::default());
        let got = measure(&target, &client, 1, &schedule, &mut seed, &mut count).expect("measure");

        assert_eq!(count.started, [opt, sync, mem, mem, sync, opt]);
        assert_eq!(count.finished, schedule.slices_per_point());
        let set = target.modes.lock().expect("modes").clone();
        assert_eq!(
            set,
            [
                LockMode::Sync,
                LockMode::InMemory,
                LockMode::InMemory,
                LockMode::Sync
            ]
        );
        assert_ne!(seed, 7);
        for (mode, m) in schedule.modes.iter().zip(&got) {
            assert!(m.committed > 0, "{mode:?}: {m:?}");
            assert_eq!(m.latencies_us.len() as u64, m.committed, "{mode:?}");
            assert!(m.seconds >= 0.4, "{mode:?}: {m:?}");
        }
        assert!(got[1].counters.lock_raft_bytes > 0, "sync: {:?}", got[1]);
        assert_eq!(
            got[2].counters.lock_raft_bytes, 0,
            "in-memory: {:?}",
            got[2]
        );
    }
}
