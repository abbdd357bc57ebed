//! [`TxnClient::hot_update_row`] and [`TxnClient::hot_update`]: hot-row updates (of any row
//! bytes, and of integer values) through the `surge-hotspot` group coordinator, after
//! AliSQL's hot-row group commit (the `commit_on_success rollback_on_fail
//! target_affect_row(n)` inventory hints).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use surge_hotspot::{Config, Coordinator, Error as GroupError, Hints, Phase};

use super::core::ClientCore;
use super::error::TxnError;
use super::hot_executor::{HotExecutor, HotGroupObserver};
use super::hot_op::{HotOp, HotOutcome, HotReject};
use super::hot_update_counters::HotCounters;
use super::row_update::{HotRowOutcome, RowUpdate};
use super::txn_client::TxnClient;

/// The default automatic-grouping threshold: an update without `commit_on_success` joins a
/// group once this many updates (itself included) are in flight for its key on one client.
pub const DEFAULT_HOT_AUTO_THRESHOLD: usize = 8;

/// The default number of times a waiting hot-row member yields the CPU before it sleeps
/// (`surge_hotspot::Config::spin_yields`): none. The coordinator's own default (64) suits
/// members that do nothing but wait; a store's members are connection threads that share the
/// cores with those serving every other statement and with the group's own commit, and
/// there a yielding member mostly hands the CPU to another yielding member. Measured through
/// the MySQL port (3-node cluster, sysbench, the hinted `UPDATE` of one row, 2 cores): 0
/// instead of 64 gave 1.17-1.20x the throughput at 8 threads, 1.17-1.31x at 32 and
/// 1.22-1.80x at 256.
pub const DEFAULT_HOT_SPIN_YIELDS: u32 = 0;

/// A client's hot-row machinery: one group coordinator for every key, shared by its clones.
#[derive(Debug)]
pub(crate) struct HotUpdater {
    coordinator: Coordinator<HotExecutor>,
    /// Members that got [`TxnError::Undetermined`].
    undetermined: AtomicU64,
}

impl HotUpdater {
    pub(crate) fn new(core: Arc<ClientCore>) -> HotUpdater {
        let config = Config::default()
            .with_auto_group_threshold(DEFAULT_HOT_AUTO_THRESHOLD)
            .with_spin_yields(DEFAULT_HOT_SPIN_YIELDS);
        // Invariant: `Config::validate` only refuses `max_group_size` 0 and `max_wait` over
        // 1 s, and the defaults are 1024 and 100 µs, so this cannot fail.
        #[allow(clippy::expect_used)] // see the invariant above
        let coordinator = Coordinator::new(HotExecutor::new(core), config)
            .expect("the default hotspot configuration is valid");
        HotUpdater {
            coordinator,
            undetermined: AtomicU64::new(0),
        }
    }

    /// The member's error as the transaction layer reports it, counted when undetermined.
    fn member_error(&self, key: &[u8], e: GroupError<HotReject, TxnError>) -> TxnError {
        let error = member_error(key, e);
        if matches!(error, TxnError::Undetermined { .. }) {
            self.undetermined.fetch_add(1, Ordering::Relaxed);
        }
        error
    }
}

/// A member's error from the coordinator as the transaction layer reports it.
fn member_error(key: &[u8], e: GroupError<HotReject, TxnError>) -> TxnError {
    match e {
        GroupError::Rejected {
            reason, rollback, ..
        } => TxnError::HotUpdateRejected {
            key: key.to_vec(),
            reason,
            rollback,
        },
        GroupError::TargetAffectRow {
            expected,
            actual,
            rollback,
        } => TxnError::TargetAffectRow {
            key: key.to_vec(),
            expected,
            actual,
            rollback,
        },
        // The lock or the commit failed for the whole group: the transaction's own error
        // (a commit whose answer was lost stays `Undetermined`).
        GroupError::Load { source, .. } | GroupError::Durable { source, .. } => (*source).clone(),
        // A panic before the commit started wrote nothing; one during or after it may
        // have committed.
        GroupError::ExecutorPanicked {
            phase: phase @ (Phase::Begin | Phase::Apply | Phase::Accept),
            ..
        } => TxnError::Protocol {
            detail: format!("hot update of a group panicked in {phase}; nothing committed"),
        },
        other => TxnError::Undetermined {
            start_ts: 0,
            detail: format!("hot update group failed while committing: {other}"),
        },
    }
}

