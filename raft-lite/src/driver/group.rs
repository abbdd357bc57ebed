//! One group hosted by a driver: its core, its state machine and its waiting proposals.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use crossbeam_channel::Sender;

use bytes::Bytes;

use super::proposal::Proposal;
use super::snapshot_stream::{Incoming, restore};
use super::snapshot_writer::PendingSnapshot;
use super::state_machine::{SnapshotStream, StateMachine};
use crate::{EntryKind, Error, RawNode, Ready, Result, Role, SnapshotMeta};

pub(crate) struct Group {
    pub(crate) id: u64,
    pub(crate) raw: RawNode,
    pub(crate) sm: Box<dyn StateMachine>,
    /// Proposals by log index, with the term they were appended in.
    pub(crate) waiting: BTreeMap<u64, (u64, Proposal)>,
    /// The term the state machine was told it leads in, if it was.
    pub(crate) sm_leader_term: Option<u64>,
    pub(crate) snapshot_every: u64,
    /// [`crate::NodeOptions::snapshot_log_percent`].
    pub(crate) snapshot_log_percent: u64,
    /// Bytes of the entries applied since the last snapshot was taken (or installed).
    pub(crate) log_bytes: u64,
    /// Bytes of the state machine's data in the last snapshot taken or installed.
    pub(crate) last_snapshot_bytes: u64,
    /// No snapshot is taken before this applied index (set after one was too large).
    pub(crate) snapshot_retry_at: u64,
    /// The index of the snapshot the background writer is persisting, if any: at most
    /// one per group, and only a notice for this very snapshot is recorded.
    pub(crate) snapshot_in_flight: Option<u64>,
    /// ReadIndex requests by context, waiting for the quorum check, with the time their
    /// caller gives up.
    pub(crate) reads: HashMap<u64, (Instant, Sender<crate::Result<u64>>)>,
    /// Confirmed reads waiting for `applied >= index`.
    pub(crate) reads_confirmed: Vec<(u64, Instant, Sender<crate::Result<u64>>)>,
    pub(crate) next_read_ctx: u64,
    /// Waiters up to this index were told their entry committed.
    pub(crate) commit_marked: u64,
    /// The state machine keeps its state durably ([`StateMachine::durable_state`]): the
    /// log is compacted with markers, and followers behind it get snapshots built for
    /// them.
    pub(crate) durable: bool,
    /// [`crate::NodeOptions::compact_log_bytes`].
    pub(crate) compact_log_bytes: u64,
    /// A durable group installed a full snapshot from its leader: compact with a marker
    /// at the next applied entry, so the snapshot's data is not kept in memory.
    pub(crate) compact_soon: bool,
    /// Followers a snapshot is being streamed to, with the snapshot's index: even a
    /// forced compaction keeps the log after the lowest of them, so the follower can
    /// catch up from the log once it installed the snapshot.
    pub(crate) snapshot_builds: BTreeMap<crate::NodeId, u64>,
    /// A snapshot this node is receiving from its leader, chunk by chunk.
    pub(crate) incoming: Option<Incoming>,
    /// Followers whose last snapshot could not be built (too large, say), with when: no
    /// new build for them before [`SNAPSHOT_BUILD_RETRY`] passed (every heartbeat answer
    /// asks again, and each build reads the whole state).
    pub(crate) snapshot_build_failed: BTreeMap<crate::NodeId, Instant>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("id", &self.id)
            .field("raw", &self.raw)
            .field("waiting", &self.waiting.len())
            .finish()
    }
}

