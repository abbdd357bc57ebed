//! A pessimistic transaction that locks more than a region's in-memory budget (512 KiB, TiKV's
//! `in-memory-peer-size-limit`) in `InMemory` mode: the locks that do not fit spill to
//! replicated (Raft) locks, the transaction still commits, a lock scan during the
//! transaction lists every lock exactly once (memory and replicated merged, as TiKV's
//! `scan_locks` de-duplicates, tikv#16818), and the budget is back to zero afterwards.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use support::{Layout, TestCluster};
use surge_txn::{ClientConfig, LockMode, TxnMode};

/// About 2 KiB charged per lock (a 1000-byte key and a 1000-byte primary): 320 locks need
/// ~650 KiB, past the 512 KiB budget.
const KEYS: usize = 320;

fn key(i: usize) -> Vec<u8> {
    let mut k = vec![0x10];
    k.extend_from_slice(format!("spill-{i:05}-").as_bytes());
    k.resize(1000, b'x');
    k
}

#[test]
fn locks_past_the_region_budget_spill_to_raft_and_still_commit() {
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let client = tc.client(ClientConfig::default());
    let before = tc.cluster.counters();
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    for i in 0..KEYS {
        t.put(&key(i), format!("v{i}").as_bytes())
            .expect("lock and buffer");
    }
    let during = tc.cluster.counters();
    eprintln!("counters before {before:?}\nduring {during:?}");
    assert!(
        during.in_memory_full > before.in_memory_full,
        "the budget filled up"
    );
    assert!(
        during.in_memory_success > before.in_memory_success,
        "the first locks were in memory"
    );
    assert!(
        during.lock_raft_bytes > before.lock_raft_bytes,
        "the rest went through Raft"
    );

    let locks = tc.scan_locks(&key(0), u64::MAX);
    let keys: BTreeSet<Vec<u8>> = locks.iter().map(|l| l.key.clone()).collect();
    assert_eq!(
        locks.len(),
        keys.len(),
        "a lock listed twice (memory and Raft)"
    );
    let want: BTreeSet<Vec<u8>> = (0..KEYS).map(key).collect();
    assert_eq!(keys, want, "every lock, and only ours");
    assert!(locks.iter().all(|l| l.lock_ts == t.start_ts()));

    t.commit().expect("commit");
    let got = client
        .scan(&key(0), Some(&[0x11]), KEYS + 10)
        .expect("scan");
    assert_eq!(got.len(), KEYS);
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, (k, v))| *k == key(i) && *v == format!("v{i}").into_bytes())
    );
    assert!(
        tc.scan_locks(&key(0), u64::MAX).is_empty(),
        "locks left after commit"
    );

    // Memory locks are removed when the write that replaced them applies.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let held: Vec<(u64, usize)> = tc
            .node_statuses()
            .iter()
            .map(|s| (s.node, s.memory_lock_bytes))
            .collect();
        if held.iter().all(|(_, b)| *b == 0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "lock memory not released: {held:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
