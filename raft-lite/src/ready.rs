//! What a [`crate::RawNode`] hands to its caller after it changed.

use crate::{Entry, HardState, Message, NodeId, Snapshot};

/// A node's role in its group. More may be added (a learner role, say), so match with a
/// wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Follows a leader (or waits for one).
    Follower,
    /// Asking for pre-votes, term not yet bumped.
    PreCandidate,
    /// Asking for votes in a new term.
    Candidate,
    /// Leads the group.
    Leader,
}

/// Volatile state, reported with every [`Ready`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftState {
    /// Current role.
    pub role: Role,
    /// Known leader of the current term.
    pub leader: Option<NodeId>,
    /// Current term.
    pub term: u64,
}

/// A confirmed ReadIndex request: once the state machine has applied `index`, a read
/// tagged `ctx` may be served linearizably.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadState {
    /// Commit index the read must wait for.
    pub index: u64,
    /// The caller's tag passed to [`crate::RawNode::read_index`].
    pub ctx: u64,
}

/// Work for the caller, to be done in this order:
///
/// 1. send [`Ready::messages`] (allowed before the local write);
/// 2. durably write [`Ready::snapshot`], then [`Ready::entries`] (which replace any stored
///    entries at the same or higher indexes), then [`Ready::hard_state`], in one batch;
/// 3. send [`Ready::persisted_messages`] (votes and acknowledgements: only after step 2);
/// 4. install [`Ready::snapshot`] into the state machine, then apply
///    [`Ready::committed_entries`] in order;
/// 5. call [`crate::RawNode::advance`].
#[derive(Debug, Clone)]
#[must_use = "a Ready must be handled and passed to advance()"]
pub struct Ready {
    /// Current role, leader and term.
    pub soft_state: SoftState,
    /// True if `soft_state` differs from the previous Ready's.
    pub soft_state_changed: bool,
    /// Messages that may be sent before the write.
    pub messages: Vec<Message>,
    /// A snapshot received from the leader, to persist and install.
    pub snapshot: Option<Snapshot>,
    /// Entries to append to durable storage.
    pub entries: Vec<Entry>,
    /// Hard state to persist, if it changed.
    pub hard_state: Option<HardState>,
    /// Messages to send only after the write is durable.
    pub persisted_messages: Vec<Message>,
    /// Entries to apply, in order.
    pub committed_entries: Vec<Entry>,
    /// Confirmed ReadIndex requests.
    pub read_states: Vec<ReadState>,
    /// ReadIndex contexts dropped because leadership was lost.
    pub dropped_reads: Vec<u64>,
}

impl Ready {
    /// True if nothing must be written to storage.
    pub fn nothing_to_persist(&self) -> bool {
        self.snapshot.is_none() && self.entries.is_empty() && self.hard_state.is_none()
    }
}
