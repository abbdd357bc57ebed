//! [`ConcurrencyManager`]: the largest timestamp a region has read at, and the keys of
//! one-phase commits in flight, so a one-phase commit never lands below a read that missed it.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct State {
    max_ts: u64,
    /// Whether `max_ts` covers every read a former leader may have served (set from a fresh
    /// timestamp after this node became leader).
    synced: bool,
    /// Bumped by every event that unsyncs: a sync from a timestamp taken before the latest
    /// such event must not mark `max_ts` synced.
    generation: u64,
    /// Keys of one-phase commits between choosing their commit_ts and applying (or being
    /// refused). A guard always holds its commit's chosen commit_ts: `begin_one_pc` chooses
    /// it and registers the keys in one critical section, so no read sees a guard without it
    /// (a read below it passes, one at or above it is refused).
    guards: BTreeMap<Vec<u8>, Guard>,
}

/// One key's guard: the commit it stands for (shared by the commit's keys) and its
/// commit_ts.
#[derive(Debug, Clone)]
struct Guard {
    txn: Arc<OnePcTxn>,
    commit_ts: u64,
}

/// The transaction of a one-phase commit in flight, as a read that meets one of its guards is
/// told: the lock it reports names the commit's real primary and TTL, so that the reader
/// resolves it through the primary (as any lock of the transaction) and, while the TTL
/// lasts, waits instead of rolling anything back (TiKV's in-memory locks of async commit
/// carry the whole lock the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnePcTxn {
    pub(crate) start_ts: u64,
    pub(crate) primary: Vec<u8>,
    /// The transaction's lock TTL (ms from the physical part of `start_ts`).
    pub(crate) ttl: u64,
}

impl State {
    /// `max_ts` must be synced again; a sync fetched before this does not count.
    fn unsynced(&mut self) {
        self.synced = false;
        self.generation += 1;
    }
}

/// TiKV's concurrency manager, reduced to what one-phase commit needs.
///
/// # Invariants
/// A one-phase commit's `commit_ts` is above every read timestamp the region served before
/// the commit registered its keys; a read that comes after the registration and before the
/// apply, at a timestamp at or above the commit's `commit_ts`, is refused as locked (and
/// retried) instead of missing the write. Both sides run under one mutex.
#[derive(Debug, Default)]
pub(crate) struct ConcurrencyManager {
    state: Mutex<State>,
}

/// A read found a one-phase commit in flight on `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InFlightCommit {
    pub(crate) key: Vec<u8>,
    /// The commit's transaction.
    pub(crate) txn: OnePcTxn,
    /// The commit_ts it chose.
    pub(crate) commit_ts: u64,
}

impl ConcurrencyManager {
    /// A read at `ts` of `[start, end)` (a point read: `end = None` and `point = true`).
    pub(crate) fn read(
        &self,
        ts: u64,
        start: &[u8],
        end: Option<&[u8]>,
        point: bool,
    ) -> Result<(), InFlightCommit> {
        let mut s = self.state.lock();
        s.max_ts = s.max_ts.max(ts);
        let blocks = |g: &Guard| g.txn.start_ts <= ts && g.commit_ts <= ts;
        let in_flight = |key: &[u8], g: &Guard| InFlightCommit {
            key: key.to_vec(),
            txn: (*g.txn).clone(),
            commit_ts: g.commit_ts,
        };
        if point {
            if let Some(g) = s.guards.get(start).filter(|g| blocks(g)) {
                return Err(in_flight(start, g));
            }
            return Ok(());
        }
        for (k, g) in s.guards.range(start.to_vec()..) {
            if end.is_some_and(|e| k.as_slice() >= e) {
                break;
            }
            if blocks(g) {
                return Err(in_flight(k, g));
            }
        }
        Ok(())
    }

    /// A locking read at `ts` (a pessimistic lock that returns the value or checks the
    /// key's existence): raises `max_ts` as [`Self::read`] does, without its in-flight check,
    /// which a lock request needs not: it holds the key's latches, and a one-phase commit
    /// holds them from choosing its commit_ts until it applies.
    pub(crate) fn update_max_ts(&self, ts: u64) {
        let mut s = self.state.lock();
        s.max_ts = s.max_ts.max(ts);
    }

    /// `None` when `max_ts` is synced; otherwise the generation to hand to
    /// [`Self::sync`] with a timestamp taken after this call.
    pub(crate) fn sync_needed(&self) -> Option<u64> {
        let s = self.state.lock();
        (!s.synced).then_some(s.generation)
    }

    /// Raises `max_ts` to `fresh_ts`, a timestamp taken after [`Self::sync_needed`]
    /// returned `generation`, and marks it synced unless it was unsynced again since (the
    /// leadership or the range changed while the timestamp was fetched: it may not cover
    /// reads served since, and the next one-phase commit syncs again).
    pub(crate) fn sync(&self, fresh_ts: u64, generation: u64) {
        let mut s = self.state.lock();
        s.max_ts = s.max_ts.max(fresh_ts);
        if s.generation == generation {
            s.synced = true;
        }
    }

    /// Leadership changed: `max_ts` no longer covers reads other leaders served, and the
    /// one-phase commits this node had in flight will not apply under it.
    pub(crate) fn unsync(&self) {
        let mut s = self.state.lock();
        s.unsynced();
        s.guards.clear();
    }

