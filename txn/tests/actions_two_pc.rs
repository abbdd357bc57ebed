//! Two-phase and one-phase commit: prewrite, commit, rollback, resolve, heartbeat,
//! check_txn_status and snapshot reads. Case tables follow TiKV's `actions/*.rs` tests.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a failed unwrap is a failed test
#![allow(clippy::type_complexity)] // case tables are tuples, one row per case

mod actions_support;

use actions_support::*;
use surge_txn::{
    Cf, Modify, MvccError, WriteBatch,
    actions::{
        CommitKind, Mutation, PessimisticAction, TxnCommitRecord, TxnStatus, batch_get,
        check_txn_status, point_get, prewrite, resolve_lock, scan, scan_lock, txn_heartbeat,
    },
    codec::{LockType, SHORT_VALUE_MAX_LEN, WriteType, compose_ts, encode_key},
};

const SKIP: PessimisticAction = PessimisticAction::SkipPessimisticCheck;

fn ts(physical_ms: u64) -> u64 {
    compose_ts(physical_ms, 0)
}

fn test_commit_ok_imp(value: &[u8]) {
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"x", value, b"x", 10);
    try_prewrite(
        &mut env,
        &props(b"x", 10, 0),
        Mutation::Lock { key: b"y".to_vec() },
        SKIP,
    )
    .unwrap();
    try_prewrite(
        &mut env,
        &props(b"x", 10, 0),
        Mutation::Delete { key: b"z".to_vec() },
        SKIP,
    )
    .unwrap();
    assert_eq!(env.has_default(b"x", 10), value.len() > SHORT_VALUE_MAX_LEN);
    for _ in 0..2 {
        // The second round is a retry: idempotent.
        must_commit(&mut env, b"x", 10, 15);
        must_commit(&mut env, b"y", 10, 15);
        must_commit(&mut env, b"z", 10, 15);
    }
    must_written(&env, b"x", 10, 15, WriteType::Put);
    must_written(&env, b"y", 10, 15, WriteType::Lock);
    must_written(&env, b"z", 10, 15, WriteType::Delete);
    for key in [b"x", b"y", b"z"] {
        must_unlocked(&env, key);
    }
    assert_eq!(must_get(&env, b"x", 15), Some(value.to_vec()));
    assert_eq!(must_get(&env, b"x", 14), None);
}

#[test]
fn test_commit_ok() {
    test_commit_ok_imp(b"v");
    test_commit_ok_imp(&vec![b'v'; SHORT_VALUE_MAX_LEN + 1]);
}

#[test]
fn test_commit_err() {
    let mut env = Env::new();
    let not_found = |start_ts, commit_ts| MvccError::TxnLockNotFound {
        start_ts,
        commit_ts,
        key: b"k".to_vec(),
    };
    assert_eq!(try_commit(&mut env, b"k", 1, 2), Err(not_found(1, 2)));
    must_prewrite_put(&mut env, b"k", b"v", b"k", 5);
    // Another start_ts.
    assert_eq!(try_commit(&mut env, b"k", 4, 5), Err(not_found(4, 5)));
    // Below the lock's min_commit_ts (start_ts + 1).
    assert!(matches!(
        try_commit(&mut env, b"k", 5, 5),
        Err(MvccError::CommitTsExpired { .. })
    ));
    must_rollback(&mut env, b"k", 5, false);
    assert_eq!(try_commit(&mut env, b"k", 5, 6), Err(not_found(5, 6)));
}

#[test]
fn test_prewrite_write_conflict() {
    for (engine, new_env) in engines() {
        // Another txn committed at commit_ts -> optimistic txn 10 conflicts
        let cases = [(9, false), (10, false), (11, true)];
        for (commit_ts, conflicts) in cases {
            let mut env = new_env();
            must_put_committed(&mut env, b"k", b"old", 8, commit_ts);
            let got = try_prewrite(&mut env, &props(b"k", 10, 0), put(b"k", b"v"), SKIP);
            assert_eq!(
                matches!(got, Err(MvccError::WriteConflict { .. })),
                conflicts,
                "{engine}, {commit_ts}: {got:?}"
            );
        }
        // Its own rollback at start_ts: a late prewrite fails.
        let mut env = new_env();
        must_rollback(&mut env, b"k", 10, false);
        let got = try_prewrite(&mut env, &props(b"k", 10, 0), put(b"k", b"v"), SKIP);
        assert!(
            matches!(
                got,
                Err(MvccError::WriteConflict {
                    conflict_commit_ts: 10,
                    ..
                })
            ),
            "{engine}: {got:?}"
        );
    }
}

