//! Settling the transactions a crashed coordinator left in doubt: every prepare record
//! without a settled record is looked up in the binlog, then decided from its primary's
//! status, as TiDB Binlog's drainer settles a prewrite binlog whose commit binlog is
//! missing.

use std::collections::BTreeSet;

use surge_binlog::Position;

use super::backoff::Backoff;
use super::binlog_journal::{Prepared, RowChange};
use super::binlog_writer::CoordinatorBinlog;
use super::core::ClientCore;
use super::error::TxnError;
use super::two_pc::CommitPlan;
use crate::{
    KeyError, KvRequest, KvResponse, LockInfo, LockType, Mutation, PessimisticAction, TxnStatus,
};

/// What the coordinator's binlog recovery did when it started
/// ([`crate::TxnClient::binlog_recovery`]). Each list holds start timestamps (the xids of
/// the binlog groups).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinlogRecoveryReport {
    /// Prepared transactions whose group was already in the binlog (the crash came after
    /// the group was written): nothing to do.
    pub already_logged: Vec<u64>,
    /// Prepared transactions whose primary was committed but whose group was missing: the
    /// group was rebuilt from the prepare record and the committed values, and written.
    pub logged_now: Vec<u64>,
    /// Prepared transactions that did not commit: rolled back (their primary rolled back
    /// now or earlier, by this coordinator or by another client's lock resolution).
    pub rolled_back: Vec<u64>,
}

impl BinlogRecoveryReport {
    /// Whether any transaction was in doubt.
    pub fn is_empty(&self) -> bool {
        self.already_logged.is_empty() && self.logged_now.is_empty() && self.rolled_back.is_empty()
    }
}

/// How many rounds an uncommitted primary is rolled back and checked again.
const MAX_ROLLBACK_ROUNDS: usize = 5;

impl ClientCore {
    /// Settles `pending` (the journal's unsettled prepares) into `binlog`: groups already in
    /// the binlog are kept; for the others the primary's status decides: committed → the
    /// group is rebuilt and written (in commit_ts order), anything else → rolled back (an
    /// uncommitted primary is this coordinator's own and was never acknowledged, so it is
    /// rolled back now rather than after its TTL).
    ///
    /// # Errors
    /// [`TxnError::Binlog`] when the binlog cannot be read or written or a committed value
    /// is missing; cluster errors when a primary's status cannot be learned. The caller
    /// stops the binlog then: the next start tries again.
    pub(crate) fn recover_binlog(
        &self,
        binlog: &CoordinatorBinlog,
        pending: Vec<Prepared>,
    ) -> Result<BinlogRecoveryReport, TxnError> {
        let mut report = BinlogRecoveryReport::default();
        if pending.is_empty() {
            return Ok(report);
        }
        let logged = logged_xids(binlog, &pending)?;
        let mut committed = Vec::new();
        for p in pending {
            if is_logged(&p, &logged) {
                report.already_logged.push(p.start_ts);
                binlog.journal.settle(p.start_ts)?;
                continue;
            }
            match self.settle_primary(&p)? {
                Some(commit_ts) => committed.push((commit_ts, p)),
                None => {
                    self.rollback_keys(p.start_ts, p.keys.clone());
                    report.rolled_back.push(p.start_ts);
                    binlog.journal.settle(p.start_ts)?;
                }
            }
        }
        // Conflicting transactions in commit_ts order; others' order does not matter.
        committed.sort_by_key(|(ts, _)| *ts);
        for (commit_ts, p) in committed {
            if p.members.is_empty() {
                let cache = self.rebuild_group(binlog, &p, commit_ts)?;
                binlog.write_group(cache, p.start_ts)?;
            } else {
                // A hot-row group: the members not yet logged (a crash may have come
                // between two of them, which are written in order), from the record.
                binlog.write_members(&p.primary, &p.members, &logged)?;
            }
            self.commit_secondaries(&plan_of(&p), commit_ts);
            report.logged_now.push(p.start_ts);
            binlog.journal.settle(p.start_ts)?;
        }
        tracing::info!(?report, "binlog recovery");
        Ok(report)
    }

