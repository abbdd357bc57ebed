//! Region changes: leader transfer, split and merge, and receiving migrated locks.

use std::collections::BTreeMap;

use crate::counters::bump;
use crate::entry::{InsertReport, LockEntry};
use crate::error::{LockError, Refused, Result};
use crate::key_range::KeyRange;
use crate::lock_value::LockValue;
use crate::status::LockStatus;
use crate::table::RegionLockTable;

impl<L: LockValue> RegionLockTable<L> {
    /// A voluntary leader transfer starts: the status becomes
    /// [`LockStatus::TransferringLeader`] (new locks now fall back to the replicated path) and
    /// the non-deleted locks are returned, in key order, for the caller to propose through
    /// Raft before the transfer. Deleted-marked locks are skipped: the write that deletes
    /// them is already on its way.
    ///
    /// If a transfer or merge is already in progress the locks were already handed out and an
    /// empty list is returned (a retry); the caller still proposes the transfer. The locks
    /// stay in the table, visible to readers, until the peer becomes follower.
    ///
    /// # Errors
    /// [`LockError::NotLeader`] or [`LockError::FlashbackInProgress`] in those statuses.
    pub fn start_transfer(&mut self) -> Result<Vec<(Vec<u8>, L)>> {
        match self.status {
            LockStatus::Normal => {}
            LockStatus::TransferringLeader | LockStatus::MergingRegion => return Ok(Vec::new()),
            LockStatus::NotLeader => return Err(LockError::NotLeader),
            LockStatus::Flashback => return Err(LockError::FlashbackInProgress),
        }
        self.status = LockStatus::TransferringLeader;
        let locks: Vec<(Vec<u8>, L)> = self
            .map
            .iter()
            .filter(|(_, e)| !e.deleted)
            .map(|(k, e)| (k.clone(), e.lock.clone()))
            .collect();
        bump(
            &self.budget.counters_ref().migrated_on_transfer,
            locks.len() as u64,
        );
        tracing::debug!(locks = locks.len(), "lock table: transferring leader");
        Ok(locks)
    }

    /// The transfer did not happen in time (the caller decides the timeout; TiKV uses 10 s):
    /// back to [`LockStatus::Normal`]. Returns whether the status changed.
    pub fn abort_transfer(&mut self) -> bool {
        let was = self.status == LockStatus::TransferringLeader;
        if was {
            self.status = LockStatus::Normal;
        }
        was
    }

    /// The region split: the table moves to region version `new_version`, keeps the locks in
    /// `keep` (its own, derived region) and moves every other lock into a new table per range
    /// of `new_regions`, returned in the same order. Moved locks include deleted-marked ones,
    /// with the mark cleared (a pending delete proposed in the old epoch will be rejected).
    ///
    /// New tables share this table's budget, term and status and get `new_version`. The
    /// charge moves with the locks, so the node's total does not change.
    ///
    /// # Errors
    /// [`LockError::EmptySplitRange`], [`LockError::OverlappingSplitRanges`], or
    /// [`LockError::KeyOutsideSplitRanges`] if some lock lies in none of the ranges. On error
    /// nothing changes.
    pub fn split(
        &mut self,
        new_version: u64,
        keep: &KeyRange,
        new_regions: &[KeyRange],
    ) -> Result<Vec<RegionLockTable<L>>> {
        // Sorted (start key, slot) pairs; slot `None` is the kept range.
        let mut order: Vec<(&KeyRange, Option<usize>)> = Vec::with_capacity(new_regions.len() + 1);
        order.push((keep, None));
        order.extend(new_regions.iter().enumerate().map(|(i, r)| (r, Some(i))));
        order.sort_by(|a, b| a.0.start().cmp(b.0.start()));
        self.check_split_ranges(&order)?;

        self.version = new_version;
        let mut tables: Vec<Option<RegionLockTable<L>>> =
            new_regions.iter().map(|_| None).collect();
        let mut kept = BTreeMap::new();
        let mut moved_total = 0usize;
        // From the highest range down, cut the tail off the map: after the gap checks the tail
        // at `start` holds exactly the locks of that range.
        for (range, slot) in order.iter().rev() {
            let part = self.map.split_off(range.start());
            match slot {
                None => kept = part,
                Some(i) => {
                    let table = self.new_split_table(part, new_version);
                    moved_total += table.map.len();
                    tables[*i] = Some(table);
                }
            }
        }
        debug_assert!(self.map.is_empty(), "gap check let a lock through");
        self.map = kept;
        bump(
            &self.budget.counters_ref().migrated_on_split,
            moved_total as u64,
        );
        tracing::debug!(
            new_version,
            regions = new_regions.len(),
            moved = moved_total,
            "lock table: split"
        );
        Ok(tables
            .into_iter()
            .map(|t| t.unwrap_or_else(|| self.new_split_table(BTreeMap::new(), new_version)))
            .collect())
    }

    /// Validates sorted split ranges: none empty, none overlapping, and no lock outside them.
    fn check_split_ranges(&self, order: &[(&KeyRange, Option<usize>)]) -> Result<()> {
        for (index, (range, _)) in order.iter().enumerate() {
            if range.is_empty() {
                return Err(LockError::EmptySplitRange { index });
            }
        }
        let outside = |gap: KeyRange| -> Result<()> {
            match self.map.range::<[u8], _>(gap.bounds()).next() {
                Some((key, _)) => Err(LockError::KeyOutsideSplitRanges { key: key.clone() }),
                None => Ok(()),
            }
        };
        if let Some((first, _)) = order.first()
            && let Some((key, _)) = self.map.first_key_value()
            && key.as_slice() < first.start()
        {
            return Err(LockError::KeyOutsideSplitRanges { key: key.clone() });
        }
        for (i, pair) in order.windows(2).enumerate() {
            let (a, b) = (pair[0].0, pair[1].0);
            match a.end() {
                Some(end) if end <= b.start() => {
                    if end < b.start() {
                        outside(KeyRange::new(end.to_vec(), b.start().to_vec()))?;
                    }
                }
                _ => {
                    return Err(LockError::OverlappingSplitRanges {
                        first: i,
                        second: i + 1,
                    });
                }
            }
        }
        if let Some((last, _)) = order.last()
            && let Some(end) = last.end()
        {
            outside(KeyRange::from_start(end.to_vec()))?;
        }
        Ok(())
    }

