//! Pessimistic locking: acquire, refresh, conflicts, rollback records, amend, pessimistic
//! rollback, commit of a leftover pessimistic lock, and locks kept in the memory table.
//! Case tables follow TiKV's `acquire_pessimistic_lock.rs` and `prewrite.rs` tests.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a failed unwrap is a failed test
#![allow(clippy::type_complexity)] // case tables are tuples, one row per case

mod actions_support;

use actions_support::*;
use surge_txn::{
    LockNotFoundReason, MvccError,
    actions::{Mutation, PessimisticAction, TxnCommitRecord, pessimistic_rollback, prewrite},
    codec::{LockType, WriteType},
};

#[test]
fn test_pessimistic_lock() {
    let mut env = Env::new();
    let (k, v) = (b"k".as_slice(), b"v".as_slice());
    must_acquire(&mut env, k, k, 10, 10);
    let lock = must_locked(&env, k, 10);
    assert_eq!(lock.lock_type, LockType::Pessimistic);
    assert_eq!(lock.for_update_ts, 10);
    // Another transaction waits.
    let err = try_acquire(&mut env, lock_req(k, k, 20), 20).unwrap_err();
    assert!(matches!(err, MvccError::KeyIsLocked(info) if info.lock_ts == 10));
    // A retry with a newer for_update_ts refreshes; an older one does not lower it.
    must_acquire(&mut env, k, k, 10, 12);
    assert_eq!(must_locked(&env, k, 10).for_update_ts, 12);
    must_acquire(&mut env, k, k, 10, 11);
    assert_eq!(must_locked(&env, k, 10).for_update_ts, 12);
    must_pessimistic_prewrite_put(&mut env, k, v, k, 10, 12);
    assert_eq!(must_locked(&env, k, 10).lock_type, LockType::Put);
    // Locking again after prewrite: already ours, nothing changes.
    must_acquire(&mut env, k, k, 10, 13);
    assert_eq!(must_locked(&env, k, 10).lock_type, LockType::Put);
    must_commit(&mut env, k, 10, 15);
    must_written(&env, k, 10, 15, WriteType::Put);
    assert_eq!(must_get(&env, k, 15), Some(v.to_vec()));
}

