//! The commit protocol: Percolator's two-phase commit (prewrite every key with the primary's
//! batch first, take a commit timestamp, commit the primary — the commit point — then the
//! secondaries), and one-phase commit when every key is in one region.

use std::time::Duration;

use super::backoff::Backoff;
use super::binlog_crash::{crash_point, txn_crash_points};
use super::binlog_txn::BinlogTxn;
use super::binlog_writer::BinlogStep;
use super::core::ClientCore;
use super::dispatch::{RegionBatch, Reply};
use super::error::TxnError;
use super::secondaries::SecondaryJob;
use super::stream_commit::{PARALLEL_RECORD_MAX_KEYS, Payload, StreamStep, record_plan};
use crate::{
    CommitKind, Context, KeyError, KvRequest, KvResponse, LockInfo, LockType, Mutation, MvccError,
    PessimisticAction, TxnProps, TxnStatus,
};

/// How many fresh commit timestamps to try when readers keep pushing the primary's
/// `min_commit_ts` past the one tried.
const MAX_COMMIT_TS_RETRIES: usize = 8;

/// Backoff budget for committing secondaries after the commit point and for cleaning up
/// after a failed prewrite: past it, the locks are left to lock resolution.
pub(crate) const CLEANUP_BUDGET: Duration = Duration::from_secs(2);

/// Where a commit stops early: only for tests that simulate a coordinator crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopAt {
    /// Run the whole protocol.
    Never,
    /// Stop after every key is prewritten (never one-phase), before the commit timestamp.
    AfterPrewrite,
    /// Stop after the primary committed, leaving the secondaries locked.
    AfterPrimaryCommit,
}

/// What a transaction commits.
#[derive(Debug, Clone)]
pub(crate) struct CommitPlan {
    /// The transaction's start timestamp.
    pub(crate) start_ts: u64,
    /// The primary key; one of the mutations' keys.
    pub(crate) primary: Vec<u8>,
    /// Every key's mutation and pessimistic check, in key order.
    pub(crate) mutations: Vec<(Mutation, PessimisticAction)>,
    /// The largest `for_update_ts` of the transaction's locks (0: optimistic).
    pub(crate) for_update_ts: u64,
}

impl ClientCore {
    /// Commits `plan` and returns its commit timestamp.
    ///
    /// Nothing is committed unless `Ok` is returned, except for [`TxnError::Undetermined`],
    /// which says the primary's commit may have been applied.
    ///
    /// # Errors
    /// Prewrite failures (write conflict, lost pessimistic lock, `AlreadyExist`, region
    /// errors after retries) after rolling back what was prewritten; primary commit
    /// failures ([`TxnError::TxnLockNotFound`]: rolled back by another client).
    ///
    /// With a binlog, `binlog` is the transaction's cache: the transaction is prepared
    /// before prewrite and its group written right after the commit point
    /// (`binlog_writer.rs`); no `Ok` is returned before the group is durable.
    pub(crate) fn commit_plan(
        &self,
        plan: CommitPlan,
        stop: StopAt,
        binlog: Option<BinlogTxn>,
    ) -> Result<u64, TxnError> {
        let _span = tracing::info_span!(
            "txn_commit",
            start_ts = plan.start_ts,
            keys = plan.mutations.len()
        )
        .entered();
        // Binlog step 1 (a no-op without a binlog): prepared before anything is prewritten.
        let mut step = self.binlog_prepare(&plan, binlog)?;
        let (stream, payload) = match step.take_stream_record() {
            Some(record) => self.stream_parts(&record, plan.start_ts),
            None => (StreamStep::None, Vec::new()),
        };
        self.commit_with_step(plan, stop, step, stream, payload)
    }

