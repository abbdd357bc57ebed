//! [`MetaPeer`]: a replica of the meta group: the placement state and, on the leader, the
//! timestamp oracle.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::{Node as RaftNode, StateMachine};

use super::gc_hold::GcHold;
use super::meta_state::{META_REGION_ID, MetaCommand, MetaState};
use crate::region::{Lease, RegionError, RegionInfo, raft_error};
use crate::{compose_ts, physical_ms};

/// The oracle's allocation state on the leader.
#[derive(Debug, Default)]
struct Oracle {
    /// The leadership generation `last` and `limit` were set up in; stale when it differs
    /// from [`MetaPeer::generation`].
    generation: u64,
    last: u64,
    /// The durable limit this leader may hand out up to.
    limit: u64,
}

/// A replica of the meta group.
#[derive(Debug)]
pub(crate) struct MetaPeer {
    state: Mutex<MetaState>,
    leader_term: AtomicU64,
    /// Bumped on every leadership change (by the driver thread, which must never wait for
    /// the oracle's mutex: the oracle holds it while waiting for the driver to apply).
    generation: AtomicU64,
    oracle: Mutex<Oracle>,
    /// How far ahead of the physical clock the durable limit is pushed at once.
    window_ms: u64,
    /// The leader's lease: timestamps are handed out without a quorum round while it holds.
    lease: Lease,
}

impl MetaPeer {
    pub(crate) fn new(initial: Vec<RegionInfo>, window_ms: u64, lease: Duration) -> Arc<MetaPeer> {
        let mut state = MetaState::default();
        for r in initial {
            state.apply(MetaCommand::PutRegion(r));
        }
        Arc::new(MetaPeer {
            state: Mutex::new(state),
            leader_term: AtomicU64::new(0),
            generation: AtomicU64::new(1),
            oracle: Mutex::new(Oracle::default()),
            window_ms: window_ms.max(1),
            lease: Lease::new(lease),
        })
    }

    pub(crate) fn is_leader(&self) -> bool {
        self.leader_term.load(Ordering::SeqCst) != 0
    }

    pub(crate) fn region_of(&self, key: &[u8]) -> Option<RegionInfo> {
        self.state.lock().region_of(key).cloned()
    }

    pub(crate) fn scan(&self, start: &[u8], limit: usize) -> Vec<RegionInfo> {
        self.state.lock().scan(start, limit)
    }

    /// The GC holds this replica has applied that are not expired at `now_ms`, and whether
    /// it holds expired ones too.
    pub(crate) fn gc_holds(&self, now_ms: u64) -> (Vec<GcHold>, bool) {
        let state = self.state.lock();
        let live = state.live_gc_holds(now_ms);
        let expired = live.len() < state.gc_holds.len();
        (live, expired)
    }

    /// Of `reports`, those that would change this replica's map if applied: a region it
    /// does not know, or a strictly newer epoch (version, then conf_ver) of one it knows;
    /// never one merged away. A report that changes nothing needs no proposal (region
    /// heartbeats repeat what the map already holds).
    pub(crate) fn news(&self, reports: Vec<RegionInfo>) -> Vec<RegionInfo> {
        let state = self.state.lock();
        let epoch = |r: &RegionInfo| (r.epoch.version, r.epoch.conf_ver);
        reports
            .into_iter()
            .filter(|r| {
                !state.removed.contains(&r.id)
                    && state
                        .regions
                        .get(&r.id)
                        .is_none_or(|old| epoch(old) < epoch(r))
            })
            .collect()
    }

    /// `count` timestamps; returns the last. Strictly greater than every timestamp any
    /// leader of this group handed out before, across restarts and leader changes: each is
    /// below a limit made durable through Raft before it was handed out, and a new leader
    /// starts above the limit it applied.
    pub(crate) fn get_ts(
        &self,
        raft: &RaftNode,
        count: u32,
        timeout: Duration,
    ) -> Result<u64, RegionError> {
        if !self.is_leader() {
            return Err(RegionError::NotLeader {
                region_id: META_REGION_ID,
                leader: None,
            });
        }
        let mut o = self.oracle.lock();
        let generation = self.generation.load(Ordering::SeqCst);
        if o.generation != generation {
            let applied_limit = self.state.lock().tso_limit;
            o.last = o.last.max(applied_limit);
            o.limit = applied_limit;
            o.generation = generation;
        }
        let now = compose_ts(crate::ts::wall_clock_ms(), 0);
        let next = (o.last + u64::from(count.max(1))).max(now);
        if next > o.limit {
            let limit = compose_ts(physical_ms(next) + self.window_ms, 0);
            let cmd = postcard::to_allocvec(&MetaCommand::SetTsoLimit(limit)).unwrap_or_default();
            raft.propose(META_REGION_ID, Bytes::from(cmd))
                .wait_applied(timeout)
                .map_err(|e| {
                    // The limit may or may not have applied: set up again next time.
                    o.generation = 0;
                    raft_error(META_REGION_ID, e)
                })?;
            o.limit = limit;
        }
        o.last = next;
        drop(o);
        // A deposed leader that has not heard of its successor could still hand out
        // timestamps below the successor's; confirming leadership with a quorum after
        // choosing `next` (or holding a lease from a round that confirmed it recently) rules
        // that out: no successor existed when the quorum answered.
        self.lease.confirm(|| {
            raft.read_index(META_REGION_ID, timeout)
                .map(drop)
                .map_err(|e| raft_error(META_REGION_ID, e))
        })?;
        Ok(next)
    }

