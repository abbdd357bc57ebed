//! The region layer: a data region's replica ([`RegionPeer`]), its Raft state machine, key
//! latches, the leader's in-memory lock table and the one-phase-commit guard.

mod command;
mod concurrency;
mod counters;
mod host;
mod latches;
mod lease;
mod lock_migration;
mod pause_points;
mod peer;
mod region_error;
mod region_info;
mod split_key;
mod split_merge;
#[cfg(test)]
mod split_merge_test;
mod state_machine;
mod streamed_snapshot;
#[cfg(test)]
mod streamed_snapshot_test;

pub use counters::NodeCounters;
pub use pause_points::{PausePoints, region_pause_points};
pub use region_error::RegionError;
pub use region_info::{Context, LockMode, RegionEpoch, RegionInfo};

pub(crate) use counters::Counters;
pub(crate) use host::RegionHost;
pub(crate) use lease::Lease;
pub(crate) use peer::{CmdError, MergeState, OnePc, RegionPeer, raft_error};
pub(crate) use split_merge::SPLIT_CHILD_INIT_INDEX;
pub(crate) use state_machine::RegionStateMachine;
