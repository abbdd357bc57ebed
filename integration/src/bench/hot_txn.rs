//! `surgedb bench hotspot` through `surge-txn`: one hot row incremented by many clients of
//! one transactional client, AliSQL's hot-row grouping on (`TxnClient::hot_update`: a group
//! of updates takes one pessimistic lock and commits in one single-key one-phase commit) vs
//! off (each client its own pessimistic transaction: `get_for_update`, put, commit).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_txn::{ClientConfig, HotHints, HotOp, TxnClient, TxnError, TxnMode};

use super::hotspot::{HotspotPoint, HotspotRun};
use super::target::BenchTarget;
use super::{BenchError, Progress};

/// The hot row.
const HOT_KEY: &[u8] = b"hot/stock";

/// Slices per mode and client count, alternating off, on, on, off, ...
const SLICES_PER_MODE: usize = 2;

/// How many progress steps [`run_hot_txn`] reports for `clients` client counts.
pub fn hot_txn_steps(clients: usize) -> u64 {
    (clients * 2 * SLICES_PER_MODE) as u64
}

/// One increment, grouped (`on`) or as the client's own pessimistic transaction.
fn increment(client: &TxnClient, on: bool) -> Result<(), TxnError> {
    if on {
        return client
            .hot_update(HOT_KEY, HotOp::add(1), HotHints::hot_update())
            .map(|_| ());
    }
    let mut t = client.begin(TxnMode::Pessimistic)?;
    let written = t.get_for_update(HOT_KEY).and_then(|current| {
        let current = current.and_then(|v| HotOp::decode(&v)).unwrap_or(0);
        t.put(HOT_KEY, &HotOp::encode(current + 1))
    });
    match written {
        Ok(()) => t.commit().map(|_| ()),
        Err(e) => {
            t.rollback();
            Err(e)
        }
    }
}

#[derive(Debug, Default)]
struct Totals {
    seconds: f64,
    acked: u64,
    groups: u64,
    members: u64,
}

/// Runs each client count for `seconds` per mode against `target`, then checks that the
/// row's value equals its start plus the acknowledged increments (undetermined ones may or
/// may not count).
///
/// # Errors
/// [`BenchError::Load`] if the row cannot be set up or read, [`BenchError::Cluster`] if its
/// final value does not match the acknowledged increments.
pub fn run_hot_txn(
    target: &BenchTarget,
    clients: &[usize],
    seconds: f64,
    progress: &mut dyn Progress,
) -> Result<HotspotRun, BenchError> {
    let client = target.txn_client(
        ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_secs(5))),
    );
    let load = |e: TxnError| BenchError::Load(e.to_string());
    let start_value = (|| {
        let mut t = client.begin(TxnMode::Pessimistic)?;
        let v = t
            .get_for_update(HOT_KEY)?
            .and_then(|v| HotOp::decode(&v))
            .unwrap_or(0);
        t.put(HOT_KEY, &HotOp::encode(v))?;
        t.commit()?;
        Ok(v)
    })()
    .map_err(load)?;
    let slice = seconds / SLICES_PER_MODE as f64;
    let (acked_all, undetermined) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut points = Vec::new();
    for &n in clients {
        let mut totals = [Totals::default(), Totals::default()];
        for i in 0..2 * SLICES_PER_MODE {
            let on = matches!(i % 4, 1 | 2);
            progress.message(&format!(
                "{n} clients, grouping {}",
                if on { "on" } else { "off" }
            ));
            let before = client.hot_counters();
            let (elapsed, acked) = run_slice(&client, n, on, slice, &acked_all, &undetermined);
            let after = client.hot_counters();
            let t = &mut totals[usize::from(on)];
            t.seconds += elapsed;
            t.acked += acked;
            t.groups += after.groups - before.groups;
            t.members += after.members - before.members;
            progress.step();
        }
        let off_tps = totals[0].acked as f64 / totals[0].seconds.max(1e-9);
        for (on, t) in [(false, &totals[0]), (true, &totals[1])] {
            let tps = t.acked as f64 / t.seconds.max(1e-9);
            points.push(HotspotPoint {
                clients: n,
                grouping: if on { "on" } else { "off" },
                seconds: t.seconds,
                updates_per_s: tps,
                on_off: on.then(|| tps / off_tps.max(1e-9)),
                updates_per_commit: if on && t.groups > 0 {
                    t.members as f64 / t.groups as f64
                } else {
                    1.0
                },
                acknowledged: t.acked,
            });
        }
    }
    let end = client
        .get(HOT_KEY)
        .map_err(load)?
        .and_then(|v| HotOp::decode(&v))
        .unwrap_or(0);
    let moved = u64::try_from(end - start_value).unwrap_or(0);
    let (acked, unknown) = (
        acked_all.load(Ordering::Relaxed),
        undetermined.load(Ordering::Relaxed),
    );
    if moved < acked || moved > acked + unknown {
        return Err(BenchError::Cluster(format!(
            "the hot row moved by {moved}, but {acked} increments were acknowledged and \
             {unknown} undetermined"
        )));
    }
    Ok(HotspotRun {
        points,
        check: format!(
            "whole run: the row moved by {moved} = {acked} increments acknowledged \
             (+ {unknown} undetermined allowed), none lost or applied twice"
        ),
    })
}

/// `n` threads increment for `seconds`; returns the time measured and the increments
/// acknowledged in it (every acknowledged and undetermined one is added to the run's totals).
fn run_slice(
    client: &TxnClient,
    n: usize,
    on: bool,
    seconds: f64,
    acked_all: &AtomicU64,
    undetermined: &AtomicU64,
) -> (f64, u64) {
    let stop = AtomicBool::new(false);
    let acked = AtomicU64::new(0);
    let begun = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    match increment(client, on) {
                        Ok(()) => {
                            acked.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(TxnError::Undetermined { .. }) => {
                            undetermined.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => {}
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    // Increments finishing after `stop` count too: the threads are joined before timing ends.
    let acked = acked.load(Ordering::Relaxed);
    acked_all.fetch_add(acked, Ordering::Relaxed);
    (begun.elapsed().as_secs_f64(), acked)
}
