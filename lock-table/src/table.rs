//! `RegionLockTable`: the in-memory pessimistic locks of one region leader.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::budget::MemoryBudget;
use crate::counters::bump;
use crate::entry::{InsertReport, LockEntry, LockScan};
use crate::error::{RefuseReason, Refused, Result};
use crate::key_range::KeyRange;
use crate::lock_value::LockValue;
use crate::status::LockStatus;

/// The pessimistic locks held in memory by the leader of one region (TiKV's
/// `PeerPessimisticLocks`).
///
/// # Invariants
/// - `memory_size` is exactly the sum of every entry's `charged` bytes, and that sum is
///   charged to the node's [`MemoryBudget`]; every removal path (`remove_applied`, clearing
///   on leader loss or flashback, moving out on split or absorb, and `Drop`) releases it.
/// - Only [`LockStatus::Normal`] accepts `try_insert`; the status changes only through the
///   leadership and region-change methods.
/// - `try_insert` is all-or-nothing: on refusal the table, the budget and the batch are
///   exactly as before.
pub struct RegionLockTable<L> {
    pub(crate) map: BTreeMap<Vec<u8>, LockEntry<L>>,
    pub(crate) status: LockStatus,
    pub(crate) term: u64,
    pub(crate) version: u64,
    pub(crate) memory_size: usize,
    pub(crate) budget: MemoryBudget,
}

/// The charge of every lock of a planned batch, in batch order.
enum Charges {
    One(usize),
    Many(Vec<usize>),
}

impl<L> fmt::Debug for RegionLockTable<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionLockTable")
            .field("len", &self.map.len())
            .field("memory_size", &self.memory_size)
            .field("status", &self.status)
            .field("term", &self.term)
            .field("version", &self.version)
            .finish()
    }
}

