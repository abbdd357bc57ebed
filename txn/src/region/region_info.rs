//! [`RegionInfo`], [`RegionEpoch`] and [`Context`]: how requests name a region.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;

/// A region's epoch: `version` grows on every split and merge, `conf_ver` on every membership
/// change. A request made for another epoch gets `EpochNotMatch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionEpoch {
    /// Bumped by splits and merges.
    pub version: u64,
    /// Bumped by membership changes.
    pub conf_ver: u64,
}

/// A region: the key range `[start, end)` one Raft group replicates (an empty `end` means
/// the end of the key space).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfo {
    /// The region's id, which is also its Raft group id.
    pub id: u64,
    /// First key (inclusive).
    pub start: Vec<u8>,
    /// End key (exclusive); empty: unbounded.
    pub end: Vec<u8>,
    /// The epoch.
    pub epoch: RegionEpoch,
    /// The nodes holding a replica.
    pub peers: Vec<NodeId>,
}

impl RegionInfo {
    /// Whether `key` lies in the region's range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && (self.end.is_empty() || key < self.end.as_slice())
    }

    /// The end key as an option (`None`: unbounded).
    pub fn end_key(&self) -> Option<&[u8]> {
        (!self.end.is_empty()).then_some(self.end.as_slice())
    }

    /// Whether the range holds all of `other`'s (a merge's target after it absorbed
    /// `other`).
    pub(crate) fn covers(&self, other: &RegionInfo) -> bool {
        other.start >= self.start
            && (self.end.is_empty() || (!other.end.is_empty() && other.end <= self.end))
    }

    /// Whether the range and `other`'s meet end to start, on either side (a merge's target
    /// and source before it).
    pub(crate) fn borders(&self, other: &RegionInfo) -> bool {
        (!other.end.is_empty() && other.end == self.start)
            || (!self.end.is_empty() && self.end == other.start)
    }
}

/// What every region request carries: which region and epoch the client believes in, and
/// the sender's GC hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// The region.
    pub region_id: u64,
    /// The epoch the client knows.
    pub epoch: RegionEpoch,
    /// The sender's GC hold in force ([`crate::GcHoldOptions`]; 0: none): the timestamp
    /// below which no garbage collection removes anything while the hold lasts, at or
    /// below the start of every transaction the sender has open. A node serves reads and
    /// takes locks at timestamps down to it, even older than its GC life time, as TiKV
    /// serves a long transaction down to the GC safe point its start held back.
    pub gc_hold_ts: u64,
}

/// How pessimistic locks are written (per cluster, changeable at run time).
///
/// More modes may be added, so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockMode {
    /// Through the region's Raft log; the reply comes after apply.
    Sync,
    /// Through the Raft log; the reply comes once the leader accepted the proposal, and the
    /// key latches stay held until apply.
    Pipelined,
    /// In the leader's lock table only (no Raft write); falls back to `Pipelined` when the table
    /// is not writable or over budget.
    InMemory,
}

impl LockMode {
    /// The mode's name (`sync`, `pipelined`, `in-memory`).
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Sync => "sync",
            LockMode::Pipelined => "pipelined",
            LockMode::InMemory => "in-memory",
        }
    }
}

impl std::fmt::Display for LockMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_respects_bounds() {
        let r = RegionInfo {
            id: 1,
            start: b"b".to_vec(),
            end: b"d".to_vec(),
            epoch: RegionEpoch::default(),
            peers: vec![1],
        };
        assert!(!r.contains(b"a"));
        assert!(r.contains(b"b"));
        assert!(r.contains(b"c\xff"));
        assert!(!r.contains(b"d"));
        let all = RegionInfo {
            start: vec![],
            end: vec![],
            ..r
        };
        assert!(all.contains(b"") && all.contains(b"\xff\xff"));
    }

    #[test]
    fn covers_and_borders() {
        let r = |start: &[u8], end: &[u8]| RegionInfo {
            id: 1,
            start: start.to_vec(),
            end: end.to_vec(),
            epoch: RegionEpoch::default(),
            peers: vec![1],
        };
        // (region, other, covers, borders)
        let cases: [(RegionInfo, RegionInfo, bool, bool); 9] = [
            (r(b"b", b"d"), r(b"b", b"d"), true, false),
            (r(b"a", b"e"), r(b"b", b"d"), true, false),
            (r(b"", b""), r(b"b", b""), true, false),
            (r(b"a", b"e"), r(b"b", b""), false, false),
            (r(b"b", b"d"), r(b"d", b"f"), false, true),
            (r(b"d", b"f"), r(b"b", b"d"), false, true),
            (r(b"d", b""), r(b"", b"d"), false, true),
            (r(b"", b""), r(b"", b""), true, false),
            (r(b"b", b"d"), r(b"e", b"f"), false, false),
        ];
        for (region, other, covers, borders) in cases {
            assert_eq!(region.covers(&other), covers, "{region:?} covers {other:?}");
            assert_eq!(
                region.borders(&other),
                borders,
                "{region:?} borders {other:?}"
            );
        }
    }
}
