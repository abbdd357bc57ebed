//! The driver thread of a [`crate::Node`]: input handling, ticks and the Ready round.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::group::Group;
use super::node::{GroupStatus, Input, NodeOptions, NodeStatsSnapshot};
use super::snapshot_stream::{
    ChunkAck, INCOMING_EXPIRES, MAX_STREAMS, Spool, StreamError, StreamTarget, restore,
    spawn_stream,
};
use super::snapshot_writer::{PendingSnapshot, SnapshotWriter};
use super::state_machine::StateMachine;
use crate::transport::Transport;
use crate::{
    ConfState, Error, GroupWrite, HardState, LogStore, Message, MessageKind, NodeId, RaftState,
    RawNode, Ready, Result, Snapshot, SnapshotFile, SnapshotPersister,
};

/// Owns every group of the node; runs on the driver thread.
pub(crate) struct Worker {
    pub(crate) opts: NodeOptions,
    /// The store's snapshot file writer (`None`: snapshots are written inline).
    pub(crate) persister: Option<Arc<dyn SnapshotPersister>>,
    /// The background thread that runs `persister`.
    pub(crate) snapshots: Option<SnapshotWriter>,
    pub(crate) store: Box<dyn LogStore>,
    pub(crate) transport: Arc<dyn Transport>,
    /// The driver's own input channel (for the threads it starts).
    pub(crate) inputs: Sender<Input>,
    /// Where snapshots streamed to this node are received.
    pub(crate) spool: Spool,
    /// Snapshots being streamed to followers, by group and follower: the stream's id and
    /// where its acknowledgements go.
    pub(crate) streams: HashMap<(u64, NodeId), (u64, Sender<ChunkAck>)>,
    /// The id of the next stream this node starts.
    pub(crate) next_stream_id: u64,
    pub(crate) groups: BTreeMap<u64, Group>,
    pub(crate) rx: Receiver<Input>,
    pub(crate) stats: Arc<Mutex<NodeStatsSnapshot>>,
    pub(crate) fatal: Option<Error>,
    /// The storage failure that stopped the driver, for [`super::Node::failure`].
    pub(crate) failure: Arc<Mutex<Option<String>>>,
}

impl Drop for Worker {
    /// Also runs when the driver thread unwinds from a panic (say, in a user
    /// `StateMachine`): every waiter, and every request still queued, learns the node
    /// stopped instead of sleeping until its own timeout. After a normal shutdown nothing
    /// is left to fail.
    fn drop(&mut self) {
        // Fails waiting proposals and reads, then whatever is still queued.
        self.shutdown();
    }
}