/// After a restart of the disk engine, its newest-write index knows no key: its floor, read
/// back from the last checkpoint, must still send a conflicting prewrite to the records.
#[test]
fn prewrite_conflicts_survive_a_restart_of_the_disk_engine() {
    for keys in [1, 1 << 16] {
        let mut env = Env::on_disk(keys);
        must_put_committed(&mut env, b"k", b"old", 8, 20);
        env.checkpoint();
        env.reopen();
        // The floor read back is the checkpoint's newest timestamp (a missing one would be
        // u64::MAX, which seeks every key and passes the rest of this test too).
        assert_eq!(env.read(|r| r.newest_write_bound(b"k")), 20);
        assert_eq!(env.read(|r| r.newest_write_bound(b"other")), 20);
        let got = try_prewrite(&mut env, &props(b"k", 10, 0), put(b"k", b"v"), SKIP);
        assert!(
            matches!(
                got,
                Err(MvccError::WriteConflict {
                    conflict_commit_ts: 20,
                    ..
                })
            ),
            "index of {keys} keys: {got:?}"
        );
        try_prewrite(&mut env, &props(b"k", 21, 0), put(b"k", b"v"), SKIP)
            .unwrap_or_else(|e| panic!("index of {keys} keys: {e}"));
    }
}

#[test]
fn test_prewrite_idempotent_and_locked() {
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"k", b"v", b"k", 10);
    let before = env.engine.size_bytes();
    must_prewrite_put(&mut env, b"k", b"v", b"k", 10);
    assert_eq!(env.engine.size_bytes(), before);
    let err = try_prewrite(&mut env, &props(b"k", 11, 0), put(b"k", b"w"), SKIP).unwrap_err();
    assert!(
        matches!(err, MvccError::KeyIsLocked(info) if info.lock_ts == 10 && info.primary == b"k")
    );
}

#[test]
fn test_prewrite_check_not_exists() {
    let mut env = Env::new();
    let check = |start_ts| props(b"k", start_ts, 0);
    let mutation = Mutation::CheckNotExists { key: b"k".to_vec() };
    try_prewrite(&mut env, &check(5), mutation.clone(), SKIP).unwrap();
    must_unlocked(&env, b"k");
    must_put_committed(&mut env, b"k", b"v", 6, 7);
    let err = try_prewrite(&mut env, &check(8), mutation, SKIP).unwrap_err();
    assert_eq!(err, MvccError::AlreadyExist { key: b"k".to_vec() });
}

#[test]
fn test_rollback_lock() {
    let long = vec![b'v'; SHORT_VALUE_MAX_LEN + 1];
    for value in [b"v".to_vec(), long] {
        let mut env = Env::new();
        must_prewrite_put(&mut env, b"k", &value, b"k", 10);
        must_rollback(&mut env, b"k", 10, false);
        must_unlocked(&env, b"k");
        assert!(!env.has_default(b"k", 10), "long value removed");
        let write = must_written(&env, b"k", 10, 10, WriteType::Rollback);
        assert!(!write.protected);
        // Idempotent.
        must_rollback(&mut env, b"k", 10, false);
        assert!(matches!(
            try_commit(&mut env, b"k", 10, 11),
            Err(MvccError::TxnLockNotFound { .. })
        ));
    }
}

#[test]
fn test_rollback_committed_is_error() {
    let mut env = Env::new();
    must_put_committed(&mut env, b"k", b"v", 10, 11);
    assert_eq!(
        try_rollback(&mut env, b"k", 10, false),
        Err(MvccError::Committed {
            start_ts: 10,
            commit_ts: 11,
            key: b"k".to_vec()
        })
    );
}

#[test]
fn test_collapse_prev_rollback() {
    let mut env = Env::new();
    must_rollback(&mut env, b"k", 10, false);
    must_rollback(&mut env, b"k", 11, false);
    // The unprotected rollback at 10 was collapsed by the one at 11.
    assert_eq!(env.write_at(b"k", 10), None);
    must_written(&env, b"k", 11, 11, WriteType::Rollback);
    // A protected rollback is never collapsed.
    must_rollback(&mut env, b"k", 12, true);
    must_rollback(&mut env, b"k", 13, false);
    assert!(must_written(&env, b"k", 12, 12, WriteType::Rollback).protected);
}

