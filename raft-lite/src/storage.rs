//! Log storage behind a trait: what a node must make durable, and how it gets it back.

use std::collections::BTreeMap;

use crate::{ConfState, Entry, Error, HardState, Ready, Result, Snapshot};

/// Everything a node recovered from storage: the input of [`crate::RawNode::new`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaftState {
    /// Term, vote and commit index.
    pub hard_state: HardState,
    /// Bootstrap membership, used when there is no snapshot.
    pub conf: ConfState,
    /// The latest durable snapshot.
    pub snapshot: Option<Snapshot>,
    /// Entries after the snapshot, consecutive.
    pub entries: Vec<Entry>,
}

impl RaftState {
    /// A fresh group whose initial voters are `voters` (every founding member is created
    /// with the same list; a node that joins later starts with an empty list and learns
    /// the membership from the leader).
    pub fn bootstrap(voters: impl IntoIterator<Item = crate::NodeId>) -> RaftState {
        RaftState {
            conf: ConfState::with_voters(voters),
            ..RaftState::default()
        }
    }

    /// Index of the last entry (or of the snapshot).
    pub fn last_index(&self) -> u64 {
        self.entries
            .last()
            .map(|e| e.index)
            .or(self.snapshot.as_ref().map(|s| s.meta.index))
            .unwrap_or(0)
    }

    /// Applies one group's write with the storage contract: a snapshot drops the entries
    /// it covers (and all entries if the log disagrees at its index); entries replace any
    /// stored at the same or higher index; then the hard state.
    ///
    /// # Errors
    /// [`Error::Decode`] if the entries would leave a hole in the log.
    pub fn apply_write(&mut self, w: &GroupWrite) -> Result<()> {
        if let Some(s) = &w.snapshot {
            self.install_snapshot(s.clone());
        }
        if let Some(first) = w.entries.first() {
            let base = self.snapshot.as_ref().map_or(0, |s| s.meta.index);
            if first.index > self.last_index() + 1 || first.index <= base {
                return Err(Error::Decode {
                    what: "log write",
                    offset: first.index as usize,
                    reason: "entries leave a hole or overwrite the snapshot",
                });
            }
            let keep = self.entries.partition_point(|e| e.index < first.index);
            self.entries.truncate(keep);
            self.entries.extend(w.entries.iter().cloned());
        }
        if let Some(hs) = w.hard_state {
            self.hard_state = hs;
        }
        Ok(())
    }

    /// Checks that [`RaftState::apply_write`] would accept `w`, without changing anything.
    ///
    /// # Errors
    /// As `apply_write`.
    pub fn check_write(&self, w: &GroupWrite) -> Result<()> {
        let mut base = self.snapshot.as_ref().map_or(0, |s| s.meta.index);
        let mut last = self.last_index();
        if let Some(s) = &w.snapshot
            && s.meta.index > base
        {
            let matches = self
                .entries
                .iter()
                .any(|e| e.index == s.meta.index && e.term == s.meta.term);
            last = if matches {
                last.max(s.meta.index)
            } else {
                s.meta.index
            };
            base = s.meta.index;
        }
        if let Some(first) = w.entries.first()
            && (first.index > last + 1 || first.index <= base)
        {
            return Err(Error::Decode {
                what: "log write",
                offset: first.index as usize,
                reason: "entries leave a hole or overwrite the snapshot",
            });
        }
        Ok(())
    }

    /// Installs a snapshot position and drops the entries it makes obsolete.
    pub fn install_snapshot(&mut self, s: Snapshot) {
        let idx = s.meta.index;
        if self
            .snapshot
            .as_ref()
            .is_some_and(|cur| cur.meta.index >= idx)
        {
            return;
        }
        let matches = self
            .entries
            .iter()
            .find(|e| e.index == idx)
            .is_some_and(|e| e.term == s.meta.term);
        if matches {
            self.entries.retain(|e| e.index > idx);
        } else {
            self.entries.clear();
        }
        if self.hard_state.commit < idx {
            self.hard_state.commit = idx;
        }
        self.snapshot = Some(s);
    }
}

/// One group's share of a write batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupWrite {
    /// The group.
    pub group: u64,
    /// A snapshot to make durable first.
    pub snapshot: Option<Snapshot>,
    /// Entries to append (replacing any at the same or higher indexes).
    pub entries: Vec<Entry>,
    /// Hard state to record after the entries.
    pub hard_state: Option<HardState>,
}

