//! Unit tests of a merge's apply: a `CommitMerge` takes effect once, only at the target
//! version it was proposed at, marks the source merged before the target's version moves,
//! and on a disk engine shared by the node's regions leaves the source's range exactly as
//! the source's leader exported it; a `RollbackMerge` ends only the merge it names.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use surge_lock_table::{BudgetConfig, LockWaitManager, MemoryBudget, WaitConfig};

use super::command::{EPOCH_CHANGED, RegionCommand, WriteCommand};
use super::counters::Counters;
use super::host::RegionHost;
use super::peer::{MergeState, RegionPeer};
use super::region_info::{RegionEpoch, RegionInfo};
use crate::{
    Cf, Engine, EngineIdentity, FjallEngine, FjallOptions, MemEngine, Modify, Mutation, MvccReader,
    MvccTxn, PessimisticAction, TxnCommitRecord, TxnProps, WriteBatch, encode_key,
};

/// A host that records the merges it is told of, with the target's version at that moment,
/// and marks the source replica it knows of merged (as the node's host does).
#[derive(Default)]
struct MergeHost {
    target: OnceLock<Weak<RegionPeer>>,
    source: OnceLock<Weak<RegionPeer>>,
    merged: Mutex<Vec<(u64, u64, u64)>>,
}

impl RegionHost for MergeHost {
    fn spawn_split_child(&self, _child: Arc<RegionPeer>, _seed: Bytes) {}
    fn hosts(&self, _id: u64) -> bool {
        false
    }
    fn region_merged(&self, source: u64, target: u64) {
        let version = self
            .target
            .get()
            .and_then(Weak::upgrade)
            .map_or(0, |t| t.info().epoch.version);
        self.merged.lock().push((source, target, version));
        if let Some(peer) = self.source.get().and_then(Weak::upgrade)
            && peer.id() == source
        {
            peer.mark_merged(target);
        }
    }
}

fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> RegionInfo {
    RegionInfo {
        id,
        start: start.to_vec(),
        end: end.to_vec(),
        epoch: RegionEpoch {
            version,
            conf_ver: 1,
        },
        peers: vec![1, 2, 3],
    }
}

fn peer(info: RegionInfo, engine: Arc<dyn Engine>, host: Arc<MergeHost>) -> Arc<RegionPeer> {
    RegionPeer::new(
        1,
        info,
        engine,
        &MemoryBudget::new(BudgetConfig::default()),
        LockWaitManager::new(WaitConfig::default()),
        Arc::new(Counters::default()),
        host,
        Arc::default(),
        Duration::from_secs(1),
    )
}

fn lock_record(engine: &MemEngine, key: &[u8], put: bool, index: u64) {
    let modify = if put {
        Modify::Put {
            cf: Cf::Lock,
            key: encode_key(key),
            value: b"a lock".to_vec(),
        }
    } else {
        Modify::Delete {
            cf: Cf::Lock,
            key: encode_key(key),
        }
    };
    engine
        .write(&WriteBatch {
            modifies: vec![modify],
            applied_index: index,
        })
        .expect("write");
}

fn has_lock(engine: &MemEngine, key: &[u8]) -> bool {
    engine.snapshot().get(Cf::Lock, &encode_key(key)).is_some()
}

/// The source `[.., 0x80)` at version 2 with one lock record and the target `[0x80, ..)`
/// at version 1: the source's info and data as a `CommitMerge` carries them, the target,
/// its engine and its host.
struct Merge {
    source: RegionInfo,
    data: Vec<u8>,
    target: Arc<RegionPeer>,
    engine: Arc<MemEngine>,
    host: Arc<MergeHost>,
}

fn merge() -> Merge {
    let source_engine = MemEngine::new();
    lock_record(&source_engine, b"\x10k", true, 1);
    let host = Arc::new(MergeHost::default());
    let engine = Arc::new(MemEngine::new());
    let target = peer(region(3, b"\x80", b"", 1), engine.clone(), host.clone());
    let _ = host.target.set(Arc::downgrade(&target));
    Merge {
        source: region(2, b"", b"\x80", 2),
        data: source_engine.export(),
        target,
        engine,
        host,
    }
}

fn commit_merge(m: &Merge, target_version: u64) -> Vec<u8> {
    RegionCommand::CommitMerge {
        source: m.source.clone(),
        data: m.data.clone(),
        target_version,
    }
    .encode()
}