#[test]
fn test_protected_rollback_stops_late_prewrite() {
    for (engine, new_env) in engines() {
        // Cleanup before the prewrite arrives (the primary was judged dead).
        let mut env = new_env();
        must_rollback(&mut env, b"p", 10, true);
        assert!(must_written(&env, b"p", 10, 10, WriteType::Rollback).protected);
        // Later transactions' unprotected rollbacks do not remove it.
        must_rollback(&mut env, b"p", 11, false);
        let got = try_prewrite(&mut env, &props(b"p", 10, 0), put(b"p", b"v"), SKIP);
        assert!(
            matches!(got, Err(MvccError::WriteConflict { .. })),
            "{engine}: {got:?}"
        );
        let got = try_acquire(&mut env, lock_req(b"p", b"p", 12), 10);
        assert!(
            matches!(got, Err(MvccError::PessimisticLockRolledBack { .. })),
            "{engine}: {got:?}"
        );
        // Rollback of a pessimistic primary lock is protected even unasked.
        let mut env = new_env();
        must_acquire(&mut env, b"p", b"p", 20, 20);
        must_rollback(&mut env, b"p", 20, false);
        assert!(must_written(&env, b"p", 20, 20, WriteType::Rollback).protected);
    }
}

/// `write_at` is an exact lookup: the record at that commit_ts or nothing, where
/// `seek_write` gives the newest at or below it.
#[test]
fn write_at_finds_only_the_record_at_that_commit_ts() {
    let mut env = Env::new();
    must_put_committed(&mut env, b"k", b"v", 5, 10);
    must_rollback(&mut env, b"k", 20, true);
    env.read(|r| {
        let at10 = r.write_at(b"k", 10).expect("read").expect("record at 10");
        assert_eq!((at10.write_type, at10.start_ts), (WriteType::Put, 5));
        let at20 = r.write_at(b"k", 20).expect("read").expect("record at 20");
        assert_eq!(at20.write_type, WriteType::Rollback);
        for ts in [9, 11, 19, 21] {
            assert!(r.write_at(b"k", ts).expect("read").is_none(), "at {ts}");
        }
        assert!(r.write_at(b"j", 10).expect("read").is_none());
        assert_eq!(
            r.seek_write(b"k", 11).expect("read").map(|(ts, _)| ts),
            Some(10)
        );
    });
}

#[test]
fn test_overlapped_rollback() {
    for (engine, new_env) in engines() {
        // Txn 5 commits at 10 on k; txn 10 is rolled back on k afterwards.
        let mut env = new_env();
        must_put_committed(&mut env, b"k", b"v", 5, 10);
        assert!(matches!(
            commit_record(&env, b"k", 10),
            TxnCommitRecord::None {
                overlapped_write: Some(_)
            }
        ));
        must_rollback(&mut env, b"k", 10, true);
        let write = must_written(&env, b"k", 5, 10, WriteType::Put);
        assert!(write.has_overlapped_rollback);
        assert_eq!(
            commit_record(&env, b"k", 10),
            TxnCommitRecord::OverlappedRollback { commit_ts: 10 }
        );
        assert_eq!(must_get(&env, b"k", 10), Some(b"v".to_vec()));
        let got = try_prewrite(&mut env, &props(b"k", 10, 0), put(b"k", b"x"), SKIP);
        assert!(
            matches!(got, Err(MvccError::WriteConflict { .. })),
            "{engine}: {got:?}"
        );

        // The other order: rollback of txn 10 first, then txn 5 commits at 10.
        let mut env = new_env();
        must_prewrite_put(&mut env, b"k", b"v", b"k", 5);
        must_rollback(&mut env, b"k", 10, true);
        must_commit(&mut env, b"k", 5, 10);
        assert!(must_written(&env, b"k", 5, 10, WriteType::Put).has_overlapped_rollback);
        assert_eq!(
            commit_record(&env, b"k", 10),
            TxnCommitRecord::OverlappedRollback { commit_ts: 10 }
        );
    }
}

