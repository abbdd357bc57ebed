//! [`Node`]: one thread that drives every group hosted on a node.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::proposal::Proposal;
use super::snapshot_writer::SnapshotWriter;
use super::state_machine::StateMachine;
use super::worker::Worker;
use crate::transport::Transport;
use crate::{ConfChange, ConfState, Config, Error, LogStore, Message, NodeId, Snapshot};
use crate::{Result, Role};
use crate::{SnapshotFile, SnapshotPersister};

/// Settings of a [`Node`].
///
/// Build it with [`NodeOptions::new`] (or [`NodeOptions::default`] and
/// [`NodeOptions::with_id`]) and the `with_*` methods, or assign the public fields of such a
/// value: the struct is `#[non_exhaustive]`, so later settings can be added without breaking
/// callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Raft settings used for every group (the id is this node's).
    pub raft: Config,
    /// Length of one tick.
    pub tick: Duration,
    /// Take a snapshot and compact the log after this many applied entries (0 = never).
    pub snapshot_every: u64,
    /// When not 0, a group also waits until the entries applied since its last snapshot
    /// hold at least this percentage of that snapshot's bytes (or until
    /// [`SNAPSHOT_ENTRIES_CAP`] times `snapshot_every` entries), so that encoding a large
    /// state machine costs a bounded share of what was written, not one full copy per
    /// `snapshot_every` entries whatever their size. TiKV bounds its Raft log by size in
    /// the same spirit (`raft-log-gc-size-limit`, 3/4 of a region's split size). 0 (the
    /// default): entries alone decide.
    pub snapshot_log_percent: u64,
    /// Inputs (messages, proposals) handled per loop iteration at most; everything handled
    /// in one iteration shares one log write and one fsync.
    pub max_batch: usize,
    /// For a group whose state machine keeps its state durably
    /// ([`StateMachine::durable_state`]): its log is also compacted once the entries
    /// applied since the last compaction hold this many bytes, whatever their number, so
    /// the log a node keeps in memory stays bounded (a few large entries never reach
    /// `snapshot_every`). 0: entries alone decide.
    pub compact_log_bytes: u64,
}

impl NodeOptions {
    /// Defaults for node `id`: 10 ms ticks, a snapshot every 10 000 entries.
    pub fn new(id: NodeId) -> NodeOptions {
        NodeOptions::default().with_id(id)
    }

    /// Sets the node's id, [`Config::id`] of [`NodeOptions::raft`].
    #[must_use]
    pub fn with_id(mut self, id: NodeId) -> Self {
        self.raft.id = id;
        self
    }

    /// Sets [`NodeOptions::raft`].
    #[must_use]
    pub fn with_raft(mut self, raft: Config) -> Self {
        self.raft = raft;
        self
    }

    /// Sets [`NodeOptions::tick`].
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets [`NodeOptions::snapshot_every`].
    #[must_use]
    pub fn with_snapshot_every(mut self, entries: u64) -> Self {
        self.snapshot_every = entries;
        self
    }

    /// Sets [`NodeOptions::compact_log_bytes`].
    #[must_use]
    pub fn with_compact_log_bytes(mut self, bytes: u64) -> Self {
        self.compact_log_bytes = bytes;
        self
    }

    /// Sets [`NodeOptions::snapshot_log_percent`].
    #[must_use]
    pub fn with_snapshot_log_percent(mut self, percent: u64) -> Self {
        self.snapshot_log_percent = percent;
        self
    }

    /// Sets [`NodeOptions::max_batch`].
    #[must_use]
    pub fn with_max_batch(mut self, inputs: usize) -> Self {
        self.max_batch = inputs;
        self
    }
}

/// With [`NodeOptions::snapshot_log_percent`] set, a group snapshots after this many times
/// [`NodeOptions::snapshot_every`] entries however few bytes they hold.
pub const SNAPSHOT_ENTRIES_CAP: u64 = 50;