#[test]
fn test_pessimistic_lock_write_conflict() {
    for (engine, new_env) in engines() {
        let mut env = new_env();
        must_put_committed(&mut env, b"k", b"v", 5, 20);
        // (for_update_ts, conflicts)
        let cases = [(15, true), (19, true), (20, false), (25, false)];
        for (i, (for_update_ts, conflicts)) in cases.into_iter().enumerate() {
            let start_ts = 10 + i as u64;
            let got = try_acquire(&mut env, lock_req(b"k", b"k", for_update_ts), start_ts);
            match got {
                Err(MvccError::WriteConflict {
                    conflict_start_ts,
                    conflict_commit_ts,
                    ..
                }) => {
                    assert!(conflicts, "{engine}: for_update_ts {for_update_ts}");
                    assert_eq!((conflict_start_ts, conflict_commit_ts), (5, 20));
                }
                Ok(_) => {
                    assert!(!conflicts, "{engine}: for_update_ts {for_update_ts}");
                    env.run(start_ts, |txn, r| {
                        pessimistic_rollback(txn, r, b"k", for_update_ts)
                    })
                    .unwrap();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn test_pessimistic_lock_rolled_back() {
    for (engine, new_env) in engines() {
        // (protected rollback of txn 10, then a newer commit at 15) -> lock of txn 10 at 20
        let cases = [
            (true, false, true),
            (false, false, true),
            (true, true, true),
            (false, true, false),
        ];
        for (protect, newer_commit, rolled_back) in cases {
            let mut env = new_env();
            must_rollback(&mut env, b"k", 10, protect);
            if newer_commit {
                must_put_committed(&mut env, b"k", b"x", 12, 15);
            }
            let got = try_acquire(&mut env, lock_req(b"k", b"k", 20), 10);
            assert_eq!(
                matches!(
                    got,
                    Err(MvccError::PessimisticLockRolledBack { start_ts: 10, .. })
                ),
                rolled_back,
                "{engine}: protect {protect} newer {newer_commit}: {got:?}"
            );
        }
    }
}

#[test]
fn test_pessimistic_lock_should_not_exist() {
    let mut env = Env::new();
    let insert = |for_update_ts| {
        let mut req = lock_req(b"k", b"k", for_update_ts);
        req.should_not_exist = true;
        req
    };
    try_acquire(&mut env, insert(5), 5).unwrap();
    env.run(5, |txn, r| pessimistic_rollback(txn, r, b"k", 5))
        .unwrap();
    must_put_committed(&mut env, b"k", b"v", 6, 7);
    let err = try_acquire(&mut env, insert(10), 10).unwrap_err();
    assert_eq!(err, MvccError::AlreadyExist { key: b"k".to_vec() });
    must_unlocked(&env, b"k");
    // Deleted again: may be inserted.
    try_prewrite(
        &mut env,
        &props(b"k", 11, 0),
        Mutation::Delete { key: b"k".to_vec() },
        PessimisticAction::SkipPessimisticCheck,
    )
    .unwrap();
    must_commit(&mut env, b"k", 11, 12);
    try_acquire(&mut env, insert(13), 13).unwrap();
}

#[test]
fn test_pessimistic_lock_need_value() {
    let mut env = Env::new();
    must_put_committed(&mut env, b"k", b"v1", 2, 3);
    // A Lock record and a rollback on top must be skipped when reading the value.
    try_prewrite(
        &mut env,
        &props(b"k", 4, 0),
        Mutation::Lock { key: b"k".to_vec() },
        PessimisticAction::SkipPessimisticCheck,
    )
    .unwrap();
    must_commit(&mut env, b"k", 4, 5);
    must_rollback(&mut env, b"k", 6, false);
    // (need_value, need_check_existence) -> (value, exists)
    let cases = [
        (false, false, None, false),
        (true, false, Some(b"v1".to_vec()), true),
        (false, true, None, true),
        (true, true, Some(b"v1".to_vec()), true),
    ];
    for (i, (need_value, need_check_existence, value, exists)) in cases.into_iter().enumerate() {
        let start_ts = 10 + i as u64;
        let mut req = lock_req(b"k", b"k", start_ts);
        req.need_value = need_value;
        req.need_check_existence = need_check_existence;
        let got = try_acquire(&mut env, req, start_ts).unwrap();
        assert_eq!((got.value, got.exists), (value.clone(), exists), "case {i}");
        // The own-lock path answers the same.
        let got = try_acquire(&mut env, req, start_ts).unwrap();
        assert_eq!((got.value, got.exists), (value, exists), "case {i} retry");
        env.run(start_ts, |txn, r| {
            pessimistic_rollback(txn, r, b"k", start_ts)
        })
        .unwrap();
    }
}

#[test]
fn test_pessimistic_rollback() {
    // (lock kind of txn 10 with for_update_ts 15 ; rollback by (start_ts, for_update_ts)) -> removed
    let cases = [
        (true, 10, 15, true),
        (true, 10, 20, true),
        (true, 10, 14, false),
        (true, 11, 20, false),
        (false, 10, 20, false),
    ];
    for (pessimistic, start_ts, for_update_ts, removed) in cases {
        let mut env = Env::new();
        must_acquire(&mut env, b"k", b"k", 10, 15);
        if !pessimistic {
            must_pessimistic_prewrite_put(&mut env, b"k", b"v", b"k", 10, 15);
        }
        env.run(start_ts, |txn, r| {
            pessimistic_rollback(txn, r, b"k", for_update_ts)
        })
        .unwrap();
        let locked = env.read(|r| r.load_lock(b"k")).unwrap().is_some();
        assert_eq!(locked, !removed, "{pessimistic} {start_ts} {for_update_ts}");
        assert_eq!(env.write_at(b"k", 10), None, "no rollback record");
    }
    // Nothing to roll back is fine.
    let mut env = Env::new();
    env.run(10, |txn, r| pessimistic_rollback(txn, r, b"k", 10))
        .unwrap();
}

#[test]
fn test_amend_pessimistic_lock() {
    // Newest record before the lock was lost -> (commit_ts of another txn or own rollback) -> amend ok
    let cases: [(Option<(u64, u64)>, bool, bool); 5] = [
        (None, false, true),
        (Some((5, 8)), false, true),
        (Some((5, 9)), false, true),
        (Some((9, 10)), false, false),
        (None, true, false),
    ];
    for ((committed, own_rollback, amended), (engine, new_env)) in cases
        .into_iter()
        .flat_map(|case| engines().map(|engine| (case, engine)))
    {
        let mut env = new_env();
        if let Some((s, c)) = committed {
            must_put_committed(&mut env, b"k", b"old", s, c);
        }
        if own_rollback {
            must_rollback(&mut env, b"k", 10, true);
        }
        // Txn 10 locked k pessimistically, but the lock was lost (e.g. with the leader).
        let got = try_prewrite(
            &mut env,
            &props(b"k", 10, 12),
            put(b"k", b"new"),
            PessimisticAction::DoPessimisticCheck,
        );
        if amended {
            got.unwrap();
            must_locked(&env, b"k", 10);
        } else {
            assert_eq!(
                got,
                Err(MvccError::PessimisticLockNotFound {
                    start_ts: 10,
                    key: b"k".to_vec(),
                    reason: LockNotFoundReason::LockMissingAmendFail
                }),
                "{engine}: {committed:?} {own_rollback}"
            );
        }
    }
}

#[test]
fn test_prewrite_pessimistic_lock_checks() {
    let mut env = Env::new();
    must_acquire(&mut env, b"k", b"k", 10, 12);
    // Another transaction's lock on a pessimistic key: ours was lost and taken.
    let err = try_prewrite(
        &mut env,
        &props(b"k", 11, 13),
        put(b"k", b"v"),
        PessimisticAction::DoPessimisticCheck,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        MvccError::PessimisticLockNotFound {
            reason: LockNotFoundReason::LockTsMismatch,
            ..
        }
    ));
    // Expected for_update_ts mismatch.
    let p = props(b"k", 10, 13);
    let err = env
        .run(10, |txn, r| {
            prewrite(
                txn,
                r,
                &p,
                &put(b"k", b"v"),
                PessimisticAction::DoPessimisticCheck,
                Some(13),
            )
        })
        .unwrap_err();
    assert!(matches!(
        err,
        MvccError::PessimisticLockNotFound {
            reason: LockNotFoundReason::LockForUpdateTsMismatch,
            ..
        }
    ));
    // An optimistic prewrite cannot replace its own pessimistic lock.
    let err = try_prewrite(
        &mut env,
        &props(b"k", 10, 0),
        put(b"k", b"v"),
        PessimisticAction::SkipPessimisticCheck,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        MvccError::LockTypeNotMatch {
            lock_type: LockType::Pessimistic,
            ..
        }
    ));
    // Pushed ttl / min_commit_ts of the pessimistic lock survive the prewrite.
    let mut req = lock_req(b"k", b"k", 12);
    req.lock_ttl = 9000;
    req.min_commit_ts = 50;
    try_acquire(&mut env, req, 10).unwrap();
    env.run(10, |txn, r| {
        prewrite(
            txn,
            r,
            &props(b"k", 10, 12),
            &put(b"k", b"v"),
            PessimisticAction::DoPessimisticCheck,
            Some(12),
        )
    })
    .unwrap();
    let lock = must_locked(&env, b"k", 10);
    assert_eq!(
        (lock.lock_type, lock.ttl, lock.min_commit_ts),
        (LockType::Put, 9000, 50)
    );
}

#[test]
fn test_pessimistic_txn_unlocked_key_conflicts() {
    // Prewrites key `key` of the pessimistic txn 10 (for_update_ts 20) without a lock.
    let prewrite_unlocked = |env: &mut Env, key: &[u8]| {
        try_prewrite(
            env,
            &props(b"p", 10, 20),
            put(key, b"v"),
            PessimisticAction::SkipPessimisticCheck,
        )
    };
    for (engine, new_env) in engines() {
        // A key of a pessimistic txn prewritten without a pessimistic lock checks for records
        // newer than for_update_ts, ignoring rollbacks.
        let mut env = new_env();
        must_rollback(&mut env, b"r", 30, false);
        prewrite_unlocked(&mut env, b"r").unwrap_or_else(|e| panic!("{engine}: {e}"));
        must_put_committed(&mut env, b"c", b"x", 11, 25);
        // Its own rollback at start_ts conflicts even below for_update_ts (a check that
        // looked only above for_update_ts would miss it).
        must_rollback(&mut env, b"o", 10, true);
        for (key, commit_ts) in [(b"c", 25), (b"o", 10)] {
            let got = prewrite_unlocked(&mut env, key);
            assert!(
                matches!(
                    got,
                    Err(MvccError::WriteConflict { conflict_commit_ts, .. })
                        if conflict_commit_ts == commit_ts
                ),
                "{engine}, {key:?}: {got:?}"
            );
        }
        // Older than for_update_ts: fine.
        must_put_committed(&mut env, b"d", b"x", 11, 15);
        prewrite_unlocked(&mut env, b"d").unwrap_or_else(|e| panic!("{engine}: {e}"));
    }
}

#[test]
fn test_commit_pessimistic_lock_rolls_it_back() {
    let mut env = Env::new();
    must_acquire(&mut env, b"k", b"p", 10, 10);
    must_commit(&mut env, b"k", 10, 20);
    must_unlocked(&env, b"k");
    assert_eq!(
        env.write_at(b"k", 20),
        None,
        "a pessimistic lock is not committed"
    );
    assert_eq!(
        commit_record(&env, b"k", 10),
        TxnCommitRecord::None {
            overlapped_write: None
        }
    );
}

#[test]
fn test_in_memory_pessimistic_lock_lifecycle() {
    let mut env = Env::with_memory_locks();
    must_acquire(&mut env, b"k", b"k", 10, 10);
    // In memory only: not replicated to the lock CF, but load_lock finds it.
    assert_eq!(env.mem.as_ref().unwrap().len(), 1);
    assert_eq!(env.lock_cf(b"k"), None);
    assert_eq!(must_locked(&env, b"k", 10).lock_type, LockType::Pessimistic);
    let err = try_acquire(&mut env, lock_req(b"k", b"k", 11), 11).unwrap_err();
    assert!(matches!(err, MvccError::KeyIsLocked(_)));
    // Prewrite replaces it with a replicated lock; the memory entry is removed on apply.
    must_pessimistic_prewrite_put(&mut env, b"k", b"v", b"k", 10, 10);
    assert!(env.mem.as_ref().unwrap().is_empty());
    assert_eq!(env.lock_cf(b"k").unwrap().lock_type, LockType::Put);
    must_commit(&mut env, b"k", 10, 11);
    assert_eq!(must_get(&env, b"k", 11), Some(b"v".to_vec()));
}

#[test]
fn test_deleted_marked_memory_lock_stays_visible() {
    let mut env = Env::with_memory_locks();
    must_acquire(&mut env, b"k", b"k", 10, 10);
    env.mem.as_mut().unwrap().mark_deleted(b"k");
    assert_eq!(must_locked(&env, b"k", 10).lock_type, LockType::Pessimistic);
    let locks = env.read(|r| r.scan_locks(b"", None, 0, |_| true)).unwrap();
    assert_eq!(locks.len(), 1);
}

#[test]
fn test_scan_locks_with_in_progress_transfer_leader() {
    // During a leader transfer a lock sits both in memory and (proposed) in the lock CF:
    // each key is reported once, the memory table's version winning.
    let mut env = Env::with_memory_locks();
    for (key, ts) in [(b"a", 10), (b"c", 12), (b"e", 14)] {
        must_acquire(&mut env, key, key, ts, ts);
    }
    // Lock CF: b, c (proposed during the transfer) and d.
    let mut plain = Env::new();
    must_acquire(&mut plain, b"b", b"b", 11, 11);
    must_acquire(&mut plain, b"c", b"c", 12, 12);
    must_acquire(&mut plain, b"d", b"d", 13, 13);
    assert_eq!(plain.lock_cf(b"c").unwrap().for_update_ts, 12);
    env.engine = plain.engine;
    let mut newer = must_locked(&env, b"c", 12);
    newer.for_update_ts = 99;
    env.mem
        .as_mut()
        .unwrap()
        .try_insert_one(b"c".to_vec(), newer, 1, 1)
        .unwrap();
    // (start, end, limit) -> keys
    let cases: [(&[u8], Option<&[u8]>, usize, &[&[u8]]); 5] = [
        (b"", None, 0, &[b"a", b"b", b"c", b"d", b"e"]),
        (b"b", Some(b"e"), 0, &[b"b", b"c", b"d"]),
        (b"", None, 3, &[b"a", b"b", b"c"]),
        (b"c", None, 1, &[b"c"]),
        (b"f", None, 0, &[]),
    ];
    for (start, end, limit, want) in cases {
        let got = env
            .read(|r| r.scan_locks(start, end, limit, |_| true))
            .unwrap();
        let keys: Vec<&[u8]> = got.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, want, "{start:?}..{end:?} limit {limit}");
        if let Some((_, lock)) = got.iter().find(|(k, _)| k == b"c") {
            assert_eq!(lock.for_update_ts, 99, "memory wins");
        }
    }
    // A filter that rejects the memory lock still hides the shadowed CF lock.
    let got = env
        .read(|r| r.scan_locks(b"c", Some(b"d"), 0, |l| l.for_update_ts != 99))
        .unwrap();
    assert!(got.is_empty());
}
