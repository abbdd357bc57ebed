//! The requests an application makes of a [`RawNode`]: proposals, membership changes,
//! leader transfer, ReadIndex and log compaction.

use bytes::Bytes;

use crate::node::PendingRead;
use crate::ready::{ReadState, Role};
use crate::{ConfChange, Entry, EntryId, EntryKind, Error, MessageKind, NodeId, RawNode};
use crate::{Result, Snapshot, codec};

impl RawNode {
    /// Proposes `data` to be appended to the log. Returns the entry's position; the entry
    /// is committed only if the entry at that index later commits with the same term.
    ///
    /// # Errors
    /// [`Error::NotLeader`], [`Error::TransferInProgress`], [`Error::ProposalTooLarge`],
    /// [`Error::ReadyOutstanding`].
    pub fn propose(&mut self, data: Bytes) -> Result<EntryId> {
        self.check_idle()?;
        if data.len() > self.cfg.max_proposal_bytes.min(codec::MAX_BYTES_LEN) {
            return Err(Error::ProposalTooLarge {
                size: data.len(),
                limit: self.cfg.max_proposal_bytes.min(codec::MAX_BYTES_LEN),
            });
        }
        self.check_can_propose()?;
        Ok(self.append_entry(EntryKind::Normal, data))
    }

    fn check_can_propose(&self) -> Result<()> {
        if self.role != Role::Leader {
            return Err(Error::NotLeader {
                leader: self.leader,
            });
        }
        if let Some(to) = self.transferee {
            return Err(Error::TransferInProgress { to });
        }
        Ok(())
    }

    pub(crate) fn append_entry(&mut self, kind: EntryKind, data: Bytes) -> EntryId {
        let id = EntryId {
            index: self.log.last_index() + 1,
            term: self.term,
        };
        self.log.append(Entry {
            term: id.term,
            index: id.index,
            kind,
            data,
        });
        if kind == EntryKind::ConfChange {
            self.refresh_conf();
        }
        self.pending_bcast = true;
        id
    }

    /// True once the leader has committed an entry of its own term (its no-op).
    pub(crate) fn committed_in_term(&self) -> bool {
        self.log.term(self.log.committed) == Some(self.term)
    }

    /// Proposes a single-server membership change. The new configuration takes effect as
    /// soon as it is appended (Raft thesis §4.1).
    ///
    /// # Errors
    /// [`Error::NotLeader`]; [`Error::LeaderNotReady`] until the leader committed an entry of
    /// its term (the fix for the single-server change bug); [`Error::ConfChangePending`]
    /// while a previous change is uncommitted; [`Error::InvalidConfChange`];
    /// [`Error::TransferInProgress`]; [`Error::ReadyOutstanding`].
    pub fn propose_conf_change(&mut self, change: ConfChange) -> Result<EntryId> {
        self.check_idle()?;
        self.check_can_propose()?;
        if !self.committed_in_term() {
            return Err(Error::LeaderNotReady { term: self.term });
        }
        if self.conf_index > self.log.committed {
            return Err(Error::ConfChangePending {
                index: self.conf_index,
            });
        }
        let next = self.conf.apply(change)?;
        Ok(self.append_entry(EntryKind::ConfChange, codec::encode_conf_state(&next)))
    }

    /// Transfers leadership to `to`: the leader first brings `to` up to date, then tells it
    /// to campaign at once. Proposals are refused meanwhile; the transfer is abandoned after
    /// an election timeout.
    ///
    /// Transferring to this node itself cancels a pending transfer.
    ///
    /// # Errors
    /// [`Error::NotLeader`], [`Error::InvalidTransfer`] (self without a pending transfer,
    /// learner or non-member), [`Error::ReadyOutstanding`].
    pub fn transfer_leader(&mut self, to: NodeId) -> Result<()> {
        self.check_idle()?;
        if self.role != Role::Leader {
            return Err(Error::NotLeader {
                leader: self.leader,
            });
        }
        if to == self.id {
            if self.transferee.take().is_some() {
                // Transferring back to ourselves cancels the pending transfer.
                return Ok(());
            }
            return Err(Error::InvalidTransfer {
                to,
                reason: "already leader",
            });
        }
        if !self.conf.voters.contains(&to) {
            return Err(Error::InvalidTransfer {
                to,
                reason: "not a voter",
            });
        }
        self.transferee = Some(to);
        self.transfer_elapsed = 0;
        let caught_up = self
            .progress
            .get(&to)
            .is_some_and(|p| p.matched == self.log.last_index());
        if caught_up {
            self.send(to, MessageKind::TimeoutNow);
        } else {
            self.send_append(to);
        }
        Ok(())
    }