impl TxnClient {
    /// Applies `op` to the integer stored at `key` as its own transaction and returns this
    /// member's own new value.
    ///
    /// With `commit_on_success` in `hints` (or, without it, once
    /// [`DEFAULT_HOT_AUTO_THRESHOLD`] updates of the key are in flight on this client, see
    /// [`TxnClient::set_hot_auto_threshold`]), the update joins the key's group: the group's
    /// leader locks the key once through the ordinary pessimistic lock path (so groups
    /// serialize with ordinary transactions on the key), applies every member's operation in
    /// arrival order to the value it read, and commits one single-key transaction (one
    /// phase, one Raft proposal); each member then gets its own result. A leader with no
    /// other update of the key in flight commits at once. Otherwise the update runs alone the
    /// same way (lock, read, write, commit).
    ///
    /// Hints, as AliSQL's inventory hints (each call is a whole transaction, so
    /// `commit_on_success` commits just this update):
    /// - `commit_on_success`: commit as soon as the update succeeds; lets it join a group;
    /// - `rollback_on_fail`: the update's failure rolls back its transaction; nothing of a
    ///   failed update is ever written, and the flag comes back on the error (`rollback`);
    /// - `target_affect_row(n)`: fail unless the update affects exactly `n` rows (1 when the
    ///   key exists, 0 when it does not).
    ///
    /// The value is stored as decimal ASCII ([`HotOp::encode`]). A missing key affects no row
    /// and writes nothing.
    ///
    /// # Errors
    /// This member alone: [`TxnError::HotUpdateRejected`] (a bound, an overflow, a value that
    /// is not an integer), [`TxnError::TargetAffectRow`]. The whole group: the lock's or the
    /// commit's error ([`TxnError::LockWaitTimeout`], region errors after retries, ...), in
    /// which case nothing was written. [`TxnError::Undetermined`]: the group's commit was
    /// sent and its answer lost; the update may or may not have been applied.
    pub fn hot_update(&self, key: &[u8], op: HotOp, hints: Hints) -> Result<HotOutcome, TxnError> {
        let _span = tracing::debug_span!("hot_update", delta = op.delta).entered();
        let out = self.hot_update_row(key, Arc::new(op), hints)?;
        Ok(HotOutcome {
            // The member's own row is what `HotOp::apply` wrote: decimal ASCII.
            value: out.after.as_deref().and_then(HotOp::decode),
            affected_rows: out.affected_rows,
            commit_ts: out.commit_ts,
            group_writes: out.group_writes,
        })
    }

    /// Applies `update` to the row stored at `key` as its own transaction and returns this
    /// member's own row before and after it: the general form of [`TxnClient::hot_update`]
    /// (which is this with a [`HotOp`] on decimal ASCII), for rows in any encoding, such as
    /// a SQL `UPDATE /*+ commit_on_success */ t SET c = c + 1 WHERE id = 1` over an encoded
    /// row.
    ///
    /// Grouping, hints, counters ([`TxnClient::hot_counters`]) and the group observer work
    /// as for [`TxnClient::hot_update`]: members of one key's group (whatever their
    /// [`RowUpdate`]) are applied in arrival order, each to its predecessor's row, and
    /// committed in one single-key transaction. A missing key affects no row and writes
    /// nothing.
    ///
    /// With a binlog, each kept member is logged as its own binlog transaction (AliSQL's
    /// hot-row group commit): the row event [`RowUpdate::binlog`] gives (a SQL table's
    /// Update_rows with full images), or else an update of the kv row.
    ///
    /// # Errors
    /// As [`TxnClient::hot_update`]; [`TxnError::ReservedKey`] for a key reserved for
    /// stream records (under [`crate::STREAM_PREFIX`], alone or after a table's `t{id}`); [`TxnError::HotUpdateRejected`] carries the
    /// [`HotReject`] this member's [`RowUpdate::apply`] returned, or
    /// [`HotReject::Refused`] when its binlog row event does not fit its table.
    pub fn hot_update_row(
        &self,
        key: &[u8],
        update: Arc<dyn RowUpdate>,
        hints: Hints,
    ) -> Result<HotRowOutcome, TxnError> {
        super::stream_commit::check_user_key(key)?;
        match self.hot.coordinator.execute(&key.to_vec(), update, hints) {
            Ok(m) => Ok(HotRowOutcome {
                affected_rows: m.affected_rows,
                before: m.before,
                after: m.after,
                commit_ts: m.fate.commit_ts(),
                group_writes: m.fate.writes(),
            }),
            Err(e) => Err(self.hot.member_error(key, e)),
        }
    }

