//! Messages between the nodes of one group.

use bytes::Bytes;

use crate::{Entry, NodeId, Snapshot, SnapshotMeta};

/// A message from one node of a group to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Sender's term (for pre-votes: the term the sender would campaign in).
    pub term: u64,
    /// What the message says.
    pub kind: MessageKind,
}

/// The message types of Raft with pre-vote, check-quorum, ReadIndex and leader transfer.
/// More may be added (so match with a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageKind {
    /// Pre-vote request (Raft thesis §9.6): would you vote for me in `term`?
    PreVote {
        /// Candidate's last log index.
        last_index: u64,
        /// Candidate's last log term.
        last_term: u64,
    },
    /// Answer to a pre-vote.
    PreVoteResp {
        /// True if refused.
        reject: bool,
    },
    /// Vote request (§5.2).
    Vote {
        /// Candidate's last log index.
        last_index: u64,
        /// Candidate's last log term.
        last_term: u64,
        /// The election was started by a leader transfer: voters ignore their leader lease.
        transfer: bool,
    },
    /// Answer to a vote request.
    VoteResp {
        /// True if refused.
        reject: bool,
    },
    /// AppendEntries (§5.3).
    Append {
        /// Index of the entry before `entries`.
        prev_index: u64,
        /// Term of that entry.
        prev_term: u64,
        /// Entries to append (may be empty).
        entries: Vec<Entry>,
        /// Leader's commit index.
        commit: u64,
    },
    /// Answer to an append or snapshot.
    AppendResp {
        /// Accepted: the last index now known to match. Rejected: the `prev_index` refused.
        index: u64,
        /// True if the log did not match at `prev_index`.
        reject: bool,
        /// On reject: the follower's last index, a hint where to retry.
        hint: u64,
    },
    /// Leader heartbeat; `read_seq` is the latest ReadIndex round it confirms.
    Heartbeat {
        /// Commit index, capped at the follower's known match.
        commit: u64,
        /// ReadIndex round.
        read_seq: u64,
    },
    /// Answer to a heartbeat.
    HeartbeatResp {
        /// Echo of the heartbeat's `read_seq`.
        read_seq: u64,
    },
    /// Install a snapshot (§7).
    Snapshot {
        /// The snapshot.
        snapshot: Snapshot,
    },
    /// Leader transfer: campaign now, bypassing pre-vote and leases.
    TimeoutNow,
    /// One piece of a snapshot streamed to a follower (its `seq`-th, numbered from 0);
    /// the follower writes the pieces to a file and installs the snapshot, as a
    /// [`MessageKind::Snapshot`] whose data refers to that file, once the `last` one
    /// arrived. Handled by the node's driver, never by [`crate::RawNode`].
    SnapshotChunk {
        /// The stream's id, chosen by the leader: pieces of two streams are never mixed,
        /// even of two streams of one snapshot.
        id: u64,
        /// Position and membership of the whole snapshot.
        meta: SnapshotMeta,
        /// Number of this piece.
        seq: u32,
        /// True on the final piece.
        last: bool,
        /// The piece.
        data: Bytes,
    },
    /// A follower's answer to [`MessageKind::SnapshotChunk`]: every piece up to `seq` of
    /// the snapshot at `index` arrived (`accepted`), or the follower wants none of it
    /// (it holds that index already, or the group is unknown to it).
    SnapshotChunkAck {
        /// The stream's id.
        id: u64,
        /// Index of the snapshot.
        index: u64,
        /// The highest piece received in order.
        seq: u32,
        /// False: stop sending.
        accepted: bool,
    },
}

/// Terms and indexes at or above this bound are refused: no real group reaches them, and
/// keeping far below `u64::MAX` rules out overflow in the core's arithmetic.
pub const MAX_TERM_OR_INDEX: u64 = 1 << 62;

impl Message {
    /// True if every term and index in the message is below [`MAX_TERM_OR_INDEX`], no
    /// entry, last-log or snapshot term in it exceeds the message's own term (a log never
    /// holds entries of a term its owner has not reached), and an append's entries follow
    /// its `prev_index` with non-decreasing terms.
    pub fn is_sane(&self) -> bool {
        let ok = |v: u64| v < MAX_TERM_OR_INDEX;
        if !ok(self.term) {
            return false;
        }
        let term = self.term;
        match &self.kind {
            MessageKind::PreVote {
                last_index,
                last_term,
            }
            | MessageKind::Vote {
                last_index,
                last_term,
                ..
            } => ok(*last_index) && *last_term <= term,
            MessageKind::Append {
                prev_index,
                prev_term,
                entries,
                commit,
            } => {
                let mut last_term = *prev_term;
                // `prev_term` itself only decides a match: a wrong one is answered with a
                // rejection, so it needs no bound beyond the arithmetic one.
                ok(*prev_index)
                    && ok(*prev_term)
                    && ok(*commit)
                    && entries.iter().enumerate().all(|(i, e)| {
                        let fine = e.term >= last_term
                            && e.term <= term
                            && ok(e.index)
                            && e.index == prev_index + 1 + i as u64;
                        last_term = e.term;
                        fine
                    })
            }
            MessageKind::AppendResp { index, hint, .. } => ok(*index) && ok(*hint),
            MessageKind::Heartbeat { commit, read_seq } => ok(*commit) && ok(*read_seq),
            MessageKind::HeartbeatResp { read_seq } => ok(*read_seq),
            MessageKind::Snapshot { snapshot } => {
                ok(snapshot.meta.index) && snapshot.meta.term <= term
            }
            MessageKind::SnapshotChunk { meta, .. } => ok(meta.index) && meta.term <= term,
            MessageKind::SnapshotChunkAck { index, .. } => ok(*index),
            MessageKind::PreVoteResp { .. }
            | MessageKind::VoteResp { .. }
            | MessageKind::TimeoutNow => true,
        }
    }
}

impl MessageKind {
    /// A short name of the message type, for logs and counters.
    pub fn name(&self) -> &'static str {
        match self {
            MessageKind::PreVote { .. } => "PreVote",
            MessageKind::PreVoteResp { .. } => "PreVoteResp",
            MessageKind::Vote { .. } => "Vote",
            MessageKind::VoteResp { .. } => "VoteResp",
            MessageKind::Append { .. } => "Append",
            MessageKind::AppendResp { .. } => "AppendResp",
            MessageKind::Heartbeat { .. } => "Heartbeat",
            MessageKind::HeartbeatResp { .. } => "HeartbeatResp",
            MessageKind::Snapshot { .. } => "Snapshot",
            MessageKind::TimeoutNow => "TimeoutNow",
            MessageKind::SnapshotChunk { .. } => "SnapshotChunk",
            MessageKind::SnapshotChunkAck { .. } => "SnapshotChunkAck",
        }
    }
}