impl Group {
    /// Applies a Ready's snapshot and committed entries (after its write is durable);
    /// a streamed snapshot is read from `spool`.
    ///
    /// # Errors
    /// The state machine could not read a streamed snapshot: the node must stop (the
    /// group would be left without its state).
    pub(crate) fn apply(&mut self, rd: &Ready, spool: Option<&Path>) -> Result<()> {
        let soft = rd.soft_state;
        // Leadership lost: tell the state machine before it applies anything further.
        if let Some(t) = self.sm_leader_term
            && (soft.role != Role::Leader || soft.term != t)
        {
            self.sm_leader_term = None;
            self.sm.on_follower(t);
        }
        if let Some(s) = &rd.snapshot {
            restore(&mut *self.sm, s, spool).map_err(|message| Error::StateMachine {
                message: format!(
                    "group {}: snapshot at {} not restored: {message}",
                    self.id, s.meta.index
                ),
            })?;
            self.compact_soon = self.durable;
            self.log_bytes = 0;
            self.last_snapshot_bytes = s.data.len() as u64;
            // Proposals at or below the snapshot cannot be matched any more.
            let keep = self.waiting.split_off(&(s.meta.index + 1));
            for (_, (_, p)) in std::mem::replace(&mut self.waiting, keep) {
                p.fail(Error::OutcomeUnknown);
            }
        }
        for e in &rd.committed_entries {
            self.log_bytes = self.log_bytes.saturating_add(e.data.len() as u64);
            let result = match e.kind {
                EntryKind::Normal => self.sm.apply(e.index, &e.data),
                EntryKind::ConfChange => {
                    if let Ok(cs) = e.conf_state() {
                        self.sm.on_conf_change(e.index, &cs);
                    }
                    Bytes::new()
                }
                EntryKind::Noop => {
                    if soft.role == Role::Leader
                        && e.term == soft.term
                        && self.sm_leader_term.is_none()
                    {
                        self.sm_leader_term = Some(e.term);
                        self.sm.on_leader(e.term);
                    }
                    Bytes::new()
                }
            };
            // Resolve every waiter up to this index: ours if the term matches, dropped if
            // another entry took the index.
            while let Some((&idx, _)) = self.waiting.first_key_value() {
                if idx > e.index {
                    break;
                }
                let Some((_, (term, p))) = self.waiting.pop_first() else {
                    break;
                };
                if idx == e.index && term == e.term {
                    p.apply(result.clone());
                } else {
                    p.fail(Error::ProposalDropped);
                }
            }
        }
        // Leadership lost: every committed entry was just applied, so what still waits is
        // uncommitted. It may yet commit under the next leader or be overwritten, and this
        // node may not learn which for a long time (an idle group never fills the index):
        // tell the proposers now instead of letting them wait for their timeout.
        if soft.role != Role::Leader && !self.waiting.is_empty() {
            for (_, (_, p)) in std::mem::take(&mut self.waiting) {
                p.fail(Error::OutcomeUnknown);
            }
        }
        Ok(())
    }

    /// Tells waiters whose entry is now committed (before it is applied).
    pub(crate) fn mark_committed(&mut self) {
        let committed = self.raw.committed();
        if committed <= self.commit_marked {
            return;
        }
        for (&idx, (term, p)) in self.waiting.range(self.commit_marked + 1..=committed) {
            if self.raw.term_at(idx) == Some(*term) {
                p.commit();
            }
        }
        self.commit_marked = committed;
    }

    /// Answers ReadIndex requests: confirmed ones once applied has reached their index,
    /// dropped ones (leadership lost) with `NotLeader`.
    pub(crate) fn answer_reads(&mut self, rd: &Ready) {
        for rs in &rd.read_states {
            if let Some((deadline, tx)) = self.reads.remove(&rs.ctx) {
                self.reads_confirmed.push((rs.index, deadline, tx));
            }
        }
        for ctx in &rd.dropped_reads {
            if let Some((_, tx)) = self.reads.remove(ctx) {
                let _ = tx.send(Err(Error::NotLeader {
                    leader: rd.soft_state.leader,
                }));
            }
        }
        let applied = self.raw.applied();
        self.reads_confirmed.retain(|(index, _, tx)| {
            if *index <= applied {
                let _ = tx.send(Ok(*index));
                false
            } else {
                true
            }
        });
    }

    /// Drops the ReadIndex requests whose caller gave up (here and in the core), so they
    /// do not pile up while no quorum answers (a partitioned leader without check-quorum
    /// may stay leader for a long time).
    pub(crate) fn expire_reads(&mut self, now: Instant) {
        let raw = &mut self.raw;
        self.reads.retain(|ctx, (deadline, _)| {
            let keep = *deadline > now;
            if !keep {
                raw.cancel_read(*ctx);
            }
            keep
        });
        self.reads_confirmed
            .retain(|(_, deadline, _)| *deadline > now);
    }

    /// A snapshot of the state machine at the applied index, if the log grew enough and
    /// none is in flight; its data is encoded later ([`StateMachine::snapshot_deferred`]).
    pub(crate) fn maybe_snapshot(&mut self) -> Option<PendingSnapshot> {
        if self.snapshot_every == 0 || self.snapshot_in_flight.is_some() {
            return None;
        }
        let applied = self.raw.applied();
        let since = self.raw.snapshot_index();
        if self.durable {
            return self.maybe_compact(applied, since);
        }
        if applied < since + self.snapshot_every || applied < self.snapshot_retry_at {
            return None;
        }
        // Invariant (with a percentage set): a snapshot is encoded only once the log it
        // replaces holds that share of the previous snapshot's bytes, or many entries.
        let small_log = self.log_bytes.saturating_mul(100)
            < self
                .last_snapshot_bytes
                .saturating_mul(self.snapshot_log_percent);
        let capped = applied
            >= since.saturating_add(
                self.snapshot_every
                    .saturating_mul(crate::driver::node::SNAPSHOT_ENTRIES_CAP),
            );
        if small_log && !capped {
            return None;
        }
        self.log_bytes = 0;
        let meta = self.applied_meta()?;
        Some(PendingSnapshot {
            meta,
            encode: infallible(self.sm.snapshot_deferred()),
        })
    }