impl<L> Drop for RegionLockTable<L> {
    fn drop(&mut self) {
        self.budget.release(self.memory_size);
        let locks = self.map.len() as u64;
        self.budget
            .counters_ref()
            .current_locks
            .fetch_sub(locks, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<L: LockValue> RegionLockTable<L> {
    /// Bytes charged per entry on top of the key length and the lock's `heap_size`: the
    /// owned key's header plus the stored entry (lock, mark and charge).
    pub const ENTRY_OVERHEAD: usize =
        std::mem::size_of::<Vec<u8>>() + std::mem::size_of::<LockEntry<L>>();

    /// An empty table charging `budget`, in status [`LockStatus::NotLeader`] until
    /// [`become_leader`](Self::become_leader) is called.
    pub fn new(budget: &MemoryBudget) -> Self {
        RegionLockTable {
            map: BTreeMap::new(),
            status: LockStatus::NotLeader,
            term: 0,
            version: 0,
            memory_size: 0,
            budget: budget.clone(),
        }
    }

    /// The bytes an entry with this key and lock is charged.
    /// Saturates instead of overflowing, so an absurd `heap_size` is refused by the budgets
    /// rather than panicking.
    pub fn entry_charge(key: &[u8], lock: &L) -> usize {
        key.len()
            .saturating_add(lock.heap_size())
            .saturating_add(Self::ENTRY_OVERHEAD)
    }

    /// The current status.
    pub fn status(&self) -> LockStatus {
        self.status
    }

    /// Whether `try_insert` can currently succeed status-wise.
    pub fn is_writable(&self) -> bool {
        self.status.is_writable()
    }

    /// The Raft term the table is valid in.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The region version (epoch) the table is valid in.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Exact bytes charged for the stored locks.
    pub fn memory_size(&self) -> usize {
        self.memory_size
    }

    /// Number of stored locks (deleted-marked ones included).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no lock is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The budget this table charges.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Inserts the whole batch for `term` and region `version`, or nothing.
    ///
    /// Overwriting a key replaces its lock, clears its deleted mark and charges only the
    /// difference in size (TiKV charges nothing, which drifts when sizes differ). A key that
    /// appears twice in the batch ends with the later lock.
    ///
    /// # Falling back
    /// When the caller writes a refused batch through Raft instead, it must also
    /// [`mark_deleted_batch`](Self::mark_deleted_batch) those keys (under the same write guard
    /// for a [`SharedRegionLockTable`](crate::SharedRegionLockTable)): a key may already hold an older memory lock of the same transaction (a
    /// lock refreshed with a newer `for_update_ts`), and that stale memory lock would otherwise
    /// shadow the newer replicated one (tikv#19864, `LockForUpdateTsMismatch` at prewrite).
    ///
    /// # Errors
    /// The batch is handed back in [`Refused`] with the reason: a key over the maximum size,
    /// a non-writable status, a term or version mismatch, or a full region or node budget.
    pub fn try_insert(
        &mut self,
        batch: Vec<(Vec<u8>, L)>,
        term: u64,
        version: u64,
    ) -> std::result::Result<InsertReport, Refused<L>> {
        let reason = if let Some(reason) = self.oversized_key(&batch) {
            Some(reason)
        } else if !self.status.is_writable() {
            Some(RefuseReason::NotWritable {
                status: self.status,
            })
        } else if self.term != term {
            Some(RefuseReason::TermMismatch {
                table: self.term,
                request: term,
            })
        } else if self.version != version {
            Some(RefuseReason::VersionMismatch {
                table: self.version,
                request: version,
            })
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(self.refuse(reason, batch));
        }
        let report = self.insert_within_budget(batch)?;
        bump(&self.budget.counters_ref().inserted, report.locks as u64);
        Ok(report)
    }

    /// [`try_insert`](Self::try_insert) of a single lock.
    ///
    /// # Errors
    /// As `try_insert`; the lock comes back as a batch of one.
    pub fn try_insert_one(
        &mut self,
        key: Vec<u8>,
        lock: L,
        term: u64,
        version: u64,
    ) -> std::result::Result<InsertReport, Refused<L>> {
        self.try_insert(vec![(key, lock)], term, version)
    }

    pub(crate) fn refuse(&self, reason: RefuseReason, batch: Vec<(Vec<u8>, L)>) -> Refused<L> {
        self.budget.counters_ref().record_refusal(&reason);
        tracing::trace!(%reason, locks = batch.len(), "lock table: insert refused");
        Refused { reason, batch }
    }

    pub(crate) fn oversized_key(&self, batch: &[(Vec<u8>, L)]) -> Option<RefuseReason> {
        let max = self.budget.max_key_size();
        batch
            .iter()
            .position(|(key, _)| key.len() > max)
            .map(|index| RefuseReason::KeyTooLarge {
                index,
                len: batch[index].0.len(),
                max,
            })
    }

    /// Net size change, overwrite count and the charge of every lock of the batch, simulated
    /// in batch order so that a key repeated within the batch is charged once.
    ///
    /// `heap_size` is called exactly once per lock, here: the charges returned are the ones
    /// stored, so the bytes reserved always equal the bytes recorded even if a lock's
    /// reported size changes between calls.
    fn plan(&self, batch: &[(Vec<u8>, L)]) -> (i128, usize, Charges) {
        let existing = |key: &[u8]| self.map.get(key).map(|e| e.charged);
        let diff = |new: usize, old: Option<usize>| new as i128 - old.unwrap_or(0) as i128;
        if let [(key, lock)] = batch {
            let old = existing(key);
            let new = Self::entry_charge(key, lock);
            // The common single-lock case allocates nothing.
            return (
                diff(new, old),
                usize::from(old.is_some()),
                Charges::One(new),
            );
        }
        let mut charges = Vec::with_capacity(batch.len());
        let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(batch.len());
        let (mut delta, mut overwritten) = (0i128, 0usize);
        for (key, lock) in batch {
            let new = Self::entry_charge(key, lock);
            charges.push(new);
            let old = match seen.insert(key.as_slice(), new) {
                Some(prev) => Some(prev),
                None => existing(key),
            };
            overwritten += usize::from(old.is_some());
            delta += diff(new, old);
        }
        (delta, overwritten, Charges::Many(charges))
    }

    /// Checks the region and node budgets and stores the batch. Status, term and version are
    /// the caller's business (checked by `try_insert`, skipped for migrated locks).
    pub(crate) fn insert_within_budget(
        &mut self,
        batch: Vec<(Vec<u8>, L)>,
    ) -> std::result::Result<InsertReport, Refused<L>> {
        let (delta, overwritten, charges) = self.plan(&batch);
        // |delta| fits in usize: it is a difference of sums of at most `len` usize charges that
        // the budgets below bound; saturate anyway rather than trust it.
        let magnitude = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        if delta > 0 {
            let needed = magnitude;
            let limit = self.budget.region_limit();
            if self.memory_size.saturating_add(needed) > limit {
                let reason = RefuseReason::RegionBudgetFull {
                    used: self.memory_size,
                    needed,
                    limit,
                };
                return Err(self.refuse(reason, batch));
            }
            if let Err(over) = self.budget.try_reserve(needed) {
                let reason = RefuseReason::NodeBudgetFull {
                    used: over.used,
                    needed,
                    limit: over.limit,
                };
                return Err(self.refuse(reason, batch));
            }
        }
        let locks = batch.len();
        let charges = match &charges {
            Charges::One(c) => std::slice::from_ref(c),
            Charges::Many(v) => v.as_slice(),
        };
        for ((key, lock), &charged) in batch.into_iter().zip(charges) {
            let entry = LockEntry {
                lock,
                deleted: false,
                charged,
            };
            self.map.insert(key, entry);
        }
        if delta > 0 {
            self.memory_size += magnitude;
        } else {
            self.memory_size -= magnitude;
            self.budget.release(magnitude);
        }
        bump(
            &self.budget.counters_ref().current_locks,
            (locks - overwritten) as u64,
        );
        Ok(InsertReport {
            locks,
            overwritten,
            bytes_delta: isize::try_from(delta).unwrap_or(if delta > 0 {
                isize::MAX
            } else {
                isize::MIN
            }),
        })
    }

    /// The entry stored under `key`, deleted-marked or not.
    pub fn get(&self, key: &[u8]) -> Option<&LockEntry<L>> {
        self.map.get(key)
    }

    /// [`get`](Self::get) after [`check_term_version`](Self::check_term_version), the way
    /// TiKV's `load_lock` reads the memory table.
    ///
    /// # Errors
    /// As `check_term_version`.
    pub fn get_checked(
        &self,
        key: &[u8],
        term: u64,
        version: u64,
    ) -> Result<Option<&LockEntry<L>>> {
        self.check_term_version(term, version)?;
        Ok(self.map.get(key))
    }

    /// Entries in `range` in ascending key order, at most `limit` of them (`0` means no
    /// limit). Deleted-marked entries are included: they are still locks until applied.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> LockScan<(&[u8], &LockEntry<L>)> {
        let mut entries = Vec::new();
        if range.is_empty() {
            return LockScan {
                entries,
                has_more: false,
            };
        }
        let mut iter = self.map.range::<[u8], _>(range.bounds());
        for (key, entry) in iter.by_ref() {
            entries.push((key.as_slice(), entry));
            if limit > 0 && entries.len() >= limit {
                break;
            }
        }
        let has_more = limit > 0 && entries.len() >= limit && iter.next().is_some();
        LockScan { entries, has_more }
    }

    /// Every entry in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &LockEntry<L>)> {
        self.map.iter().map(|(k, e)| (k.as_slice(), e))
    }

    /// Marks the lock under `key` as about to be deleted by a replicated write (it stays
    /// visible until [`remove_applied`](Self::remove_applied)). Returns whether a lock exists.
    pub fn mark_deleted(&mut self, key: &[u8]) -> bool {
        match self.map.get_mut(key) {
            Some(entry) => {
                entry.deleted = true;
                true
            }
            None => false,
        }
    }

    /// [`mark_deleted`](Self::mark_deleted) for several keys; returns how many locks were
    /// marked. Use it for the keys of a batch that falls back to the replicated path.
    pub fn mark_deleted_batch<K: AsRef<[u8]>>(&mut self, keys: &[K]) -> usize {
        keys.iter()
            .filter(|key| self.mark_deleted(key.as_ref()))
            .count()
    }

    /// Removes the lock under `key` once the write that deletes it was applied, but only if
    /// the table is still in the same `term` and region `version` (otherwise the table was
    /// cleared or moved in between and the key may now hold another valid lock). Returns
    /// whether a lock was removed.
    ///
    /// It removes whatever lock the key holds now, like TiKV's apply callback: the caller's
    /// latches must keep the key from being locked again between the mark and the apply
    /// (TiKV holds the key's latch until the write is applied), or a newer lock stored in
    /// between would be removed with it.
    pub fn remove_applied(&mut self, key: &[u8], term: u64, version: u64) -> bool {
        if self.term != term || self.version != version {
            return false;
        }
        self.remove_entry(key).is_some()
    }

    /// [`remove_applied`](Self::remove_applied) for several keys; returns how many were removed.
    pub fn remove_applied_batch<K: AsRef<[u8]>>(
        &mut self,
        keys: &[K],
        term: u64,
        version: u64,
    ) -> usize {
        if self.term != term || self.version != version {
            return 0;
        }
        keys.iter()
            .filter(|key| self.remove_entry(key.as_ref()).is_some())
            .count()
    }

    pub(crate) fn remove_entry(&mut self, key: &[u8]) -> Option<LockEntry<L>> {
        let entry = self.map.remove(key)?;
        self.memory_size -= entry.charged;
        self.budget.release(entry.charged);
        self.budget
            .counters_ref()
            .current_locks
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        Some(entry)
    }
}
