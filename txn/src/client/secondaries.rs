//! Committing secondaries in the background: once the primary is committed the transaction
//! is, and the caller need not wait for the other keys (as TiDB does). A small pool of
//! threads per client does it, in paced batches (`ClientConfig::secondary_batch_keys`,
//! `secondary_batch_bytes`, `secondary_pace`) so a large transaction's thousands of commit
//! records do not crowd out other transactions' requests. A key it has not reached yet (or
//! never reaches) is committed by whoever meets its lock, from the primary's record, so the
//! pace changes when locks go, never what readers see.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::backoff::Backoff;
use super::core::ClientCore;
use super::counters::bump;
use super::pacing::{BatchLimits, SecondaryKey, cut_batches};
use super::two_pc::{CLEANUP_BUDGET, CommitPlan, KeysKind};

/// Threads committing secondaries for one client. A paced transaction holds one for its
/// whole commit, so the others keep serving the small transactions meanwhile.
const WORKERS: usize = 8;

/// The secondaries of one committed transaction, waiting for a worker: only the keys (and
/// their commit record sizes), not the values, which prewrite already wrote.
#[derive(Debug, Clone)]
pub(crate) struct SecondaryJob {
    start_ts: u64,
    commit_ts: u64,
    /// Every key of the transaction but the primary and the stream record's, in key order.
    keys: Vec<SecondaryKey>,
}

impl SecondaryJob {
    /// The secondaries of `plan` committed at `commit_ts`, but the stream record's keys,
    /// which the commit path commits itself, right away (`ClientCore::commit_record_keys`).
    pub(crate) fn new(plan: &CommitPlan, commit_ts: u64) -> SecondaryJob {
        let keys = plan
            .mutations
            .iter()
            .filter(|(m, _)| {
                let key = m.key();
                key != plan.primary.as_slice() && !crate::stream::is_reserved_key(key)
            })
            .map(|(m, _)| SecondaryKey::of(m))
            .collect();
        SecondaryJob {
            start_ts: plan.start_ts,
            commit_ts,
            keys,
        }
    }
}

/// Starts the workers; they stop when the client is gone.
pub(crate) fn spawn(core: Weak<ClientCore>) -> Sender<SecondaryJob> {
    let (tx, rx): (Sender<SecondaryJob>, Receiver<SecondaryJob>) = crossbeam_channel::unbounded();
    for i in 0..WORKERS {
        let rx = rx.clone();
        let core = core.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("surge-txn-secondaries-{i}"))
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    let Some(core) = core.upgrade() else { return };
                    core.commit_secondaries_paced(job);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start a secondary-commit thread");
        }
    }
    tx
}

impl ClientCore {
    /// Commits `job`'s keys on this thread: grouped by region, cut into batches within the
    /// configured bounds, one batch at a time in key order with `secondary_pace` between
    /// two batches. Failures are logged, not returned (as for every secondary commit): the
    /// transaction is committed, and a reader meeting a leftover lock commits it from the
    /// primary's record.
    pub(crate) fn commit_secondaries_paced(&self, job: SecondaryJob) {
        if job.keys.is_empty() {
            return;
        }
        let SecondaryJob {
            start_ts,
            commit_ts,
            keys,
        } = job;
        let _span = tracing::debug_span!("commit_secondaries", start_ts, commit_ts).entered();
        let mut bo = Backoff::with_budget(&self.config, CLEANUP_BUDGET);
        let groups = match self.group_by_region(keys, |k| k.key.as_slice(), &mut bo) {
            Ok(groups) => groups.into_iter().map(|(_, g)| g).collect(),
            Err(e) => {
                tracing::warn!(start_ts, commit_ts, error = %e, "secondaries left for lock resolution");
                return;
            }
        };
        let batches = cut_batches(groups, BatchLimits::of(&self.config));
        let paced = batches.len() > 1;
        for (i, batch) in batches.into_iter().enumerate() {
            if i > 0
                && let Some(pace) = self.config.secondary_pace
            {
                let paused = Instant::now();
                std::thread::sleep(pace);
                let us = u64::try_from(paused.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.counters
                    .secondary_pause_us
                    .fetch_add(us, Ordering::Relaxed);
            }
            // Each batch gets its own budget: a region that is slow to answer delays its
            // batch only, and what it leaves is resolved by readers.
            self.release_keys(
                start_ts,
                batch,
                KeysKind::Commit { commit_ts },
                CLEANUP_BUDGET,
            );
            bump(&self.counters.secondary_batches);
            if paced {
                bump(&self.counters.secondary_paced_batches);
            }
        }
        if paced {
            bump(&self.counters.secondary_paced_txns);
        }
    }
}
