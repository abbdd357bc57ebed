//! [`HotExecutor`]: how one hot-row group runs through the transaction stack. The group's
//! leader takes one pessimistic lock on the key (the ordinary lock path, so the group
//! serializes with ordinary transactions on the key), applies every member's
//! [`RowUpdate`] in arrival order to the row it read, and commits one single-key
//! pessimistic transaction: one region, so one phase, one Raft proposal.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::RwLock;
use surge_hotspot::{Applied, GroupExecutor};

use super::backoff::Backoff;
use super::binlog_journal::MemberRow;
use super::binlog_txn::with_hot_members;
use super::binlog_writer::BinlogSlot;
use super::core::ClientCore;
use super::error::TxnError;
use super::hot_op::{HotOp, HotReject};
use super::mode::TxnMode;
use super::row_update::{HotRowChange, RowUpdate};
use super::transaction::Transaction;
use crate::{KvRequest, KvResponse};

/// One member's change of an integer row (a [`HotOp`]): the value before and after its
/// delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotChange {
    /// The value the member saw (its predecessor's result, or the stored value).
    pub before: i64,
    /// The value it wrote.
    pub after: i64,
}

/// What one committed group wrote: the key, its transaction, and one change per member whose
/// change was kept, in arrival order (each `before` is the previous one's `after`).
///
/// This is what a binlog writes as one group holding one transaction per member (AliSQL's
/// hot-row group commit logs one `BEGIN` / `Update_rows` / `COMMIT` per member with chained
/// row images, in arrival order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotGroupRecord {
    /// The hot key.
    pub key: Vec<u8>,
    /// The start timestamp of the group's transaction.
    pub start_ts: u64,
    /// Its commit timestamp.
    pub commit_ts: u64,
    /// The kept members' changes as integers, in arrival order, when every row value of
    /// the group is decimal ASCII (a group of [`HotOp`]s); empty otherwise (see `rows`).
    pub changes: Vec<HotChange>,
    /// The kept members' changes as bytes, in arrival order (every group).
    pub rows: Vec<HotRowChange>,
}

/// Called with every committed group's record, after the commit and before any member is
/// woken.
pub type HotGroupObserver = dyn Fn(&HotGroupRecord) + Send + Sync;

/// One kept member's change: the row before and after it, and the encoded binlog events
/// of its [`RowUpdate::binlog`] row (`None`: logged as a kv row).
#[derive(Debug, Clone)]
pub(crate) struct MemberChange {
    before: Vec<u8>,
    after: Vec<u8>,
    events: Option<Vec<u8>>,
}

/// What every member of one group shares once the group committed.
#[derive(Debug, Default)]
pub(crate) struct GroupFate {
    /// The commit timestamp (0 until the group committed, and when it wrote nothing).
    commit_ts: std::sync::atomic::AtomicU64,
    /// How many members' changes the write held.
    writes: AtomicUsize,
}

impl GroupFate {
    /// The commit timestamp, `None` if the group wrote nothing.
    pub(crate) fn commit_ts(&self) -> Option<u64> {
        Some(self.commit_ts.load(Ordering::Acquire)).filter(|ts| *ts > 0)
    }

    /// How many members' changes the group's write held.
    pub(crate) fn writes(&self) -> usize {
        self.writes.load(Ordering::Acquire)
    }
}

/// A member's result before its group committed: its row before and after, and the
/// group's shared fate.
#[derive(Debug)]
pub(crate) struct MemberOutput {
    pub(crate) before: Option<Vec<u8>>,
    pub(crate) after: Option<Vec<u8>>,
    pub(crate) affected_rows: u64,
    pub(crate) fate: Arc<GroupFate>,
}

/// A group being built: the leader's transaction holding the key's lock, the row image
/// (`None`: the key has no value) and the kept changes.
#[derive(Debug)]
pub(crate) struct HotGroup {
    txn: Transaction,
    row: Option<Vec<u8>>,
    changes: Vec<MemberChange>,
    fate: Arc<GroupFate>,
}

/// Runs hot-row groups through a client's transactions.
pub(crate) struct HotExecutor {
    core: Arc<ClientCore>,
    observer: RwLock<Option<Arc<HotGroupObserver>>>,
}

impl std::fmt::Debug for HotExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotExecutor")
            .field("observer", &self.observer.read().is_some())
            .finish_non_exhaustive()
    }
}

impl HotExecutor {
    pub(crate) fn new(core: Arc<ClientCore>) -> HotExecutor {
        HotExecutor {
            core,
            observer: RwLock::new(None),
        }
    }

    /// Sets (or clears) the function every committed group's record is handed to.
    pub(crate) fn set_observer(&self, observer: Option<Arc<HotGroupObserver>>) {
        *self.observer.write() = observer;
    }
}

