//! [`RawNode`]: the sans-IO Raft state machine of one node of one group, and its public API.

use std::collections::{BTreeMap, VecDeque};

use crate::progress::Progress;
use crate::raft_log::RaftLog;
use crate::ready::{ReadState, Role, SoftState};
use crate::storage::RaftState;
use crate::{ConfState, Config, Entry, EntryKind, Error, HardState};
use crate::{Message, MessageKind, NodeId, Result, Snapshot};

#[derive(Debug)]
pub(crate) struct PendingRead {
    pub(crate) ctx: u64,
    pub(crate) index: u64,
    pub(crate) seq: u64,
    pub(crate) acks: Vec<NodeId>,
}

/// What the outstanding [`Ready`] handed out, applied by [`RawNode::advance`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handed {
    pub(crate) persist_to: Option<u64>,
    pub(crate) apply_to: Option<u64>,
    pub(crate) hard_state: HardState,
    pub(crate) soft: SoftState,
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
/// messages to [`RawNode::step`], and runs the [`crate::Ready`] cycle.
///
/// Invariants: between [`RawNode::ready`] and [`RawNode::advance`], every mutating call
/// returns [`Error::ReadyOutstanding`]; a node never sends a vote or an append acknowledgement
/// before the state it depends on was handed out for persisting (it goes in
/// [`crate::Ready::persisted_messages`]); the leader counts its own log in the quorum only up to
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
    /// The latest snapshot, sent to followers that are behind the log's start (unless
    /// `snapshots_on_demand`).
    pub(crate) snapshot: Option<Snapshot>,
    /// The application builds a snapshot for each follower behind the log's start
    /// ([`RawNode::take_snapshot_requests`], [`RawNode::send_snapshot`]): the stored one
    /// only marks where the log starts.
    pub(crate) snapshots_on_demand: bool,
    /// Followers that need a snapshot built for them, not yet taken by the application.
    pub(crate) snapshot_requests: std::collections::BTreeSet<NodeId>,
    pub(crate) prev_hs: HardState,
    pub(crate) prev_soft: SoftState,
    pub(crate) handed: Option<Handed>,
    pub(crate) stats: NodeStats,
}

impl RawNode {
    /// Creates a node from its recovered durable state.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (see [`Config::validate`]); [`Error::Decode`] if the
    /// recovered entries are not consecutive after the snapshot.
    pub fn new(cfg: Config, state: RaftState) -> Result<RawNode> {
        cfg.validate()?;
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
            snapshots_on_demand: false,
            snapshot_requests: std::collections::BTreeSet::new(),
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
    /// On a leader, the highest index every other member holds (the smallest `matched` of
    /// their progress): compacting the log above it sends someone a snapshot. `None` when
    /// not leader or alone.
    pub fn replicated_index(&self) -> Option<u64> {
        if self.role != Role::Leader {
            return None;
        }
        self.progress
            .iter()
            .filter(|(id, _)| **id != self.id)
            .map(|(_, p)| p.matched)
            .min()
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

    pub(crate) fn soft_state(&self) -> SoftState {
        SoftState {
            role: self.role,
            leader: self.leader,
            term: self.term,
        }
    }

    pub(crate) fn check_idle(&self) -> Result<()> {
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

    /// Handles a message from another node of the group.
    ///
    /// # Errors
    /// [`Error::ReadyOutstanding`] between `ready()` and `advance()`. Messages not meant for
    /// this node, from id 0, or failing [`Message::is_sane`] are ignored and counted.
    pub fn step(&mut self, m: Message) -> Result<()> {
        self.check_idle()?;
        if m.to != self.id || m.from == 0 || m.from == self.id || !m.is_sane() {
            self.stats.messages_ignored += 1;
            return Ok(());
        }
        self.stats.messages_stepped += 1;
        self.step_inner(m);
        Ok(())
    }
}