    /// Proposes `cmds` in order and waits until the last applied; returns its apply result
    /// (the id of an `AllocRegionId`).
    pub(crate) fn propose(
        &self,
        raft: &RaftNode,
        cmds: Vec<MetaCommand>,
        timeout: Duration,
    ) -> Result<u64, RegionError> {
        if !self.is_leader() {
            return Err(RegionError::NotLeader {
                region_id: META_REGION_ID,
                leader: None,
            });
        }
        let mut last = 0;
        for cmd in cmds {
            let bytes = postcard::to_allocvec(&cmd).unwrap_or_default();
            let r = raft
                .propose(META_REGION_ID, Bytes::from(bytes))
                .wait_applied(timeout)
                .map_err(|e| raft_error(META_REGION_ID, e))?;
            last = r
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes);
        }
        Ok(last)
    }

    /// The leader's timestamp lease (suspended around a voluntary transfer of the meta
    /// group: `KvNode::transfer_leader`).
    pub(crate) fn lease(&self) -> &Lease {
        &self.lease
    }

    fn on_leader(&self, term: u64) {
        self.lease.invalidate();
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.leader_term.store(term, Ordering::SeqCst);
    }

    fn on_follower(&self) {
        self.leader_term.store(0, Ordering::SeqCst);
        // Also ends a suspension: a transfer away from this node is over.
        self.lease.resume();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// The meta group's `raft-lite` state machine.
pub(crate) struct MetaStateMachine {
    peer: Arc<MetaPeer>,
}

impl MetaStateMachine {
    pub(crate) fn new(peer: Arc<MetaPeer>) -> MetaStateMachine {
        MetaStateMachine { peer }
    }
}

impl StateMachine for MetaStateMachine {
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes {
        match postcard::from_bytes::<MetaCommand>(data) {
            Ok(cmd) => {
                let id = self.peer.state.lock().apply(cmd);
                Bytes::copy_from_slice(&id.to_be_bytes())
            }
            Err(e) => {
                tracing::error!(index, error = %e, "undecodable meta command skipped");
                Bytes::new()
            }
        }
    }

    fn on_leader(&mut self, term: u64) {
        self.peer.on_leader(term);
    }

    fn on_follower(&mut self, _term: u64) {
        self.peer.on_follower();
    }

    fn snapshot(&mut self) -> Bytes {
        Bytes::from(postcard::to_allocvec(&*self.peer.state.lock()).unwrap_or_default())
    }

    fn restore(&mut self, index: u64, data: &[u8]) {
        match MetaState::decode(data) {
            Ok(s) => *self.peer.state.lock() = s,
            Err(e) => tracing::error!(index, error = %e, "meta snapshot refused"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::meta_state::initial_regions;

    #[test]
    fn only_reports_that_change_the_map_are_news() {
        let regions = initial_regions(&[b"m".to_vec()], &[1, 2, 3]);
        let peer = MetaPeer::new(regions.clone(), 1000, Duration::from_secs(1));
        // What the map holds already: nothing to propose.
        assert!(peer.news(regions.clone()).is_empty());
        // A region it never heard of (a split child whose report was lost), and a newer
        // epoch of a known one, are news; an older epoch is not.
        let mut child = regions[1].clone();
        child.id = 9;
        let mut newer = regions[0].clone();
        newer.epoch.version += 1;
        let mut older = regions[1].clone();
        older.epoch.version = 0;
        let news = peer.news(vec![child.clone(), newer.clone(), older]);
        assert_eq!(news, vec![child, newer]);
        // A region merged away never comes back.
        peer.state.lock().apply(MetaCommand::RemoveRegion(9));
        let mut again = regions[1].clone();
        again.id = 9;
        assert!(peer.news(vec![again]).is_empty());
    }
}