impl HotExecutor {
    /// With a binlog, the binlog transaction of each kept member, in arrival order (empty
    /// without one). Each member's xid is a timestamp reserved from the oracle in one
    /// request for `changes.len()` timestamps: the oracle hands every timestamp out once,
    /// so no xid equals another member's or any transaction's `start_ts` (the xid of an
    /// ordinary transaction's group), which recovery relies on to find what is logged.
    /// A group of one member takes the group's own `start_ts` instead, saving the
    /// oracle's round trip (a lone writer's every update): no other group has that xid,
    /// as no other transaction has that start_ts and reserved xids are never a start_ts.
    fn member_rows(
        &self,
        start_ts: u64,
        changes: &[MemberChange],
    ) -> Result<Vec<MemberRow>, TxnError> {
        if changes.is_empty() || !matches!(self.core.binlog, BinlogSlot::On(_)) {
            return Ok(Vec::new());
        }
        if let [c] = changes {
            return Ok(vec![MemberRow {
                xid: start_ts,
                before: c.before.clone(),
                after: c.after.clone(),
                events: c.events.clone(),
            }]);
        }
        let count = u32::try_from(changes.len()).map_err(|_| TxnError::Binlog {
            detail: format!("{} members in one hot-row group", changes.len()),
        })?;
        let mut bo = Backoff::new(&self.core.config);
        let req = KvRequest::GetTimestamp { count };
        let last = match self.core.meta_call(&req, &mut bo)? {
            KvResponse::Timestamp { ts } => ts,
            other => return Err(TxnError::unexpected(req.name(), &other)),
        };
        // The reply is the last of `count` consecutive timestamps reserved for this call.
        let first = last.saturating_sub(u64::from(count) - 1);
        Ok(changes
            .iter()
            .zip(first..)
            .map(|(c, xid)| MemberRow {
                xid,
                before: c.before.clone(),
                after: c.after.clone(),
                events: c.events.clone(),
            })
            .collect())
    }

    /// With a binlog, the encoded events of `op`'s own row event for this change, if it
    /// gives one. An event whose values do not fit its table refuses the member.
    fn member_events(
        &self,
        op: &dyn RowUpdate,
        before: &[u8],
        after: &[u8],
    ) -> Result<Option<Vec<u8>>, HotReject> {
        let BinlogSlot::On(binlog) = &self.core.binlog else {
            return Ok(None);
        };
        let Some(row) = op.binlog(before, after) else {
            return Ok(None);
        };
        let refused = |e: surge_binlog::Error| HotReject::Refused {
            code: 0,
            message: format!("binlog row event of {}: {e}", row.table),
        };
        let mut cache = binlog.log.new_cache();
        cache
            .table_rows(&row.table, std::slice::from_ref(&row.change))
            .map_err(refused)?;
        cache.encoded_events().map(Some).map_err(refused)
    }
}

/// The integer view of a group's changes: every one if all rows are decimal ASCII, else
/// none.
fn integer_changes(changes: &[MemberChange]) -> Vec<HotChange> {
    changes
        .iter()
        .map(|c| {
            Some(HotChange {
                before: HotOp::decode(&c.before)?,
                after: HotOp::decode(&c.after)?,
            })
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

impl GroupExecutor for HotExecutor {
    type Key = Vec<u8>;
    type Op = Arc<dyn RowUpdate>;
    type Output = MemberOutput;
    type Change = Option<MemberChange>;
    type Reject = HotReject;
    type Error = TxnError;
    type Group = HotGroup;

    /// Begins a pessimistic transaction and locks the key through the ordinary lock path,
    /// reading its latest committed value (a current read at the lock's `for_update_ts`).
    fn begin(&self, key: &Vec<u8>) -> Result<HotGroup, TxnError> {
        let start_ts = self.core.get_ts()?;
        let mut txn = Transaction::new(Arc::clone(&self.core), TxnMode::Pessimistic, start_ts);
        // On error `txn` is dropped, which releases whatever lock the request may have left.
        let row = txn.get_for_update(key)?;
        Ok(HotGroup {
            txn,
            row,
            changes: Vec::new(),
            fate: Arc::new(GroupFate::default()),
        })
    }

    fn apply(
        &self,
        group: &HotGroup,
        op: &Arc<dyn RowUpdate>,
    ) -> Result<Applied<Option<MemberChange>, MemberOutput>, HotReject> {
        let output = |before, after, affected_rows| MemberOutput {
            before,
            after,
            affected_rows,
            fate: Arc::clone(&group.fate),
        };
        let Some(before) = &group.row else {
            // `UPDATE ... WHERE id = ?` of a row that does not exist: no row affected.
            return Ok(Applied {
                change: None,
                output: output(None, None, 0),
                affected_rows: 0,
            });
        };
        let after = op.apply(before)?;
        let events = self.member_events(op.as_ref(), before, &after)?;
        Ok(Applied::one_row(
            Some(MemberChange {
                before: before.clone(),
                after: after.clone(),
                events,
            }),
            output(Some(before.clone()), Some(after), 1),
        ))
    }

    fn accept(&self, group: &mut HotGroup, change: Option<MemberChange>) {
        if let Some(change) = change {
            group.row = Some(change.after.clone());
            group.changes.push(change);
        }
    }

    /// Writes the last member's row and commits the single-key transaction (one phase: one
    /// Raft proposal), or releases the lock when no member changed the row.
    fn commit(&self, key: &Vec<u8>, group: HotGroup) -> Result<(), TxnError> {
        let HotGroup {
            mut txn,
            row,
            changes,
            fate,
        } = group;
        let (Some(value), false) = (row, changes.is_empty()) else {
            // Kept members affected no row: nothing to write; release the lock.
            txn.rollback();
            return Ok(());
        };
        txn.put(key, &value)?;
        let start_ts = txn.start_ts();
        let members = self.member_rows(start_ts, &changes)?;
        let commit_ts = with_hot_members(start_ts, members, || txn.commit())?;
        fate.writes.store(changes.len(), Ordering::Release);
        fate.commit_ts.store(commit_ts, Ordering::Release);
        let observer = self.observer.read().clone();
        if let Some(observe) = observer {
            observe(&HotGroupRecord {
                key: key.clone(),
                start_ts,
                commit_ts,
                changes: integer_changes(&changes),
                rows: changes
                    .into_iter()
                    .map(|c| HotRowChange {
                        before: c.before,
                        after: c.after,
                    })
                    .collect(),
            });
        }
        Ok(())
    }
}
