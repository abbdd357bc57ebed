//! [`RegionHost`]: what a region replica asks of the node that hosts it when a split or a
//! merge applies (the region layer cannot reach the node's Raft driver itself).

use std::sync::Arc;

use bytes::Bytes;

use super::peer::RegionPeer;

/// The node side of region changes. Called from the Raft driver thread while it applies an
/// entry, so implementations must not block on the driver (use the `*_nowait` calls).
pub(crate) trait RegionHost: Send + Sync {
    /// A split created `child` on this node: host it, starting its Raft group from `seed`
    /// (the child's state machine snapshot) unless the group already exists (a restart
    /// replaying the split).
    fn spawn_split_child(&self, child: Arc<RegionPeer>, seed: Bytes);

    /// Whether this node already hosts region `id`.
    fn hosts(&self, id: u64) -> bool;

    /// `source` was merged into `target` on this node: stop hosting the source.
    fn region_merged(&self, source: u64, target: u64);
}
