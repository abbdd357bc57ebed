//! [`RawNode`]: the sans-IO Raft state machine of one node of one group, and its public API.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::progress::Progress;
use crate::raft_log::RaftLog;
use crate::ready::{ReadState, Ready, Role, SoftState};
use crate::storage::RaftState;
use crate::{ConfChange, ConfState, Config, Entry, EntryId, EntryKind, Error, HardState};
use crate::{Message, MessageKind, NodeId, Result, Snapshot, codec};

#[derive(Debug)]
pub(crate) struct PendingRead {
    pub(crate) ctx: u64,
    pub(crate) index: u64,
    pub(crate) seq: u64,
    pub(crate) acks: Vec<NodeId>,
}

/// What the outstanding [`Ready`] handed out, applied by [`RawNode::advance`].
#[derive(Debug, Clone, Copy)]
struct Handed {
    persist_to: Option<u64>,
    apply_to: Option<u64>,
    hard_state: HardState,
    soft: SoftState,
}

/// Counters of one node (a plain snapshot; see [`RawNode::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Messages stepped.
    pub messages_stepped: u64,
    /// Messages ignored because of a stale term or an unexpected type.
    pub messages_ignored: u64,
    /// Elections started (pre-vote or vote).
    pub campaigns: u64,
    /// Times this node became leader.
    pub became_leader: u64,
    /// Appends refused because they would overwrite a committed entry (should stay 0).
    pub committed_overwrite_refused: u64,
}

/// The Raft core of one node of one group, in the shape of raft-rs's `RawNode`: no threads,
/// clocks or files. The caller calls [`RawNode::tick`] at a fixed interval, feeds received
/// messages to [`RawNode::step`], and runs the [`Ready`] cycle.
///
/// Invariants: between [`RawNode::ready`] and [`RawNode::advance`], every mutating call
/// returns [`Error::ReadyOutstanding`]; a node never sends a vote or an append acknowledgement
/// before the state it depends on was handed out for persisting (it goes in
/// [`Ready::persisted_messages`]); the leader counts its own log in the quorum only up to
/// what was persisted.
#[derive(Debug)]
pub struct RawNode {
    pub(crate) cfg: Config,
    pub(crate) id: NodeId,
    pub(crate) term: u64,
    pub(crate) vote: NodeId,
    pub(crate) role: Role,
    pub(crate) leader: Option<NodeId>,
    pub(crate) log: RaftLog,
    pub(crate) conf: ConfState,
    /// Index of the entry that installed `conf` (pending while above `committed`).
    pub(crate) conf_index: u64,
    pub(crate) progress: BTreeMap<NodeId, Progress>,
    pub(crate) votes: BTreeMap<NodeId, bool>,
    pub(crate) election_elapsed: u32,
    pub(crate) heartbeat_elapsed: u32,
    pub(crate) randomized_timeout: u32,
    rng: u64,
    pub(crate) transferee: Option<NodeId>,
    pub(crate) transfer_elapsed: u32,
    pub(crate) pending_bcast: bool,
    pub(crate) msgs: Vec<Message>,
    pub(crate) persisted_msgs: Vec<Message>,
    pub(crate) read_seq: u64,
    pub(crate) pending_reads: VecDeque<PendingRead>,
    pub(crate) read_states: Vec<ReadState>,
    pub(crate) dropped_reads: Vec<u64>,
    /// A snapshot received from the leader, not yet handed out.
    pub(crate) incoming_snapshot: Option<Snapshot>,
    /// The latest snapshot, sent to followers that are behind the log's start.
    pub(crate) snapshot: Option<Snapshot>,
    prev_hs: HardState,
    prev_soft: SoftState,
    handed: Option<Handed>,
    pub(crate) stats: NodeStats,
}

