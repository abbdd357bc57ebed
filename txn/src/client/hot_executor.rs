//! [`HotExecutor`]: how one hot-row group runs through the transaction stack. The group's
//! leader takes one pessimistic lock on the key (the ordinary lock path, so the group
//! serializes with ordinary transactions on the key), applies every member's [`HotOp`] in
//! arrival order to the value it read, and commits one single-key pessimistic transaction:
//! one region, so one phase, one Raft proposal.

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
use super::transaction::Transaction;
use crate::{KvRequest, KvResponse};

/// How many bytes of a non-integer value a [`HotReject::NotAnInteger`] quotes.
const REJECT_PREFIX: usize = 32;

/// One member's change of the row: the value before and after its delta.
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
    /// The kept members' changes, in arrival order.
    pub changes: Vec<HotChange>,
}

/// Called with every committed group's record, after the commit and before any member is
/// woken.
pub type HotGroupObserver = dyn Fn(&HotGroupRecord) + Send + Sync;

/// The row as the group's leader read it, with every kept member folded in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Missing,
    Int(i64),
    NotInt(Vec<u8>),
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

/// A member's result before its group committed: its value and the group's shared fate.
#[derive(Debug)]
pub(crate) struct MemberOutput {
    pub(crate) value: Option<i64>,
    pub(crate) affected_rows: u64,
    pub(crate) fate: Arc<GroupFate>,
}

/// A group being built: the leader's transaction holding the key's lock, the row image and
/// the kept changes.
#[derive(Debug)]
pub(crate) struct HotGroup {
    txn: Transaction,
    row: Row,
    changes: Vec<HotChange>,
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
    fn member_rows(&self, changes: &[HotChange]) -> Result<Vec<MemberRow>, TxnError> {
        if changes.is_empty() || !matches!(self.core.binlog, BinlogSlot::On(_)) {
            return Ok(Vec::new());
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
                before: HotOp::encode(c.before),
                after: HotOp::encode(c.after),
            })
            .collect())
    }
}

impl GroupExecutor for HotExecutor {
    type Key = Vec<u8>;
    type Op = HotOp;
    type Output = MemberOutput;
    type Change = Option<HotChange>;
    type Reject = HotReject;
    type Error = TxnError;
    type Group = HotGroup;

    /// Begins a pessimistic transaction and locks the key through the ordinary lock path,
    /// reading its latest committed value (a current read at the lock's `for_update_ts`).
    fn begin(&self, key: &Vec<u8>) -> Result<HotGroup, TxnError> {
        let start_ts = self.core.get_ts()?;
        let mut txn = Transaction::new(Arc::clone(&self.core), TxnMode::Pessimistic, start_ts);
        // On error `txn` is dropped, which releases whatever lock the request may have left.
        let row = match txn.get_for_update(key)? {
            None => Row::Missing,
            Some(bytes) => match HotOp::decode(&bytes) {
                Some(v) => Row::Int(v),
                None => Row::NotInt(bytes.into_iter().take(REJECT_PREFIX).collect()),
            },
        };
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
        op: &HotOp,
    ) -> Result<Applied<Option<HotChange>, MemberOutput>, HotReject> {
        let output = |value, affected_rows| MemberOutput {
            value,
            affected_rows,
            fate: Arc::clone(&group.fate),
        };
        match &group.row {
            // `UPDATE ... WHERE id = ?` of a row that does not exist: no row affected.
            Row::Missing => Ok(Applied {
                change: None,
                output: output(None, 0),
                affected_rows: 0,
            }),
            Row::NotInt(prefix) => Err(HotReject::NotAnInteger {
                prefix: prefix.clone(),
            }),
            Row::Int(before) => {
                let after = op.apply_to(*before)?;
                Ok(Applied::one_row(
                    Some(HotChange {
                        before: *before,
                        after,
                    }),
                    output(Some(after), 1),
                ))
            }
        }
    }

    fn accept(&self, group: &mut HotGroup, change: Option<HotChange>) {
        if let Some(change) = change {
            group.row = Row::Int(change.after);
            group.changes.push(change);
        }
    }

    /// Writes the last member's value and commits the single-key transaction (one phase:
    /// one Raft proposal), or releases the lock when no member changed the row.
    fn commit(&self, key: &Vec<u8>, group: HotGroup) -> Result<(), TxnError> {
        let HotGroup {
            mut txn,
            row,
            changes,
            fate,
        } = group;
        let (Row::Int(value), false) = (row, changes.is_empty()) else {
            // Kept members affected no row: nothing to write; release the lock.
            txn.rollback();
            return Ok(());
        };
        txn.put(key, &HotOp::encode(value))?;
        let start_ts = txn.start_ts();
        let members = self.member_rows(&changes)?;
        let commit_ts = with_hot_members(start_ts, members, || txn.commit())?;
        fate.writes.store(changes.len(), Ordering::Release);
        fate.commit_ts.store(commit_ts, Ordering::Release);
        let observer = self.observer.read().clone();
        if let Some(observe) = observer {
            observe(&HotGroupRecord {
                key: key.clone(),
                start_ts,
                commit_ts,
                changes,
            });
        }
        Ok(())
    }
}