    /// The position of a snapshot at the applied index; `None` if the applied entry's
    /// term or membership is unknown (never: the applied entry is not compacted away).
    fn applied_meta(&self) -> Option<SnapshotMeta> {
        self.meta_at(self.raw.applied())
    }

    /// The position of a snapshot at `index` (in the log, at most applied).
    fn meta_at(&self, index: u64) -> Option<SnapshotMeta> {
        Some(SnapshotMeta {
            index,
            term: self.raw.term_at(index)?,
            conf: self.raw.conf_state_at(index)?,
        })
    }

    /// A durable group's compaction: a marker at the applied index once the log since the
    /// last one holds `snapshot_every` entries or `compact_log_bytes` bytes (or at once
    /// after a full snapshot was installed). Its closure makes the state machine's state
    /// durable before the marker is written, so the log is never compacted past it.
    ///
    /// A leader compacts only up to what every follower holds (TiKV's raft log GC does the
    /// same), so a follower slowed down for a while catches up from the log rather than
    /// from a snapshot of the whole region, until the log holds
    /// [`FORCE_COMPACT_FACTOR`] times the thresholds: then up to the applied index, and a
    /// follower that far behind gets a snapshot.
    fn maybe_compact(&mut self, applied: u64, since: u64) -> Option<PendingSnapshot> {
        let due = applied >= since + self.snapshot_every
            || (self.compact_log_bytes > 0 && self.log_bytes >= self.compact_log_bytes)
            || (self.compact_soon && applied > since);
        if !due || applied <= since || applied < self.snapshot_retry_at {
            return None;
        }
        let forced = applied >= since + self.snapshot_every.saturating_mul(FORCE_COMPACT_FACTOR)
            || (self.compact_log_bytes > 0
                && self.log_bytes >= self.compact_log_bytes.saturating_mul(FORCE_COMPACT_FACTOR));
        let index = match self.raw.replicated_index() {
            Some(held) if !forced => held.min(applied),
            _ => applied,
        };
        let index = self
            .snapshot_builds
            .values()
            .min()
            .map_or(index, |&streaming| index.min(streaming));
        // A partial compaction waits until it drops a good share of the log, in entries
        // or bytes (not one entry per round behind a slow follower: each costs an engine
        // sync and a file).
        if index <= since {
            return None;
        }
        if index < applied && index - since < self.snapshot_every / 4 {
            let dropped: u64 = (since + 1..=index)
                .filter_map(|i| self.raw.entry(i))
                .map(|e| e.data.len() as u64)
                .sum();
            if self.compact_log_bytes == 0 || dropped < self.compact_log_bytes / 4 {
                return None;
            }
        }
        self.compact_soon = false;
        // The entries after `index` stay in the log: only those before it leave the count.
        self.log_bytes = (index + 1..=applied)
            .filter_map(|i| self.raw.entry(i))
            .map(|e| e.data.len() as u64)
            .sum();
        Some(PendingSnapshot {
            meta: self.meta_at(index)?,
            encode: {
                let marker = self.sm.compaction_marker();
                Box::new(move || marker().map_err(|message| Error::StateMachine { message }))
            },
        })
    }

    /// A stream of the state at the applied index for a follower behind the log's start
    /// (a durable group), written later on the stream's thread.
    pub(crate) fn stream_for_follower(&mut self) -> Option<(SnapshotMeta, SnapshotStream)> {
        let meta = self.applied_meta()?;
        Some((meta, self.sm.snapshot_stream()))
    }

    /// A snapshot with `data_bytes` of state machine data was kept (the log compacted).
    pub(crate) fn snapshot_kept(&mut self, data_bytes: usize) {
        self.last_snapshot_bytes = data_bytes as u64;
    }

    /// The snapshot just built could not be kept: wait another `snapshot_every` entries.
    pub(crate) fn snapshot_skipped(&mut self) {
        self.snapshot_retry_at = self.raw.applied() + self.snapshot_every;
    }

    pub(crate) fn fail_all(&mut self, e: &Error) {
        for (_, (_, p)) in std::mem::take(&mut self.waiting) {
            p.fail(e.duplicate());
        }
        for (_, (_, tx)) in self.reads.drain() {
            let _ = tx.send(Err(e.duplicate()));
        }
        for (_, _, tx) in self.reads_confirmed.drain(..) {
            let _ = tx.send(Err(e.duplicate()));
        }
    }
}

/// How long a follower whose snapshot could not be built waits for another build.
pub(crate) const SNAPSHOT_BUILD_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// A durable group's log is compacted past a follower's position once it holds this many
/// times `snapshot_every` entries or `compact_log_bytes` bytes.
const FORCE_COMPACT_FACTOR: u64 = 4;

/// A state machine's encoding as a [`PendingSnapshot`]'s (which may fail).
fn infallible(
    encode: Box<dyn FnOnce() -> Bytes + Send>,
) -> Box<dyn FnOnce() -> crate::Result<Bytes> + Send> {
    Box::new(move || Ok(encode()))
}