impl RawNode {
    /// Creates a node from its recovered durable state.
    ///
    /// # Errors
    /// [`Error::InvalidConfChange`] if `cfg.id` is 0; [`Error::Decode`] if the recovered
    /// entries are not consecutive after the snapshot.
    pub fn new(cfg: Config, state: RaftState) -> Result<RawNode> {
        if cfg.id == 0 {
            return Err(Error::InvalidConfChange {
                node: 0,
                reason: "node id 0 is reserved",
            });
        }
        let (snap_index, snap_term, snap_conf) = match &state.snapshot {
            Some(s) => (s.meta.index, s.meta.term, s.meta.conf.clone()),
            None => (0, 0, state.conf.clone()),
        };
        let mut entries = VecDeque::with_capacity(state.entries.len());
        for e in state.entries {
            if e.index <= snap_index {
                continue;
            }
            if e.index != snap_index + 1 + entries.len() as u64 {
                return Err(Error::Decode {
                    what: "recovered log",
                    offset: e.index as usize,
                    reason: "entries are not consecutive after the snapshot",
                });
            }
            entries.push_back(e);
        }
        let mut log = RaftLog {
            snap_index,
            snap_term,
            snap_conf,
            entries,
            committed: 0,
            applied: 0,
            persisted: 0,
            unstable_from: 0,
        };
        let last = log.last_index();
        // The durable commit may exceed what survived only if storage lost acknowledged
        // data; clamp rather than apply entries we do not have.
        // The state machine only ever applied committed entries, so what it applied is
        // committed even if the (lazily synced) commit index lagged behind.
        log.committed = state
            .hard_state
            .commit
            .max(snap_index)
            .max(cfg.applied)
            .min(last);
        log.applied = cfg.applied.max(snap_index).min(log.committed);
        log.persisted = last;
        log.unstable_from = last + 1;
        let (conf, conf_index) = log.effective_conf();
        let hs = HardState {
            term: state.hard_state.term,
            vote: state.hard_state.vote,
            commit: log.committed,
        };
        let soft = SoftState {
            role: Role::Follower,
            leader: None,
            term: hs.term,
        };
        let rng = cfg.seed ^ cfg.id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        let mut node = RawNode {
            id: cfg.id,
            cfg,
            term: hs.term,
            vote: hs.vote,
            role: Role::Follower,
            leader: None,
            log,
            conf,
            conf_index,
            progress: BTreeMap::new(),
            votes: BTreeMap::new(),
            election_elapsed: 0,
            heartbeat_elapsed: 0,
            randomized_timeout: 0,
            rng,
            transferee: None,
            transfer_elapsed: 0,
            pending_bcast: false,
            msgs: Vec::new(),
            persisted_msgs: Vec::new(),
            read_seq: 0,
            pending_reads: VecDeque::new(),
            read_states: Vec::new(),
            dropped_reads: Vec::new(),
            incoming_snapshot: None,
            snapshot: state.snapshot,
            prev_hs: hs,
            prev_soft: soft,
            handed: None,
            stats: NodeStats::default(),
        };
        node.reset_randomized_timeout();
        Ok(node)
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// Current term.
    pub fn term(&self) -> u64 {
        self.term
    }
    /// Current role.
    pub fn role(&self) -> Role {
        self.role
    }
    /// Known leader of the current term.
    pub fn leader(&self) -> Option<NodeId> {
        self.leader
    }
    /// Membership in effect (the latest appended configuration).
    pub fn conf(&self) -> &ConfState {
        &self.conf
    }
    /// Commit index.
    pub fn committed(&self) -> u64 {
        self.log.committed
    }
    /// Highest index handed out for applying.
    pub fn applied(&self) -> u64 {
        self.log.applied
    }
    /// Last log index.
    pub fn last_index(&self) -> u64 {
        self.log.last_index()
    }
    /// Index of the log's first entry minus one (the last compacted index).
    pub fn snapshot_index(&self) -> u64 {
        self.log.snap_index
    }
    /// Term of the entry at `index`, if still in the log (or the snapshot's position).
    pub fn term_at(&self, index: u64) -> Option<u64> {
        self.log.term(index)
    }
    /// The entry at `index`, if still in the log.
    pub fn entry(&self, index: u64) -> Option<&Entry> {
        self.log.entry(index)
    }
    /// The membership in effect at `index` (the last configuration change at or before it),
    /// or `None` if `index` is before the log's start. Snapshots record this.
    pub fn conf_state_at(&self, index: u64) -> Option<ConfState> {
        if index < self.log.snap_index || index > self.log.last_index() {
            return None;
        }
        let mut i = index;
        while i > self.log.snap_index {
            if let Some(e) = self.log.entry(i)
                && e.kind == EntryKind::ConfChange
                && let Ok(cs) = e.conf_state()
            {
                return Some(cs);
            }
            i -= 1;
        }
        Some(self.log.snap_conf.clone())
    }
    /// Current hard state.
    pub fn hard_state(&self) -> HardState {
        HardState {
            term: self.term,
            vote: self.vote,
            commit: self.log.committed,
        }
    }
    /// The leader transfer in progress, if any.
    pub fn transferee(&self) -> Option<NodeId> {
        self.transferee
    }
    /// Counters.
    pub fn stats(&self) -> NodeStats {
        self.stats
    }
    /// True if this node may campaign: it is a voter of its configuration.
    pub fn is_promotable(&self) -> bool {
        self.conf.voters.contains(&self.id)
    }

    fn soft_state(&self) -> SoftState {
        SoftState {
            role: self.role,
            leader: self.leader,
            term: self.term,
        }
    }

    fn check_idle(&self) -> Result<()> {
        if self.handed.is_some() {
            return Err(Error::ReadyOutstanding);
        }
        Ok(())
    }

    pub(crate) fn next_rand(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn reset_randomized_timeout(&mut self) {
        let et = self.cfg.election_tick.max(1);
        self.randomized_timeout = et + (self.next_rand() % u64::from(et)) as u32;
    }

    /// Queues a message: a leader's go out at once, anyone else's only after the Ready's
    /// write is durable (votes and acknowledgements depend on it).
    pub(crate) fn send(&mut self, to: NodeId, kind: MessageKind) {
        let m = Message {
            from: self.id,
            to,
            term: self.term,
            kind,
        };
        self.send_msg(m);
    }

    pub(crate) fn send_msg(&mut self, m: Message) {
        if self.role == Role::Leader {
            self.msgs.push(m);
        } else {
            self.persisted_msgs.push(m);
        }
    }

    /// Advances the logical clock by one tick.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`] between `ready()` and `advance()`.
    pub fn tick(&mut self) -> Result<()> {
        self.check_idle()?;
        if self.role == Role::Leader {
            self.tick_leader();
        } else {
            self.election_elapsed += 1;
            if self.is_promotable() && self.election_elapsed >= self.randomized_timeout {
                self.election_elapsed = 0;
                self.campaign(false);
            }
        }
        Ok(())
    }

    /// Starts an election now (as on an election timeout).
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`] between `ready()` and `advance()`.
    pub fn campaign_now(&mut self) -> Result<()> {
        self.check_idle()?;
        if self.role != Role::Leader && self.is_promotable() {
            self.campaign(false);
        }
        Ok(())
    }

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
    /// # Errors
    /// [`Error::NotLeader`], [`Error::InvalidTransfer`] (self, learner or non-member),
    /// [`Error::ReadyOutstanding`].
    pub fn transfer_leader(&mut self, to: NodeId) -> Result<()> {
        self.check_idle()?;
        if self.role != Role::Leader {
            return Err(Error::NotLeader {
                leader: self.leader,
            });
        }
        if to == self.id {
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
    /// this node is still leader, a [`ReadState`] with `ctx` appears in a [`Ready`].
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

    /// Handles a message from another node of the group.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`] between `ready()` and `advance()`. Messages not meant for
    /// this node, or from id 0, are ignored and counted.
    pub fn step(&mut self, m: Message) -> Result<()> {
        self.check_idle()?;
        if m.to != self.id || m.from == 0 || m.from == self.id {
            self.stats.messages_ignored += 1;
            return Ok(());
        }
        self.stats.messages_stepped += 1;
        self.step_inner(m);
        Ok(())
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

    /// True if [`RawNode::ready`] has something to hand out.
    pub fn has_ready(&self) -> bool {
        self.handed.is_none()
            && (self.pending_bcast
                || !self.msgs.is_empty()
                || !self.persisted_msgs.is_empty()
                || self.log.unstable_from <= self.log.last_index()
                || self.hard_state() != self.prev_hs
                || self.log.applied < self.log.committed
                || self.incoming_snapshot.is_some()
                || !self.read_states.is_empty()
                || !self.dropped_reads.is_empty()
                || self.soft_state() != self.prev_soft)
    }

    /// Hands out the work accumulated since the last [`RawNode::advance`]; see [`Ready`]
    /// for what to do with it.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`] if the previous Ready was not advanced.
    pub fn ready(&mut self) -> Result<Ready> {
        self.check_idle()?;
        if self.pending_bcast {
            self.pending_bcast = false;
            if self.role == Role::Leader {
                self.bcast_append();
            }
        }
        let entries = if self.log.unstable_from <= self.log.last_index() {
            self.log.slice(
                self.log.unstable_from,
                self.log.last_index() + 1,
                usize::MAX,
            )
        } else {
            Vec::new()
        };
        let apply_hi = self.log.committed.min(self.log.last_index());
        let committed_entries = if self.log.applied < apply_hi {
            self.log
                .slice(self.log.applied + 1, apply_hi + 1, usize::MAX)
        } else {
            Vec::new()
        };
        let hs = self.hard_state();
        let soft = self.soft_state();
        self.handed = Some(Handed {
            persist_to: entries.last().map(|e| e.index),
            apply_to: committed_entries.last().map(|e| e.index),
            hard_state: hs,
            soft,
        });
        Ok(Ready {
            soft_state: soft,
            soft_state_changed: soft != self.prev_soft,
            messages: std::mem::take(&mut self.msgs),
            snapshot: self.incoming_snapshot.take(),
            entries,
            hard_state: (hs != self.prev_hs).then_some(hs),
            persisted_messages: std::mem::take(&mut self.persisted_msgs),
            committed_entries,
            read_states: std::mem::take(&mut self.read_states),
            dropped_reads: std::mem::take(&mut self.dropped_reads),
        })
    }

    /// Declares the last [`Ready`] handled: its writes are durable, its committed entries
    /// applied. Does nothing if no Ready is outstanding.
    pub fn advance(&mut self) {
        let Some(h) = self.handed.take() else { return };
        if let Some(p) = h.persist_to {
            self.log.persisted = self.log.persisted.max(p);
            self.log.unstable_from = p + 1;
        }
        if let Some(a) = h.apply_to {
            self.log.applied = self.log.applied.max(a);
        }
        self.prev_hs = h.hard_state;
        self.prev_soft = h.soft;
        if self.role == Role::Leader {
            let persisted = self.log.persisted;
            if let Some(p) = self.progress.get_mut(&self.id) {
                p.maybe_update(persisted);
            }
            if self.maybe_commit() {
                self.pending_bcast = true;
            }
        }
    }

    /// Forgets what the outstanding [`Ready`] handed out, as if the process crashed before
    /// persisting it. Only for simulations, which then rebuild the node from storage.
    #[doc(hidden)]
    pub fn __is_ready_outstanding(&self) -> bool {
        self.handed.is_some()
    }
}
