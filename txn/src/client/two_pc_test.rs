//! Outcome rules of commit over a scripted router: a lost answer is retried, resolved from
//! the primary's record, or reported as undetermined — never as success or failure when the
//! truth is unknown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::fake_router::FakeRouter;
use crate::{
    ClientConfig, CommitKind, KeyError, KvRequest, KvResponse, Lock, LockType, MvccError,
    RegionEpoch, RegionError, RegionInfo, ServiceError, TxnClient, TxnError, TxnMode, TxnStatus,
};

fn config() -> ClientConfig {
    ClientConfig {
        // These tests count the secondary's commit request when `commit` returns.
        async_secondaries: false,
        max_backoff: Duration::from_millis(100),
        heartbeat_interval: Duration::from_secs(3600),
        ..ClientConfig::default()
    }
}

fn timeout(node: u64) -> ServiceError {
    ServiceError::Timeout {
        node,
        timeout_ms: 10,
    }
}

/// What a TCP transport reports when the answer to a request that ran does not decode.
fn undecodable(node: u64) -> ServiceError {
    ServiceError::Protocol {
        node,
        detail: "undecodable answer: unexpected end of input".into(),
    }
}

/// A router whose prewrites succeed (two-phase), whose commits `commit` answers (given the
/// node, keys, start_ts and commit_ts), and whose other requests succeed.
fn router_with_commit(
    commit: impl Fn(u64, &[Vec<u8>], u64, u64) -> Result<KvResponse, ServiceError>
    + Send
    + Sync
    + 'static,
) -> Arc<FakeRouter> {
    FakeRouter::new(move |node, req| match req {
        KvRequest::Prewrite { .. } => Ok(KvResponse::Prewrite {
            one_pc_commit_ts: 0,
        }),
        KvRequest::Commit {
            keys,
            start_ts,
            commit_ts,
            ..
        } => commit(node, keys, *start_ts, *commit_ts),
        _ => Ok(KvResponse::Done),
    })
}

/// Puts `a` and `z` (two regions: two-phase) and commits.
fn commit_two_regions(router: &Arc<FakeRouter>) -> Result<u64, TxnError> {
    let client = TxnClient::new(Arc::new(Arc::clone(router)), config());
    let mut t = client.begin(TxnMode::Optimistic)?;
    t.put(b"a", b"1")?;
    t.put(b"z", b"1")?;
    t.commit()
}

#[test]
fn a_primary_commit_that_is_never_answered_is_undetermined() {
    let router = router_with_commit(|node, _, _, _| Err(timeout(node)));
    match commit_two_regions(&router) {
        Err(TxnError::Undetermined { .. }) => {}
        other => panic!("a commit sent but never answered is undetermined, got {other:?}"),
    }
    assert!(router.count("commit") >= 2, "the lost answer was retried");
    assert_eq!(
        router.count("batch_rollback"),
        0,
        "an undetermined commit is never rolled back"
    );
}

#[test]
fn a_lost_commit_answer_is_retried_and_the_retry_reports_the_commit() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&attempts);
    let router = router_with_commit(move |node, keys, _, _| {
        // The first commit of the primary is applied but its answer lost.
        if keys == [b"a".to_vec()] && seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(timeout(node))
        } else {
            Ok(KvResponse::Done)
        }
    });
    let commit_ts = commit_two_regions(&router).expect("the retry finds the commit");
    assert!(commit_ts > 0);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(
        router.count("commit"),
        3,
        "primary twice, then the secondary"
    );
}

#[test]
fn a_primary_commit_refused_before_running_is_a_plain_failure_and_rolls_back() {
    let router = router_with_commit(|_, _, _, _| {
        Ok(KvResponse::RegionError(RegionError::ServerIsBusy {
            region_id: 2,
            reason: "test".into(),
        }))
    });
    match commit_two_regions(&router) {
        Err(e @ TxnError::Region(RegionError::ServerIsBusy { .. })) => assert!(e.is_retryable()),
        other => panic!("a refused commit did not run: a plain region error, got {other:?}"),
    }
    assert!(
        router.count("batch_rollback") >= 1,
        "the prewritten locks are rolled back"
    );
}

#[test]
fn a_primary_found_rolled_back_at_commit_is_a_definite_failure() {
    let router = router_with_commit(|_, keys, start_ts, commit_ts| {
        Ok(KvResponse::KeyError(KeyError::Mvcc(
            MvccError::TxnLockNotFound {
                start_ts,
                commit_ts,
                key: keys[0].clone(),
            },
        )))
    });
    match commit_two_regions(&router) {
        Err(TxnError::TxnLockNotFound { key, .. }) => assert_eq!(key, b"a"),
        other => panic!("expected TxnLockNotFound, got {other:?}"),
    }
}

