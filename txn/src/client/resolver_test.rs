//! Lock resolution over a scripted router, when the key a lock names as its primary answers
//! `PrimaryMismatch`: a lock naming its own key is settled through the real primary (or, the
//! real lock being pessimistic, a reader retries at once); a mismatch on any other key is
//! never settled through the primary it names.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::fake_router::FakeRouter;
use crate::{
    ClientConfig, KeyError, KvRequest, KvResponse, LockInfo, LockType, MvccError, TxnClient,
    TxnStatus,
};

/// A `ResolveLock` seen: its keys and commit_ts.
type Resolved = (Vec<Vec<u8>>, u64);

fn lock_on_s(primary: &[u8], ttl: u64) -> LockInfo {
    LockInfo {
        key: b"s".to_vec(),
        primary: primary.to_vec(),
        lock_ts: 77,
        ttl,
        lock_type: LockType::Put,
        for_update_ts: 0,
        min_commit_ts: 78,
        txn_size: 2,
    }
}

/// A read meets a lock on `s` that names `s` as its own primary (as a one-phase commit's
/// guard does); `s`'s region answers `CheckTxnStatus` with `PrimaryMismatch`: the real lock
/// names `p`. The reader must ask `p` (committed at 90) and commit `s` at 90, never decide
/// on `s` alone.
#[test]
fn a_primary_mismatch_is_resolved_through_the_real_primary() {
    let checked: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let resolved: Arc<Mutex<Vec<Resolved>>> = Arc::default();
    let (seen_checks, seen_resolves) = (Arc::clone(&checked), Arc::clone(&resolved));
    let router = FakeRouter::new(move |_, req| match req {
        KvRequest::Get { .. } if seen_resolves.lock().is_empty() => Ok(KvResponse::KeyError(
            KeyError::Mvcc(MvccError::KeyIsLocked(Box::new(lock_on_s(b"s", 0)))),
        )),
        KvRequest::Get { .. } => Ok(KvResponse::Get {
            value: Some(b"new".to_vec()),
        }),
        KvRequest::CheckTxnStatus { primary_key, .. } => {
            seen_checks.lock().push(primary_key.clone());
            if primary_key == b"s" {
                Ok(KvResponse::KeyError(KeyError::Mvcc(
                    MvccError::PrimaryMismatch {
                        key: b"s".to_vec(),
                        lock: Box::new(lock_on_s(b"p", 3000)),
                    },
                )))
            } else {
                Ok(KvResponse::TxnStatus {
                    status: TxnStatus::Committed { commit_ts: 90 },
                })
            }
        }
        KvRequest::ResolveLock {
            keys, commit_ts, ..
        } => {
            seen_resolves.lock().push((keys.clone(), *commit_ts));
            Ok(KvResponse::Done)
        }
        _ => Ok(KvResponse::Done),
    });
    let config = ClientConfig {
        max_backoff: Duration::from_millis(100),
        ..ClientConfig::default()
    };
    let client = TxnClient::new(Arc::new(router), config);
    assert_eq!(client.get(b"s"), Ok(Some(b"new".to_vec())));
    assert_eq!(*checked.lock(), vec![b"s".to_vec(), b"p".to_vec()]);
    // Every lock of the transaction in `s`'s region at once (no keys named), at 90.
    assert_eq!(*resolved.lock(), vec![(Vec::<Vec<u8>>::new(), 90)]);
}

/// A pessimistic lock of transaction 77 on `key`, naming `primary`.
fn pessimistic_on(key: &[u8], primary: &[u8]) -> LockInfo {
    LockInfo {
        key: key.to_vec(),
        lock_type: LockType::Pessimistic,
        for_update_ts: 77,
        min_commit_ts: 0,
        ..lock_on_s(primary, 3000)
    }
}

/// A client reading through `router`, with backoff sleeps of `sleep` within a budget of
/// `budget`.
fn reader(router: Arc<FakeRouter>, sleep: Duration, budget: Duration) -> TxnClient {
    // Inside the crate that defines ClientConfig: a literal is allowed (clippy asks for it).
    let config = ClientConfig {
        backoff_base: sleep,
        backoff_cap: sleep,
        max_backoff: budget,
        ..ClientConfig::default()
    };
    TxnClient::new(Arc::new(router), config)
}