impl Default for NodeOptions {
    /// The defaults with node id 0, which [`Node::start`] refuses: set the id with
    /// [`NodeOptions::with_id`] (or use [`NodeOptions::new`]).
    fn default() -> NodeOptions {
        NodeOptions {
            raft: Config::default(),
            tick: Duration::from_millis(10),
            snapshot_every: 10_000,
            snapshot_log_percent: 0,
            max_batch: 4096,
            compact_log_bytes: 32 << 20,
        }
    }
}

/// What a group looks like from its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    /// Role of this node.
    pub role: Role,
    /// Known leader.
    pub leader: Option<NodeId>,
    /// Current term.
    pub term: u64,
    /// Commit index.
    pub committed: u64,
    /// Applied index.
    pub applied: u64,
    /// Membership in effect.
    pub conf: ConfState,
    /// ReadIndex requests still waiting (for the quorum or for the apply). A request
    /// whose caller timed out is dropped at the next tick.
    pub pending_reads: usize,
}

/// Counters of a [`Node`] (a plain snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStatsSnapshot {
    /// Loop iterations that wrote to the log.
    pub writes: u64,
    /// Proposals accepted by a leader on this node.
    pub proposals: u64,
    /// Entries applied.
    pub applied: u64,
    /// Messages for unknown groups, dropped.
    pub unknown_group_messages: u64,
    /// Snapshots this node's groups took of themselves and recorded (log compacted).
    pub snapshots: u64,
    /// Snapshots written by the background writer and then discarded (the group was
    /// gone or already had a newer snapshot when the file became durable).
    pub snapshots_discarded: u64,
    /// Snapshots the background writer failed to write (retried after another
    /// `snapshot_every` entries).
    pub snapshot_failures: u64,
    /// Snapshots streamed on demand to a follower behind the log's start (groups of a
    /// durable state machine, [`StateMachine::durable_state`]), every chunk
    /// acknowledged.
    pub snapshots_built: u64,
    /// Bytes of those streams.
    pub snapshot_bytes_streamed: u64,
}

pub(crate) enum Input {
    Msg(u64, Message),
    Propose(u64, Bytes, Proposal),
    ConfChange(u64, ConfChange, Proposal),
    Transfer(u64, NodeId, Sender<Result<()>>),
    Campaign(u64, Sender<Result<()>>),
    AddGroup(
        u64,
        ConfState,
        Box<dyn StateMachine>,
        Option<Snapshot>,
        Option<Sender<Result<()>>>,
    ),
    Status(u64, Sender<Result<GroupStatus>>),
    /// A ReadIndex request and when its caller gives up.
    ReadIndex(u64, Instant, Sender<Result<u64>>),
    RemoveGroup(u64, Sender<Result<()>>),
    /// The background writer finished a group's snapshot: its file, or why not.
    SnapshotPersisted(u64, Snapshot, Result<SnapshotFile>),
    /// A snapshot of a group (a durable state machine's) was streamed to one follower:
    /// its bytes, or why not.
    SnapshotStreamed(
        u64,
        NodeId,
        u64,
        std::result::Result<u64, super::snapshot_stream::StreamError>,
    ),
    Stop,
}

/// A cheap handle that delivers messages from the network to a [`Node`].
#[derive(Clone)]
pub struct Mailbox {
    tx: Sender<Input>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mailbox")
    }
}

impl Mailbox {
    /// Hands a message of `group` to the node (dropped if the node stopped).
    pub fn deliver(&self, group: u64, msg: Message) {
        let _ = self.tx.send(Input::Msg(group, msg));
    }
}

/// One node: a driver thread that ticks, steps, persists (one log write and fsync per
/// iteration for all groups: group commit) and applies, for every group it hosts.
///
/// Snapshots the groups take of themselves (every [`NodeOptions::snapshot_every`] applied
/// entries) are taken on the driver thread as a deferred encoding
/// ([`StateMachine::snapshot_deferred`]: a cheap consistent view). If the store has a
/// [`crate::SnapshotPersister`] (a [`crate::Wal`] does), a second thread, one per node,
/// encodes it and writes it to its own file: the driver goes on with every group meanwhile,
/// and records the snapshot and compacts the group's log only once the file is durable.
/// Otherwise the encoding runs on the driver thread. One snapshot per group is in flight at
/// a time.
pub struct Node {
    id: NodeId,
    tx: Sender<Input>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Mutex<NodeStatsSnapshot>>,
    /// Set by the driver when a storage failure stops it.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("id", &self.id).finish()
    }
}

