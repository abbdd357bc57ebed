//! The lock-loss transcript of TiKV's in-memory pessimistic locks (TiKV RFC 77, "Correctness";
//! tikv#7980 for pipelined locks), replayed in process on a three-node cluster:
//!
//! 1. T1 (pessimistic) locks a row;
//! 2. T2 (pessimistic) asks for the same row and waits;
//! 3. the row's region leader crashes.
//!
//! With `InMemory` locks (and `Pipelined` locks whose proposal never reached a quorum) T1's
//! lock dies with the leader: T2 takes the row and commits, and T1's commit fails with
//! `PessimisticLockNotFound` (an honest abort, never a lost update). With `Sync` locks T1's
//! lock went through Raft and survives: T2 keeps waiting, T1 commits, then T2 locks the row
//! (after a write conflict and a retry at a fresh `for_update_ts`) and commits after T1.
//! In every mode exactly the writes that were acknowledged are in the row's history.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{Layout, TestCluster};
use surge_txn::{ClientConfig, LockMode, TxnClient, TxnError, TxnMode, rpc::META_REGION_ID};

const ROW: &[u8] = b"\x10row";

/// Clients that wait up to 10 s for a lock (longer than any step here), with heartbeats
/// keeping T1's lock alive however long the crash takes to heal.
fn waiting_client(tc: &TestCluster) -> TxnClient {
    tc.client(
        ClientConfig::default()
            .with_wait_for_lock_timeout(Some(Duration::from_secs(10)))
            .with_heartbeat_interval(Duration::from_millis(100)),
    )
}

fn start(mode: LockMode) -> TestCluster {
    let tc = TestCluster::start(Layout::new(2, mode));
    let client = waiting_client(&tc);
    let mut t0 = client.begin(TxnMode::Optimistic).expect("begin");
    t0.put(ROW, b"t0").expect("put");
    t0.commit().expect("seed the row");
    tc
}

/// Waits until some node counts a new lock wait (T2 is queued behind T1), up to 5 s.
fn wait_for_waiter(tc: &TestCluster, before: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while tc.cluster.counters().lock_waits <= before {
        assert!(Instant::now() < deadline, "T2 never started waiting");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// T2: locks the row, writes `t2`, commits. Returns its commit_ts and when its lock was
/// granted.
fn t2_writes(client: &TxnClient, started: &AtomicBool) -> Result<(u64, Instant), TxnError> {
    let mut t2 = client.begin(TxnMode::Pessimistic)?;
    started.store(true, Ordering::Release);
    t2.put(ROW, b"t2")?;
    let locked_at = Instant::now();
    Ok((t2.commit()?, locked_at))
}

/// Steps 1-3 with a lock that dies with the leader; `cut_first` isolates the leader before
/// T1 locks, so a pipelined lock is acknowledged on proposal but never replicated.
fn lost_lock(mode: LockMode, cut_first: bool) {
    let tc = start(mode);
    let c1 = waiting_client(&tc);
    let c2 = waiting_client(&tc);
    if cut_first {
        // The lock request needs a fresh for_update_ts from the meta group: keep the meta
        // leader on the majority side, away from the row's leader.
        let meta = tc
            .cluster
            .leader_of_group(META_REGION_ID)
            .expect("meta leader");
        let region = tc.cluster.region_of(ROW).expect("region").id;
        let to = tc
            .cluster
            .node_ids()
            .iter()
            .copied()
            .find(|n| *n != meta)
            .expect("3 nodes");
        tc.cluster
            .transfer_leader(region, to, Duration::from_secs(5))
            .expect("move the row's leader off the meta leader");
    }
    let (leader, _) = tc.leader_ctx(ROW);
    let mut t1 = c1.begin(TxnMode::Pessimistic).expect("begin T1");
    if cut_first {
        let others: Vec<u64> = tc
            .cluster
            .node_ids()
            .iter()
            .copied()
            .filter(|n| *n != leader)
            .collect();
        tc.cluster.network().partition(&[leader], &others);
    }
    let before = tc.cluster.counters();
    t1.put(ROW, b"t1").expect("T1 locks the row");
    let after = tc.cluster.counters();
    if mode == LockMode::InMemory {
        assert_eq!(
            after.in_memory_success,
            before.in_memory_success + 1,
            "T1's lock is in the leader's memory"
        );
    } else {
        assert!(
            after.lock_raft_bytes > before.lock_raft_bytes,
            "a pipelined lock is proposed to Raft"
        );
    }
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        let t2 = s.spawn(|| t2_writes(&c2, &started));
        if cut_first {
            // A pipelined waiter queues on the key's latch (held until the lock applies),
            // which no counter shows: give it time to get there.
            while !started.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(50));
        } else {
            wait_for_waiter(&tc, before.lock_waits);
        }
        tc.cluster.stop_node(leader).expect("crash the leader");
        tc.cluster.network().heal();
        let (t2_commit, _) = t2
            .join()
            .expect("T2 thread")
            .expect("T2 proceeds once T1's lock is gone");
        let t1_start_ts = t1.start_ts();
        match t1.commit() {
            Err(TxnError::PessimisticLockNotFound { start_ts, key }) => {
                assert_eq!((start_ts, key.as_slice()), (t1_start_ts, ROW));
            }
            other => panic!("{mode}: T1's commit after its lock was lost: {other:?}"),
        }
        let tc_ts = tc.timestamp();
        assert_eq!(tc.get_at(ROW, tc_ts).as_deref(), Some(&b"t2"[..]), "{mode}");
        assert_eq!(
            tc.get_at(ROW, t2_commit - 1).as_deref(),
            Some(&b"t0"[..]),
            "{mode}: T1 never wrote"
        );
    });
}

