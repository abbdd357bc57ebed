//! [`RegionError`]: a request reached the wrong place or the wrong time; the client retries.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;

use super::region_info::RegionInfo;

/// Why a node did not run a region request. All of these are retryable: the client refreshes
/// its region cache or backs off and tries again; they never reach the caller unless retries
/// run out.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum RegionError {
    /// This node does not lead the region.
    #[error("region {region_id}: not leader (leader hint {leader:?})")]
    NotLeader {
        /// The region.
        region_id: u64,
        /// The leader, when known.
        leader: Option<NodeId>,
    },
    /// The request's epoch is not the region's.
    #[error("region {region_id}: epoch not match")]
    EpochNotMatch {
        /// The region.
        region_id: u64,
        /// The regions that now cover the old one's range, when known.
        current: Vec<RegionInfo>,
    },
    /// The node hosts no such region.
    #[error("region {region_id} not found on this node")]
    RegionNotFound {
        /// The region.
        region_id: u64,
    },
    /// A key of the request is outside the region.
    #[error("key {:?} is not in region {region_id}", String::from_utf8_lossy(key))]
    KeyNotInRegion {
        /// The key.
        key: Vec<u8>,
        /// The region.
        region_id: u64,
    },
    /// The leader's term changed while the request ran (TiKV's `StaleCommand`).
    #[error("region {region_id}: stale command (term changed)")]
    StaleCommand {
        /// The region.
        region_id: u64,
    },
    /// The node is busy or the region is changing; try again shortly.
    #[error("region {region_id}: busy ({reason})")]
    ServerIsBusy {
        /// The region.
        region_id: u64,
        /// Why.
        reason: String,
    },
    /// The Raft proposal failed or its outcome is unknown (leader change, timeout).
    #[error("region {region_id}: raft proposal failed: {detail}")]
    ProposalFailed {
        /// The region.
        region_id: u64,
        /// The Raft error.
        detail: String,
        /// True when the proposal may still have been applied.
        outcome_unknown: bool,
    },
    /// The node is stopping: a lock request that waited on it for a conflicting lock, or
    /// would have had to, is answered at once instead (its wait ended by the stop; it did
    /// not take the lock). The region's leadership ends with the node: retry at its next
    /// leader. A client running on the stopping node itself gets it back at once (see
    /// [`crate::NodeRouter::local_node`]).
    #[error("region {region_id}: node {node} is stopping")]
    NodeStopping {
        /// The region.
        region_id: u64,
        /// The stopping node.
        node: NodeId,
    },
}