    /// [`ClientCore::commit_plan`] with the binlog step prepared (or off), what to do about
    /// the stream record, and an external record's payload (prewritten with the other keys,
    /// in batches of its own so that no request carries all of it).
    pub(crate) fn commit_with_step(
        &self,
        plan: CommitPlan,
        stop: StopAt,
        mut step: BinlogStep,
        stream: StreamStep,
        payload: Payload,
    ) -> Result<u64, TxnError> {
        // A record's lane is registered before its record_ts is taken, and the record_ts is
        // at or above the registration (`stream_commit.rs`).
        let lane_ts = match stream {
            StreamStep::None => 0,
            _ => match self.ensure_stream_lane(&plan.primary) {
                Ok(ts) => ts,
                Err(e) => return step.finish(Err(e), stop),
            },
        };
        let mut bo = Backoff::new(&self.config);
        // A small transaction keeps its whole plan (a record may join it, and a one-phase
        // commit sends it). A large one moves its values into the region groups and keeps
        // keys only: past the prewrite, the plan serves the primary's commit, the
        // secondaries and a rollback, which need keys; an external record's payload joins
        // it the same way (its values go in `payload`'s own requests).
        let small = payload.is_empty() && plan.mutations.len() <= PARALLEL_RECORD_MAX_KEYS;
        let (plan, mutations) = if small {
            let mutations = plan.mutations.clone();
            (plan, mutations)
        } else {
            let mut plan = plan;
            let mutations = std::mem::take(&mut plan.mutations);
            plan.mutations = keys_only(&mutations);
            plan.mutations.extend(keys_only(&payload));
            (plan, mutations)
        };
        let groups = match self.group_by_region(mutations, mutation_key, &mut bo) {
            Ok(groups) => groups,
            Err(e) => return step.finish(Err(e), stop),
        };
        let groups: Vec<Vec<(Mutation, PessimisticAction)>> =
            groups.into_iter().map(|(_, b)| b).collect();
        let plan = &plan;
        let props = TxnProps {
            start_ts: plan.start_ts,
            primary: plan.primary.clone(),
            lock_ttl: self.lock_ttl_for(plan.start_ts),
            for_update_ts: plan.for_update_ts,
            txn_size: plan.mutations.len() as u64,
            min_commit_ts: plan.start_ts.max(plan.for_update_ts).saturating_add(1),
            commit_kind: CommitKind::TwoPc,
        };
        let result = self.commit_prepared(
            plan, stop, groups, &payload, props, &mut step, stream, lane_ts, &mut bo,
        );
        step.finish(result, stop)
    }

