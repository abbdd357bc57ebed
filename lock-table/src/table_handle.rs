//! A thread-safe, cheaply cloned handle to one region's lock table.

use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};

use crate::budget::MemoryBudget;
use crate::entry::{InsertReport, LockEntry, LockScan, LostLocks};
use crate::error::{Refused, Result};
use crate::key_range::KeyRange;
use crate::lock_value::LockValue;
use crate::status::LockStatus;
use crate::table::RegionLockTable;

/// An `Arc<RwLock<RegionLockTable>>` (TiKV keeps `RwLock<PeerPessimisticLocks>` in each peer's
/// `TxnExt`) with convenience methods that take the lock for one call and return owned
/// values. Use [`read`](Self::read), [`upgradable_read`](Self::upgradable_read) or
/// [`write`](Self::write) to do several steps under one guard, such as marking a lock deleted
/// under the write guard and then downgrading while the write is sent to Raft.
#[derive(Debug)]
pub struct SharedRegionLockTable<L> {
    inner: Arc<RwLock<RegionLockTable<L>>>,
}

impl<L> Clone for SharedRegionLockTable<L> {
    fn clone(&self) -> Self {
        SharedRegionLockTable {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<L: LockValue> From<RegionLockTable<L>> for SharedRegionLockTable<L> {
    fn from(table: RegionLockTable<L>) -> Self {
        SharedRegionLockTable {
            inner: Arc::new(RwLock::new(table)),
        }
    }
}

impl<L: LockValue> SharedRegionLockTable<L> {
    /// A new, empty table charging `budget` (status `NotLeader`).
    pub fn new(budget: &MemoryBudget) -> Self {
        RegionLockTable::new(budget).into()
    }

    /// A read guard (several may be held at once).
    pub fn read(&self) -> RwLockReadGuard<'_, RegionLockTable<L>> {
        self.inner.read()
    }

    /// An upgradable read guard (one at a time, alongside plain readers).
    pub fn upgradable_read(&self) -> RwLockUpgradableReadGuard<'_, RegionLockTable<L>> {
        self.inner.upgradable_read()
    }

    /// The exclusive write guard.
    pub fn write(&self) -> RwLockWriteGuard<'_, RegionLockTable<L>> {
        self.inner.write()
    }

    /// See [`RegionLockTable::try_insert`].
    ///
    /// # Errors
    /// As `RegionLockTable::try_insert`: the batch comes back with the reason.
    pub fn try_insert(
        &self,
        batch: Vec<(Vec<u8>, L)>,
        term: u64,
        version: u64,
    ) -> std::result::Result<InsertReport, Refused<L>> {
        self.inner.write().try_insert(batch, term, version)
    }

    /// A copy of the entry under `key`.
    pub fn get(&self, key: &[u8]) -> Option<LockEntry<L>> {
        self.inner.read().get(key).cloned()
    }

    /// See [`RegionLockTable::get_checked`]; returns a copy.
    ///
    /// # Errors
    /// As `RegionLockTable::check_term_version`.
    pub fn get_checked(&self, key: &[u8], term: u64, version: u64) -> Result<Option<LockEntry<L>>> {
        Ok(self.inner.read().get_checked(key, term, version)?.cloned())
    }

    /// See [`RegionLockTable::scan`]; returns copies.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> LockScan<(Vec<u8>, LockEntry<L>)> {
        let guard = self.inner.read();
        let scan = guard.scan(range, limit);
        LockScan {
            entries: scan
                .entries
                .into_iter()
                .map(|(k, e)| (k.to_vec(), e.clone()))
                .collect(),
            has_more: scan.has_more,
        }
    }

    /// See [`RegionLockTable::mark_deleted`].
    pub fn mark_deleted(&self, key: &[u8]) -> bool {
        self.inner.write().mark_deleted(key)
    }

    /// See [`RegionLockTable::mark_deleted_batch`].
    pub fn mark_deleted_batch<K: AsRef<[u8]>>(&self, keys: &[K]) -> usize {
        self.inner.write().mark_deleted_batch(keys)
    }

    /// See [`RegionLockTable::remove_applied`].
    pub fn remove_applied(&self, key: &[u8], term: u64, version: u64) -> bool {
        self.inner.write().remove_applied(key, term, version)
    }

    /// See [`RegionLockTable::become_leader`].
    pub fn become_leader(&self, term: u64, version: u64) {
        self.inner.write().become_leader(term, version);
    }

    /// See [`RegionLockTable::become_follower`].
    pub fn become_follower(&self) -> LostLocks {
        self.inner.write().become_follower()
    }

    /// See [`RegionLockTable::start_transfer`].
    ///
    /// # Errors
    /// As `RegionLockTable::start_transfer`.
    pub fn start_transfer(&self) -> Result<Vec<(Vec<u8>, L)>> {
        self.inner.write().start_transfer()
    }

    /// See [`RegionLockTable::abort_transfer`].
    pub fn abort_transfer(&self) -> bool {
        self.inner.write().abort_transfer()
    }

    /// See [`RegionLockTable::start_merge`].
    ///
    /// # Errors
    /// As `RegionLockTable::start_merge`.
    pub fn start_merge(&self, max_bytes: usize) -> Result<Vec<(Vec<u8>, L)>> {
        self.inner.write().start_merge(max_bytes)
    }

    /// See [`RegionLockTable::abort_merge`].
    pub fn abort_merge(&self) -> bool {
        self.inner.write().abort_merge()
    }

    /// See [`RegionLockTable::split`]; the new tables come back as handles.
    ///
    /// # Errors
    /// As `RegionLockTable::split`.
    pub fn split(
        &self,
        new_version: u64,
        keep: &KeyRange,
        new_regions: &[KeyRange],
    ) -> Result<Vec<SharedRegionLockTable<L>>> {
        let tables = self.inner.write().split(new_version, keep, new_regions)?;
        Ok(tables.into_iter().map(Into::into).collect())
    }

    /// See [`RegionLockTable::absorb`]. Write-locks both tables, always in the same (address)
    /// order whichever is the target, so that concurrent absorbs of A into B and of B into A
    /// cannot deadlock; absorbing a table into itself moves nothing.
    ///
    /// # Errors
    /// As `RegionLockTable::absorb`.
    pub fn absorb(&self, source: &SharedRegionLockTable<L>) -> Result<usize> {
        if self.ptr_eq(source) {
            return Ok(0);
        }
        if Arc::as_ptr(&self.inner) < Arc::as_ptr(&source.inner) {
            let mut target = self.inner.write();
            let mut source = source.inner.write();
            target.absorb(&mut source)
        } else {
            let mut source = source.inner.write();
            let mut target = self.inner.write();
            target.absorb(&mut source)
        }
    }

    /// The current status.
    pub fn status(&self) -> LockStatus {
        self.inner.read().status()
    }

    /// The table's term.
    pub fn term(&self) -> u64 {
        self.inner.read().term()
    }

    /// The table's region version.
    pub fn version(&self) -> u64 {
        self.inner.read().version()
    }

    /// Exact bytes charged for the stored locks.
    pub fn memory_size(&self) -> usize {
        self.inner.read().memory_size()
    }

    /// Number of stored locks.
    pub fn len(&self) -> usize {
        self.inner.read().len()
    }

    /// Whether no lock is stored.
    pub fn is_empty(&self) -> bool {
        self.inner.read().is_empty()
    }

    /// Whether two handles point to the same table.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
