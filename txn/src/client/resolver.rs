//! Lock resolution: settling another transaction's lock found by a read or a write, from the
//! fate of its primary key (Percolator's cleanup, as TiKV's client does it).

use super::backoff::Backoff;
use super::core::ClientCore;
use super::counters::bump;
use super::error::TxnError;
use crate::{KeyError, KvRequest, KvResponse, LockInfo, LockType, MvccError, TxnStatus};

/// What a lock's primary answered about its transaction.
#[derive(Debug)]
enum Status {
    /// Its status.
    Known(TxnStatus),
    /// No lock and no record yet while the lock is still within its TTL (the primary's
    /// prewrite may be in flight: rolling it back now would be premature; TiDB waits in that
    /// case too).
    NotFound,
    /// The transaction's lock on the key asked names another primary: that lock.
    Mismatch(Box<LockInfo>),
}

/// What resolving a lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// The lock's transaction was committed or rolled back and the lock is gone, or what
    /// blocked the caller is over (a one-phase commit in flight): retry now.
    Resolved,
    /// The transaction is alive but cannot commit at or below the reader's timestamp: a read
    /// may ignore locks of this `start_ts` (TiKV's `bypass_locks`).
    Bypass(u64),
    /// The transaction is alive (and may still commit below the reader): back off and retry.
    Alive,
}

/// Which of a settled transaction's locks go with the one asked about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CleanScope<'a> {
    /// Every lock of the transaction in the lock's region, in one request (readers: a
    /// large transaction's secondaries otherwise cost one round trip each).
    Region,
    /// These keys only, one request per region (the replica stream, which needs its
    /// record's locks gone and nothing else: a region-wide resolve committed a large
    /// transaction's whole region in one proposal, the work its coordinator was doing).
    Keys(&'a [Vec<u8>]),
}

impl ClientCore {
    /// [`ClientCore::resolve_lock_in`] cleaning every lock of the transaction in `lock`'s
    /// region ([`CleanScope::Region`]).
    ///
    /// # Errors
    /// As [`ClientCore::resolve_lock_in`].
    pub(crate) fn resolve_lock(
        &self,
        lock: &LockInfo,
        caller_start_ts: u64,
        bo: &mut Backoff,
    ) -> Result<Resolution, TxnError> {
        self.resolve_lock_in(lock, caller_start_ts, CleanScope::Region, bo)
    }