    /// [`ClientCore::commit_plan`] once the binlog step is prepared: 1PC or 2PC, calling
    /// `step.committed` right after the commit point. A transaction with a stream record
    /// always commits in two phases, its record prewritten last (`stream_commit.rs`).
    #[allow(clippy::too_many_arguments)] // the commit's inputs, each used once
    fn commit_prepared(
        &self,
        plan: &CommitPlan,
        stop: StopAt,
        groups: Vec<Vec<(Mutation, PessimisticAction)>>,
        payload: &[(Mutation, PessimisticAction)],
        props: TxnProps,
        step: &mut BinlogStep,
        stream: StreamStep,
        lane_ts: u64,
        bo: &mut Backoff,
    ) -> Result<u64, TxnError> {
        if groups.len() == 1 && stop == StopAt::Never && matches!(stream, StreamStep::None) {
            let mutations = groups.into_iter().flatten().collect();
            return self.one_pc(plan, mutations, props, step, bo, None);
        }
        // A small transaction's inline record goes with its other keys, taken at a
        // record_ts from before the prewrite: one Raft round fewer per commit. The
        // watermark's argument only needs record_ts taken before the record's prewrite and
        // commit_ts after it returned; the skew bound then covers the whole prewrite,
        // which is why a large transaction still prewrites its record last. When the
        // record's keys and the others lie in one region, the whole commit is one phase at
        // the hint record_ts: the region keeps its commit_ts within a second of the hint
        // (`ONE_PC_MAX_DRIFT_MS`, else it prewrites two-phase), and a stream reader's lock
        // scan raises the region's `max_ts` to its T0, so a one-phase record committing
        // after the scan lands above the watermark (`RegionPeer::read_locks_in`).
        let (mut groups, mut stream) = (groups, stream);
        let mut with_record = None;
        if let StreamStep::Append(values) = &stream
            && payload.is_empty()
            && plan.mutations.len() <= PARALLEL_RECORD_MAX_KEYS
        {
            let record_ts = self.parallel_record_ts(plan, lane_ts)?;
            let (extended, chunk_groups) = record_plan(plan, values.clone(), record_ts);
            // One phase only when the region's drift bound is within the skew bound: a
            // one-phase commit_ts is not checked against the skew after the fact (it is
            // committed when it returns), and a record committed further than the skew
            // above its record_ts could lie below where the next scan starts.
            if stop == StopAt::Never
                && crate::service::ONE_PC_MAX_DRIFT_MS <= self.config.stream.max_skew_ms()
                && self
                    .group_by_region(extended.mutations.clone(), mutation_key, bo)
                    .is_ok_and(|g| g.len() == 1)
            {
                let mutations = extended.mutations.clone();
                return self.one_pc(&extended, mutations, props, step, bo, Some(record_ts));
            }
            groups.extend(chunk_groups);
            with_record = Some(extended);
            stream = StreamStep::InPlan(record_ts);
        }
        let rollback_plan = with_record.as_ref().unwrap_or(plan);
        let op = prewrite_op(props.clone());
        self.heartbeats.register(plan.start_ts, &plan.primary);
        // Every region's batch at once (the primary's too, as TiDB): a reader that meets a
        // secondary lock before the primary's is written treats the transaction as alive
        // until the lock's TTL runs out, so nothing is decided without the primary.

        // Each region's keys in bounded requests, sent at once like the regions' (a
        // region's parts would otherwise go one after another in `run_batches`).
        let groups: Vec<_> = groups
            .into_iter()
            .flat_map(|g| super::dispatch::bounded_batches(&op, g))
            .collect();
        let prewritten = if payload.is_empty() {
            self.run_groups_concurrently(&op, groups, self.config.max_backoff)
        } else {
            // An external record's payload beside the keys, on a thread of its own.
            std::thread::scope(|s| {
                let paying = s.spawn(|| self.prewrite_payload(&op, payload));
                let keys = self.run_groups_concurrently(&op, groups, self.config.max_backoff);
                let paid = paying.join().unwrap_or_else(|_| {
                    Err(TxnError::Protocol {
                        detail: "the payload prewrite thread panicked".to_string(),
                    })
                });
                keys.and(paid)
            })
        };
        if let Err(e) = prewritten {
            self.rollback_keys(plan.start_ts, all_keys(rollback_plan));
            return Err(e);
        }
        let plan = rollback_plan;
        // The stream record, last (`stream_commit.rs`): from here on `plan` holds its keys.
        let (extended, record_ts) = match stream {
            StreamStep::None => (None, None),
            StreamStep::InPlan(record_ts) => (None, Some(record_ts)),
            StreamStep::Append(record) => {
                let (p, ts) = self.prewrite_stream_record(plan, &props, record)?;
                (Some(p), Some(ts))
            }
        };
        let plan = extended.as_ref().unwrap_or(plan);
        crash_point(txn_crash_points::AFTER_PREWRITE);
        if stop == StopAt::AfterPrewrite {
            return Ok(0);
        }
        let commit_ts = self.commit_primary(plan, record_ts)?;
        if stop == StopAt::AfterPrimaryCommit {
            return Ok(commit_ts);
        }
        // Binlog step 3: the group, before the secondaries and the answer.
        step.committed(commit_ts)?;
        // The stream record's keys first (`ClientCore::commit_record_keys`).
        self.commit_record_keys(plan, commit_ts);
        // In the background (paced, keys only: the values are written) or right here.
        match self.secondaries.get() {
            Some(tx) => {
                if tx.send(SecondaryJob::new(plan, commit_ts)).is_err() {
                    // The workers are gone: commit them here.
                    self.commit_other_secondaries(plan, commit_ts);
                }
            }
            None => self.commit_secondaries(plan, commit_ts),
        }
        Ok(commit_ts)
    }