    /// The region took over keys whose reads another region's leader served (a merge
    /// absorbed its source): `max_ts` no longer covers them, so it must be synced from a
    /// fresh timestamp before the next one-phase commit. Unlike [`Self::unsync`], the guards
    /// stay: this region's own one-phase commits in flight are still proposed and will apply.
    pub(crate) fn absorbed_foreign_reads(&self) {
        self.state.lock().unsynced();
    }

    /// Registers `keys` of a one-phase commit and chooses its commit_ts: at least `floor`
    /// and above every read served so far. `None` (nothing registered) while `max_ts` is
    /// not synced: the caller syncs and retries. Checking here, under the same lock that
    /// chooses the commit_ts, closes the window between a caller's sync and this call.
    pub(crate) fn begin_one_pc(&self, keys: &[Vec<u8>], txn: OnePcTxn, floor: u64) -> Option<u64> {
        let mut s = self.state.lock();
        if !s.synced {
            return None;
        }
        let commit_ts = floor.max(s.max_ts.saturating_add(1));
        let txn = Arc::new(txn);
        for k in keys {
            let guard = Guard {
                txn: Arc::clone(&txn),
                commit_ts,
            };
            s.guards.insert(k.clone(), guard);
        }
        Some(commit_ts)
    }

    /// The one-phase commit of `start_ts` on `keys` applied or failed.
    pub(crate) fn end_one_pc(&self, keys: &[Vec<u8>], start_ts: u64) {
        let mut s = self.state.lock();
        for k in keys {
            if s.guards.get(k).is_some_and(|g| g.txn.start_ts == start_ts) {
                s.guards.remove(k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-phase transaction of `start_ts` with primary `p`.
    fn txn(start_ts: u64) -> OnePcTxn {
        OnePcTxn {
            start_ts,
            primary: b"p".to_vec(),
            ttl: 3000,
        }
    }

    /// A manager synced at `ts` (as a leader's is after its first one-phase commit).
    fn synced_at(ts: u64) -> ConcurrencyManager {
        let cm = ConcurrencyManager::default();
        let generation = cm.sync_needed().expect("a new manager is not synced");
        cm.sync(ts, generation);
        cm
    }

    #[test]
    fn one_pc_commit_ts_is_above_every_served_read() {
        let cm = synced_at(1);
        cm.read(100, b"a", None, true).expect("no guard");
        let ts = cm.begin_one_pc(&[b"k".to_vec()], txn(50), 60);
        assert_eq!(ts, Some(101));
    }

    #[test]
    fn no_one_pc_is_registered_before_a_sync() {
        let cm = ConcurrencyManager::default();
        assert_eq!(cm.begin_one_pc(&[b"k".to_vec()], txn(50), 60), None);
        assert!(
            cm.read(1000, b"k", None, true).is_ok(),
            "nothing registered"
        );
    }

    /// A sync whose timestamp was fetched before the leadership (or the range) changed again
    /// raises `max_ts` but does not mark it synced: that timestamp may be below reads
    /// served after the change.
    #[test]
    fn a_sync_from_before_an_unsync_does_not_count() {
        let cm = ConcurrencyManager::default();
        let generation = cm.sync_needed().expect("not synced");
        cm.absorbed_foreign_reads();
        cm.sync(70, generation);
        assert!(cm.sync_needed().is_some());
        assert_eq!(cm.begin_one_pc(&[b"k".to_vec()], txn(50), 60), None);
        let generation = cm.sync_needed().expect("still not synced");
        cm.unsync();
        cm.sync(80, generation);
        assert!(cm.sync_needed().is_some());
    }

    #[test]
    fn a_read_at_or_after_an_in_flight_commit_is_refused_until_it_ends() {
        let cm = synced_at(1);
        let ts = cm
            .begin_one_pc(&[b"k".to_vec()], txn(50), 60)
            .expect("synced");
        assert!(cm.read(ts - 1, b"k", None, true).is_ok());
        assert_eq!(
            cm.read(ts, b"k", None, true),
            Err(InFlightCommit {
                key: b"k".to_vec(),
                txn: txn(50),
                commit_ts: ts,
            }),
            "the read is told the commit's transaction (primary and ttl) and commit_ts"
        );
        assert!(cm.read(ts + 5, b"a", Some(b"z"), false).is_err());
        assert!(cm.read(ts + 5, b"a", Some(b"k"), false).is_ok());
        cm.end_one_pc(&[b"k".to_vec()], 50);
        assert!(cm.read(ts + 5, b"k", None, true).is_ok());
    }

    /// A merge: the target's `max_ts` knows nothing of the reads its source's leader
    /// served, so it is synced again (from a timestamp taken after them) before a one-phase
    /// commit may choose a commit_ts; its own in-flight commits stay guarded meanwhile.
    #[test]
    fn absorbing_a_merge_source_needs_a_fresh_sync_and_keeps_guards() {
        let cm = synced_at(10);
        let ts = cm
            .begin_one_pc(&[b"own".to_vec()], txn(5), 6)
            .expect("synced");
        cm.absorbed_foreign_reads();
        assert!(cm.sync_needed().is_some());
        assert!(cm.read(ts, b"own", None, true).is_err(), "guard kept");
        assert_eq!(
            cm.begin_one_pc(&[b"from-source".to_vec()], txn(400), 401),
            None
        );
        // The source served a read at 500; the fresh timestamp is above it.
        let generation = cm.sync_needed().expect("unsynced by the merge");
        cm.sync(501, generation);
        assert!(cm.begin_one_pc(&[b"from-source".to_vec()], txn(400), 401) > Some(500));
    }
}