    /// Wraps locks cut from this table into a new table, moving their charge.
    fn new_split_table(&mut self, mut map: BTreeMap<Vec<u8>, LockEntry<L>>, version: u64) -> Self {
        let mut bytes = 0usize;
        for entry in map.values_mut() {
            entry.deleted = false;
            bytes += entry.charged;
        }
        self.memory_size -= bytes;
        RegionLockTable {
            map,
            status: self.status,
            term: self.term,
            version,
            memory_size: bytes,
            budget: self.budget.clone(),
        }
    }

    /// A merge of this (source) region starts: every lock, deleted-marked ones included, is
    /// returned in key order for the caller to propose into the source's log, and the status
    /// becomes [`LockStatus::MergingRegion`]. The locks stay visible until the table is
    /// dropped or the merge is aborted.
    ///
    /// # Errors
    /// [`LockError::MergeNotNormal`] if the status is not `Normal` (a transfer or an earlier
    /// merge is in progress; the status is left as it is), [`LockError::MergeTooLarge`] if
    /// `memory_size > max_bytes` (the status stays `Normal`, so writes go on).
    pub fn start_merge(&mut self, max_bytes: usize) -> Result<Vec<(Vec<u8>, L)>> {
        if self.status != LockStatus::Normal {
            return Err(LockError::MergeNotNormal {
                status: self.status,
            });
        }
        if self.memory_size > max_bytes {
            return Err(LockError::MergeTooLarge {
                memory_size: self.memory_size,
                max_bytes,
            });
        }
        self.status = LockStatus::MergingRegion;
        let locks: Vec<(Vec<u8>, L)> = self
            .map
            .iter()
            .map(|(k, e)| (k.clone(), e.lock.clone()))
            .collect();
        bump(
            &self.budget.counters_ref().migrated_on_merge,
            locks.len() as u64,
        );
        tracing::debug!(locks = locks.len(), "lock table: merging region");
        Ok(locks)
    }

    /// The merge was rolled back or its proposal failed: back to [`LockStatus::Normal`].
    /// Returns whether the status changed.
    pub fn abort_merge(&mut self) -> bool {
        let was = self.status == LockStatus::MergingRegion;
        if was {
            self.status = LockStatus::Normal;
        }
        was
    }

    /// Moves every lock of `source` (a merged source region, for example) into this table,
    /// clearing deleted marks; a key present in both ends with the source's lock. `source`
    /// is left empty with its status unchanged. The region limit is not applied (the merged
    /// region may exceed it until locks drain; new inserts are refused meanwhile).
    ///
    /// Returns how many locks were moved.
    ///
    /// # Errors
    /// [`LockError::NodeBudgetFull`] if the tables use different budgets and this one cannot
    /// take the locks; nothing changes then.
    pub fn absorb(&mut self, source: &mut RegionLockTable<L>) -> Result<usize> {
        let same_budget = self.budget.same_as(&source.budget);
        if !same_budget && let Err(over) = self.budget.try_reserve(source.memory_size) {
            return Err(LockError::NodeBudgetFull {
                used: over.used,
                needed: source.memory_size,
                limit: over.limit,
            });
        }
        let moved = std::mem::take(&mut source.map);
        let moved_bytes = std::mem::take(&mut source.memory_size);
        let count = moved.len();
        let mut replaced = 0usize;
        let mut replaced_bytes = 0usize;
        for (key, mut entry) in moved {
            entry.deleted = false;
            if let Some(old) = self.map.insert(key, entry) {
                replaced += 1;
                replaced_bytes += old.charged;
            }
        }
        self.memory_size = self.memory_size + moved_bytes - replaced_bytes;
        self.budget.release(replaced_bytes);
        let ours = self.budget.counters_ref();
        ours.current_locks
            .fetch_sub(replaced as u64, std::sync::atomic::Ordering::Relaxed);
        if !same_budget {
            source.budget.release(moved_bytes);
            source
                .budget
                .counters_ref()
                .current_locks
                .fetch_sub(count as u64, std::sync::atomic::Ordering::Relaxed);
            bump(&ours.current_locks, count as u64);
        }
        bump(&ours.received_migrated, count as u64);
        Ok(count)
    }

    /// Stores locks received through a replicated migration (proposed before a transfer or
    /// merge and now applied on this peer), whatever the status, term and version, within
    /// the region and node budgets, all or nothing.
    ///
    /// # Errors
    /// The batch is handed back with the reason (key too large, region or node budget full),
    /// for the caller to write to the persistent lock column instead.
    pub fn insert_migrated(
        &mut self,
        batch: Vec<(Vec<u8>, L)>,
    ) -> std::result::Result<InsertReport, Refused<L>> {
        if let Some(reason) = self.oversized_key(&batch) {
            return Err(self.refuse(reason, batch));
        }
        let report = self.insert_within_budget(batch)?;
        bump(
            &self.budget.counters_ref().received_migrated,
            report.locks as u64,
        );
        Ok(report)
    }
}
