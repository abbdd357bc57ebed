//! Unit tests of a merge's apply: a `CommitMerge` takes effect once, only at the target
//! version it was proposed at, and marks the source merged before the target's version
//! moves; a `RollbackMerge` ends only the merge it names.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use surge_lock_table::{BudgetConfig, LockWaitManager, MemoryBudget, WaitConfig};

use super::command::{EPOCH_CHANGED, RegionCommand};
use super::counters::Counters;
use super::host::RegionHost;
use super::peer::{MergeState, RegionPeer};
use super::region_info::{RegionEpoch, RegionInfo};
use crate::{Cf, Engine, MemEngine, Modify, WriteBatch, encode_key};

/// A host that records the merges it is told of, with the target's version at that moment.
#[derive(Default)]
struct MergeHost {
    target: OnceLock<Weak<RegionPeer>>,
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

fn peer(info: RegionInfo, engine: Arc<MemEngine>, host: Arc<MergeHost>) -> Arc<RegionPeer> {
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