#[test]
fn a_pushed_min_commit_ts_gets_a_fresh_commit_ts() {
    let min_commit_ts = crate::compose_ts(1_000, 0) + 50;
    let router = router_with_commit(move |_, keys, start_ts, commit_ts| {
        if keys == [b"a".to_vec()] && commit_ts < min_commit_ts {
            Ok(KvResponse::KeyError(KeyError::Mvcc(
                MvccError::CommitTsExpired {
                    start_ts,
                    commit_ts,
                    key: keys[0].clone(),
                    min_commit_ts,
                },
            )))
        } else {
            Ok(KvResponse::Done)
        }
    });
    let commit_ts = commit_two_regions(&router).expect("commits above the pushed ts");
    assert!(commit_ts >= min_commit_ts);
}

#[test]
fn a_lost_one_pc_answer_is_settled_from_the_primary_status() {
    // The one-phase prewrite is applied but its answer lost; the retry then fails (the
    // key holds the transaction's own commit). The primary's record says committed.
    let prewrites = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&prewrites);
    let router = FakeRouter::new(move |node, req| match req {
        KvRequest::Prewrite {
            props, mutations, ..
        } => {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(timeout(node))
            } else {
                Ok(KvResponse::KeyError(KeyError::Mvcc(
                    MvccError::WriteConflict {
                        start_ts: props.start_ts,
                        conflict_start_ts: props.start_ts,
                        conflict_commit_ts: 4242,
                        key: mutations[0].0.key().to_vec(),
                        primary: props.primary.clone(),
                    },
                )))
            }
        }
        KvRequest::CheckTxnStatus {
            rollback_if_not_exist,
            ..
        } => {
            assert!(
                *rollback_if_not_exist,
                "the check must settle the outcome for good"
            );
            Ok(KvResponse::TxnStatus {
                status: TxnStatus::Committed { commit_ts: 4242 },
            })
        }
        _ => Ok(KvResponse::Done),
    });
    let client = TxnClient::new(Arc::new(Arc::clone(&router)), config());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(b"a", b"1").expect("put");
    t.put(b"b", b"1").expect("put");
    assert_eq!(
        t.commit(),
        Ok(4242),
        "committed, as the primary's record says"
    );
    assert_eq!(client.counters().one_pc_commits, 1);
    assert_eq!(router.count("batch_rollback"), 0);
    assert_eq!(
        prewrites.load(Ordering::SeqCst),
        2,
        "one lost answer, one failed retry"
    );
}

#[test]
fn a_commit_failing_before_any_prewrite_releases_the_pessimistic_locks() {
    let router = FakeRouter::new(|_, req| match req {
        KvRequest::AcquirePessimisticLock { keys, .. } => Ok(KvResponse::PessimisticLock {
            results: keys.iter().map(|_| Default::default()).collect(),
        }),
        _ => Ok(KvResponse::Done),
    });
    let client = TxnClient::new(Arc::new(Arc::clone(&router)), config());
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(b"a", b"1").expect("lock");
    // The one-phase commit needs a timestamp first; the oracle is gone.
    router.tso_down.store(true, Ordering::SeqCst);
    match t.commit() {
        Err(TxnError::Unavailable(_)) => {}
        other => panic!("expected the oracle's unavailability, got {other:?}"),
    }
    assert_eq!(router.count("prewrite"), 0, "nothing was prewritten");
    assert_eq!(
        router.count("pessimistic_rollback"),
        1,
        "the lock is released, not left to expire"
    );
}

#[test]
fn a_protocol_error_after_the_primary_commit_applied_is_undetermined_and_nothing_is_rolled_back() {
    // The primary's commit is applied, but its answer cannot be decoded: the commit may have
    // run, so neither a rollback nor a definite failure is allowed.
    let router = router_with_commit(|node, keys, _, _| {
        if keys == [b"a".to_vec()] {
            Err(undecodable(node))
        } else {
            Ok(KvResponse::Done)
        }
    });
    match commit_two_regions(&router) {
        Err(TxnError::Undetermined { .. }) => {}
        other => panic!("a commit answered undecodably may have run: undetermined, got {other:?}"),
    }
    assert_eq!(
        router.count("batch_rollback"),
        0,
        "a primary commit that may have applied is never rolled back"
    );
}