/// A read met a lock on `s` naming `s` (a guard's report from a node that named the key
/// itself); `s` holds only the transaction's pessimistic lock, naming `p`. A pessimistic lock
/// does not block a read, and what did (the in-flight commit) is over once `s` answered (its
/// `CheckTxnStatus` waited for the commit's latches): the reader retries at once, asking
/// nothing of `p` and cleaning nothing.
#[test]
fn a_mismatch_on_a_pessimistic_lock_sends_a_reader_back_at_once() {
    let checked: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let gets: Arc<Mutex<usize>> = Arc::default();
    let cleaned: Arc<Mutex<usize>> = Arc::default();
    let (seen_checks, seen_gets, seen_cleans) = (
        Arc::clone(&checked),
        Arc::clone(&gets),
        Arc::clone(&cleaned),
    );
    let router = FakeRouter::new(move |_, req| match req {
        KvRequest::Get { .. } => {
            let mut n = seen_gets.lock();
            *n += 1;
            if *n == 1 {
                Ok(KvResponse::KeyError(KeyError::Mvcc(
                    MvccError::KeyIsLocked(Box::new(lock_on_s(b"s", 0))),
                )))
            } else {
                Ok(KvResponse::Get {
                    value: Some(b"old".to_vec()),
                })
            }
        }
        KvRequest::CheckTxnStatus { primary_key, .. } => {
            seen_checks.lock().push(primary_key.clone());
            if primary_key == b"s" {
                Ok(KvResponse::KeyError(KeyError::Mvcc(
                    MvccError::PrimaryMismatch {
                        key: b"s".to_vec(),
                        lock: Box::new(pessimistic_on(b"s", b"p")),
                    },
                )))
            } else {
                Ok(KvResponse::TxnStatus {
                    status: TxnStatus::Uncommitted {
                        lock: crate::Lock::new(LockType::Pessimistic, b"p".to_vec(), 77, 3000, 77),
                        min_commit_ts_pushed: false,
                    },
                })
            }
        }
        KvRequest::ResolveLock { .. } | KvRequest::PessimisticRollback { .. } => {
            *seen_cleans.lock() += 1;
            Ok(KvResponse::Done)
        }
        _ => Ok(KvResponse::Done),
    });
    // A backoff sleep would take 2 s.
    let client = reader(router, Duration::from_secs(2), Duration::from_secs(10));
    let started = std::time::Instant::now();
    assert_eq!(client.get(b"s"), Ok(Some(b"old".to_vec())));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "backed off before reading again: {:?}",
        started.elapsed()
    );
    assert_eq!(*checked.lock(), vec![b"s".to_vec()], "asked only the key");
    assert_eq!(*gets.lock(), 2, "read again once");
    assert_eq!(*cleaned.lock(), 0, "nothing to clean");
}

/// A read met a lock on `s` naming `p`; `p`'s region answers `PrimaryMismatch` (its lock of
/// the transaction names `q`). The lock on `s` names a key that is not the primary its own
/// key's lock would name, so the mismatch says nothing about `s`: the resolver must not
/// decide through `q` (a rollback there would not stop `p`, the primary of `s`'s lock, from
/// committing). It backs off, the reader finally answered `KeyIsLocked`.
#[test]
fn a_mismatch_on_another_key_than_the_locks_own_is_not_redirected() {
    let checked: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let seen_checks = Arc::clone(&checked);
    let router = FakeRouter::new(move |_, req| match req {
        KvRequest::Get { .. } => Ok(KvResponse::KeyError(KeyError::Mvcc(
            MvccError::KeyIsLocked(Box::new(lock_on_s(b"p", 0))),
        ))),
        KvRequest::CheckTxnStatus { primary_key, .. } => {
            seen_checks.lock().push(primary_key.clone());
            if primary_key == b"p" {
                Ok(KvResponse::KeyError(KeyError::Mvcc(
                    MvccError::PrimaryMismatch {
                        key: b"p".to_vec(),
                        lock: Box::new(pessimistic_on(b"p", b"q")),
                    },
                )))
            } else {
                Ok(KvResponse::TxnStatus {
                    status: TxnStatus::TtlExpire,
                })
            }
        }
        _ => Ok(KvResponse::Done),
    });
    let client = reader(router, Duration::from_millis(2), Duration::from_millis(100));
    let r = client.get(b"s");
    let checked = checked.lock();
    assert!(!checked.is_empty(), "asked p");
    assert!(
        checked.iter().all(|k| k.as_slice() == b"p"),
        "asked another key than the lock's primary (first asked: {:?})",
        &checked[..checked.len().min(4)]
    );
    assert!(
        matches!(r, Err(crate::TxnError::KeyIsLocked { .. })),
        "read: {r:?}"
    );
}