#[test]
fn in_memory_lock_dies_with_the_leader_and_the_waiter_commits() {
    lost_lock(LockMode::InMemory, false);
}

#[test]
fn unreplicated_pipelined_lock_dies_with_the_leader_and_the_waiter_commits() {
    lost_lock(LockMode::Pipelined, true);
}

#[test]
fn sync_lock_survives_the_leader_and_the_waiter_commits_after_the_holder() {
    let tc = start(LockMode::Sync);
    let c1 = waiting_client(&tc);
    let c2 = waiting_client(&tc);
    let (leader, _) = tc.leader_ctx(ROW);
    let before = tc.cluster.counters();
    let mut t1 = c1.begin(TxnMode::Pessimistic).expect("begin T1");
    t1.put(ROW, b"t1").expect("T1 locks the row");
    assert!(
        tc.cluster.counters().lock_raft_bytes > before.lock_raft_bytes,
        "a sync lock goes through Raft"
    );
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        let t2 = s.spawn(|| t2_writes(&c2, &started));
        wait_for_waiter(&tc, before.lock_waits);
        tc.cluster.stop_node(leader).expect("crash the leader");
        tc.cluster
            .wait_for_leaders(Duration::from_secs(30))
            .expect("a new leader");
        // T2 moves to the new leader, finds T1's replicated lock and waits there.
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !t2.is_finished(),
            "T2 got past T1's lock while T1 was alive"
        );
        let t1_commit = t1.commit().expect("T1 still holds its lock and commits");
        let t1_done = Instant::now();
        let (t2_commit, t2_locked) = t2.join().expect("T2 thread").expect("T2 commits after T1");
        assert!(
            t2_locked >= t1_done,
            "T2 was granted the row before T1 finished"
        );
        assert!(t2_commit > t1_commit);
        assert_eq!(tc.get_at(ROW, t1_commit).as_deref(), Some(&b"t1"[..]));
        assert_eq!(tc.get_at(ROW, t2_commit).as_deref(), Some(&b"t2"[..]));
    });
    tc.cluster.restart_node(leader).expect("restart");
}
