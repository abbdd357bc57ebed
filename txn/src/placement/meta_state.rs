//! [`MetaState`]: what the meta group replicates: the region map, the oracle's limit and
//! the GC holds.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::gc_hold::GcHold;
use crate::region::RegionInfo;

/// The id of the meta group: the Raft group that holds the region map and the timestamp
/// oracle. Data regions have ids from 2 on.
pub const META_REGION_ID: u64 = 1;

/// The most region ids one `AllocRegionIds` hands out.
pub(crate) const MAX_REGION_ID_BATCH: u64 = 1 << 20;

/// The replicated placement state.
///
/// # Invariants
/// - `tso_limit` only grows; no leader hands out a timestamp above the limit applied before
///   it was handed out, so a new leader starting above the applied limit never repeats one.
/// - The regions cover the key space without gaps or overlaps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MetaState {
    pub(crate) regions: BTreeMap<u64, RegionInfo>,
    pub(crate) tso_limit: u64,
    /// The next region id to hand out (above every id ever used).
    pub(crate) next_region_id: u64,
    /// Regions merged away. An id is never used again, so a report of one of them that
    /// arrives after its removal (a retried split report, say) is stale and ignored.
    pub(crate) removed: BTreeSet<u64>,
    /// The GC holds by owner; an expired one stays until an `ExpireGcHolds` drops it (the
    /// readers skip it meanwhile).
    pub(crate) gc_holds: BTreeMap<u64, GcHold>,
    /// The GC safe point: the highest a collection was allowed to go (PD's GC safe point).
    /// Only grows; no hold is ever set below it.
    pub(crate) gc_safe_point: u64,
}

/// [`MetaState`] as protocol version 5 encoded it, before the GC safe point.
#[derive(Deserialize)]
struct MetaStateV5 {
    regions: BTreeMap<u64, RegionInfo>,
    tso_limit: u64,
    next_region_id: u64,
    removed: BTreeSet<u64>,
    gc_holds: BTreeMap<u64, GcHold>,
}

/// [`MetaState`] as protocol version 4 encoded it, before the GC holds: postcard cannot
/// skip a missing trailing field, so a snapshot of that version decodes through this.
#[derive(Deserialize)]
struct MetaStateV4 {
    regions: BTreeMap<u64, RegionInfo>,
    tso_limit: u64,
    next_region_id: u64,
    removed: BTreeSet<u64>,
}

impl MetaState {
    /// Decodes a meta snapshot of this version, of version 5 (no GC safe point) or of
    /// version 4 (no GC holds either). Each older layout must take the whole input.
    pub(crate) fn decode(data: &[u8]) -> Result<MetaState, postcard::Error> {
        postcard::from_bytes::<MetaState>(data).or_else(|e| {
            if let Ok((v5, [])) = postcard::take_from_bytes::<MetaStateV5>(data) {
                return Ok(MetaState {
                    regions: v5.regions,
                    tso_limit: v5.tso_limit,
                    next_region_id: v5.next_region_id,
                    removed: v5.removed,
                    gc_holds: v5.gc_holds,
                    gc_safe_point: 0,
                });
            }
            let Ok((v4, [])) = postcard::take_from_bytes::<MetaStateV4>(data) else {
                return Err(e);
            };
            Ok(MetaState {
                regions: v4.regions,
                tso_limit: v4.tso_limit,
                next_region_id: v4.next_region_id,
                removed: v4.removed,
                gc_holds: BTreeMap::new(),
                gc_safe_point: 0,
            })
        })
    }
}

