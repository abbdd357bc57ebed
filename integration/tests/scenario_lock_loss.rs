//! The demo's lock scenarios through `surge-txn`: TiKV 6.0's lock-loss transcript in both
//! lock modes and a voluntary leader transfer that migrates every in-memory lock.

use surge_txn::LockMode;
use surgedb::scenarios::{LOCK_LOSS_ROW, TRANSFER_LOCKS, run_lock_loss, run_lock_transfer};

#[test]
fn in_memory_lock_dies_with_the_stopped_leader_and_t1_gets_pessimistic_lock_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_lock_loss(dir.path(), LockMode::InMemory).unwrap();
    assert_eq!(r.t1_lock_raft_bytes, 0, "{r:?}");
    assert!(r.t2_done_before_t1_commit, "{r:?}");
    assert!(r.t2.commit_ts().is_some(), "{r:?}");
    assert_eq!(r.t1.error_name(), Some("PessimisticLockNotFound"), "{r:?}");
    assert_eq!(r.final_value.as_deref(), Some(&b"t2"[..]));
    let text = r.to_string();
    assert!(
        text.contains("T1: failed with PessimisticLockNotFound"),
        "{text}"
    );
    assert!(
        text.contains("0 bytes of lock records written to Raft"),
        "{text}"
    );
    assert!(LOCK_LOSS_ROW.is_ascii());
}

#[test]
fn sync_lock_survives_the_stopped_leader_and_t1_commits_before_t2() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_lock_loss(dir.path(), LockMode::Sync).unwrap();
    assert!(r.t1_lock_raft_bytes > 0, "{r:?}");
    assert!(!r.t2_done_before_t1_commit, "{r:?}");
    let (t1, t2) = (r.t1.commit_ts().unwrap(), r.t2.commit_ts().unwrap());
    assert!(t1 < t2, "{r:?}");
    assert_eq!(r.final_value.as_deref(), Some(&b"t2"[..]));
}

#[test]
fn a_voluntary_leader_transfer_migrates_every_in_memory_lock_and_the_txn_commits() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_lock_transfer(dir.path()).unwrap();
    assert_eq!(r.locks_held, TRANSFER_LOCKS, "{r:?}");
    assert_eq!(r.lock_raft_bytes_before, 0, "{r:?}");
    assert_ne!(r.from, r.to);
    assert_eq!(r.migrated, TRANSFER_LOCKS as u64, "{r:?}");
    assert_eq!(r.lost, 0, "{r:?}");
    assert!(r.commit.commit_ts().is_some(), "{r:?}");
    assert_eq!(r.rows_written, TRANSFER_LOCKS);
    assert!(
        r.to_string()
            .contains("100 locks migrated through Raft, 0 lost"),
        "{r}"
    );
}