impl Node {
    /// Starts the node's driver thread over `store` (which it owns from now on).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if [`NodeOptions::raft`] is invalid (see
    /// [`Config::validate`]); [`Error::Io`] if the thread cannot be spawned.
    pub fn start(
        opts: NodeOptions,
        store: Box<dyn LogStore>,
        transport: Arc<dyn Transport>,
    ) -> Result<Node> {
        opts.raft.validate()?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let stats = Arc::new(Mutex::new(NodeStatsSnapshot::default()));
        let failure = Arc::new(Mutex::new(None));
        let id = opts.raft.id;
        let persister: Option<Arc<dyn SnapshotPersister>> = store.snapshot_persister();
        let snapshots = match &persister {
            Some(p) => Some(SnapshotWriter::start(id, p.clone(), tx.clone())?),
            None => None,
        };
        let spool = super::snapshot_stream::Spool::open(store.snapshot_spool_dir())?;
        let mut driver = Worker {
            opts,
            persister,
            snapshots,
            store,
            transport,
            inputs: tx.clone(),
            spool,
            streams: HashMap::new(),
            // Distinct from the ids of this node's earlier runs, which a follower may
            // still hold a partial stream of.
            next_stream_id: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            groups: BTreeMap::new(),
            rx,
            stats: stats.clone(),
            fatal: None,
            failure: failure.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("raft-node-{id}"))
            .spawn(move || driver.run())
            .map_err(|e| Error::io("raft driver thread", e))?;
        Ok(Node {
            id,
            tx,
            thread: Some(thread),
            stats,
            failure,
        })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The handle a transport uses to deliver messages here.
    pub fn mailbox(&self) -> Mailbox {
        Mailbox {
            tx: self.tx.clone(),
        }
    }

    fn call<T>(&self, make: impl FnOnce(Sender<Result<T>>) -> Input) -> Result<T> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx.send(make(tx)).map_err(|_| Error::Stopped)?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// Hosts `group` with `sm`, recovering its state from the store. `bootstrap` is the
    /// founding membership (the same on every founding member; empty for a node that
    /// joins later and learns the membership from the leader).
    ///
    /// # Errors
    /// [`Error::GroupExists`], storage errors, [`Error::Stopped`].
    pub fn add_group(
        &self,
        group: u64,
        bootstrap: ConfState,
        sm: Box<dyn StateMachine>,
    ) -> Result<()> {
        self.call(|tx| Input::AddGroup(group, bootstrap, sm, None, Some(tx)))
    }

    /// Hosts `group` like [`Node::add_group`], without waiting: usable from inside a
    /// [`StateMachine`] callback, which runs on the driver thread (a blocking call there
    /// would wait for itself). The group is added before the driver handles its next input.
    ///
    /// `initial`: when the store holds nothing for `group`, the group starts from this
    /// snapshot instead of an empty log, and the snapshot is made durable before anything
    /// else of the group. That is how a region split seeds a new group on every replica
    /// with the same data at the same position. Ignored when the store already knows the
    /// group (a restart). A failure (say, the group exists) is logged, not returned.
    pub fn add_group_nowait(
        &self,
        group: u64,
        bootstrap: ConfState,
        sm: Box<dyn StateMachine>,
        initial: Option<Snapshot>,
    ) {
        let _ = self
            .tx
            .send(Input::AddGroup(group, bootstrap, sm, initial, None));
    }

    /// Stops hosting `group` without waiting (see [`Node::add_group_nowait`]); its durable
    /// state stays in the store.
    pub fn remove_group_nowait(&self, group: u64) {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let _ = self.tx.send(Input::RemoveGroup(group, tx));
    }

    /// Stops hosting `group` (after a merge or when the node was removed from it). Its
    /// waiting proposals fail with [`Error::Stopped`]; its durable state stays in the store.
    ///
    /// # Errors
    /// [`Error::UnknownGroup`], [`Error::Stopped`].
    pub fn remove_group(&self, group: u64) -> Result<()> {
        self.call(|tx| Input::RemoveGroup(group, tx))
    }

    /// Proposes `data` to `group`. Never blocks; wait on the returned handle.
    pub fn propose(&self, group: u64, data: Bytes) -> Proposal {
        let p = Proposal::new();
        if self
            .tx
            .send(Input::Propose(group, data, p.clone()))
            .is_err()
        {
            p.fail(Error::Stopped);
        }
        p
    }

    /// Proposes a membership change to `group`.
    pub fn propose_conf_change(&self, group: u64, change: ConfChange) -> Proposal {
        let p = Proposal::new();
        if self
            .tx
            .send(Input::ConfChange(group, change, p.clone()))
            .is_err()
        {
            p.fail(Error::Stopped);
        }
        p
    }

    /// Starts a leader transfer of `group` to `to`.
    ///
    /// # Errors
    /// As [`crate::RawNode::transfer_leader`], plus [`Error::UnknownGroup`], [`Error::Stopped`].
    pub fn transfer_leader(&self, group: u64, to: NodeId) -> Result<()> {
        self.call(|tx| Input::Transfer(group, to, tx))
    }

    /// Makes this node campaign in `group` now.
    ///
    /// # Errors
    /// [`Error::UnknownGroup`], [`Error::Stopped`].
    pub fn campaign(&self, group: u64) -> Result<()> {
        self.call(|tx| Input::Campaign(group, tx))
    }

    /// A linearizable read point of `group` (ReadIndex, thesis §6.4): returns once a
    /// quorum confirmed this node still leads and the state machine applied up to the
    /// returned index, so reading the local state machine now is linearizable.
    ///
    /// # Errors
    /// [`Error::NotLeader`], [`Error::LeaderNotReady`] (a new leader before its first
    /// commit: retry), [`Error::UnknownGroup`], [`Error::Stopped`], [`Error::Timeout`].
    pub fn read_index(&self, group: u64, timeout: Duration) -> Result<u64> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        // The driver drops the request once its caller stops waiting.
        let deadline = Instant::now() + timeout;
        self.tx
            .send(Input::ReadIndex(group, deadline, tx))
            .map_err(|_| Error::Stopped)?;
        match rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(Error::Timeout),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(Error::Stopped),
        }
    }

    /// The state of `group` on this node.
    ///
    /// # Errors
    /// [`Error::UnknownGroup`], [`Error::Stopped`].
    pub fn status(&self, group: u64) -> Result<GroupStatus> {
        self.call(|tx| Input::Status(group, tx))
    }

    /// Counters.
    pub fn stats(&self) -> NodeStatsSnapshot {
        *self.stats.lock()
    }

    /// Why the driver stopped on its own, if it did: a storage failure (a full disk, say:
    /// everything already acknowledged is durable, nothing more is written), or the driver
    /// thread's panic (in a [`StateMachine`], say). `None` while it runs and after
    /// [`Node::stop`]. Every later request fails with [`Error::Stopped`], so a process
    /// hosting the node should stop too (and be restarted once the cause is fixed) rather
    /// than stay up serving nothing.
    pub fn failure(&self) -> Option<String> {
        if let Some(reason) = self.failure.lock().clone() {
            return Some(reason);
        }
        self.thread
            .as_ref()
            .is_some_and(|t| t.is_finished())
            .then(|| "the raft driver thread ended unexpectedly (a panic)".to_string())
    }

    /// Stops the driver thread (waiting proposals fail with [`Error::Stopped`]).
    pub fn stop(&mut self) {
        let _ = self.tx.send(Input::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}
