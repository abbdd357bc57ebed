//! In-memory pessimistic locks (TiKV 6.0) on a three-node Raft group: in-memory locks cost no Raft write, survive a
//! voluntary transfer, and their loss in a crash is detected at prewrite.

use surgedb::scenarios::{PrewriteOutcome, run_cluster};

#[test]
fn in_memory_locks_migrate_on_transfer_and_their_loss_is_detected_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_cluster(dir.path()).unwrap();
    assert_eq!(r.raft_entries_for_in_memory_lock, 0, "{r:?}");
    assert_eq!(r.migrated_on_transfer, 1, "{r:?}");
    assert_ne!(r.leader_after_transfer, r.first_leader);
    assert_eq!(r.t1_prewrite_after_transfer, PrewriteOutcome::Prewritten);
    assert_eq!(r.crashed_leader, r.leader_after_transfer);
    assert_ne!(r.leader_after_crash, r.crashed_leader);
    assert_eq!(
        r.t2_prewrite_after_crash,
        PrewriteOutcome::PessimisticLockNotFound
    );
    assert_eq!(r.t3_prewrite_same_key, PrewriteOutcome::Prewritten);
    // The evidence the demo prints: the replicated lock column holds T3's prewrite only.
    assert_eq!(r.k2_prewritten_by, Some(30));
    assert!(
        r.to_string().contains("prewrite lock of start_ts 30"),
        "{r}"
    );
}