#[test]
fn test_one_pc() {
    let mut env = Env::new();
    let mut p = props(b"a", 10, 0);
    p.commit_kind = CommitKind::OnePc { commit_ts: 12 };
    let long = vec![b'l'; SHORT_VALUE_MAX_LEN + 1];
    try_prewrite(&mut env, &p, put(b"a", b"v"), SKIP).unwrap();
    try_prewrite(&mut env, &p, put(b"b", &long), SKIP).unwrap();
    for key in [b"a", b"b"] {
        must_unlocked(&env, key);
        must_written(&env, key, 10, 12, WriteType::Put);
    }
    assert_eq!(must_get(&env, b"b", 12), Some(long));
    // With a pessimistic lock: the lock goes, the record appears.
    must_acquire(&mut env, b"c", b"c", 20, 21);
    let mut p = props(b"c", 20, 21);
    p.commit_kind = CommitKind::OnePc { commit_ts: 25 };
    try_prewrite(
        &mut env,
        &p,
        put(b"c", b"v"),
        PessimisticAction::DoPessimisticCheck,
    )
    .unwrap();
    must_unlocked(&env, b"c");
    must_written(&env, b"c", 20, 25, WriteType::Put);
    // A commit_ts at or below the floor (for_update_ts here) is refused.
    must_acquire(&mut env, b"d", b"d", 30, 33);
    let mut p = props(b"d", 30, 33);
    p.commit_kind = CommitKind::OnePc { commit_ts: 33 };
    let got = try_prewrite(
        &mut env,
        &p,
        put(b"d", b"v"),
        PessimisticAction::DoPessimisticCheck,
    );
    assert!(
        matches!(
            got,
            Err(MvccError::CommitTsExpired {
                min_commit_ts: 34,
                ..
            })
        ),
        "{got:?}"
    );
    must_locked(&env, b"d", 30);
}

#[test]
fn test_resolve_lock() {
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"a", b"1", b"a", 10);
    must_prewrite_put(&mut env, b"b", b"2", b"a", 10);
    env.run(10, |txn, r| resolve_lock(txn, r, b"a", 15))
        .unwrap();
    env.run(10, |txn, r| resolve_lock(txn, r, b"b", 0)).unwrap();
    must_written(&env, b"a", 10, 15, WriteType::Put);
    must_written(&env, b"b", 10, 10, WriteType::Rollback);
    must_unlocked(&env, b"a");
    must_unlocked(&env, b"b");
}

#[test]
fn test_txn_heartbeat() {
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"k", b"v", b"k", 10);
    // advise -> ttl in force (initial 3000)
    for (advise, want) in [(100, 3000), (5000, 5000), (4000, 5000)] {
        let ttl = env
            .run(10, |txn, r| txn_heartbeat(txn, r, b"k", advise))
            .unwrap();
        assert_eq!(ttl, want);
        assert_eq!(must_locked(&env, b"k", 10).ttl, want);
    }
    let got = env.run(11, |txn, r| txn_heartbeat(txn, r, b"k", 100));
    assert_eq!(
        got,
        Err(MvccError::TxnNotFound {
            start_ts: 11,
            key: b"k".to_vec()
        })
    );
    // A memory lock's heartbeat is replicated.
    let mut env = Env::with_memory_locks();
    must_acquire(&mut env, b"k", b"k", 10, 10);
    env.run(10, |txn, r| txn_heartbeat(txn, r, b"k", 9000))
        .unwrap();
    assert_eq!(env.lock_cf(b"k").unwrap().ttl, 9000);
    assert!(env.mem.as_ref().unwrap().is_empty());
}

fn status(
    env: &mut Env,
    start_ts: u64,
    caller: u64,
    current: u64,
    rollback_if_not_exist: bool,
    resolving_pessimistic: bool,
) -> Result<TxnStatus, MvccError> {
    env.run(start_ts, |txn, r| {
        check_txn_status(
            txn,
            r,
            b"p",
            caller,
            current,
            rollback_if_not_exist,
            resolving_pessimistic,
        )
    })
}

