//! A bank workload with in-memory locks under a seeded schedule of voluntary region changes
//! (leader transfers, splits and merges): every snapshot sees the same total, every
//! acknowledged transfer is in the final balances, and not one in-memory lock is lost
//! (counted by the nodes). `TXN_SEED` replays a run, `TXN_LONG=1` runs 30 s instead of 4.

mod support;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{
    Layout, SplitMix64, TestCluster, fault_tolerant_client, long_run, region_change, seed_for,
};
use surge_txn::{LockMode, TxnClient, TxnError, TxnMode};

const ACCOUNTS: usize = 16;
const INITIAL: i64 = 1000;

fn key(i: usize) -> Vec<u8> {
    // Spread over the key space: the first byte decides the region.
    let first = u8::try_from(i * 16).unwrap_or(255);
    vec![first, b'a', u8::try_from(i).unwrap_or(0)]
}

fn balance(v: Option<Vec<u8>>) -> i64 {
    let v = v.expect("account exists");
    String::from_utf8(v).expect("utf8").parse().expect("number")
}

/// One transfer in a pessimistic transaction; `Ok(true)` committed, `Ok(false)` aborted
/// cleanly, `Err` unknown outcome.
fn transfer(cl: &TxnClient, from: usize, to: usize, amount: i64) -> Result<bool, String> {
    let mut t = cl.begin(TxnMode::Pessimistic).map_err(|e| e.to_string())?;
    let written = (|| -> Result<(), TxnError> {
        let a = balance(t.get_for_update(&key(from))?);
        let b = balance(t.get_for_update(&key(to))?);
        t.put(&key(from), (a - amount).to_string().as_bytes())?;
        t.put(&key(to), (b + amount).to_string().as_bytes())
    })();
    if written.is_err() {
        t.rollback();
        return Ok(false);
    }
    match t.commit() {
        Ok(_) => Ok(true),
        Err(TxnError::Undetermined { .. }) => Err("undetermined".into()),
        // Not committed, and the commit released the locks.
        Err(_) => Ok(false),
    }
}

fn total(cl: &TxnClient) -> Option<i64> {
    let mut t = cl.begin(TxnMode::Optimistic).ok()?;
    let mut sum = 0;
    for i in 0..ACCOUNTS {
        sum += balance(t.get(&key(i)).ok()?);
    }
    Some(sum)
}

#[test]
fn bank_with_in_memory_locks_under_transfers_splits_and_merges_loses_no_lock() {
    let seed = seed_for(
        "workload_region_changes",
        "bank_with_in_memory_locks_under_transfers_splits_and_merges_loses_no_lock",
    );
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let c = &tc.cluster;
    let cl = tc.client(fault_tolerant_client());
    {
        let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
        for i in 0..ACCOUNTS {
            t.put(&key(i), INITIAL.to_string().as_bytes()).expect("put");
        }
        t.commit().expect("load");
    }
    let expected = INITIAL * ACCOUNTS as i64;
    let run_for = Duration::from_secs(if long_run() { 30 } else { 4 });
    let stop = AtomicBool::new(false);
    let acked: Mutex<Vec<(usize, usize, i64)>> = Mutex::new(Vec::new());
    let unknown = Mutex::new(0usize);
    let changes = Mutex::new(Vec::new());
    let snapshots = Mutex::new(0usize);
    std::thread::scope(|s| {
        for w in 0..3u64 {
            let cl = cl.clone();
            let (stop, acked, unknown) = (&stop, &acked, &unknown);
            let mut rng = SplitMix64::new(seed ^ (w + 1));
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let from = rng.below(ACCOUNTS as u64) as usize;
                    let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as usize) % ACCOUNTS;
                    let amount = rng.range(1, 20) as i64;
                    match transfer(&cl, from, to, amount) {
                        Ok(true) => acked.lock().expect("acked").push((from, to, amount)),
                        Ok(false) => {}
                        Err(_) => *unknown.lock().expect("unknown") += 1,
                    }
                }
            });
        }
        {
            let cl = cl.clone();
            let (stop, snapshots) = (&stop, &snapshots);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(t) = total(&cl) {
                        assert_eq!(t, expected, "a snapshot saw the total change");
                        *snapshots.lock().expect("snapshots") += 1;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        let mut rng = SplitMix64::new(seed);
        let start = Instant::now();
        while start.elapsed() < run_for {
            let (_, _, did) = region_change(c, &mut rng, 1, 12);
            changes.lock().expect("changes").push(did);
            std::thread::sleep(Duration::from_millis(rng.range(50, 250)));
        }
        stop.store(true, Ordering::SeqCst);
    });
    let changes = changes.into_inner().expect("changes");
    for ch in &changes {
        eprintln!("  {ch}");
    }
    let acked = acked.into_inner().expect("acked");
    let unknown = unknown.into_inner().expect("unknown");
    eprintln!(
        "seed {seed}: {} transfers acknowledged, {unknown} unknown, {} snapshots, {} region changes, {} regions at the end",
        acked.len(),
        snapshots.into_inner().expect("snapshots"),
        changes.len(),
        c.regions().len()
    );
    assert!(
        !acked.is_empty(),
        "nothing committed: the run proves nothing"
    );
    assert_eq!(unknown, 0, "no outcome may be unknown without a crash");
    let mut want = [INITIAL; ACCOUNTS];
    for (from, to, amount) in &acked {
        want[*from] -= amount;
        want[*to] += amount;
    }
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(balance(t.get(&key(i)).expect("get")), *w, "account {i}");
    }
    let counters = c.counters();
    eprintln!("{counters:?}");
    assert_eq!(
        counters.locks_lost_on_leader_loss, 0,
        "a voluntary change lost a lock"
    );
}