    /// Requests a linearizable read point (ReadIndex, thesis §6.4). Once a quorum confirms
    /// this node is still leader, a [`ReadState`] with `ctx` appears in a [`crate::Ready`].
    ///
    /// # Errors
    /// [`Error::NotLeader`]; [`Error::LeaderNotReady`] until the leader committed an entry
    /// of its term; [`Error::ReadyOutstanding`].
    pub fn read_index(&mut self, ctx: u64) -> Result<()> {
        self.check_idle()?;
        if self.role != Role::Leader {
            return Err(Error::NotLeader {
                leader: self.leader,
            });
        }
        if !self.committed_in_term() {
            return Err(Error::LeaderNotReady { term: self.term });
        }
        let index = self.log.committed;
        if self.quorum_size() <= 1 && self.conf.voters.contains(&self.id) {
            self.read_states.push(ReadState { index, ctx });
            return Ok(());
        }
        self.read_seq += 1;
        self.pending_reads.push_back(PendingRead {
            ctx,
            index,
            seq: self.read_seq,
            acks: vec![self.id],
        });
        self.bcast_heartbeat();
        Ok(())
    }

    /// Forgets the ReadIndex request `ctx` (its caller gave up): it is no longer waited on
    /// for a quorum, nor reported. True if it was still pending. Allowed between `ready()`
    /// and `advance()` (it changes nothing a Ready hands out).
    pub fn cancel_read(&mut self, ctx: u64) -> bool {
        let before = self.pending_reads.len();
        self.pending_reads.retain(|r| r.ctx != ctx);
        self.pending_reads.len() != before
    }

    /// ReadIndex requests waiting for a quorum's confirmation.
    pub fn pending_read_count(&self) -> usize {
        self.pending_reads.len()
    }

    /// Records a snapshot the application built and made durable (covering entries up to
    /// `snapshot.meta.index <= applied`), and forgets the log entries it covers. The
    /// snapshot is kept to catch up followers that are behind the log's start.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`].
    pub fn compact(&mut self, snapshot: Snapshot) -> Result<()> {
        self.check_idle()?;
        let idx = snapshot.meta.index;
        if idx <= self.log.snap_index || idx > self.log.applied {
            return Ok(());
        }
        self.log.compact(idx, snapshot.meta.conf.clone());
        self.snapshot = Some(snapshot);
        Ok(())
    }

    /// Makes this node ask the application for a snapshot whenever a follower is behind
    /// the log's start, instead of sending the latest snapshot it recorded: for a state
    /// machine that keeps its state durably itself, whose log is compacted with a snapshot
    /// that holds no data (it only marks the log's start).
    pub fn set_snapshots_on_demand(&mut self, on: bool) {
        self.snapshots_on_demand = on;
    }

    /// The followers that need a snapshot built for them since the last call (with
    /// [`RawNode::set_snapshots_on_demand`]); each waits in the snapshot state (no
    /// appends) until [`RawNode::send_snapshot`] or its next heartbeat answer, which asks
    /// again if it is still behind.
    pub fn take_snapshot_requests(&mut self) -> Vec<NodeId> {
        std::mem::take(&mut self.snapshot_requests)
            .into_iter()
            .collect()
    }

    /// Sends `to` a snapshot the application built (at an index at most `applied`, whose
    /// term and membership it took from [`RawNode::term_at`] and
    /// [`RawNode::conf_state_at`]); false if nothing was sent: not leader, `to` is not a
    /// member, or it already holds the snapshot's index.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`].
    pub fn send_snapshot(&mut self, to: NodeId, snapshot: Snapshot) -> Result<bool> {
        self.check_idle()?;
        if self.role != Role::Leader || snapshot.meta.index > self.log.applied {
            return Ok(false);
        }
        let Some(pr) = self.progress.get_mut(&to) else {
            return Ok(false);
        };
        if pr.matched >= snapshot.meta.index {
            return Ok(false);
        }
        pr.become_snapshot(snapshot.meta.index);
        self.send(to, MessageKind::Snapshot { snapshot });
        Ok(true)
    }

    /// Marks `to` as receiving a snapshot at `index` that the application streams to it
    /// itself (a durable group's, built at an index at most `applied`): no appends go to
    /// `to` until it answers with the snapshot installed, or a heartbeat answer shows it
    /// still lacks it. False if nothing should be sent: not leader, `to` is not a member,
    /// or it already holds `index`.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`].
    pub fn stream_snapshot_started(&mut self, to: NodeId, index: u64) -> Result<bool> {
        self.check_idle()?;
        if self.role != Role::Leader || index > self.log.applied {
            return Ok(false);
        }
        let Some(pr) = self.progress.get_mut(&to) else {
            return Ok(false);
        };
        if pr.matched >= index {
            return Ok(false);
        }
        pr.become_snapshot(index);
        Ok(true)
    }
}