impl Worker {
    pub(crate) fn run(&mut self) {
        let mut next_tick = Instant::now() + self.opts.tick;
        loop {
            let busy = self.groups.values().any(|g| g.raw.has_ready());
            let wait = if busy {
                Duration::ZERO
            } else {
                next_tick.saturating_duration_since(Instant::now())
            };
            match self.rx.recv_timeout(wait) {
                Ok(Input::Stop) => break,
                Ok(i) => {
                    if self.handle(i) {
                        break;
                    }
                    let mut n = 1;
                    while n < self.opts.max_batch {
                        match self.rx.try_recv() {
                            Ok(Input::Stop) => return self.shutdown(),
                            Ok(i) => {
                                if self.handle(i) {
                                    return self.shutdown();
                                }
                            }
                            Err(_) => break,
                        }
                        n += 1;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if Instant::now() >= next_tick {
                next_tick += self.opts.tick;
                if next_tick < Instant::now() {
                    next_tick = Instant::now() + self.opts.tick;
                }
                let now = Instant::now();
                for g in self.groups.values_mut() {
                    let _ = g.raw.tick();
                    g.expire_reads(now);
                    // A partly received snapshot its leader gave up on, or that the log
                    // made useless, is dropped with its file.
                    let stale = g.incoming.as_ref().is_some_and(|i| {
                        i.last_chunk.elapsed() > INCOMING_EXPIRES
                            || g.raw.committed() >= i.meta.index
                    });
                    if stale && let Some(i) = g.incoming.take() {
                        i.abandon();
                    }
                }
                self.compact_idle_groups();
            }
            if let Err(e) = self.process_ready() {
                tracing::error!(error = %e, "raft node stops: storage failed");
                *self.failure.lock() = Some(format!("storage failed: {e}"));
                self.fatal = Some(e);
                break;
            }
        }
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // No snapshot file is written once the store closes.
        if let Some(mut w) = self.snapshots.take() {
            w.stop();
        }
        let e = self.fatal.take().unwrap_or(Error::Stopped);
        for g in self.groups.values_mut() {
            g.fail_all(&e);
        }
        // Fail whatever is still queued.
        while let Ok(i) = self.rx.try_recv() {
            match i {
                Input::Propose(_, _, p) | Input::ConfChange(_, _, p) => p.fail(e.duplicate()),
                Input::Transfer(_, _, tx) | Input::Campaign(_, tx) => {
                    let _ = tx.send(Err(Error::Stopped));
                }
                Input::AddGroup(_, _, _, _, tx) => {
                    if let Some(tx) = tx {
                        let _ = tx.send(Err(Error::Stopped));
                    }
                }
                Input::Status(_, tx) => {
                    let _ = tx.send(Err(Error::Stopped));
                }
                Input::ReadIndex(_, _, tx) => {
                    let _ = tx.send(Err(Error::Stopped));
                }
                Input::RemoveGroup(_, tx) => {
                    let _ = tx.send(Err(Error::Stopped));
                }
                Input::SnapshotPersisted(_, _, r) => {
                    if let (Ok(f), Some(p)) = (r, &self.persister) {
                        p.discard(&f);
                    }
                }
                Input::SnapshotStreamed(..) | Input::Msg(..) | Input::Stop => {}
            }
        }
    }

    /// Handles one input; true if the driver must stop.
    fn handle(&mut self, input: Input) -> bool {
        match input {
            Input::Msg(group, m) => match m.kind {
                MessageKind::SnapshotChunk { .. } => self.receive_chunk(group, m),
                MessageKind::SnapshotChunkAck {
                    id, seq, accepted, ..
                } => {
                    if let Some((_, acks)) = self.streams.get(&(group, m.from)) {
                        let _ = acks.send((id, seq, accepted));
                    }
                }
                _ => match self.groups.get_mut(&group) {
                    Some(g) => {
                        let _ = g.raw.step(m);
                    }
                    None => self.stats.lock().unknown_group_messages += 1,
                },
            },
            Input::Propose(group, data, p) => match self.groups.get_mut(&group) {
                Some(g) => match g.raw.propose(data) {
                    Ok(id) => {
                        p.accept(id);
                        g.waiting.insert(id.index, (id.term, p));
                        self.stats.lock().proposals += 1;
                    }
                    Err(e) => p.fail(e),
                },
                None => p.fail(Error::UnknownGroup { group }),
            },
            Input::ConfChange(group, change, p) => match self.groups.get_mut(&group) {
                Some(g) => match g.raw.propose_conf_change(change) {
                    Ok(id) => {
                        p.accept(id);
                        g.waiting.insert(id.index, (id.term, p));
                    }
                    Err(e) => p.fail(e),
                },
                None => p.fail(Error::UnknownGroup { group }),
            },
            Input::Transfer(group, to, tx) => {
                let r = match self.groups.get_mut(&group) {
                    Some(g) => g.raw.transfer_leader(to),
                    None => Err(Error::UnknownGroup { group }),
                };
                let _ = tx.send(r);
            }
            Input::Campaign(group, tx) => {
                let r = match self.groups.get_mut(&group) {
                    Some(g) => g.raw.campaign_now(),
                    None => Err(Error::UnknownGroup { group }),
                };
                let _ = tx.send(r);
            }
            Input::AddGroup(group, bootstrap, sm, initial, tx) => {
                let r = self.add_group(group, bootstrap, sm, initial);
                match tx {
                    Some(tx) => {
                        let _ = tx.send(r);
                    }
                    None => {
                        if let Err(e) = r {
                            tracing::warn!(group, error = %e, "add_group_nowait failed");
                        }
                    }
                }
            }
            Input::Status(group, tx) => {
                let r = self
                    .groups
                    .get(&group)
                    .map(|g| GroupStatus {
                        role: g.raw.role(),
                        leader: g.raw.leader(),
                        term: g.raw.term(),
                        committed: g.raw.committed(),
                        applied: g.raw.applied(),
                        conf: g.raw.conf().clone(),
                        pending_reads: g.reads.len() + g.reads_confirmed.len(),
                    })
                    .ok_or(Error::UnknownGroup { group });
                let _ = tx.send(r);
            }
            Input::ReadIndex(group, deadline, tx) => match self.groups.get_mut(&group) {
                Some(g) => {
                    g.next_read_ctx += 1;
                    let ctx = g.next_read_ctx;
                    match g.raw.read_index(ctx) {
                        Ok(()) => {
                            g.reads.insert(ctx, (deadline, tx));
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                }
                None => {
                    let _ = tx.send(Err(Error::UnknownGroup { group }));
                }
            },
            Input::RemoveGroup(group, tx) => {
                // Its streams end at their next wait (no more acknowledgements reach them).
                self.streams.retain(|&(g, _), _| g != group);
                let r = match self.groups.remove(&group) {
                    Some(mut g) => {
                        if let Some(i) = g.incoming.take() {
                            i.abandon();
                        }
                        g.fail_all(&Error::Stopped);
                        Ok(())
                    }
                    None => Err(Error::UnknownGroup { group }),
                };
                let _ = tx.send(r);
            }
            Input::SnapshotPersisted(group, snap, r) => {
                return self.snapshot_persisted(group, snap, r);
            }
            Input::SnapshotStreamed(group, to, id, r) => self.snapshot_streamed(group, to, id, r),
            Input::Stop => return true,
        }
        false
    }

    /// The background writer made `snap` of `group` durable in a file (or failed to):
    /// refer to it in the log and compact the group, or discard it if the group is gone
    /// or already has a newer snapshot. True if the node must stop (storage failed).
    fn snapshot_persisted(&mut self, group: u64, snap: Snapshot, r: Result<SnapshotFile>) -> bool {
        let index = snap.meta.index;
        let current = self
            .groups
            .get_mut(&group)
            .filter(|g| g.snapshot_in_flight == Some(index));
        let Some(g) = current else {
            // Removed (and maybe added again) while the file was written.
            if let (Ok(f), Some(p)) = (r, &self.persister) {
                p.discard(&f);
                self.stats.lock().snapshots_discarded += 1;
            }
            return false;
        };
        g.snapshot_in_flight = None;
        let file = match r {
            Ok(f) => f,
            Err(e) => {
                // Nothing refers to a file that failed: the log is intact; retry later.
                tracing::error!(group, index, error = %e, "raft: snapshot file not written; log not compacted");
                g.snapshot_skipped();
                self.stats.lock().snapshot_failures += 1;
                return false;
            }
        };
        if g.raw.snapshot_index() >= index {
            // A snapshot from the leader overtook it.
            if let Some(p) = &self.persister {
                p.discard(&file);
            }
            self.stats.lock().snapshots_discarded += 1;
            return false;
        }
        g.snapshot_kept(snap.data.len());
        let data = snap.data.clone();
        let r = self
            .store
            .write_snapshot_ref(group, snap.clone(), file)
            .and_then(|()| g.raw.compact(snap));
        if let Err(e) = r {
            tracing::error!(error = %e, "raft node stops: storage failed");
            *self.failure.lock() = Some(format!("storage failed: {e}"));
            self.fatal = Some(e);
            return true;
        }
        self.spool.gc(group, Some(&data));
        self.stats.lock().snapshots += 1;
        false
    }

    /// Compactions of durable groups that apply nothing now: `process_ready` looks only at
    /// groups with a Ready, and a region that went quiet (a split moved its writes to its
    /// child, say) would otherwise keep its log in memory for good. Only with a
    /// background writer (a store with snapshot files).
    fn compact_idle_groups(&mut self) {
        let Some(w) = &self.snapshots else {
            return;
        };
        for (&id, g) in self.groups.iter_mut() {
            if !g.durable || g.raw.has_ready() {
                continue;
            }
            if let Some(pending) = g.maybe_snapshot() {
                queue_snapshot(w, id, g, pending);
            }
        }
    }

    /// A stream to follower `to` of `group` ended; a failed one is tried again when the
    /// follower asks next (a failure to produce the state only after
    /// [`super::group::SNAPSHOT_BUILD_RETRY`]).
    fn snapshot_streamed(
        &mut self,
        group: u64,
        to: NodeId,
        id: u64,
        r: std::result::Result<u64, StreamError>,
    ) {
        // Only this stream's entry: the group may have been removed and added again, and
        // another stream to `to` started since.
        if self.streams.get(&(group, to)).is_none_or(|(s, _)| *s != id) {
            return;
        }
        self.streams.remove(&(group, to));
        let Some(g) = self.groups.get_mut(&group) else {
            return;
        };
        g.snapshot_builds.remove(&to);
        match r {
            Ok(bytes) => {
                g.snapshot_build_failed.remove(&to);
                tracing::debug!(group, to, bytes, "raft: snapshot streamed to a follower");
                let mut stats = self.stats.lock();
                stats.snapshots_built += 1;
                stats.snapshot_bytes_streamed += bytes;
            }
            Err(e) => {
                if matches!(e, StreamError::Produce(_)) {
                    g.snapshot_build_failed.insert(to, Instant::now());
                }
                tracing::warn!(group, to, error = %e, "raft: snapshot for a follower not sent");
                self.stats.lock().snapshot_failures += 1;
            }
        }
    }

    /// Starts streaming a snapshot to each follower of a durable group that asked for one
    /// and has none on the way.
    fn build_requested_snapshots(&mut self) {
        let me = self.opts.raft.id;
        for (&id, g) in self.groups.iter_mut() {
            for to in g.raw.take_snapshot_requests() {
                let failed_lately = g
                    .snapshot_build_failed
                    .get(&to)
                    .is_some_and(|t| t.elapsed() < super::group::SNAPSHOT_BUILD_RETRY);
                if failed_lately || g.snapshot_builds.contains_key(&to) {
                    continue;
                }
                if self.streams.len() >= MAX_STREAMS {
                    // The follower asks again at its next heartbeat answer.
                    continue;
                }
                let Some((meta, produce)) = g.stream_for_follower() else {
                    continue;
                };
                if !matches!(g.raw.stream_snapshot_started(to, meta.index), Ok(true)) {
                    continue;
                }
                let (acks_tx, acks) = crossbeam_channel::unbounded();
                let meta_index = meta.index;
                let stream_id = self.next_stream_id;
                self.next_stream_id = self.next_stream_id.wrapping_add(1);
                let target = StreamTarget {
                    id: stream_id,
                    group: id,
                    from: me,
                    to,
                    term: g.raw.term(),
                    meta,
                };
                let started = spawn_stream(
                    target,
                    produce,
                    self.transport.clone(),
                    acks,
                    self.inputs.clone(),
                );
                match started {
                    Ok(()) => {
                        g.snapshot_builds.insert(to, meta_index);
                        self.streams.insert((id, to), (stream_id, acks_tx));
                    }
                    Err(e) => {
                        tracing::error!(group = id, to, error = %e, "raft: snapshot stream not started");
                    }
                }
            }
        }
    }

    /// A chunk of a snapshot streamed to this node: written to the spool in order and
    /// acknowledged; the last one installs the snapshot through the group's core.
    fn receive_chunk(&mut self, group: u64, m: Message) {
        let me = self.opts.raft.id;
        if !m.is_sane() || m.from == 0 || m.from == me || m.to != me {
            tracing::warn!(
                group,
                from = m.from,
                "raft: snapshot chunk refused (insane)"
            );
            return;
        }
        let MessageKind::SnapshotChunk {
            id,
            meta,
            seq,
            last,
            data,
        } = m.kind
        else {
            return;
        };
        let ack = |g_term: u64, seq: u32, accepted: bool| Message {
            from: me,
            to: m.from,
            term: g_term,
            kind: MessageKind::SnapshotChunkAck {
                id,
                index: meta.index,
                seq,
                accepted,
            },
        };
        let Some(g) = self.groups.get_mut(&group) else {
            self.stats.lock().unknown_group_messages += 1;
            self.transport.send(group, ack(m.term, seq, false));
            return;
        };
        let term = g.raw.term();
        if m.term < term {
            // A deposed leader's: its stream ends when nobody answers.
            return;
        }
        if meta.index <= g.raw.committed() {
            // Not needed (any more): stop the sender.
            if let Some(old) = g.incoming.take() {
                old.abandon();
            }
            self.transport.send(group, ack(term, seq, false));
            return;
        }
        let same = g
            .incoming
            .as_ref()
            .is_some_and(|i| i.id == id && i.from == m.from && i.term == m.term);
        if !same {
            if seq != 0 {
                return;
            }
            if let Some(old) = g.incoming.take() {
                old.abandon();
            }
            match self.spool.begin(group, id, meta.clone(), m.from, m.term) {
                Ok(i) => g.incoming = Some(i),
                Err(e) => {
                    tracing::error!(group, error = %e, "raft: cannot receive a snapshot");
                    self.transport.send(group, ack(term, seq, false));
                    return;
                }
            }
        }
        let Some(incoming) = g.incoming.as_mut() else {
            return;
        };
        if seq < incoming.next {
            // A resent chunk already written: answer again, its answer may have been lost.
            let next = incoming.next;
            self.transport.send(group, ack(term, next - 1, true));
            return;
        }
        if seq > incoming.next {
            return;
        }
        if let Err(e) = incoming.write(&data) {
            tracing::error!(group, error = %e, "raft: snapshot chunk not written");
            if let Some(old) = g.incoming.take() {
                old.abandon();
            }
            self.transport.send(group, ack(term, seq, false));
            return;
        }
        self.transport.send(group, ack(term, seq, true));
        if !last {
            return;
        }
        let Some(done) = g.incoming.take() else {
            return;
        };
        match done.finish() {
            Ok(snapshot) => {
                self.spool.received(group);
                let _ = g.raw.step(Message {
                    from: m.from,
                    to: me,
                    term: m.term,
                    kind: MessageKind::Snapshot { snapshot },
                });
            }
            Err(e) => {
                tracing::error!(group, error = %e, "raft: received snapshot not kept");
            }
        }
    }

    fn add_group(
        &mut self,
        group: u64,
        bootstrap: ConfState,
        mut sm: Box<dyn StateMachine>,
        initial: Option<Snapshot>,
    ) -> Result<()> {
        if self.groups.contains_key(&group) {
            return Err(Error::GroupExists { group });
        }
        let stored = self.store.load(group)?;
        if let (None, Some(snap)) = (&stored, initial) {
            // Seed the group durably before it exists anywhere else, so a restart finds
            // exactly this starting point.
            let hs = HardState {
                term: snap.meta.term,
                vote: 0,
                commit: snap.meta.index,
            };
            self.store.write(&[GroupWrite {
                group,
                snapshot: Some(snap),
                entries: Vec::new(),
                hard_state: Some(hs),
            }])?;
        }
        let mut st = self.store.load(group)?.unwrap_or_default();
        st.conf = bootstrap;
        let mut cfg = self.opts.raft.clone();
        // A proposal the store cannot write is refused when proposed
        // (`Error::ProposalTooLarge`), never at the write, which would stop the node.
        cfg.max_proposal_bytes = cfg.max_proposal_bytes.min(self.store.max_entry_bytes());
        if let Some(s) = &st.snapshot {
            restore(&mut *sm, s, self.spool.dir()).map_err(|message| Error::StateMachine {
                message: format!(
                    "group {group}: snapshot at {} not restored: {message}",
                    s.meta.index
                ),
            })?;
        }
        self.spool
            .gc(group, st.snapshot.as_ref().map(|s| &s.data[..]));
        cfg.applied = sm.durable_applied();
        let durable = sm.durable_state();
        let mut raw = RawNode::new(cfg, RaftState { ..st })?;
        raw.set_snapshots_on_demand(durable);
        self.groups.insert(
            group,
            Group {
                id: group,
                raw,
                sm,
                waiting: BTreeMap::new(),
                sm_leader_term: None,
                snapshot_every: self.opts.snapshot_every,
                snapshot_log_percent: self.opts.snapshot_log_percent,
                log_bytes: 0,
                last_snapshot_bytes: 0,
                snapshot_retry_at: 0,
                snapshot_in_flight: None,
                reads: HashMap::new(),
                reads_confirmed: Vec::new(),
                next_read_ctx: 0,
                commit_marked: 0,
                durable,
                compact_log_bytes: self.opts.compact_log_bytes,
                compact_soon: false,
                snapshot_builds: BTreeMap::new(),
                incoming: None,
                snapshot_build_failed: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// One Ready round over every group: send, one durable write, send what depended on
    /// it, apply, advance, and snapshot groups whose log grew long.
    fn process_ready(&mut self) -> Result<()> {
        // Before any Ready is taken: an inline build sends at once.
        self.build_requested_snapshots();
        let mut readies: Vec<(u64, Ready)> = Vec::new();
        let mut batch: Vec<GroupWrite> = Vec::new();
        for (&id, g) in self.groups.iter_mut() {
            if !g.raw.has_ready() {
                continue;
            }
            g.mark_committed();
            let rd = g.raw.ready()?;
            for m in &rd.messages {
                self.transport.send(id, m.clone());
            }
            if let Some(w) = GroupWrite::from_ready(id, &rd) {
                batch.push(w);
            }
            readies.push((id, rd));
        }
        if readies.is_empty() {
            return Ok(());
        }
        if !batch.is_empty() {
            self.store.write(&batch)?;
            self.stats.lock().writes += 1;
        }
        let mut applied = 0;
        let mut snaps = Vec::new();
        for (id, rd) in readies {
            let Some(g) = self.groups.get_mut(&id) else {
                continue;
            };
            for m in &rd.persisted_messages {
                self.transport.send(id, m.clone());
            }
            g.apply(&rd, self.spool.dir())?;
            applied += rd.committed_entries.len() as u64;
            g.raw.advance();
            g.answer_reads(&rd);
            if let Some(pending) = g.maybe_snapshot() {
                match &self.snapshots {
                    // Encoded and written off this thread; recorded when durable
                    // (`snapshot_persisted`), skipped there if too large.
                    Some(w) => queue_snapshot(w, id, g, pending),
                    None => match pending.encode() {
                        Ok(s) => {
                            g.snapshot_kept(s.data.len());
                            snaps.push((id, s));
                        }
                        Err(e) => {
                            // Too large for followers to decode or the store to read
                            // back (a refused write stops the node): keep the log
                            // instead and try again after another `snapshot_every`.
                            tracing::error!(group = id, error = %e, "raft: state machine snapshot not kept; log not compacted");
                            g.snapshot_skipped();
                        }
                    },
                }
            }
        }
        self.stats.lock().applied += applied;
        if !snaps.is_empty() {
            let writes: Vec<GroupWrite> = snaps
                .iter()
                .map(|(id, s)| GroupWrite {
                    group: *id,
                    snapshot: Some(s.clone()),
                    ..GroupWrite::default()
                })
                .collect();
            self.store.write(&writes)?;
            let done = snaps.len() as u64;
            for (id, s) in snaps {
                if let Some(g) = self.groups.get_mut(&id) {
                    self.spool.gc(id, Some(&s.data));
                    g.raw.compact(s)?;
                }
            }
            self.stats.lock().snapshots += done;
        }
        Ok(())
    }
}

/// Hands `pending` of group `id` to the background writer, with it in flight until the
/// writer answers; a writer that is gone makes the group try again later.
fn queue_snapshot(w: &SnapshotWriter, id: u64, g: &mut Group, pending: PendingSnapshot) {
    g.snapshot_in_flight = Some(pending.meta.index);
    if !w.submit(id, pending) {
        g.snapshot_in_flight = None;
        g.snapshot_skipped();
    }
}