    /// One-phase commit: one prewrite that writes the commit records directly, at a commit
    /// timestamp the region picks at or above a fresh hint (and above every read it served).
    ///
    /// With `record_ts`, `plan` carries a stream record taken at it: it is the hint, and a
    /// commit that ends two-phase is checked against it as any record's
    /// ([`ClientCore::check_record_skew`]).
    fn one_pc(
        &self,
        plan: &CommitPlan,
        mutations: Vec<(Mutation, PessimisticAction)>,
        mut props: TxnProps,
        step: &mut BinlogStep,
        bo: &mut Backoff,
        record_ts: Option<u64>,
    ) -> Result<u64, TxnError> {
        let hint = match record_ts {
            Some(ts) => ts,
            None => self.get_ts()?,
        };
        props.commit_kind = CommitKind::OnePc { commit_ts: hint };
        let mut op = Prewrite {
            props,
            one_pc_commit_ts: 0,
        };
        let result = self.run_batches(&mut op, mutations, bo);
        if bo.outcome_unknown() {
            // An earlier attempt may have committed (and a retry may then have failed or
            // answered for the retry only): the primary's record is the truth.
            return match self.settle_after_lost_reply(plan, result.err())? {
                Settled::Committed(commit_ts) => {
                    step.committed(commit_ts)?;
                    Ok(commit_ts)
                }
                Settled::Prewritten => self.finish_two_phase(plan, step, record_ts),
            };
        }
        match result {
            Ok(()) if op.one_pc_commit_ts > 0 => {
                super::counters::bump(&self.counters.one_pc_commits);
                step.committed(op.one_pc_commit_ts)?;
                Ok(op.one_pc_commit_ts)
            }
            // The region prewrote the keys as two-phase locks instead (or a split made the
            // prewrite two-phase): finish with 2PC.
            Ok(()) => self.finish_two_phase(plan, step, record_ts),
            Err(e) => {
                self.rollback_keys(plan.start_ts, all_keys(plan));
                Err(e)
            }
        }
    }

    /// The rest of a one-phase commit whose every key ended up prewritten as a two-phase
    /// lock: commit the primary (the commit point), write the binlog group, then the
    /// secondaries.
    fn finish_two_phase(
        &self,
        plan: &CommitPlan,
        step: &mut BinlogStep,
        record_ts: Option<u64>,
    ) -> Result<u64, TxnError> {
        self.heartbeats.register(plan.start_ts, &plan.primary);
        let commit_ts = self.commit_primary(plan, record_ts)?;
        step.committed(commit_ts)?;
        self.commit_secondaries(plan, commit_ts);
        Ok(commit_ts)
    }