impl GroupWrite {
    /// The write a [`Ready`] asks for, or `None` if it asks for none.
    pub fn from_ready(group: u64, rd: &Ready) -> Option<GroupWrite> {
        if rd.nothing_to_persist() {
            return None;
        }
        Some(GroupWrite {
            group,
            snapshot: rd.snapshot.clone(),
            entries: rd.entries.clone(),
            hard_state: rd.hard_state,
        })
    }
}

/// Durable log storage shared by every group of a node.
///
/// Contract (openraft's, see the crate docs): `write` returns only once the whole batch is
/// durable; writes are applied in call order; there are no holes; a snapshot is durable
/// before the entries it covers are dropped.
pub trait LogStore: Send {
    /// Makes the batch durable (one sync for all groups in it). A batch that only
    /// advances commit indexes may instead become durable with a later write.
    ///
    /// # Errors
    /// I/O errors; after one, the store must not be used again (fsync failures are fatal).
    fn write(&mut self, batch: &[GroupWrite]) -> Result<()>;

    /// The recovered state of `group`, or `None` if it never wrote anything.
    ///
    /// # Errors
    /// I/O errors.
    fn load(&self, group: u64) -> Result<Option<RaftState>>;

    /// Groups that have durable state.
    fn groups(&self) -> Vec<u64>;

    /// The largest entry data a write may carry (a driver refuses larger proposals up
    /// front: a write the store refuses stops the node).
    fn max_entry_bytes(&self) -> usize {
        crate::MAX_BYTES_LEN
    }

    /// Where the driver writes the snapshots streamed to this node (for groups whose
    /// state machine keeps its state durably, [`crate::StateMachine::snapshot_stream`]),
    /// one file each, kept until the group's log holds a newer snapshot. `None` (the
    /// default): they are received in memory and kept whole in the log, fine for tests
    /// and small states only.
    fn snapshot_spool_dir(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// The writer of snapshot files for the driver's background snapshot thread, if this
    /// store keeps snapshots in files of their own (see [`crate::SnapshotPersister`]).
    /// `None` (the default) makes the driver write its groups' snapshots inline, through
    /// [`LogStore::write`].
    fn snapshot_persister(&self) -> Option<std::sync::Arc<dyn crate::SnapshotPersister>> {
        None
    }

    /// Records `snapshot` of `group`, whose data the [`LogStore::snapshot_persister`]
    /// already made durable in `file`, as the group's latest snapshot (durably, like a
    /// write carrying it) and drops the entries it covers. A snapshot not newer than the
    /// group's current one is not recorded and its file is deleted. The default stores
    /// it inline, like [`LogStore::write`].
    ///
    /// # Errors
    /// As [`LogStore::write`].
    fn write_snapshot_ref(
        &mut self,
        group: u64,
        snapshot: Snapshot,
        file: crate::SnapshotFile,
    ) -> Result<()> {
        let _ = file;
        self.write(&[GroupWrite {
            group,
            snapshot: Some(snapshot),
            ..GroupWrite::default()
        }])
    }

    /// The stored hard state of `group` (stores override this to avoid copying the log).
    ///
    /// # Errors
    /// I/O errors.
    fn hard_state(&self, group: u64) -> Result<Option<HardState>> {
        Ok(self.load(group)?.map(|s| s.hard_state))
    }
}

/// A [`LogStore`] in memory: durable only as long as the value lives. For tests and for
/// groups that need no persistence.
#[derive(Debug, Clone, Default)]
pub struct MemLogStore {
    groups: BTreeMap<u64, RaftState>,
    writes: u64,
}

impl MemLogStore {
    /// An empty store.
    pub fn new() -> MemLogStore {
        MemLogStore::default()
    }

    /// Number of `write` calls so far (each would be one sync).
    pub fn writes(&self) -> u64 {
        self.writes
    }
}

impl LogStore for MemLogStore {
    fn write(&mut self, batch: &[GroupWrite]) -> Result<()> {
        self.writes += 1;
        for w in batch {
            self.groups.entry(w.group).or_default().apply_write(w)?;
        }
        Ok(())
    }

    fn load(&self, group: u64) -> Result<Option<RaftState>> {
        Ok(self.groups.get(&group).cloned())
    }

    fn groups(&self) -> Vec<u64> {
        self.groups.keys().copied().collect()
    }

    fn hard_state(&self, group: u64) -> Result<Option<HardState>> {
        Ok(self.groups.get(&group).map(|g| g.hard_state))
    }
}