#[test]
fn test_check_txn_status() {
    let start = ts(100);
    // Alive lock, TTL 3000 ms: pushed by a reader.
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"p", b"v", b"p", start);
    let got = status(&mut env, start, ts(200), ts(150), true, false).unwrap();
    match got {
        TxnStatus::Uncommitted {
            lock,
            min_commit_ts_pushed,
        } => {
            assert!(min_commit_ts_pushed);
            assert_eq!(lock.min_commit_ts, ts(200) + 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(must_locked(&env, b"p", start).min_commit_ts, ts(200) + 1);
    // No push for caller 0 or MAX; MAX still reports pushed.
    for (caller, pushed) in [(0, false), (u64::MAX, true)] {
        let got = status(&mut env, start, caller, ts(150), true, false).unwrap();
        assert!(
            matches!(got, TxnStatus::Uncommitted { min_commit_ts_pushed, .. } if min_commit_ts_pushed == pushed)
        );
        assert_eq!(must_locked(&env, b"p", start).min_commit_ts, ts(200) + 1);
    }
    // Expired: rolled back with a protected record.
    assert_eq!(
        status(&mut env, start, ts(200), ts(4000), true, false),
        Ok(TxnStatus::TtlExpire)
    );
    must_unlocked(&env, b"p");
    assert!(must_written(&env, b"p", start, start, WriteType::Rollback).protected);
    assert_eq!(
        status(&mut env, start, 0, ts(4000), true, false),
        Ok(TxnStatus::RolledBack)
    );

    // Committed.
    let mut env = Env::new();
    must_put_committed(&mut env, b"p", b"v", start, start + 5);
    assert_eq!(
        status(&mut env, start, 0, ts(150), false, false),
        Ok(TxnStatus::Committed {
            commit_ts: start + 5
        })
    );

    // Nothing there.
    let mut env = Env::new();
    assert_eq!(
        status(&mut env, start, 0, ts(150), false, false),
        Err(MvccError::TxnNotFound {
            start_ts: start,
            key: b"p".to_vec()
        })
    );
    assert_eq!(env.write_at(b"p", start), None);
    assert_eq!(
        status(&mut env, start, 0, ts(150), true, true),
        Ok(TxnStatus::LockNotExistDoNothing)
    );
    assert_eq!(env.write_at(b"p", start), None);
    assert_eq!(
        status(&mut env, start, 0, ts(150), true, false),
        Ok(TxnStatus::LockNotExistRollback)
    );
    assert!(must_written(&env, b"p", start, start, WriteType::Rollback).protected);

    // An expired pessimistic primary while resolving a pessimistic lock: removed, no record.
    let mut env = Env::new();
    must_acquire(&mut env, b"p", b"p", start, start);
    assert_eq!(
        status(&mut env, start, 0, ts(4000), true, true),
        Ok(TxnStatus::PessimisticRollBack)
    );
    must_unlocked(&env, b"p");
    assert_eq!(env.write_at(b"p", start), None);
    // ... but without resolving_pessimistic_lock, a protected rollback.
    must_acquire(&mut env, b"p", b"p", start, start);
    assert_eq!(
        status(&mut env, start, 0, ts(4000), true, false),
        Ok(TxnStatus::TtlExpire)
    );
    assert!(must_written(&env, b"p", start, start, WriteType::Rollback).protected);
}

/// `check_txn_status` asked on a secondary (TiKV's `PrimaryMismatch`): refused with the
/// lock, which is neither pushed (alive) nor rolled back (expired), in memory or not.
#[test]
fn test_check_txn_status_on_a_secondary_is_a_primary_mismatch() {
    let start = ts(100);
    let cases: Vec<(&str, fn() -> Env, bool, u64)> = vec![
        ("prewritten, alive", Env::new, false, ts(150)),
        ("prewritten, expired", Env::new, false, ts(9000)),
        (
            "pessimistic in memory, alive",
            Env::with_memory_locks,
            true,
            ts(150),
        ),
        (
            "pessimistic in memory, expired",
            Env::with_memory_locks,
            true,
            ts(9000),
        ),
    ];
    for (name, env, pessimistic, current) in cases {
        let mut env = env();
        if pessimistic {
            must_acquire(&mut env, b"s", b"p", start, start);
        } else {
            must_prewrite_put(&mut env, b"s", b"v", b"p", start);
        }
        let before = must_locked(&env, b"s", start);
        let got = env.run(start, |txn, r| {
            check_txn_status(txn, r, b"s", ts(200), current, true, pessimistic)
        });
        match got {
            Err(MvccError::PrimaryMismatch { key, lock }) => {
                assert_eq!(key, b"s", "case: {name}");
                assert_eq!(lock.primary, b"p", "case: {name}");
                assert_eq!(lock.lock_ts, start, "case: {name}");
            }
            other => panic!("case {name}: {other:?}"),
        }
        assert_eq!(
            must_locked(&env, b"s", start),
            before,
            "case {name}: lock changed"
        );
        assert_eq!(
            env.write_at(b"s", start),
            None,
            "case {name}: a record was written"
        );
    }
}

/// What a merge on a disk engine left before it replaced the source's range (see
/// `Engine::ingest`): the transaction's own lock back beside its commit record, as the
/// lock stood before the commit removed it. `kind`: "short" and "long" prewritten puts (a
/// long value lives in the default column family), or "pessimistic" (the primary's lock
/// from before its prewrite; the commit wrote the record from the prewrite).
fn stale_lock_beside_commit(kind: &str, start: u64, commit: u64) -> (Env, Vec<u8>) {
    let mut env = Env::new();
    let value = if kind == "long" {
        vec![b'v'; SHORT_VALUE_MAX_LEN + 1]
    } else {
        b"v".to_vec()
    };
    let stale = if kind == "pessimistic" {
        must_acquire(&mut env, b"p", b"p", start, start);
        let lock = must_locked(&env, b"p", start);
        must_pessimistic_prewrite_put(&mut env, b"p", &value, b"p", start, start);
        lock
    } else {
        must_prewrite_put(&mut env, b"p", &value, b"p", start);
        must_locked(&env, b"p", start)
    };
    must_commit(&mut env, b"p", start, commit);
    env.engine
        .write(&WriteBatch {
            modifies: vec![Modify::Put {
                cf: Cf::Lock,
                key: encode_key(b"p"),
                value: stale.to_bytes(),
            }],
            applied_index: 0,
        })
        .unwrap();
    (env, value)
}

/// A transaction's lock beside its own commit record on the key is settled as committed
/// by `check_txn_status`, whether the lock is alive or expired and whatever its type: the
/// lock goes, the record and a long value stay. It answered `Committed` as an error when it
/// rolled back the expired lock, forever, which kept a reader retrying for good (the
/// snapshot isolation workload's final read, one run in about 300).
#[test]
fn test_check_txn_status_settles_a_stale_lock_beside_its_commit_record() {
    let (start, commit) = (ts(100), ts(100) + 5);
    for kind in ["short", "long", "pessimistic"] {
        for (current, pessimistic_caller) in [(ts(150), false), (ts(9000), false), (ts(9000), true)]
        {
            let case =
                format!("{kind}, current {current}, resolving pessimistic {pessimistic_caller}");
            let (mut env, value) = stale_lock_beside_commit(kind, start, commit);
            let before = must_written(&env, b"p", start, commit, WriteType::Put);
            assert_eq!(
                status(&mut env, start, ts(200), current, true, pessimistic_caller),
                Ok(TxnStatus::Committed { commit_ts: commit }),
                "case {case}"
            );
            must_unlocked(&env, b"p");
            assert_eq!(
                must_written(&env, b"p", start, commit, WriteType::Put),
                before,
                "case {case}: the record changed"
            );
            assert_eq!(
                env.write_at(b"p", start),
                None,
                "case {case}: a rollback was written"
            );
            assert_eq!(env.has_default(b"p", start), kind == "long", "case {case}");
            assert_eq!(must_get(&env, b"p", commit), Some(value), "case {case}");
        }
    }
}

/// `commit` of a stale lock beside the transaction's commit record (a resolver committing
/// a secondary after the primary said committed) removes it even when a reader pushed the
/// stale lock's `min_commit_ts` past the commit_ts: that commit used to fail with
/// `CommitTsExpired` for good. `rollback` refuses with `Committed` and changes nothing.
#[test]
fn test_commit_and_rollback_of_a_stale_lock_beside_its_commit_record() {
    let (start, commit) = (ts(100), ts(100) + 5);
    for kind in ["short", "long", "pessimistic"] {
        // The commit at the transaction's commit_ts, and one below a pushed floor.
        for pushed in [false, true] {
            let (mut env, value) = stale_lock_beside_commit(kind, start, commit);
            if pushed {
                // As a reader's push on the stale lock left it before `check_txn_status`
                // settled such locks.
                let mut lock = env.lock_cf(b"p").unwrap();
                lock.min_commit_ts = ts(300);
                env.engine
                    .write(&WriteBatch {
                        modifies: vec![Modify::Put {
                            cf: Cf::Lock,
                            key: encode_key(b"p"),
                            value: lock.to_bytes(),
                        }],
                        applied_index: 0,
                    })
                    .unwrap();
            }
            let before = must_written(&env, b"p", start, commit, WriteType::Put);
            let stale = must_locked(&env, b"p", start);
            assert_eq!(
                try_rollback(&mut env, b"p", start, false),
                Err(MvccError::Committed {
                    start_ts: start,
                    commit_ts: commit,
                    key: b"p".to_vec()
                }),
                "{kind}, pushed {pushed}"
            );
            assert_eq!(
                must_locked(&env, b"p", start),
                stale,
                "{kind}: rollback changed it"
            );
            must_commit(&mut env, b"p", start, commit);
            must_unlocked(&env, b"p");
            assert_eq!(
                must_written(&env, b"p", start, commit, WriteType::Put),
                before
            );
            assert_eq!(env.has_default(b"p", start), kind == "long");
            assert_eq!(must_get(&env, b"p", commit), Some(value));
        }
    }
}

#[test]
fn test_min_commit_ts() {
    let mut env = Env::new();
    let start = ts(10);
    must_prewrite_put(&mut env, b"k", b"v", b"k", start);
    env.run(start, |txn, r| {
        check_txn_status(txn, r, b"k", ts(20), ts(20), true, false)
    })
    .unwrap();
    for commit_ts in [ts(15), ts(20)] {
        let got = try_commit(&mut env, b"k", start, commit_ts);
        assert!(
            matches!(got, Err(MvccError::CommitTsExpired { min_commit_ts, .. }) if min_commit_ts == ts(20) + 1),
            "{got:?}"
        );
    }
    must_commit(&mut env, b"k", start, ts(20) + 1);
    // A pushed pessimistic lock keeps its min_commit_ts through prewrite.
    let start = ts(60);
    must_acquire(&mut env, b"k", b"k", start, start);
    env.run(start, |txn, r| {
        check_txn_status(txn, r, b"k", ts(70), ts(70), true, false)
    })
    .unwrap();
    must_pessimistic_prewrite_put(&mut env, b"k", b"v", b"k", start, start);
    assert_eq!(must_locked(&env, b"k", start).min_commit_ts, ts(70) + 1);
    assert!(try_commit(&mut env, b"k", start, ts(65)).is_err());
    must_commit(&mut env, b"k", start, ts(80));
}

#[test]
fn test_check_txn_status_push_on_memory_lock_is_replicated() {
    let mut env = Env::with_memory_locks();
    must_acquire(&mut env, b"p", b"p", ts(100), ts(100));
    status(&mut env, ts(100), ts(200), ts(150), true, false).unwrap();
    assert!(env.mem.as_ref().unwrap().is_empty());
    assert_eq!(env.lock_cf(b"p").unwrap().min_commit_ts, ts(200) + 1);
}

#[test]
fn test_point_get_lock_conflicts() {
    // (lock kind, lock start_ts, min_commit_ts, read ts, bypass) -> blocked
    let cases: [(LockType, u64, u64, u64, &[u64], bool); 7] = [
        (LockType::Put, 10, 11, 20, &[], true),
        (LockType::Put, 10, 11, 9, &[], false),
        (LockType::Put, 10, 25, 20, &[], false),
        (LockType::Put, 10, 11, 20, &[10], false),
        (LockType::Lock, 10, 11, 20, &[], false),
        (LockType::Pessimistic, 10, 11, 20, &[], false),
        (LockType::Delete, 10, 11, u64::MAX, &[], true),
    ];
    for (i, (lock_type, start_ts, min_commit_ts, read_ts, bypass, blocked)) in
        cases.into_iter().enumerate()
    {
        let mut env = Env::new();
        must_put_committed(&mut env, b"k", b"old", 1, 2);
        if lock_type == LockType::Pessimistic {
            must_acquire(&mut env, b"k", b"p", start_ts, start_ts);
        } else {
            let mutation = match lock_type {
                LockType::Put => put(b"k", b"new"),
                LockType::Delete => Mutation::Delete { key: b"k".to_vec() },
                _ => Mutation::Lock { key: b"k".to_vec() },
            };
            let mut p = props(b"p", start_ts, 0);
            p.min_commit_ts = min_commit_ts;
            try_prewrite(&mut env, &p, mutation, SKIP).unwrap();
        }
        let got = env.read(|r| point_get(r, b"k", read_ts, bypass));
        match got {
            Err(MvccError::KeyIsLocked(_)) => assert!(blocked, "case {i}"),
            Ok(v) => {
                assert!(!blocked, "case {i}");
                assert_eq!(v, Some(b"old".to_vec()));
            }
            Err(e) => panic!("case {i}: {e}"),
        }
    }
    // At ts MAX, the primary's own lock does not block.
    let mut env = Env::new();
    must_prewrite_put(&mut env, b"p", b"v", b"p", 10);
    assert_eq!(env.read(|r| point_get(r, b"p", u64::MAX, &[])), Ok(None));
}

#[test]
fn test_scan_and_batch_get() {
    let mut env = Env::new();
    for (i, key) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
        must_put_committed(
            &mut env,
            *key,
            &[b'0' + i as u8],
            10 + 2 * i as u64,
            11 + 2 * i as u64,
        );
    }
    // Delete c at 30; lock d at 40 (blocks reads at >= 40).
    try_prewrite(
        &mut env,
        &props(b"c", 29, 0),
        Mutation::Delete { key: b"c".to_vec() },
        SKIP,
    )
    .unwrap();
    must_commit(&mut env, b"c", 29, 30);
    must_prewrite_put(&mut env, b"d", b"x", b"d", 40);
    let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    let got = env.read(|r| scan(r, b"", None, 0, 35, &[])).unwrap();
    assert_eq!(keys(got), vec![b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
    // The lock on d blocks a full scan at 50, but not one cut short before d.
    assert!(matches!(
        env.read(|r| scan(r, b"", None, 0, 50, &[])),
        Err(MvccError::KeyIsLocked(_))
    ));
    let got = env.read(|r| scan(r, b"", None, 2, 50, &[])).unwrap();
    assert_eq!(keys(got), vec![b"a".to_vec(), b"b".to_vec()]);
    let got = env.read(|r| scan(r, b"", Some(b"d"), 0, 50, &[])).unwrap();
    assert_eq!(keys(got), vec![b"a".to_vec(), b"b".to_vec()]);
    let got = env.read(|r| scan(r, b"b", None, 0, 50, &[40])).unwrap();
    assert_eq!(
        got,
        vec![
            (b"b".to_vec(), b"1".to_vec()),
            (b"d".to_vec(), b"3".to_vec())
        ]
    );
    let got = env
        .read(|r| batch_get(r, &[b"c".to_vec(), b"a".to_vec()], 25, &[]))
        .unwrap();
    assert_eq!(
        got,
        vec![
            (b"c".to_vec(), Some(b"2".to_vec())),
            (b"a".to_vec(), Some(b"0".to_vec()))
        ]
    );
    assert!(
        env.read(|r| batch_get(r, &[b"a".to_vec(), b"d".to_vec()], 45, &[]))
            .is_err()
    );
}

#[test]
fn test_scan_lock() {
    let mut env = Env::with_memory_locks();
    must_prewrite_put(&mut env, b"a", b"v", b"a", 10);
    must_acquire(&mut env, b"b", b"b", 20, 20);
    must_prewrite_put(&mut env, b"c", b"v", b"c", 30);
    // (max_ts, limit) -> keys
    let cases: [(u64, usize, &[&[u8]]); 4] = [
        (5, 0, &[]),
        (20, 0, &[b"a", b"b"]),
        (30, 0, &[b"a", b"b", b"c"]),
        (30, 2, &[b"a", b"b"]),
    ];
    for (max_ts, limit, want) in cases {
        let got = env
            .read(|r| scan_lock(r, max_ts, b"", None, limit))
            .unwrap();
        let keys: Vec<&[u8]> = got.iter().map(|l| l.key.as_slice()).collect();
        assert_eq!(keys, want, "max_ts {max_ts} limit {limit}");
    }
}

#[test]
fn test_prewrite_through_reader_for_each_mutation_kind() {
    // Lock and Delete locks carry no value and commit to Lock/Delete records.
    let mut env = Env::new();
    let p = props(b"a", 10, 0);
    env.run(10, |txn, r| {
        prewrite(
            txn,
            r,
            &p,
            &Mutation::Lock { key: b"a".to_vec() },
            SKIP,
            None,
        )?;
        prewrite(
            txn,
            r,
            &p,
            &Mutation::Delete { key: b"b".to_vec() },
            SKIP,
            None,
        )
    })
    .unwrap();
    assert_eq!(must_locked(&env, b"a", 10).lock_type, LockType::Lock);
    let lock = must_locked(&env, b"b", 10);
    assert_eq!((lock.lock_type, lock.short_value), (LockType::Delete, None));
}