    /// After a one-phase commit whose answer was lost: asks the primary's region for the
    /// transaction's fate, so the answer is final. `error` is the prewrite's last error
    /// (`None`: the retries prewrote every key).
    ///
    /// - Committed: by the lost attempt or a retry.
    /// - The primary locked and every key prewritten (`error` is `None`): the retries
    ///   prewrote the keys two-phase (a split regrouped them, or the region declined one
    ///   phase), and the lost attempt did not commit (a retry that met its commit would have
    ///   failed): [`Settled::Prewritten`], the caller commits them as 2PC does.
    /// - Otherwise not committed: rolled back (a status check with `rollback_if_not_exist`
    ///   leaves a rollback record where nothing was found, so a late attempt cannot commit).
    fn settle_after_lost_reply(
        &self,
        plan: &CommitPlan,
        error: Option<TxnError>,
    ) -> Result<Settled, TxnError> {
        let mut bo = Backoff::new(&self.config);
        let lock = LockInfo {
            key: plan.primary.clone(),
            primary: plan.primary.clone(),
            lock_ts: plan.start_ts,
            ttl: 0,
            lock_type: LockType::Put,
            for_update_ts: plan.for_update_ts,
            min_commit_ts: 0,
            txn_size: 0,
        };
        let status = self
            .get_ts()
            .and_then(|now| self.check_txn_status(&lock, 0, now, true, &mut bo))
            .and_then(|answer| answer.map_err(TxnError::from));
        let undetermined = |detail: String| TxnError::Undetermined {
            start_ts: plan.start_ts,
            detail,
        };
        match status {
            Ok(TxnStatus::Committed { commit_ts }) => {
                super::counters::bump(&self.counters.one_pc_commits);
                Ok(Settled::Committed(commit_ts))
            }
            // Every key holds this transaction's two-phase lock: committable.
            Ok(TxnStatus::Uncommitted { .. }) if error.is_none() => Ok(Settled::Prewritten),
            // Prewritten as locks but not committed, or rolled back: roll back, report the
            // failure.
            Ok(_) => {
                self.rollback_keys(plan.start_ts, all_keys(plan));
                Err(error.unwrap_or(TxnError::TxnLockNotFound {
                    start_ts: plan.start_ts,
                    key: plan.primary.clone(),
                }))
            }
            Err(e) => Err(undetermined(format!(
                "one-phase commit reply lost; status check failed: {e}"
            ))),
        }
    }

    /// Commits the primary key: the transaction's commit point. Retries a lost answer (a
    /// commit of a committed key succeeds again) and takes a fresh commit timestamp when a
    /// reader pushed the primary's `min_commit_ts` past the one tried.
    ///
    /// With a stream record taken at `record_ts`, every commit timestamp is checked against
    /// it before the primary's commit is sent ([`ClientCore::check_record_skew`]).
    fn commit_primary(&self, plan: &CommitPlan, record_ts: Option<u64>) -> Result<u64, TxnError> {
        let mut bo = Backoff::new(&self.config);
        let mut commit_ts = self.get_ts()?;
        let mut ts_retries = 0;
        loop {
            if let Some(record_ts) = record_ts {
                self.check_record_skew(plan, record_ts, commit_ts)?;
            }
            let reply = self.send_key(&plan.primary, &mut bo, |ctx| KvRequest::Commit {
                ctx,
                keys: vec![plan.primary.clone()],
                start_ts: plan.start_ts,
                commit_ts,
            });
            let undetermined = |detail: String| TxnError::Undetermined {
                start_ts: plan.start_ts,
                detail,
            };
            match reply {
                Ok(KvResponse::Done) => return Ok(commit_ts),
                Ok(KvResponse::KeyError(KeyError::Mvcc(MvccError::CommitTsExpired {
                    min_commit_ts,
                    ..
                }))) if ts_retries < MAX_COMMIT_TS_RETRIES => {
                    // The lock is still there (not committed): any later timestamp is fine.
                    ts_retries += 1;
                    commit_ts = self.get_ts()?.max(min_commit_ts);
                }
                // `TxnLockNotFound`: no lock and no commit record, rolled back by a resolver
                // after our lock expired. Final even after a lost reply: had that commit been
                // applied, its record would be found. Any other key error leaves the lock
                // uncommitted. Either way the remaining locks are rolled back.
                Ok(KvResponse::KeyError(e)) => {
                    self.rollback_keys(plan.start_ts, all_keys(plan));
                    return Err(e.into());
                }
                // An answer that does not fit the request says nothing of whether the
                // commit ran: the outcome is unknown, as for an answer that did not decode.
                Ok(other) => {
                    return Err(undetermined(format!(
                        "unexpected reply to the primary commit: {other:?}"
                    )));
                }
                Err(e) if bo.outcome_unknown() => {
                    return Err(undetermined(format!(
                        "primary commit sent but unanswered: {e}"
                    )));
                }
                Err(e) => {
                    // Every attempt was refused before it could run: not committed.
                    self.rollback_keys(plan.start_ts, all_keys(plan));
                    return Err(e);
                }
            }
        }
    }