#[test]
fn a_reply_of_the_wrong_kind_to_the_primary_commit_is_undetermined() {
    // An answer that does not fit the request says nothing about whether it ran.
    let router = router_with_commit(|_, keys, _, _| {
        if keys == [b"a".to_vec()] {
            Ok(KvResponse::Timestamp { ts: 7 })
        } else {
            Ok(KvResponse::Done)
        }
    });
    match commit_two_regions(&router) {
        Err(TxnError::Undetermined { .. }) => {}
        other => panic!("expected undetermined, got {other:?}"),
    }
    assert_eq!(router.count("batch_rollback"), 0);
}

#[test]
fn a_protocol_error_after_a_one_pc_prewrite_applied_is_settled_from_the_primary() {
    // The one-phase prewrite committed, its answer did not decode: the primary's record says
    // committed, so the transaction is committed, not rolled back.
    let router = FakeRouter::new(|node, req| match req {
        KvRequest::Prewrite { .. } => Err(undecodable(node)),
        KvRequest::CheckTxnStatus { .. } => Ok(KvResponse::TxnStatus {
            status: TxnStatus::Committed { commit_ts: 4343 },
        }),
        _ => Ok(KvResponse::Done),
    });
    let client = TxnClient::new(Arc::new(Arc::clone(&router)), config());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(b"a", b"1").expect("put");
    t.put(b"b", b"1").expect("put");
    assert_eq!(
        t.commit(),
        Ok(4343),
        "committed, as the primary's record says"
    );
    assert_eq!(router.count("batch_rollback"), 0);
}

/// Region 2 (`[, "m")`) split at "b": region 2 is now `[, "b")`, region 4 `["b", "m")`.
fn region_2_split_at_b() -> Vec<RegionInfo> {
    let epoch = RegionEpoch {
        version: 2,
        conf_ver: 1,
    };
    vec![
        RegionInfo {
            id: 2,
            start: vec![],
            end: b"b".to_vec(),
            epoch,
            peers: vec![1, 2, 3],
        },
        RegionInfo {
            id: 4,
            start: b"b".to_vec(),
            end: b"m".to_vec(),
            epoch,
            peers: vec![1, 2, 3],
        },
    ]
}

#[test]
fn a_lost_one_pc_answer_then_a_split_ends_committed_not_aborted() {
    // The one-phase prewrite of "a" and "b" (one region) loses its answer (it did not apply:
    // the split that follows refuses it); the retry meets the split and prewrites both parts
    // two-phase; the status check then finds the primary locked, not committed. Every key
    // is prewritten, so the transaction commits (a rollback here aborted a transaction that
    // could commit).
    let one_pc_attempts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&one_pc_attempts);
    let router = FakeRouter::new(move |node, req| match req {
        KvRequest::Prewrite { ctx, props, .. } if ctx.epoch.version == 1 => {
            assert!(matches!(props.commit_kind, CommitKind::OnePc { .. }));
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(timeout(node))
            } else {
                Ok(KvResponse::RegionError(RegionError::EpochNotMatch {
                    region_id: 2,
                    current: region_2_split_at_b(),
                }))
            }
        }
        KvRequest::Prewrite { props, .. } => {
            assert_eq!(
                props.commit_kind,
                CommitKind::TwoPc,
                "after the split each part is prewritten two-phase"
            );
            Ok(KvResponse::Prewrite {
                one_pc_commit_ts: 0,
            })
        }
        KvRequest::CheckTxnStatus { lock_ts, .. } => Ok(KvResponse::TxnStatus {
            status: TxnStatus::Uncommitted {
                lock: Lock::new(LockType::Put, b"a".to_vec(), *lock_ts, 3000, 0),
                min_commit_ts_pushed: false,
            },
        }),
        _ => Ok(KvResponse::Done),
    });
    let client = TxnClient::new(Arc::new(Arc::clone(&router)), config());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(b"a", b"1").expect("put");
    t.put(b"b", b"1").expect("put");
    let commit_ts = t
        .commit()
        .expect("every key prewritten: the transaction commits");
    assert!(commit_ts > 0);
    assert_eq!(one_pc_attempts.load(Ordering::SeqCst), 2);
    assert_eq!(
        router.count("prewrite"),
        4,
        "lost, refused, then both parts"
    );
    assert_eq!(router.count("batch_rollback"), 0, "nothing rolled back");
    assert_eq!(router.count("commit"), 2, "the primary, then the secondary");
    assert_eq!(
        client.counters().one_pc_commits,
        0,
        "committed in two phases"
    );
}
