//! Leadership changes and the term/version check of the read path.

use std::collections::BTreeMap;

use crate::counters::bump;
use crate::entry::LostLocks;
use crate::error::{LockError, Result};
use crate::lock_value::LockValue;
use crate::status::LockStatus;
use crate::table::RegionLockTable;

impl<L: LockValue> RegionLockTable<L> {
    /// Makes the table writable for `term` and region `version` (the peer became leader).
    /// Locks already present (installed by a split) are kept.
    pub fn become_leader(&mut self, term: u64, version: u64) {
        self.status = LockStatus::Normal;
        self.term = term;
        self.version = version;
        tracing::debug!(
            term,
            version,
            locks = self.map.len(),
            "lock table: became leader"
        );
    }

    /// The peer lost leadership: every lock is dropped (they are lost) and the status becomes
    /// [`LockStatus::NotLeader`]. Returns what was lost.
    pub fn become_follower(&mut self) -> LostLocks {
        self.status = LockStatus::NotLeader;
        let lost = self.clear();
        let counters = self.budget.counters_ref();
        bump(&counters.dropped_on_leader_loss, lost.locks as u64);
        bump(&counters.dropped_bytes_on_leader_loss, lost.bytes as u64);
        if lost.locks > 0 {
            tracing::info!(
                locks = lost.locks,
                bytes = lost.bytes,
                term = self.term,
                "lock table: leadership lost, in-memory locks dropped"
            );
        }
        lost
    }

    /// A flashback starts: locks are dropped and the status becomes
    /// [`LockStatus::Flashback`] until [`end_flashback`](Self::end_flashback).
    pub fn start_flashback(&mut self) -> LostLocks {
        self.status = LockStatus::Flashback;
        let lost = self.clear();
        let counters = self.budget.counters_ref();
        bump(&counters.dropped_on_leader_loss, lost.locks as u64);
        bump(&counters.dropped_bytes_on_leader_loss, lost.bytes as u64);
        lost
    }

    /// The flashback finished: back to [`LockStatus::Normal`] if the status was
    /// `Flashback`. Returns whether it changed.
    pub fn end_flashback(&mut self) -> bool {
        let was = self.status == LockStatus::Flashback;
        if was {
            self.status = LockStatus::Normal;
        }
        was
    }

    /// Drops every lock and releases its charge.
    pub(crate) fn clear(&mut self) -> LostLocks {
        let lost = LostLocks {
            locks: self.map.len(),
            bytes: self.memory_size,
        };
        self.map = BTreeMap::new();
        self.memory_size = 0;
        self.budget.release(lost.bytes);
        self.budget
            .counters_ref()
            .current_locks
            .fetch_sub(lost.locks as u64, std::sync::atomic::Ordering::Relaxed);
        lost
    }

    /// Checks that a request made for `term` and region `version` may trust this table
    /// (TiKV's `check_term_version_status`), so that a lock missing because the table was
    /// cleared or moved gives a region error instead of "lock not found".
    ///
    /// # Errors
    /// [`LockError::NotLeader`], [`LockError::StaleCommand`] (term differs),
    /// [`LockError::EpochNotMatch`] (version differs), [`LockError::FlashbackInProgress`].
    pub fn check_term_version(&self, term: u64, version: u64) -> Result<()> {
        if self.status == LockStatus::NotLeader {
            return Err(LockError::NotLeader);
        }
        if self.term != term {
            return Err(LockError::StaleCommand {
                table: self.term,
                request: term,
            });
        }
        if self.version != version {
            return Err(LockError::EpochNotMatch {
                table: self.version,
                request: version,
            });
        }
        if self.status == LockStatus::Flashback {
            return Err(LockError::FlashbackInProgress);
        }
        Ok(())
    }
}
