//! Lock resolution over a scripted router: a lock that names the wrong primary is settled
//! through the real one.

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
    assert_eq!(*resolved.lock(), vec![(vec![b"s".to_vec()], 90)]);
}