/// One entry of the meta group's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum MetaCommand {
    /// Raise the oracle's durable limit.
    SetTsoLimit(u64),
    /// Add or replace a region (splits and merges report here); a report older than the
    /// region already known (a lower version), or of a region merged away, is ignored.
    PutRegion(RegionInfo),
    /// A region merged away.
    RemoveRegion(u64),
    /// Hand out the next region id (the apply result carries it).
    AllocRegionId,
    /// Hand out this many region ids in a row (at least one; the apply result carries the
    /// first).
    AllocRegionIds(u64),
    /// Set (or replace) the owner's GC hold, raised to the GC safe point if below it; the
    /// apply result carries the timestamp set.
    SetGcHold(GcHold),
    /// Drop the owner's GC hold.
    RemoveGcHold(u64),
    /// Drop every GC hold expired at this wall-clock time (ms; the proposer's clock, so
    /// every replica drops the same ones).
    ExpireGcHolds(u64),
    /// Raise the GC safe point towards `safe_point`, but not above a hold in force at
    /// `now_ms` (the proposer's clock, so that every replica computes the same); the
    /// apply result carries the safe point in force after it.
    RaiseGcSafePoint {
        /// The safe point asked for.
        safe_point: u64,
        /// The proposer's wall clock, for the holds' expiry.
        now_ms: u64,
    },
}

impl MetaState {
    /// Applies `cmd`; returns the (first) id handed out by `AllocRegionId(s)` (0 otherwise).
    pub(crate) fn apply(&mut self, cmd: MetaCommand) -> u64 {
        match cmd {
            MetaCommand::SetTsoLimit(l) => self.tso_limit = self.tso_limit.max(l),
            MetaCommand::PutRegion(r) => {
                self.next_region_id = self.next_region_id.max(r.id + 1);
                let newer = !self.removed.contains(&r.id)
                    && self
                        .regions
                        .get(&r.id)
                        .is_none_or(|old| old.epoch.version <= r.epoch.version);
                if newer {
                    self.regions.insert(r.id, r);
                }
            }
            MetaCommand::RemoveRegion(id) => {
                self.regions.remove(&id);
                self.removed.insert(id);
            }
            MetaCommand::AllocRegionId => return self.alloc_ids(1),
            MetaCommand::AllocRegionIds(n) => return self.alloc_ids(n),
            MetaCommand::SetGcHold(mut h) => {
                // Never below what a collection may already have removed: the owner
                // claims what this returns, not what it asked for.
                h.ts = h.ts.max(self.gc_safe_point);
                self.gc_holds.insert(h.owner, h);
                return h.ts;
            }
            MetaCommand::RaiseGcSafePoint { safe_point, now_ms } => {
                // Below every hold in force now, in log order: a hold set before this
                // entry is counted even if the proposer had not seen it.
                let held = self
                    .live_gc_holds(now_ms)
                    .iter()
                    .map(|h| h.ts)
                    .min()
                    .unwrap_or(u64::MAX);
                self.gc_safe_point = self.gc_safe_point.max(safe_point.min(held));
                return self.gc_safe_point;
            }
            MetaCommand::RemoveGcHold(owner) => {
                self.gc_holds.remove(&owner);
            }
            MetaCommand::ExpireGcHolds(now_ms) => {
                self.gc_holds.retain(|_, h| !h.expired_at(now_ms))
            }
        }
        0
    }

    /// Hands out `n` ids in a row (at least one, at most [`MAX_REGION_ID_BATCH`]); returns
    /// the first.
    fn alloc_ids(&mut self, n: u64) -> u64 {
        let id = self.next_region_id.max(META_REGION_ID + 1);
        self.next_region_id = id.saturating_add(n.clamp(1, MAX_REGION_ID_BATCH));
        id
    }

    /// The GC holds not expired at wall-clock time `now_ms`, by owner.
    pub(crate) fn live_gc_holds(&self, now_ms: u64) -> Vec<GcHold> {
        self.gc_holds
            .values()
            .filter(|h| !h.expired_at(now_ms))
            .copied()
            .collect()
    }

    /// The region holding `key`.
    pub(crate) fn region_of(&self, key: &[u8]) -> Option<&RegionInfo> {
        self.regions.values().find(|r| r.contains(key))
    }

    /// Regions in key order from the one holding `start`, at most `limit` (0: all).
    pub(crate) fn scan(&self, start: &[u8], limit: usize) -> Vec<RegionInfo> {
        let mut v: Vec<RegionInfo> = self
            .regions
            .values()
            .filter(|r| r.end.is_empty() || r.end.as_slice() > start)
            .cloned()
            .collect();
        v.sort_by(|a, b| a.start.cmp(&b.start));
        if limit > 0 {
            v.truncate(limit);
        }
        v
    }
}

