//! The founding region map of a multi-process cluster.
//!
//! Every node process must found the same meta group and regions, so each computes them
//! from the same inputs: 16 data regions split evenly on the first key byte, ids
//! `META_REGION_ID + 1 ..= META_REGION_ID + 16` (2..=17), epoch version 1 / conf_ver 1,
//! every node a peer of every region. This is the computation `surge_txn::LocalCluster`
//! does with `ClusterConfig::new` (which `surge-txn` keeps private); it lives here, in one
//! place, until the txn crate exports it.

use surge_raft_lite::NodeId;
use surge_txn::{META_REGION_ID, RegionEpoch, RegionInfo};

/// How many data regions a cluster is founded with.
pub const INITIAL_REGIONS: usize = 16;

/// The founding data regions of a cluster of `peers` (sorted by the caller or not: the peer
/// list is sorted here so that every node computes the same map).
pub fn initial_regions(peers: &[NodeId]) -> Vec<RegionInfo> {
    let mut peers = peers.to_vec();
    peers.sort_unstable();
    peers.dedup();
    let mut bounds: Vec<Vec<u8>> = vec![Vec::new()];
    bounds.extend(even_split_keys(INITIAL_REGIONS));
    bounds.push(Vec::new());
    bounds
        .windows(2)
        .zip(META_REGION_ID + 1..)
        .map(|(w, id)| RegionInfo {
            id,
            start: w[0].clone(),
            end: w[1].clone(),
            epoch: RegionEpoch {
                version: 1,
                conf_ver: 1,
            },
            peers: peers.clone(),
        })
        .collect()
}

/// `n` (1..=256) ranges split evenly on the first key byte: the `n - 1` split keys.
fn even_split_keys(n: usize) -> Vec<Vec<u8>> {
    let n = n.clamp(1, 256);
    (1..n)
        .map(|i| vec![u8::try_from(i * 256 / n).unwrap_or(u8::MAX)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_regions_cover_the_key_space_once_with_ids_2_to_17() {
        let regions = initial_regions(&[3, 1, 2]);
        assert_eq!(regions.len(), 16);
        assert_eq!(regions.first().map(|r| r.id), Some(2));
        assert_eq!(regions.last().map(|r| r.id), Some(17));
        for key in [&b""[..], b"\x00", b"\x0f\xff", b"\x10", b"abc", b"\xff\xff"] {
            assert_eq!(
                regions.iter().filter(|r| r.contains(key)).count(),
                1,
                "{key:?}"
            );
        }
        assert_eq!(
            regions.iter().find(|r| r.contains(b"\x10")).map(|r| r.id),
            Some(3)
        );
        assert!(regions.iter().all(|r| r.peers == vec![1, 2, 3]));
    }

    /// The map must equal the one `surge-txn` founds a `LocalCluster` with: a region map
    /// that differs from one node to the next would split the cluster.
    #[test]
    fn the_map_matches_the_txn_crates_local_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let cluster =
            surge_txn::LocalCluster::start(surge_txn::ClusterConfig::new(dir.path())).unwrap();
        assert_eq!(cluster.regions(), initial_regions(&[1, 2, 3]).as_slice());
    }
}
