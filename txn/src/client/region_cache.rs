//! [`RegionCache`]: the client's copy of the region map, with each region's leader.

use std::collections::BTreeMap;
use std::ops::Bound;

use surge_raft_lite::NodeId;

use crate::RegionInfo;

/// A cached region and the node the client believes leads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CachedRegion {
    /// The region as the meta group last described it.
    pub(crate) info: RegionInfo,
    /// The node requests go to; `None`: unknown, the first peer is tried.
    pub(crate) leader: Option<NodeId>,
}

impl CachedRegion {
    /// The node to send the next request to.
    pub(crate) fn target(&self) -> Option<NodeId> {
        self.leader.or_else(|| self.info.peers.first().copied())
    }
}

/// Regions by start key.
///
/// # Invariants
/// - Cached ranges never overlap: inserting a region first drops every cached region whose
///   range overlaps it, so a lookup finds at most one candidate.
/// - Gaps are allowed (regions not loaded yet or dropped after an epoch change); a lookup
///   that falls into one misses and the caller reloads from the meta group.
#[derive(Debug, Default)]
pub(crate) struct RegionCache {
    by_start: BTreeMap<Vec<u8>, CachedRegion>,
}

impl RegionCache {
    /// The cached region holding `key`.
    pub(crate) fn locate(&self, key: &[u8]) -> Option<&CachedRegion> {
        self.by_start
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| r.info.contains(key))
    }

    /// Caches `info` with `leader`, replacing every cached region that overlaps it. A region
    /// older than a cached one with the same id (smaller epoch version) is ignored.
    pub(crate) fn insert(&mut self, info: RegionInfo, leader: Option<NodeId>) {
        if self
            .by_start
            .values()
            .any(|r| r.info.id == info.id && r.info.epoch.version > info.epoch.version)
        {
            return;
        }
        let overlapping: Vec<Vec<u8>> = self
            .by_start
            .iter()
            .filter(|(_, r)| overlaps(&r.info, &info))
            .map(|(start, _)| start.clone())
            .collect();
        for start in overlapping {
            self.by_start.remove(&start);
        }
        self.by_start
            .insert(info.start.clone(), CachedRegion { info, leader });
    }

    /// Drops region `region_id` (its epoch changed or a node no longer hosts it).
    pub(crate) fn invalidate(&mut self, region_id: u64) {
        self.by_start.retain(|_, r| r.info.id != region_id);
    }

    /// Records `leader` as region `region_id`'s leader.
    pub(crate) fn update_leader(&mut self, region_id: u64, leader: NodeId) {
        if let Some(r) = self.get_mut(region_id) {
            r.leader = Some(leader);
        }
    }

    /// After `failed` did not answer for region `region_id` (down, or not leader without a
    /// hint), points the region at the peer after `failed` in its peer list. Returns whether
    /// the new target wrapped around to the first peer (every peer was tried once).
    pub(crate) fn switch_peer(&mut self, region_id: u64, failed: NodeId) -> bool {
        let Some(r) = self.get_mut(region_id) else {
            return true;
        };
        let peers = &r.info.peers;
        if peers.is_empty() {
            r.leader = None;
            return true;
        }
        let next = peers
            .iter()
            .position(|&p| p == failed)
            .map_or(0, |i| (i + 1) % peers.len());
        r.leader = Some(peers[next]);
        next == 0
    }

    /// How many regions are cached.
    pub(crate) fn len(&self) -> usize {
        self.by_start.len()
    }

    fn get_mut(&mut self, region_id: u64) -> Option<&mut CachedRegion> {
        self.by_start.values_mut().find(|r| r.info.id == region_id)
    }
}

/// Whether two `[start, end)` ranges (empty end: unbounded) share a key.
fn overlaps(a: &RegionInfo, b: &RegionInfo) -> bool {
    let a_before_b_ends = b.end.is_empty() || a.start < b.end;
    let b_before_a_ends = a.end.is_empty() || b.start < a.end;
    a_before_b_ends && b_before_a_ends
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RegionEpoch;

    fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> RegionInfo {
        RegionInfo {
            id,
            start: start.to_vec(),
            end: end.to_vec(),
            epoch: RegionEpoch {
                version,
                conf_ver: 1,
            },
            peers: vec![1, 2, 3],
        }
    }

    fn cache() -> RegionCache {
        let mut c = RegionCache::default();
        c.insert(region(2, b"", b"g", 1), Some(1));
        c.insert(region(3, b"g", b"p", 1), Some(2));
        c.insert(region(4, b"p", b"", 1), None);
        c
    }

    #[test]
    fn locate_finds_the_region_holding_each_key() {
        let c = cache();
        let cases: &[(&[u8], u64)] = &[
            (b"", 2),
            (b"a", 2),
            (b"f\xff", 2),
            (b"g", 3),
            (b"o", 3),
            (b"p", 4),
            (b"\xff\xff", 4),
        ];
        for (key, id) in cases {
            assert_eq!(c.locate(key).map(|r| r.info.id), Some(*id), "key {key:?}");
        }
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn invalidate_leaves_a_gap_that_misses() {
        let mut c = cache();
        c.invalidate(3);
        assert!(c.locate(b"h").is_none());
        assert_eq!(c.locate(b"a").map(|r| r.info.id), Some(2));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_split_region_replaces_the_overlapping_old_one() {
        let mut c = cache();
        // Region 3 split into [g, k) (id 3, version 2) and [k, p) (id 5).
        c.insert(region(3, b"g", b"k", 2), None);
        assert_eq!(
            c.locate(b"m").map(|r| r.info.id),
            None,
            "the old [g, p) entry is gone"
        );
        c.insert(region(5, b"k", b"p", 2), None);
        assert_eq!(c.locate(b"h").map(|r| r.info.id), Some(3));
        assert_eq!(c.locate(b"m").map(|r| r.info.id), Some(5));
        // A stale description of region 3 (version 1) does not undo the split.
        c.insert(region(3, b"g", b"p", 1), None);
        assert_eq!(c.locate(b"m").map(|r| r.info.id), Some(5));
        assert_eq!(c.locate(b"h").map(|r| r.info.epoch.version), Some(2));
    }

    #[test]
    fn leader_updates_and_peer_rotation() {
        let mut c = cache();
        c.update_leader(4, 3);
        assert_eq!(c.locate(b"q").and_then(CachedRegion::target), Some(3));
        assert!(
            c.switch_peer(4, 3),
            "3 is the last peer: wraps to the first"
        );
        assert_eq!(c.locate(b"q").and_then(CachedRegion::target), Some(1));
        assert!(!c.switch_peer(4, 1));
        assert_eq!(c.locate(b"q").and_then(CachedRegion::target), Some(2));
        // Unknown leader: the first peer is the target.
        let mut fresh = RegionCache::default();
        fresh.insert(region(7, b"", b"", 1), None);
        assert_eq!(fresh.locate(b"x").and_then(CachedRegion::target), Some(1));
    }
}