    /// A snapshot of the hot-update counters (shared by all clones).
    pub fn hot_counters(&self) -> HotCounters {
        let undetermined = self.hot.undetermined.load(Ordering::Relaxed);
        HotCounters::new(&self.hot.coordinator.stats(), undetermined)
    }

    /// Turns grouping of hot updates on or off (AliSQL's `hotspot` switch; default on). Off,
    /// every [`TxnClient::hot_update`] runs alone.
    pub fn set_hot_grouping(&self, on: bool) {
        self.hot.coordinator.set_hotspot(on);
    }

    /// Sets the automatic-grouping threshold: an update without `commit_on_success` joins a
    /// group once this many updates of its key are in flight on this client. 0: hints only.
    pub fn set_hot_auto_threshold(&self, n: usize) {
        self.hot.coordinator.set_auto_group_threshold(n);
    }

    /// Sets how many times a waiting member of a hot-row group yields the CPU before it
    /// sleeps (default [`DEFAULT_HOT_SPIN_YIELDS`]), for this client and all its clones
    /// (they share one coordinator). Worth raising only where members have the cores to
    /// themselves: a yield hands the CPU to whatever else is runnable.
    pub fn set_hot_spin_yields(&self, n: u32) {
        self.hot.coordinator.set_spin_yields(n);
    }

    /// The number of yields a waiting hot-row member makes before it sleeps (see
    /// [`TxnClient::set_hot_spin_yields`]).
    pub fn hot_spin_yields(&self) -> u32 {
        self.hot.coordinator.config().spin_yields
    }

    /// Hands every committed hot-update group's record (its key, timestamps, and one change
    /// per member in arrival order) to `observer`, or stops doing so with `None`. This is the
    /// seam a binlog writer uses to log one group holding one transaction per member.
    pub fn set_hot_group_observer(&self, observer: Option<Arc<HotGroupObserver>>) {
        self.hot.coordinator.executor().set_observer(observer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_errors_become_the_transaction_layer_errors() {
        let key = b"k";
        let undetermined = TxnError::Undetermined {
            start_ts: 5,
            detail: "reply lost".to_string(),
        };
        let cases: Vec<(GroupError<HotReject, TxnError>, TxnError)> = vec![
            (
                GroupError::Rejected {
                    reason: HotReject::BelowMin { value: -1, min: 0 },
                    position: 3,
                    group_size: 9,
                    rollback: true,
                },
                TxnError::HotUpdateRejected {
                    key: key.to_vec(),
                    reason: HotReject::BelowMin { value: -1, min: 0 },
                    rollback: true,
                },
            ),
            (
                GroupError::TargetAffectRow {
                    expected: 1,
                    actual: 0,
                    rollback: false,
                },
                TxnError::TargetAffectRow {
                    key: key.to_vec(),
                    expected: 1,
                    actual: 0,
                    rollback: false,
                },
            ),
            (
                GroupError::Load {
                    source: Arc::new(TxnError::TxnFinished),
                    group_size: 2,
                },
                TxnError::TxnFinished,
            ),
            (
                GroupError::Durable {
                    source: Arc::new(undetermined.clone()),
                    group_size: 2,
                },
                undetermined,
            ),
        ];
        for (from, want) in cases {
            assert_eq!(member_error(key, from), want);
        }
        let before_commit = GroupError::ExecutorPanicked {
            phase: Phase::Apply,
            group_size: 2,
        };
        assert!(matches!(
            member_error(key, before_commit),
            TxnError::Protocol { .. }
        ));
        let in_commit = GroupError::ExecutorPanicked {
            phase: Phase::Commit,
            group_size: 2,
        };
        assert!(matches!(
            member_error(key, in_commit),
            TxnError::Undetermined { .. }
        ));
    }
}