    /// Commits every key but the primary, every region at once (the foreground path and the
    /// fallback of the paced background one, `secondaries.rs`), in one round: the stream
    /// record's keys go in requests of their own beside the others, so they never wait
    /// behind a large transaction's batches in their region
    /// ([`ClientCore::commit_record_keys`] says why that matters). Failures are logged,
    /// not returned: the transaction is committed, and a reader meeting a leftover lock
    /// commits it from the primary's record.
    pub(crate) fn commit_secondaries(&self, plan: &CommitPlan, commit_ts: u64) {
        let record = secondary_keys(plan, crate::stream::is_reserved_key);
        let others = other_secondaries(plan);
        self.commit_keys(plan.start_ts, vec![record, others], commit_ts);
    }

    /// Commits the keys of `plan` that are neither its primary nor the stream record's.
    fn commit_other_secondaries(&self, plan: &CommitPlan, commit_ts: u64) {
        self.commit_keys(plan.start_ts, vec![other_secondaries(plan)], commit_ts);
    }

    /// Commits the stream record's keys of `plan` (none without a record), every region at
    /// once. They go first among the secondaries: the replica stream waits on the record's
    /// lock, and behind a large transaction's hundreds of thousands of other keys it waited
    /// the whole commit, then settled the record itself from the primary, and with it (a
    /// region-wide resolve) every lock of the transaction in the record's region, the same
    /// work the coordinator was doing, under the same latches.
    pub(crate) fn commit_record_keys(&self, plan: &CommitPlan, commit_ts: u64) {
        let record = secondary_keys(plan, crate::stream::is_reserved_key);
        self.commit_keys(plan.start_ts, vec![record], commit_ts);
    }

    /// Commits the keys of `sets` of transaction `start_ts` at `commit_ts`, each set
    /// grouped by region on its own and every group at once, logging a failure (the keys
    /// are left for lock resolution).
    fn commit_keys(&self, start_ts: u64, sets: Vec<Vec<Vec<u8>>>, commit_ts: u64) {
        let mut bo = Backoff::with_budget(&self.config, CLEANUP_BUDGET);
        let op = KeysOp {
            kind: KeysKind::Commit { commit_ts },
            start_ts,
        };
        let mut groups = Vec::new();
        for keys in sets.into_iter().filter(|k| !k.is_empty()) {
            match self.group_by_region(keys, KeysOp::key_of, &mut bo) {
                Ok(g) => groups.extend(g.into_iter().map(|(_, b)| b)),
                Err(e) => {
                    tracing::warn!(start_ts, commit_ts, error = %e, "secondaries left for lock resolution");
                    return;
                }
            }
        }
        let committed = self.run_groups_concurrently(&op, groups, CLEANUP_BUDGET);
        if let Err(e) = committed {
            tracing::warn!(start_ts, commit_ts, error = %e, "secondaries left for lock resolution");
        }
    }

    /// Rolls back `keys` of transaction `start_ts` (best effort, bounded): removes its
    /// locks, pessimistic or prewritten, and leaves rollback records so a late prewrite
    /// fails. What is not reached is rolled back by others once the locks expire.
    pub(crate) fn rollback_keys(&self, start_ts: u64, keys: Vec<Vec<u8>>) {
        self.release_keys(start_ts, keys, KeysKind::Rollback, CLEANUP_BUDGET);
    }

    /// Releases pessimistic locks of `start_ts` taken at or before `for_update_ts` on `keys`
    /// (best effort within `budget`).
    pub(crate) fn pessimistic_rollback_keys(
        &self,
        start_ts: u64,
        for_update_ts: u64,
        keys: Vec<Vec<u8>>,
        budget: Duration,
    ) {
        self.release_keys(
            start_ts,
            keys,
            KeysKind::PessimisticRollback { for_update_ts },
            budget,
        );
    }

