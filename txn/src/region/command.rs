//! [`RegionCommand`]: what a region's Raft log carries.

use serde::{Deserialize, Serialize};

use crate::WriteBatch;

/// One entry of a data region's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RegionCommand {
    /// A batch of engine changes made by a leader's command.
    Write(WriteCommand),
}

/// A leader's write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WriteCommand {
    /// The proposing node, its term and a counter: the proposer finds its pending command
    /// (latches to release) by this triple when the entry applies; other nodes ignore it.
    pub(crate) proposer: u64,
    pub(crate) term: u64,
    pub(crate) cmd_id: u64,
    /// The region version the command was run under.
    pub(crate) version: u64,
    /// The engine changes (applied index set at apply).
    pub(crate) batch: WriteBatch,
    /// User keys whose lock-CF entry the batch puts or deletes: their in-memory locks,
    /// marked deleted when the command was proposed, are removed once it applies.
    pub(crate) lock_cf_keys: Vec<Vec<u8>>,
    /// Locks the batch releases (user key, lock_ts): their waiters are woken at apply.
    pub(crate) released: Vec<(Vec<u8>, u64)>,
    /// True when the command writes only pessimistic locks (counted as lock Raft bytes).
    pub(crate) lock_only: bool,
}

impl RegionCommand {
    pub(crate) fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<RegionCommand, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}