    /// The primary's fate: `Some(commit_ts)` if committed, `None` once it is certainly not
    /// (rolling back a primary that is still locked: the transaction is this
    /// coordinator's, it never answered, and nothing will commit it now).
    fn settle_primary(&self, p: &Prepared) -> Result<Option<u64>, TxnError> {
        let lock = LockInfo {
            key: p.primary.clone(),
            primary: p.primary.clone(),
            lock_ts: p.start_ts,
            ttl: 0,
            lock_type: LockType::Put,
            for_update_ts: 0,
            min_commit_ts: 0,
            txn_size: 0,
        };
        for _ in 0..MAX_ROLLBACK_ROUNDS {
            let mut bo = Backoff::new(&self.config);
            let now = self.get_ts()?;
            match self.check_txn_status(&lock, 0, now, true, &mut bo)? {
                Ok(TxnStatus::Committed { commit_ts }) => return Ok(Some(commit_ts)),
                Ok(TxnStatus::Uncommitted { .. }) => {
                    self.rollback_primary(p, &mut bo)?;
                }
                Ok(_) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Err(TxnError::Binlog {
            detail: format!(
                "txn {}: primary still locked after {MAX_ROLLBACK_ROUNDS} rollbacks",
                p.start_ts
            ),
        })
    }

    /// Rolls back the primary key of `p` (a rollback record stays, so a late commit fails).
    fn rollback_primary(&self, p: &Prepared, bo: &mut Backoff) -> Result<(), TxnError> {
        let reply = self.send_key(&p.primary, bo, |ctx| KvRequest::BatchRollback {
            ctx,
            keys: vec![p.primary.clone()],
            start_ts: p.start_ts,
        })?;
        match reply {
            KvResponse::Done => Ok(()),
            // Committed meanwhile, say: the status check that follows tells.
            KvResponse::KeyError(KeyError::Mvcc(e)) => {
                tracing::debug!(start_ts = p.start_ts, error = %e, "rollback of primary refused");
                Ok(())
            }
            KvResponse::KeyError(e) => Err(e.into()),
            other => Err(TxnError::unexpected("batch_rollback", &other)),
        }
    }

    /// The group of a committed `p`: the caller's events kept with it, or else rebuilt from
    /// its row changes and the values it committed (read at `commit_ts`, resolving its own
    /// secondary locks on the way).
    fn rebuild_group(
        &self,
        binlog: &CoordinatorBinlog,
        p: &Prepared,
        commit_ts: u64,
    ) -> Result<surge_binlog::TxnCache, TxnError> {
        let mut cache = binlog.log.new_cache();
        let err = |e: surge_binlog::Error| TxnError::Binlog {
            detail: format!("rebuild the group of txn {}: {e}", p.start_ts),
        };
        if let Some(events) = &p.events {
            // The caller gave the events (SQL rows, DDL): they are the group.
            cache.push_encoded(events).map_err(err)?;
            return Ok(cache);
        }
        for (key, change) in &p.changes {
            if *change == RowChange::Delete {
                cache.delete(key).map_err(err)?;
                continue;
            }
            // Held: the GC life time may have passed while this coordinator was down, and
            // its GC hold (`gc_hold.rs`), set before the transaction prepared, kept every
            // version at or above its start_ts.
            let value =
                self.snapshot_get_held(key, commit_ts)?
                    .ok_or_else(|| TxnError::Binlog {
                        detail: format!(
                            "txn {} committed at {commit_ts} but key {:?} has no value there",
                            p.start_ts,
                            String::from_utf8_lossy(key)
                        ),
                    })?;
            match change {
                RowChange::Insert => cache.put(key, &value).map_err(err)?,
                _ => cache.update(key, &value).map_err(err)?,
            }
        }
        Ok(cache)
    }
}

/// Whether the whole binlog group of `p` is in the binlog: its transaction's xid, or for a
/// hot-row group every member's.
fn is_logged(p: &Prepared, logged: &BTreeSet<u64>) -> bool {
    if p.members.is_empty() {
        logged.contains(&p.start_ts)
    } else {
        p.members.iter().all(|m| logged.contains(&m.xid))
    }
}

/// A plan naming `p`'s keys, to commit its secondaries.
fn plan_of(p: &Prepared) -> CommitPlan {
    CommitPlan {
        start_ts: p.start_ts,
        primary: p.primary.clone(),
        mutations: p
            .keys
            .iter()
            .map(|k| {
                (
                    Mutation::Lock { key: k.clone() },
                    PessimisticAction::SkipPessimisticCheck,
                )
            })
            .collect(),
        for_update_ts: 0,
    }
}

/// The xids of the groups in the binlog from the earliest position any of `pending` saw
/// (each one's group, if written, lies after the position its prepare recorded).
fn logged_xids(
    binlog: &CoordinatorBinlog,
    pending: &[Prepared],
) -> Result<BTreeSet<u64>, TxnError> {
    let from = pending
        .iter()
        .map(|p| Position {
            file: p.binlog_file.clone(),
            offset: p.binlog_offset,
        })
        .min();
    let err = |e: surge_binlog::Error| TxnError::Binlog {
        detail: format!("read the binlog back: {e}"),
    };
    let reader = match binlog.log.reader_from(from) {
        Ok(r) => r,
        // The file was purged (or the position is unusable): read everything there is.
        Err(e) => {
            tracing::warn!(error = %e, "binlog recovery reads the whole log");
            binlog.log.reader().map_err(err)?
        }
    };
    let mut xids = BTreeSet::new();
    for t in reader.transactions() {
        if let Some(x) = t.map_err(err)?.xid {
            xids.insert(x);
        }
    }
    Ok(xids)
}