    /// Settles `lock` for a caller that started at `caller_start_ts` (0 for a writer, which
    /// must not push the holder's `min_commit_ts`).
    ///
    /// Asks the primary's region for the holder's status (`CheckTxnStatus`, which rolls back
    /// an expired primary), then commits or rolls back the lock accordingly. A holder whose
    /// coordinator died is rolled back once its primary's TTL has run out, so resolution never
    /// waits longer than that TTL plus one backoff step.
    ///
    /// A lock that names its own key as primary when the transaction's lock there names
    /// another is answered `PrimaryMismatch` by that key's region, with that lock (a
    /// one-phase commit's guard reported itself so, naming the key it guards, before its
    /// report named the commit's primary). A reader retries at once when that lock is
    /// pessimistic (a pessimistic lock does not block a read, and the in-flight commit that
    /// did is over: the region answered after the commit's latches went); otherwise the lock
    /// is resolved instead, through its own primary (once). A mismatch on a primary other
    /// than the lock's own key says nothing the resolver can act on (deciding through the
    /// primary that region names would not stop the one the lock names from committing): the
    /// holder is taken to be alive.
    ///
    /// # Errors
    /// Region errors or unreachable nodes after `bo` is spent; key errors the resolution
    /// requests return.
    pub(crate) fn resolve_lock_in(
        &self,
        lock: &LockInfo,
        caller_start_ts: u64,
        scope: CleanScope<'_>,
        bo: &mut Backoff,
    ) -> Result<Resolution, TxnError> {
        let _span = tracing::debug_span!(
            "resolve_lock",
            lock_ts = lock.lock_ts,
            caller = caller_start_ts
        )
        .entered();
        let real;
        let (lock, status) = match self.txn_status(lock, caller_start_ts, bo)? {
            Status::Mismatch(found) => {
                let redirect = lock.key == lock.primary
                    && found.key == lock.key
                    && found.lock_ts == lock.lock_ts
                    && found.primary != lock.primary;
                if !redirect {
                    tracing::warn!(
                        lock_ts = lock.lock_ts,
                        "primary mismatch on another key than the lock's own; waiting"
                    );
                    return Ok(Resolution::Alive);
                }
                if caller_start_ts != 0 && found.lock_type == LockType::Pessimistic {
                    return Ok(Resolution::Resolved);
                }
                tracing::debug!(
                    lock_ts = lock.lock_ts,
                    "primary mismatch: asking the real one"
                );
                real = *found;
                match self.txn_status(&real, caller_start_ts, bo)? {
                    Status::Mismatch(_) => return Ok(Resolution::Alive),
                    status => (&real, status),
                }
            }
            status => (lock, status),
        };
        let status = match status {
            Status::Known(status) => status,
            Status::NotFound | Status::Mismatch(_) => return Ok(Resolution::Alive),
        };
        tracing::debug!(lock_ts = lock.lock_ts, ?status, "txn status");
        let commit_ts = match status {
            TxnStatus::Committed { commit_ts } => commit_ts,
            TxnStatus::Uncommitted { lock: primary, .. } => {
                let can_bypass = caller_start_ts != 0
                    && primary.lock_type != LockType::Pessimistic
                    && primary.min_commit_ts > caller_start_ts;
                return Ok(if can_bypass {
                    Resolution::Bypass(lock.lock_ts)
                } else {
                    Resolution::Alive
                });
            }
            // The primary has no lock and no record, and nothing was written because the
            // caller resolves a pessimistic lock: the primary's lock was lost (an in-memory
            // lock with a crashed leader). The holder's prewrite will fail, but until this
            // lock's own TTL runs out the holder may still be working: wait for it.
            TxnStatus::LockNotExistDoNothing if !lock_expired(lock, self.get_ts()?) => {
                return Ok(Resolution::Alive);
            }
            // Rolled back now or earlier: every other lock of the transaction goes too.
            _ => 0,
        };
        self.clean_lock(lock, commit_ts, scope, bo)?;
        bump(&self.counters.locks_resolved);
        Ok(Resolution::Resolved)
    }

