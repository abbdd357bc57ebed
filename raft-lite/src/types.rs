//! Log entries, hard state, membership and snapshots.

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::{Result, codec};

/// Identifies a node. `0` is never a valid node id.
pub type NodeId = u64;

/// What an entry carries. More kinds may be added (so match with a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// Application data.
    Normal,
    /// A configuration change; the data is the encoded [`ConfState`] that results from it.
    ConfChange,
    /// The empty entry a new leader appends at the start of its term.
    Noop,
}

/// One log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Term in which the entry was created.
    pub term: u64,
    /// Position in the log, starting at 1.
    pub index: u64,
    /// What the entry carries.
    pub kind: EntryKind,
    /// Payload (opaque for [`EntryKind::Normal`]).
    pub data: Bytes,
}

impl Entry {
    /// For a [`EntryKind::ConfChange`] entry, the configuration it installs.
    ///
    /// # Errors
    /// [`crate::Error::Decode`] if the entry is not a configuration change or its data is malformed.
    pub fn conf_state(&self) -> Result<ConfState> {
        if self.kind != EntryKind::ConfChange {
            return Err(crate::Error::Decode {
                what: "conf change entry",
                offset: 0,
                reason: "entry is not a configuration change",
            });
        }
        codec::decode_conf_state(&self.data)
    }

    /// Bytes this entry counts for in size limits.
    pub fn size(&self) -> usize {
        self.data.len() + 24
    }
}

/// State that must be durable before a node answers a vote or an append (Raft §5.1, §5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HardState {
    /// Current term.
    pub term: u64,
    /// Candidate voted for in `term` (0 = none).
    pub vote: NodeId,
    /// Highest index known committed.
    pub commit: u64,
}

/// Group membership: voters decide, learners only receive the log.
///
/// Invariant: `voters` and `learners` are disjoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ConfState {
    /// Nodes that vote and count in quorums.
    pub voters: BTreeSet<NodeId>,
    /// Nodes that receive the log but never vote or count.
    pub learners: BTreeSet<NodeId>,
}

impl ConfState {
    /// A configuration of the given voters and no learners.
    pub fn with_voters(voters: impl IntoIterator<Item = NodeId>) -> ConfState {
        ConfState {
            voters: voters.into_iter().collect(),
            learners: BTreeSet::new(),
        }
    }

    /// True if `id` is a voter or a learner.
    pub fn contains(&self, id: NodeId) -> bool {
        self.voters.contains(&id) || self.learners.contains(&id)
    }

    /// Every member, voters then learners.
    pub fn members(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.voters.iter().chain(self.learners.iter()).copied()
    }

    /// The configuration after `change`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfChange`] for id 0, adding an existing member in the same
    /// role, removing a non-member, or removing the last voter.
    pub fn apply(&self, change: ConfChange) -> Result<ConfState> {
        let mut next = self.clone();
        let bad = |node, reason| crate::Error::InvalidConfChange { node, reason };
        match change {
            ConfChange::AddVoter(id) => {
                if id == 0 {
                    return Err(bad(id, "node id 0 is reserved"));
                }
                if next.voters.contains(&id) {
                    return Err(bad(id, "already a voter"));
                }
                next.learners.remove(&id);
                next.voters.insert(id);
            }
            ConfChange::AddLearner(id) => {
                if id == 0 {
                    return Err(bad(id, "node id 0 is reserved"));
                }
                if next.learners.contains(&id) {
                    return Err(bad(id, "already a learner"));
                }
                if next.voters.contains(&id) {
                    return Err(bad(id, "a voter cannot be demoted"));
                }
                next.learners.insert(id);
            }
            ConfChange::RemoveNode(id) => {
                if !next.contains(id) {
                    return Err(bad(id, "not a member"));
                }
                next.voters.remove(&id);
                next.learners.remove(&id);
                if next.voters.is_empty() {
                    return Err(bad(id, "cannot remove the last voter"));
                }
            }
        }
        Ok(next)
    }
}

/// A single-server membership change. More changes may be added (joint consensus, say), so
/// match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfChange {
    /// Add a voter, or promote a learner to voter.
    AddVoter(NodeId),
    /// Add a learner.
    AddLearner(NodeId),
    /// Remove a voter or learner.
    RemoveNode(NodeId),
}

/// Where a snapshot sits in the log and what membership it carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotMeta {
    /// Index of the last entry the snapshot covers.
    pub index: u64,
    /// Term of that entry.
    pub term: u64,
    /// Membership as of `index`.
    pub conf: ConfState,
}

/// A state machine snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Position and membership.
    pub meta: SnapshotMeta,
    /// The state machine's serialized state (opaque).
    pub data: Bytes,
}

/// The position of an entry: its index and the term it was proposed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId {
    /// Log index.
    pub index: u64,
    /// Term.
    pub term: u64,
}
