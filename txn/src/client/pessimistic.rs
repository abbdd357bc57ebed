//! Acquiring one pessimistic lock: waiting on the node, resolving dead holders, and telling
//! a live holder's timeout from a dead holder's leftover.

use super::backoff::Backoff;
use super::core::ClientCore;
use super::counters::bump;
use super::error::TxnError;
use super::resolver::Resolution;
use crate::{KeyError, KvRequest, KvResponse, LockKey, MvccError, PessimisticLockOutcome};

/// One pessimistic lock request of a transaction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockRequest<'a> {
    /// The key to lock.
    pub(crate) key: &'a [u8],
    /// The transaction's primary key (the key itself for its first lock).
    pub(crate) primary: &'a [u8],
    /// The transaction's start timestamp.
    pub(crate) start_ts: u64,
    /// The statement's `for_update_ts` (a fresh timestamp).
    pub(crate) for_update_ts: u64,
    /// Return the key's value at `for_update_ts`.
    pub(crate) need_value: bool,
    /// Fail with `AlreadyExist` if the key has a value at `for_update_ts` (an insert).
    pub(crate) should_not_exist: bool,
    /// How long the node parks the request behind a conflicting lock (`None`: it does not;
    /// the client backs off and asks again).
    pub(crate) wait_timeout: Option<std::time::Duration>,
}

impl ClientCore {
    /// Locks `req.key` for the transaction, waiting on the node for a conflicting lock up to
    /// the request's wait timeout (the transaction's, by default the client's).
    ///
    /// When the wait times out, the holder may be a dead coordinator whose lock outlived it:
    /// the client then asks once without waiting, which reports the holder's lock, and
    /// resolves it. A dead holder is rolled back and the lock request repeated; a live one
    /// makes the request fail with [`TxnError::LockWaitTimeout`]. So a key held by a crashed
    /// transaction is taken over once that lock's TTL has run out, never later.
    ///
    /// # Errors
    /// [`TxnError::LockWaitTimeout`], [`TxnError::Deadlock`], [`TxnError::WriteConflict`]
    /// (a write committed after `for_update_ts`: retry with a fresh one), region errors after
    /// retries.
    pub(crate) fn acquire_pessimistic_lock(
        &self,
        req: LockRequest<'_>,
        bo: &mut Backoff,
    ) -> Result<PessimisticLockOutcome, TxnError> {
        let _span = tracing::debug_span!(
            "acquire_pessimistic_lock",
            start_ts = req.start_ts,
            for_update_ts = req.for_update_ts
        )
        .entered();
        let configured_wait = req
            .wait_timeout
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        // After a wait timed out: the holder, and that the next request must not wait.
        let mut timed_out = false;
        loop {
            let wait_timeout_ms = if timed_out { None } else { configured_wait };
            let lock_ttl = self.lock_ttl_for(req.start_ts);
            let reply = self.send_key(req.key, bo, |ctx| {
                lock_request(
                    ctx,
                    vec![LockKey {
                        key: req.key.to_vec(),
                        should_not_exist: req.should_not_exist,
                    }],
                    &req,
                    lock_ttl,
                    wait_timeout_ms,
                )
            })?;
            match reply {
                KvResponse::PessimisticLock { results } => {
                    return results
                        .into_iter()
                        .next()
                        .ok_or_else(|| TxnError::Protocol {
                            detail: "pessimistic lock reply without a result".to_string(),
                        });
                }
                KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock))) => {
                    match self.resolve_lock(&lock, 0, bo)? {
                        Resolution::Resolved => {
                            timed_out = false;
                            bo.retry_now()?;
                        }
                        Resolution::Bypass(_) | Resolution::Alive => {
                            if timed_out {
                                bump(&self.counters.lock_wait_timeouts);
                                return Err(TxnError::LockWaitTimeout {
                                    key: req.key.to_vec(),
                                    lock_ts: lock.lock_ts,
                                });
                            }
                            // Not waiting on the node (no wait timeout configured): wait here.
                            bo.note(TxnError::KeyIsLocked {
                                key: lock.key.clone(),
                                lock_ts: lock.lock_ts,
                            });
                            bo.sleep()?;
                        }
                    }
                }
                KvResponse::KeyError(KeyError::LockWaitTimeout { key, lock_ts }) => {
                    if timed_out {
                        bump(&self.counters.lock_wait_timeouts);
                        return Err(TxnError::LockWaitTimeout { key, lock_ts });
                    }
                    timed_out = true;
                }
                KvResponse::KeyError(e @ KeyError::Deadlock { .. }) => {
                    bump(&self.counters.deadlocks);
                    return Err(e.into());
                }
                KvResponse::KeyError(e) => return Err(e.into()),
                other => return Err(TxnError::unexpected("acquire_pessimistic_lock", &other)),
            }
        }
    }
}

impl ClientCore {
    /// One attempt at locking `keys`, all in `region`, in a single request that does not
    /// wait on the node: the outcomes in `keys`' order, or `None` when anything but a clean
    /// success came back (a conflicting lock, a write conflict, a region error...). The
    /// caller then locks those keys one by one through
    /// [`ClientCore::acquire_pessimistic_lock`], which waits, resolves and retries; keys
    /// this request did lock are locked again there at no harm (same transaction).
    ///
    /// # Errors
    /// Only a failure to reach any node for the region after retries.
    pub(crate) fn try_lock_batch(
        &self,
        region: &super::region_cache::CachedRegion,
        keys: &[Vec<u8>],
        primary: &[u8],
        start_ts: u64,
        for_update_ts: u64,
        bo: &mut Backoff,
    ) -> Result<Option<Vec<PessimisticLockOutcome>>, TxnError> {
        let shape = LockRequest {
            key: &[],
            primary,
            start_ts,
            for_update_ts,
            need_value: true,
            should_not_exist: false,
            wait_timeout: None,
        };
        let lock_keys = keys
            .iter()
            .map(|key| LockKey {
                key: key.clone(),
                should_not_exist: false,
            })
            .collect();
        let req = lock_request(
            self.context(region),
            lock_keys,
            &shape,
            self.lock_ttl_for(start_ts),
            None,
        );
        Ok(match self.send_region(region, req, bo)? {
            Some(KvResponse::PessimisticLock { results }) if results.len() == keys.len() => {
                Some(results)
            }
            _ => None,
        })
    }
}

/// The `AcquirePessimisticLock` of `keys` for the transaction, statement and options of
/// `req` (its `key` is not used: `keys` are locked), shared by the one-key and the batch
/// paths so that both ask for the same TTL, `min_commit_ts` and value.
fn lock_request(
    ctx: crate::Context,
    keys: Vec<LockKey>,
    req: &LockRequest<'_>,
    lock_ttl: u64,
    wait_timeout_ms: Option<u64>,
) -> KvRequest {
    KvRequest::AcquirePessimisticLock {
        ctx,
        keys,
        primary: req.primary.to_vec(),
        start_ts: req.start_ts,
        lock_ttl,
        for_update_ts: req.for_update_ts,
        wait_timeout_ms,
        need_value: req.need_value,
        min_commit_ts: req.for_update_ts.saturating_add(1),
    }
}