    /// Applies `kind` to `keys` of `start_ts` in region batches, one after the other on
    /// this thread (best effort within `budget`; what is left goes to lock resolution).
    pub(crate) fn release_keys(
        &self,
        start_ts: u64,
        keys: Vec<Vec<u8>>,
        kind: KeysKind,
        budget: Duration,
    ) {
        if keys.is_empty() {
            return;
        }
        let mut bo = Backoff::with_budget(&self.config, budget);
        let mut op = KeysOp { kind, start_ts };
        if let Err(e) = self.run_batches(&mut op, keys, &mut bo) {
            tracing::warn!(start_ts, ?kind, error = %e, "locks left for lock resolution");
        }
    }
}

/// The keys of `plan` but its primary for which `keep` holds, in plan order.
fn secondary_keys(plan: &CommitPlan, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    plan.mutations
        .iter()
        .map(|(m, _)| m.key())
        .filter(|k| *k != plan.primary.as_slice() && keep(k))
        .map(<[u8]>::to_vec)
        .collect()
}

/// The keys of `plan` that are neither its primary nor the stream record's.
fn other_secondaries(plan: &CommitPlan) -> Vec<Vec<u8>> {
    secondary_keys(plan, |k| !crate::stream::is_reserved_key(k))
}

/// `mutations` for a plan past its prewrite: keys, with the short values that size the
/// commit batches (`pacing.rs`) and without the long ones, which the prewrite carried.
fn keys_only(mutations: &[(Mutation, PessimisticAction)]) -> Vec<(Mutation, PessimisticAction)> {
    mutations
        .iter()
        .map(|(m, a)| match m {
            Mutation::Put { key, value } if value.len() > crate::SHORT_VALUE_MAX_LEN => (
                Mutation::Put {
                    key: key.clone(),
                    value: Vec::new(),
                },
                *a,
            ),
            m => (m.clone(), *a),
        })
        .collect()
}

/// Every key of `plan`.
pub(crate) fn all_keys(plan: &CommitPlan) -> Vec<Vec<u8>> {
    plan.mutations
        .iter()
        .map(|(m, _)| m.key().to_vec())
        .collect()
}

fn mutation_key(item: &(Mutation, PessimisticAction)) -> &[u8] {
    item.0.key()
}

/// What [`ClientCore::settle_after_lost_reply`] found of a one-phase commit.
enum Settled {
    /// Committed at this timestamp.
    Committed(u64),
    /// Every key prewritten as a two-phase lock, nothing committed: commit it.
    Prewritten,
}

/// A [`Prewrite`] of `props` (two-phase unless `props` say one-phase).
pub(crate) fn prewrite_op(props: TxnProps) -> Prewrite {
    Prewrite {
        props,
        one_pc_commit_ts: 0,
    }
}

/// `Prewrite` in region batches.
#[derive(Clone)]
pub(crate) struct Prewrite {
    props: TxnProps,
    /// The commit timestamp a one-phase prewrite reported (0: none).
    one_pc_commit_ts: u64,
}

impl RegionBatch for Prewrite {
    type Item = (Mutation, PessimisticAction);

    fn key_of(item: &Self::Item) -> &[u8] {
        mutation_key(item)
    }

    /// The key, the value, and the primary key each lock carries.
    fn item_bytes(&self, item: &Self::Item) -> usize {
        let value = match &item.0 {
            Mutation::Put { value, .. } => value.len(),
            _ => 0,
        };
        mutation_key(item).len() + value + self.props.primary.len() + super::dispatch::ITEM_OVERHEAD
    }

    fn request(&self, ctx: Context, batch: &[Self::Item]) -> KvRequest {
        KvRequest::Prewrite {
            ctx,
            mutations: batch.to_vec(),
            props: self.props.clone(),
        }
    }

