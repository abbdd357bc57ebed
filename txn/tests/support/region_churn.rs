//! [`region_change`]: one voluntary region change (a leader transfer, a split or a merge)
//! drawn at random, for the workloads that run them continuously.

use std::time::Duration;

use surge_txn::LocalCluster;

use super::rng::SplitMix64;

/// What one [`region_change`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A leader transfer.
    Transfer,
    /// A split.
    Split,
    /// A merge.
    Merge,
    /// Nothing could be tried (no leader, no neighbour).
    Skipped,
}

/// One voluntary change of a random region, chosen evenly among a leader transfer, a split
/// and a merge with its right-hand neighbour; a split drawn while `max_regions` regions or
/// more exist becomes a merge, a merge drawn while `min_regions` or fewer exist a split, so
/// the count stays in between. Returns what was tried, whether it succeeded, and a line
/// saying so.
pub fn region_change(
    c: &LocalCluster,
    rng: &mut SplitMix64,
    min_regions: usize,
    max_regions: usize,
) -> (ChangeKind, bool, String) {
    let regions = c.regions();
    if regions.is_empty() {
        return (ChangeKind::Skipped, false, "no regions known".into());
    }
    let r = &regions[rng.below(regions.len() as u64) as usize];
    let kind = match rng.below(3) {
        1 if regions.len() >= max_regions => 2,
        2 if regions.len() <= min_regions => 1,
        k => k,
    };
    match kind {
        0 => {
            let Some(from) = c.leader_of_group(r.id) else {
                return (
                    ChangeKind::Skipped,
                    false,
                    format!("region {}: no leader", r.id),
                );
            };
            let to = c
                .node_ids()
                .iter()
                .copied()
                .filter(|n| *n != from)
                .nth(rng.below(2) as usize)
                .unwrap_or(from);
            let result = c
                .transfer_leader(r.id, to, Duration::from_secs(5))
                .map(|_| ());
            (
                ChangeKind::Transfer,
                result.is_ok(),
                format!("transfer region {} {from}->{to}: {result:?}", r.id),
            )
        }
        1 => {
            let result = c.split_region(r.id, None).map(|v| v.len());
            (
                ChangeKind::Split,
                result.is_ok(),
                format!("split region {}: {result:?}", r.id),
            )
        }
        _ => {
            // Merge with the right-hand neighbour, if any.
            let Some(next) = regions
                .iter()
                .find(|n| !r.end.is_empty() && n.start == r.end)
            else {
                return (
                    ChangeKind::Skipped,
                    false,
                    format!("region {}: no neighbour to merge", r.id),
                );
            };
            let result = c.merge_regions(r.id, next.id).map(|m| m.id);
            (
                ChangeKind::Merge,
                result.is_ok(),
                format!("merge region {} into {}: {result:?}", r.id, next.id),
            )
        }
    }
}