/// The regions a cluster starts with: ids `2, 3, ...` covering the key space, split at
/// `split_keys` (sorted, distinct, none empty), each replicated on `peers`, at epoch version 1.
/// Every node of a cluster must compute the same list.
pub fn initial_regions(split_keys: &[Vec<u8>], peers: &[u64]) -> Vec<RegionInfo> {
    let mut bounds: Vec<Vec<u8>> = vec![Vec::new()];
    bounds.extend(split_keys.iter().cloned());
    bounds.push(Vec::new());
    bounds
        .windows(2)
        .enumerate()
        .map(|(i, w)| RegionInfo {
            id: META_REGION_ID + 1 + i as u64,
            start: w[0].clone(),
            end: w[1].clone(),
            epoch: crate::region::RegionEpoch {
                version: 1,
                conf_ver: 1,
            },
            peers: peers.to_vec(),
        })
        .collect()
}

/// Split keys for `n` regions split evenly on the first key byte (`n` clamped to 1..=256).
pub fn even_split_keys(n: usize) -> Vec<Vec<u8>> {
    let n = n.clamp(1, 256);
    (1..n)
        .map(|i| vec![u8::try_from(i * 256 / n).unwrap_or(u8::MAX)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_regions_cover_the_key_space() {
        let regions = initial_regions(&even_split_keys(16), &[1, 2, 3]);
        assert_eq!(regions.len(), 16);
        let mut state = MetaState::default();
        for r in regions {
            state.apply(MetaCommand::PutRegion(r));
        }
        for key in [&b""[..], b"\x00", b"\x0f\xff", b"\x10", b"abc", b"\xff\xff"] {
            assert_eq!(
                state.regions.values().filter(|r| r.contains(key)).count(),
                1,
                "key {key:?}"
            );
        }
        assert_eq!(state.region_of(b"\x10").map(|r| r.id), Some(3));
        assert_eq!(state.scan(b"\x10", 2).len(), 2);
    }

    #[test]
    fn a_report_replayed_late_never_undoes_a_later_change() {
        let mut regions = initial_regions(&even_split_keys(2), &[1, 2, 3]);
        let (left, right) = (regions.remove(0), regions.remove(0));
        let mut s = MetaState::default();
        s.apply(MetaCommand::PutRegion(left.clone()));
        s.apply(MetaCommand::PutRegion(right.clone()));
        // The left region absorbs the right one (version 2), then an older report of both
        // arrives again (a retry): neither the old left nor the removed right come back.
        let mut merged = left.clone();
        merged.end = right.end.clone();
        merged.epoch.version = 2;
        s.apply(MetaCommand::PutRegion(merged.clone()));
        s.apply(MetaCommand::RemoveRegion(right.id));
        s.apply(MetaCommand::PutRegion(left));
        s.apply(MetaCommand::PutRegion(right));
        assert_eq!(
            s.regions.values().cloned().collect::<Vec<_>>(),
            vec![merged]
        );
    }

    #[test]
    fn id_batches_never_overlap_single_ids_or_known_regions() {
        let mut s = MetaState::default();
        for r in initial_regions(&even_split_keys(4), &[1]) {
            s.apply(MetaCommand::PutRegion(r));
        }
        let first = s.apply(MetaCommand::AllocRegionIds(16));
        assert_eq!(first, 6, "after the initial regions 2..=5");
        assert_eq!(s.apply(MetaCommand::AllocRegionId), 22);
        // A zero count still hands out one id; a huge one is capped.
        assert_eq!(s.apply(MetaCommand::AllocRegionIds(0)), 23);
        assert_eq!(s.apply(MetaCommand::AllocRegionIds(u64::MAX)), 24);
        assert_eq!(s.apply(MetaCommand::AllocRegionId), 24 + (1 << 20));
    }

    #[test]
    fn tso_limit_only_grows() {
        let mut s = MetaState::default();
        s.apply(MetaCommand::SetTsoLimit(10));
        s.apply(MetaCommand::SetTsoLimit(5));
        assert_eq!(s.tso_limit, 10);
    }

    #[test]
    fn a_gc_hold_is_replaced_by_its_owner_and_dropped_on_expiry_or_removal() {
        let hold = |owner, ts, expires_ms| GcHold {
            owner,
            ts,
            expires_ms,
        };
        let mut s = MetaState::default();
        s.apply(MetaCommand::SetGcHold(hold(1, 100, 1_000)));
        s.apply(MetaCommand::SetGcHold(hold(2, 50, 2_000)));
        s.apply(MetaCommand::SetGcHold(hold(1, 120, 3_000)));
        assert_eq!(
            s.live_gc_holds(999),
            vec![hold(1, 120, 3_000), hold(2, 50, 2_000)]
        );
        // Expired holds stop counting before a command drops them.
        assert_eq!(s.live_gc_holds(2_000), vec![hold(1, 120, 3_000)]);
        s.apply(MetaCommand::ExpireGcHolds(2_500));
        assert_eq!(s.gc_holds.len(), 1);
        s.apply(MetaCommand::RemoveGcHold(1));
        s.apply(MetaCommand::RemoveGcHold(7));
        assert!(s.gc_holds.is_empty());
    }

    #[test]
    fn a_snapshot_without_gc_holds_still_decodes() {
        let mut s = MetaState::default();
        for r in initial_regions(&even_split_keys(3), &[1, 2]) {
            s.apply(MetaCommand::PutRegion(r));
        }
        s.apply(MetaCommand::SetTsoLimit(77));
        s.apply(MetaCommand::RemoveRegion(9));
        // Version 4's encoding: the same fields in the same order, without the holds.
        let v4 = postcard::to_allocvec(&(&s.regions, s.tso_limit, s.next_region_id, &s.removed))
            .unwrap();
        assert_eq!(MetaState::decode(&v4).unwrap(), s);
        s.apply(MetaCommand::SetGcHold(GcHold {
            owner: 1,
            ts: 5,
            expires_ms: 6,
        }));
        // Version 5's: with the holds, without the GC safe point.
        let v5 = postcard::to_allocvec(&(
            &s.regions,
            s.tso_limit,
            s.next_region_id,
            &s.removed,
            &s.gc_holds,
        ))
        .unwrap();
        assert_eq!(MetaState::decode(&v5).unwrap(), s);
        // (A safe point of several bytes: a snapshot cut inside it is no other version's.)
        s.apply(MetaCommand::SetGcHold(GcHold {
            owner: 1,
            ts: 1 << 40,
            expires_ms: 6,
        }));
        s.apply(MetaCommand::RaiseGcSafePoint {
            safe_point: 1 << 40,
            now_ms: 0,
        });
        assert_eq!(s.gc_safe_point, 1 << 40);
        let now = postcard::to_allocvec(&s).unwrap();
        assert_eq!(MetaState::decode(&now).unwrap(), s);
        assert!(MetaState::decode(&now[..now.len() - 1]).is_err());
    }

    #[test]
    fn the_gc_safe_point_stays_below_live_holds_and_no_hold_goes_below_it() {
        let hold = |owner, ts, expires_ms| GcHold {
            owner,
            ts,
            expires_ms,
        };
        let raise = |safe_point, now_ms| MetaCommand::RaiseGcSafePoint { safe_point, now_ms };
        let mut s = MetaState::default();
        assert_eq!(s.apply(MetaCommand::SetGcHold(hold(1, 100, 1_000))), 100);
        // Held at the live hold, whatever the proposer asked for.
        assert_eq!(s.apply(raise(500, 10)), 100);
        // Never back.
        assert_eq!(s.apply(raise(40, 10)), 100);
        // An expired hold holds nothing.
        assert_eq!(s.apply(raise(500, 1_000)), 500);
        // A hold set below the safe point is set at it (and its owner is told so).
        assert_eq!(s.apply(MetaCommand::SetGcHold(hold(2, 300, 9_000))), 500);
        assert_eq!(
            s.live_gc_holds(0),
            vec![hold(1, 100, 1_000), hold(2, 500, 9_000)]
        );
        assert_eq!(s.apply(raise(800, 2_000)), 500);
    }
}