    fn on_reply(
        &mut self,
        core: &ClientCore,
        _batch: &[Self::Item],
        reply: KvResponse,
        bo: &mut Backoff,
    ) -> Result<Reply, TxnError> {
        match reply {
            KvResponse::Prewrite { one_pc_commit_ts } => {
                self.one_pc_commit_ts = self.one_pc_commit_ts.max(one_pc_commit_ts);
                Ok(Reply::Done)
            }
            KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock))) => {
                core.handle_write_lock(&lock, bo)?;
                Ok(Reply::Retry)
            }
            KvResponse::KeyError(e) => Err(e.into()),
            other => {
                // The node ran something and answered nonsense: a one-phase prewrite may
                // have committed, so `one_pc` settles it from the primary's record.
                bo.mark_outcome_unknown();
                Err(TxnError::unexpected("prewrite", &other))
            }
        }
    }

    /// A one-phase commit whose keys turn out to span regions, or to be more than one
    /// request may carry, becomes a two-phase prewrite: each region would otherwise commit its part at its own commit_ts (a
    /// snapshot between the two would see half the transaction, and a part that failed
    /// could not undo a part that committed). Nothing was committed yet: the one request
    /// sent as one-phase was refused whole by its region (or its answer was lost, which
    /// `one_pc` settles from the primary). `one_pc` then finishes with 2PC, as when a
    /// region declines one-phase commit.
    fn on_split(&mut self, core: &ClientCore) {
        if matches!(self.props.commit_kind, CommitKind::OnePc { .. }) {
            self.props.commit_kind = CommitKind::TwoPc;
            // Two-phase locks from now on, written region after region: heartbeat them
            // from the first (as `commit_plan` does for 2PC) so that none outlives its TTL
            // before the commit.
            core.heartbeats
                .register(self.props.start_ts, &self.props.primary);
        }
    }
}

/// What a [`KeysOp`] does to its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeysKind {
    /// Commit at `commit_ts`.
    Commit { commit_ts: u64 },
    /// Roll back (removing prewritten or pessimistic locks).
    Rollback,
    /// Release pessimistic locks taken at or before `for_update_ts`.
    PessimisticRollback { for_update_ts: u64 },
}

/// Commit, rollback or pessimistic rollback of keys in region batches.
#[derive(Clone)]
struct KeysOp {
    kind: KeysKind,
    start_ts: u64,
}

impl RegionBatch for KeysOp {
    type Item = Vec<u8>;

    fn key_of(item: &Vec<u8>) -> &[u8] {
        item
    }

    fn request(&self, ctx: Context, batch: &[Vec<u8>]) -> KvRequest {
        let keys = batch.to_vec();
        let start_ts = self.start_ts;
        match self.kind {
            KeysKind::Commit { commit_ts } => KvRequest::Commit {
                ctx,
                keys,
                start_ts,
                commit_ts,
            },
            KeysKind::Rollback => KvRequest::BatchRollback {
                ctx,
                keys,
                start_ts,
            },
            KeysKind::PessimisticRollback { for_update_ts } => KvRequest::PessimisticRollback {
                ctx,
                keys,
                start_ts,
                for_update_ts,
            },
        }
    }

    fn on_reply(
        &mut self,
        _core: &ClientCore,
        _batch: &[Vec<u8>],
        reply: KvResponse,
        _bo: &mut Backoff,
    ) -> Result<Reply, TxnError> {
        match reply {
            KvResponse::Done => Ok(Reply::Done),
            KvResponse::KeyError(e) => {
                // A secondary already resolved by a reader, or a rollback of a key that is
                // already settled: nothing left to do for this batch.
                tracing::debug!(start_ts = self.start_ts, kind = ?self.kind, error = %e, "batch not applied");
                Ok(Reply::Done)
            }
            other => Err(TxnError::unexpected("commit or rollback", &other)),
        }
    }
}
