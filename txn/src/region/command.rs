//! [`RegionCommand`]: what a region's Raft log carries.

use serde::{Deserialize, Serialize};

use super::region_info::RegionInfo;
use crate::{Lock, WriteBatch};

/// One entry of a data region's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RegionCommand {
    /// A batch of engine changes made by a leader's command.
    Write(WriteCommand),
    /// The point in the log after which a voluntary leader transfer may happen: every lock
    /// proposed before it (the in-memory locks) is applied on the transferee first.
    TransferLeader {
        /// The transferee.
        to: u64,
    },
    /// Split at `split_key`: this region keeps `[start, split_key)`, region `new_region_id`
    /// gets `[split_key, end)`; both take `new_version`.
    Split {
        split_key: Vec<u8>,
        new_region_id: u64,
        new_version: u64,
    },
    /// This region (the source) is being merged into `target`: it refuses commands from now
    /// on and its version becomes `new_version`.
    PrepareMerge { target: u64, new_version: u64 },
    /// The merge did not happen and never will: back to normal at `new_version`, one above
    /// the version `PrepareMerge` gave (applied only then, so it ends that merge alone).
    RollbackMerge { new_version: u64 },
    /// This region (the target) absorbs `source` with its data (taken after the source's
    /// `PrepareMerge` applied, so it holds the source's locks as lock-CF records). Applies
    /// only if the target is still at `target_version`, its version when the command was
    /// proposed, and borders the source: a copy proposed again after a lost answer, or one
    /// that raced a change of the target, is skipped (answered [`EPOCH_CHANGED`]). So a
    /// merge applies at most once, and a target past `target_version` never applies one
    /// still in its log.
    CommitMerge {
        source: RegionInfo,
        data: Vec<u8>,
        target_version: u64,
    },
    /// A leader transfer's or a merge's in-memory pessimistic locks, to become lock-CF
    /// records, each only where the key holds nothing newer (see `lock_migration`). Refused,
    /// as a write is, when the region's version is no longer `version`. (Added last: the
    /// earlier variants keep their encoding.)
    MigrateLocks {
        version: u64,
        locks: Vec<(Vec<u8>, Lock)>,
    },
    /// `PrepareMerge` that also records the target's version the merge is prepared against
    /// (the one its `CommitMerge` carries), so a leader that resumes the merge after its
    /// driver stopped asks at that same version (TiKV's `PrepareMerge` records the target's
    /// epoch the same way). Appended last: the earlier variants keep their encoding.
    PrepareMergeAt {
        target: u64,
        new_version: u64,
        target_version: u64,
    },
}

/// A leader's write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WriteCommand {
    /// The proposing node, its term and a counter: the proposer finds its pending command
    /// (latches to release) by this triple when the entry applies; other nodes ignore it.
    pub(crate) proposer: u64,
    pub(crate) term: u64,
    pub(crate) cmd_id: u64,
    /// The region version the command was run under; an entry of another version is
    /// refused at apply (it raced a split or merge).
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

/// What apply answers a proposer whose write (or merge) was refused because the region's
/// version moved.
pub(crate) const EPOCH_CHANGED: &[u8] = b"epoch changed";

/// What apply answers when the engine refused an entry's batch (nothing of it written here).
pub(crate) const ENGINE_ERROR: &[u8] = b"engine error";

impl RegionCommand {
    /// The command's bytes, without spare capacity: they become a Raft entry, kept as they
    /// are (in the log, in flight to followers) until compacted, and postcard's doubling
    /// growth leaves up to as much again unused behind a large one.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut bytes = postcard::to_allocvec(self).unwrap_or_default();
        bytes.shrink_to_fit();
        bytes
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<RegionCommand, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}