/// A second copy of a `CommitMerge` in the target's log (the coordinator asked again after a
/// lost answer, and both proposals committed) must not apply again: it would bring back the
/// source's data as of the merge over what the target wrote since (here a lock the target
/// resolved) and bump the epoch a second time. Without the version stamp the second copy
/// moved the version to 4 (this test, first written against the unstamped command).
#[test]
fn a_commit_merge_applied_again_leaves_the_target_as_the_first_left_it() {
    let m = merge();
    let cmd = commit_merge(&m, 1);
    assert!(
        m.target.apply(10, &cmd).is_empty(),
        "the first copy applies"
    );
    let merged = m.target.info();
    assert_eq!(
        (merged.start.as_slice(), merged.end.as_slice()),
        (&b""[..], &b""[..])
    );
    assert_eq!(merged.epoch.version, 3);
    assert!(has_lock(&m.engine, b"\x10k"), "the source's lock arrived");
    // The target resolves the lock (what a commit of that key does).
    lock_record(&m.engine, b"\x10k", false, 11);

    assert_eq!(m.target.apply(12, &cmd), EPOCH_CHANGED);
    assert_eq!(
        m.target.info(),
        merged,
        "the second copy changed the region"
    );
    assert!(
        !has_lock(&m.engine, b"\x10k"),
        "the second copy brought back a resolved lock"
    );
    assert_eq!(m.host.merged.lock().len(), 1, "the source merged once");
}

/// A `CommitMerge` proposed at another target version (the target split or merged since)
/// or to a target that does not border the source is skipped: nothing ingested, nothing
/// marked, the region unchanged.
#[test]
fn a_commit_merge_for_another_target_version_or_range_is_skipped() {
    let m = merge();
    let before = m.target.info();
    for cmd in [commit_merge(&m, 0), commit_merge(&m, 2)] {
        assert_eq!(m.target.apply(10, &cmd), EPOCH_CHANGED);
    }
    let apart = RegionCommand::CommitMerge {
        source: region(2, b"", b"\x70", 2),
        data: m.data.clone(),
        target_version: 1,
    }
    .encode();
    assert_eq!(m.target.apply(11, &apart), EPOCH_CHANGED);
    assert_eq!(m.target.info(), before);
    assert!(!has_lock(&m.engine, b"\x10k"));
    assert!(m.host.merged.lock().is_empty());
}

/// The apply marks the source merged while the target is still at the version the merge
/// was proposed at: a coordinator that reads the target's version and then the source's
/// state never sees the version moved and the source unmarked after this merge.
#[test]
fn the_source_is_marked_merged_before_the_target_version_moves() {
    let m = merge();
    assert!(m.target.apply(10, &commit_merge(&m, 1)).is_empty());
    assert_eq!(*m.host.merged.lock(), vec![(2, 3, 1)]);
    assert_eq!(m.target.info().epoch.version, 3);
}

/// A `RollbackMerge` applies only to the merge it names (the version its `PrepareMerge`
/// gave): one proposed for an earlier merge, or a second copy, leaves the region as it is.
#[test]
fn a_rollback_ends_only_the_merge_it_names() {
    let host = Arc::new(MergeHost::default());
    let source = peer(region(2, b"", b"\x80", 4), Arc::new(MemEngine::new()), host);
    let prepare = RegionCommand::PrepareMerge {
        target: 3,
        new_version: 5,
    };
    source.apply(1, &prepare.encode());
    assert_eq!(source.merge_state(), MergeState::Merging { target: 3 });

    // An earlier merge's rollback (it was prepared at version 3).
    source.apply(2, &RegionCommand::RollbackMerge { new_version: 4 }.encode());
    assert_eq!(source.merge_state(), MergeState::Merging { target: 3 });
    assert_eq!(source.info().epoch.version, 5);

    let rollback = RegionCommand::RollbackMerge { new_version: 6 }.encode();
    source.apply(3, &rollback);
    assert_eq!(source.merge_state(), MergeState::None);
    assert_eq!(source.info().epoch.version, 6);
    // A second copy of it, after a new merge began at version 7.
    source.apply(
        4,
        &RegionCommand::PrepareMerge {
            target: 3,
            new_version: 7,
        }
        .encode(),
    );
    source.apply(5, &rollback);
    assert_eq!(source.merge_state(), MergeState::Merging { target: 3 });
    assert_eq!(source.info().epoch.version, 7);
}