    /// What `lock`'s primary says of its transaction.
    fn txn_status(
        &self,
        lock: &LockInfo,
        caller_start_ts: u64,
        bo: &mut Backoff,
    ) -> Result<Status, TxnError> {
        let current_ts = self.get_ts()?;
        let expired = lock_expired(lock, current_ts);
        match self.check_txn_status(lock, caller_start_ts, current_ts, expired, bo)? {
            Ok(status) => Ok(Status::Known(status)),
            Err(KeyError::Mvcc(MvccError::TxnNotFound { .. })) => Ok(Status::NotFound),
            Err(KeyError::Mvcc(MvccError::PrimaryMismatch { lock, .. })) => {
                Ok(Status::Mismatch(lock))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Sends `CheckTxnStatus` for `lock`'s transaction to its primary's region.
    ///
    /// # Errors
    /// Region errors after `bo` is spent; the key error comes back as the inner `Err`.
    pub(crate) fn check_txn_status(
        &self,
        lock: &LockInfo,
        caller_start_ts: u64,
        current_ts: u64,
        rollback_if_not_exist: bool,
        bo: &mut Backoff,
    ) -> Result<Result<TxnStatus, KeyError>, TxnError> {
        let req = |ctx| KvRequest::CheckTxnStatus {
            ctx,
            primary_key: lock.primary.clone(),
            lock_ts: lock.lock_ts,
            caller_start_ts,
            current_ts,
            rollback_if_not_exist,
            resolving_pessimistic_lock: lock.lock_type == LockType::Pessimistic,
        };
        match self.send_key(&lock.primary, bo, req)? {
            KvResponse::TxnStatus { status } => Ok(Ok(status)),
            KvResponse::KeyError(e) => Ok(Err(e)),
            other => Err(TxnError::unexpected("check_txn_status", &other)),
        }
    }

    /// Removes `lock` from its key, and the transaction's other locks `scope` names: a
    /// pessimistic lock is released (it never commits), any other is committed at
    /// `commit_ts` or rolled back (0).
    fn clean_lock(
        &self,
        lock: &LockInfo,
        commit_ts: u64,
        scope: CleanScope<'_>,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        let key = lock.key.clone();
        if lock.lock_type == LockType::Pessimistic {
            let reply = self.send_key(&lock.key, bo, |ctx| KvRequest::PessimisticRollback {
                ctx,
                keys: vec![key.clone()],
                start_ts: lock.lock_ts,
                for_update_ts: u64::MAX,
            })?;
            return resolved(reply);
        }
        let resolve = |keys: Vec<Vec<u8>>| {
            move |ctx| KvRequest::ResolveLock {
                ctx,
                start_ts: lock.lock_ts,
                commit_ts,
                keys: keys.clone(),
            }
        };
        match scope {
            // Every lock of the transaction in the key's region at once (TiKV's resolver
            // does the same): after a large transaction whose secondaries are committed
            // in the background, a reader otherwise settled one lock per round trip, a
            // scan of 100 000 such rows taking minutes. The primary decided for all of
            // them. Should the region refuse (a lock of another kind), this key alone.
            CleanScope::Region => match self.send_key(&lock.key, bo, resolve(Vec::new()))? {
                KvResponse::Done => Ok(()),
                _ => resolved(self.send_key(&lock.key, bo, resolve(vec![key.clone()]))?),
            },
            CleanScope::Keys(keys) => {
                let mut left = keys.to_vec();
                left.push(key);
                left.sort();
                left.dedup();
                // The region of the first key left, with the keys it holds; located again
                // after a region error (a split moves keys out of a cached region).
                while let Some(first) = left.first() {
                    let region = self.locate(first, bo)?;
                    let n = left
                        .iter()
                        .take_while(|k| region.info.contains(k))
                        .count()
                        .max(1);
                    let req = resolve(left[..n].to_vec())(self.context(&region));
                    if let Some(reply) = self.send_region(&region, req, bo)? {
                        resolved(reply)?;
                        left.drain(..n);
                    }
                }
                Ok(())
            }
        }
    }

    /// Acts on a read that found `lock` at `read_ts`: resolves it, adds it to `bypass`, or
    /// backs off.
    ///
    /// # Errors
    /// [`TxnError::KeyIsLocked`] when the holder stays alive for the whole budget, or the
    /// resolution's own errors.
    pub(crate) fn handle_read_lock(
        &self,
        lock: &LockInfo,
        read_ts: u64,
        bypass: &mut Vec<u64>,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        match self.resolve_lock(lock, read_ts, bo)? {
            Resolution::Resolved => bo.retry_now(),
            Resolution::Bypass(ts) => {
                if !bypass.contains(&ts) {
                    bypass.push(ts);
                }
                bo.retry_now()
            }
            Resolution::Alive => {
                bo.note(TxnError::KeyIsLocked {
                    key: lock.key.clone(),
                    lock_ts: lock.lock_ts,
                });
                bo.sleep()
            }
        }
    }

    /// Acts on a write (prewrite) that found `lock`: resolves it or backs off.
    ///
    /// # Errors
    /// As [`ClientCore::handle_read_lock`].
    pub(crate) fn handle_write_lock(
        &self,
        lock: &LockInfo,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        match self.resolve_lock(lock, 0, bo)? {
            Resolution::Resolved => bo.retry_now(),
            Resolution::Bypass(_) | Resolution::Alive => {
                bo.note(TxnError::KeyIsLocked {
                    key: lock.key.clone(),
                    lock_ts: lock.lock_ts,
                });
                bo.sleep()
            }
        }
    }
}

/// Whether `lock`'s TTL has run out at `current_ts` (TTLs count from the physical part of
/// the holder's `start_ts`).
fn lock_expired(lock: &LockInfo, current_ts: u64) -> bool {
    crate::physical_ms(current_ts) >= crate::physical_ms(lock.lock_ts).saturating_add(lock.ttl)
}

/// A resolution request's reply as a result.
fn resolved(reply: KvResponse) -> Result<(), TxnError> {
    match reply {
        KvResponse::Done => Ok(()),
        KvResponse::KeyError(e) => Err(e.into()),
        other => Err(TxnError::unexpected("resolve_lock", &other)),
    }
}