/// The source's `Write` entry at `index` (proposed by node 2 at the source's version 1) of
/// what `step` does for the transaction `start_ts`, run on and applied to `leader`, the
/// source leader's engine.
fn leader_entry(
    leader: &MemEngine,
    start_ts: u64,
    index: u64,
    step: impl FnOnce(&mut MvccTxn, &MvccReader<'_>),
) -> Vec<u8> {
    let mut txn = MvccTxn::new(start_ts);
    {
        let snap = leader.snapshot();
        step(&mut txn, &MvccReader::new(&*snap, None));
    }
    let writes = txn.into_writes();
    let command = WriteCommand {
        proposer: 2,
        term: 1,
        cmd_id: index,
        version: 1,
        lock_cf_keys: writes.lock_cf_keys.clone(),
        released: writes.released.clone(),
        lock_only: false,
        batch: writes.into_batch(),
    };
    let mut batch = command.batch.clone();
    batch.applied_index = index;
    leader.write(&batch).expect("leader write");
    RegionCommand::Write(command).encode()
}

/// What the source's leader applied at `first_index` and the next: one transaction's
/// prewrite of `key` (a secondary), then its commit at `commit_ts`.
fn prewrite_and_commit(
    leader: &MemEngine,
    key: &[u8],
    start_ts: u64,
    commit_ts: u64,
    first_index: u64,
) -> [Vec<u8>; 2] {
    let props = TxnProps {
        start_ts,
        primary: b"\x10p".to_vec(),
        lock_ttl: 3000,
        for_update_ts: 0,
        txn_size: 2,
        min_commit_ts: start_ts + 1,
        commit_kind: crate::CommitKind::TwoPc,
    };
    let mutation = Mutation::Put {
        key: key.to_vec(),
        value: b"v".to_vec(),
    };
    let prewrite = leader_entry(leader, start_ts, first_index, |txn, r| {
        crate::prewrite(
            txn,
            r,
            &props,
            &mutation,
            PessimisticAction::SkipPessimisticCheck,
            None,
        )
        .expect("prewrite");
    });
    let commit = leader_entry(leader, start_ts, first_index + 1, |txn, r| {
        crate::commit(txn, r, key, commit_ts).expect("commit");
    });
    [prewrite, commit]
}

/// A node's disk engine in `dir`, small (tests).
fn disk_node(dir: &std::path::Path) -> Arc<FjallEngine> {
    let options = FjallOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(1 << 20)
        .with_worker_threads(1);
    FjallEngine::open(dir, &EngineIdentity::new("c1", 1), options).expect("open the node's engine")
}

/// The lock and the record of the transaction `start_ts` on `key` in a region's engine.
fn lock_and_record(engine: &dyn Engine, key: &[u8], start_ts: u64) -> (bool, TxnCommitRecord) {
    let snap = engine.snapshot();
    let reader = MvccReader::new(&*snap, None);
    (
        reader.load_lock(key).expect("lock").is_some(),
        reader.get_txn_commit_record(key, start_ts).expect("record"),
    )
}

/// The flaky snapshot-isolation workload's stuck read, one run in about 300, replayed on
/// one node's disk engine, which its regions share. This node's replica of the source
/// `[.., 0x80)` lagged (partitioned): it applied a transaction's prewrite of a key and not
/// the commit that followed. The source's leader applied both, then `PrepareMerge`, and
/// its export went into the target's `CommitMerge`. The apply used to add the export to
/// what the lagging replica had left under the same keys: the lock stayed beside the
/// transaction's commit record, and a reader resolving it found the transaction committed
/// on the very key it was locked on, for good. The source's range must be the export.
///
/// Then the lagging replica, marked merged, catches up before its group is removed: the
/// commit it missed and a later transaction's prewrite would write under the target's keys
/// (that lock, whose commit the target has, would stand beside it the same way); they are
/// skipped.
#[test]
fn a_merge_on_a_shared_disk_engine_drops_what_a_lagging_source_replica_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = disk_node(dir.path());
    let host = Arc::new(MergeHost::default());
    let source_view = node.region(2, b"", b"\x80").expect("source view");
    let lagging = peer(
        region(2, b"", b"\x80", 1),
        source_view.clone(),
        host.clone(),
    );
    let _ = host.source.set(Arc::downgrade(&lagging));
    let target_view = node.region(3, b"\x80", b"").expect("target view");
    let target = peer(
        region(3, b"\x80", b"", 1),
        target_view.clone(),
        host.clone(),
    );
    let _ = host.target.set(Arc::downgrade(&target));

    let leader = MemEngine::new();
    let [first_prewrite, first_commit] = prewrite_and_commit(&leader, b"\x10k", 10, 12, 1);
    let [later_prewrite, later_commit] = prewrite_and_commit(&leader, b"\x10j", 20, 22, 3);
    assert!(lagging.apply(1, &first_prewrite).is_empty());
    // A checkpoint puts the lagging replica's lock in the lock keyspace the views share.
    source_view.checkpoint()().expect("checkpoint");
    assert!(
        node.lock_on_disk(&encode_key(b"\x10k")),
        "the lagging replica's lock on disk"
    );

    // PrepareMerge moved the source to version 2 on the leader; its export as of then.
    let merge = RegionCommand::CommitMerge {
        source: region(2, b"", b"\x80", 2),
        data: leader.export(),
        target_version: 1,
    };
    assert!(target.apply(10, &merge.encode()).is_empty());
    assert_eq!(lagging.merge_state(), MergeState::Merged { target: 3 });
    for (key, start_ts, commit_ts) in [(&b"\x10k"[..], 10, 12), (b"\x10j", 20, 22)] {
        let (locked, record) = lock_and_record(&*target_view, key, start_ts);
        assert!(!locked, "{key:?}: a lock beside its commit record");
        assert_eq!(
            record.info(),
            Some((commit_ts, crate::WriteType::Put)),
            "{key:?}"
        );
    }

    for (index, entry) in [(2, &first_commit), (3, &later_prewrite), (4, &later_commit)] {
        assert_eq!(
            lagging.apply(index, entry),
            EPOCH_CHANGED,
            "entry {index} of the merged-away replica applied"
        );
    }
    assert!(
        !lock_and_record(&*target_view, b"\x10j", 20).0,
        "the merged-away replica wrote a lock under the target's keys"
    );
    assert!(
        !lock_and_record(&*source_view, b"\x10j", 20).0,
        "the merged-away replica applied a prewrite into its own view"
    );
    assert!(
        !node.lock_on_disk(&encode_key(b"\x10k")),
        "the lagging replica's lock left on disk"
    );

    // Nor is the lagging replica's lock left on disk: the target's record change after
    // the merge was a checkpoint of the merged range's locks.
    drop((lagging, target, target_view, source_view, node));
    let node = disk_node(dir.path());
    let view = node.region(3, b"\x80", b"").expect("target view");
    assert_eq!(
        view.durable_region().map(|(_, r)| r.start),
        Some(Vec::new()),
        "the merged range recorded"
    );
    assert!(
        !lock_and_record(&*view, b"\x10k", 10).0,
        "the lagging replica's lock beside its commit record after a reopen"
    );
}

/// A transfer's migrated locks are the one apply that reads the engine to decide what it
/// writes (each lock only where the key holds nothing newer), so on a disk engine, whose
/// restart replays the log over data that may be ahead of the recorded index, the entry is
/// a checkpoint: the record moves to its index and the locks reach the lock keyspace.
#[test]
fn migrated_locks_on_a_disk_engine_are_a_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = disk_node(dir.path());
    let view = node.region(2, b"", b"").expect("view");
    let replica = peer(
        region(2, b"", b"", 1),
        view.clone(),
        Arc::new(MergeHost::default()),
    );
    replica.record_region(1);
    let lock = crate::Lock::new(crate::LockType::Pessimistic, b"k".to_vec(), 10, 3000, 10);
    let migrate = RegionCommand::MigrateLocks {
        version: 1,
        locks: vec![(b"k".to_vec(), lock)],
    };
    assert!(replica.apply(2, &migrate.encode()).is_empty());
    assert_eq!(view.durable_region().map(|(index, _)| index), Some(2));
    assert!(
        node.lock_on_disk(&encode_key(b"k")),
        "the migrated lock on disk"
    );
}
