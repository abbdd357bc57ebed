//! The rule between the disk engine and the Raft log under `kill -9`: a child process runs a
//! three-node `LocalCluster` on disk engines and commits transactions, printing each
//! acknowledged one, until it reaches a named crash point (before or after an engine batch,
//! before or after the engine's persist, after a log compaction); the parent kills it,
//! restarts the cluster from the same directory in process, and finds every acknowledged
//! transaction whole, having replayed only the log after the engines' applied indexes.
//!
//! A snapshot's apply killed after it deleted the region's range is tested on the engine
//! alone: the restarted engine reports no durable state for the region (the marker), and
//! applying the snapshot again gives the whole region back.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use surge_testkit::CrashChild;
use surge_txn::{
    Cf, ClientConfig, ClusterConfig, ENGINE_CRASH_ENV, ENGINE_CRASH_SKIP_ENV, Engine,
    EngineIdentity, FjallEngine, FjallOptions, LocalCluster, LockMode, MemEngine, Modify,
    RegionRecord, TxnClient, TxnMode, WriteBatch, engine_crash_points,
};

const DIR_ENV: &str = "SURGE_ENGINE_CRASH_DIR";
const SNAPSHOT_EVERY_ENV: &str = "SURGE_ENGINE_CRASH_SNAPSHOT_EVERY";
/// A point this test recognises itself (the child watches its node's snapshot counter).
const AFTER_COMPACTION: &str = "engine.after_compaction";

fn config(dir: &Path, snapshot_every: u64) -> ClusterConfig {
    ClusterConfig::new(dir)
        .with_regions(2)
        .with_lock_mode(LockMode::InMemory)
        .with_snapshot_every(snapshot_every)
}

fn keys(i: u32) -> [Vec<u8>; 2] {
    // One key in each region: a two-phase commit, two entries (prewrite, commit) each.
    [0x10u8, 0xc0].map(|first| {
        let mut k = vec![first];
        k.extend_from_slice(format!("k{i:05}").as_bytes());
        k
    })
}

#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let every = std::env::var(SNAPSHOT_EVERY_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let cluster = LocalCluster::start(config(Path::new(&dir), every)).expect("child cluster");
    if std::env::var(ENGINE_CRASH_ENV).as_deref() == Ok(AFTER_COMPACTION) {
        let node = cluster.node(1).expect("node 1");
        std::thread::spawn(move || {
            loop {
                if node.raft_stats().is_some_and(|s| s.snapshots >= 4) {
                    println!("reached {AFTER_COMPACTION}");
                    std::thread::sleep(Duration::from_secs(600));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
    }
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    for i in 0.. {
        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
        for k in keys(i) {
            t.put(&k, format!("v{i}").as_bytes()).expect("put");
        }
        if t.commit().is_ok() {
            println!("acked {i}");
        }
    }
}

/// Kills the child at `point` (passed `skip` times first) and checks the restarted store.
fn crash_at(point: &str, skip: u32, snapshot_every: u64) {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.path().as_os_str()),
            (ENGINE_CRASH_ENV, OsStr::new(point)),
            (ENGINE_CRASH_SKIP_ENV, OsStr::new(&skip.to_string())),
            (SNAPSHOT_EVERY_ENV, OsStr::new(&snapshot_every.to_string())),
        ],
    );
    let mut acked = Vec::new();
    child.wait_reached(|line| {
        if let Some(i) = line.strip_prefix("acked ") {
            acked.push(i.parse::<u32>().expect("number"));
        }
    });
    child.kill();
    assert!(
        acked.len() >= 20,
        "{point}: the child acknowledged only {} commits",
        acked.len()
    );

    let cluster = LocalCluster::start(config(dir.path(), snapshot_every)).expect("restart");
    // Each acknowledged transaction left at least four entries (prewrite and commit in
    // each of two regions) on every node; a restart that replayed the whole log would
    // apply at least that many.
    let replayed = cluster
        .node(1)
        .and_then(|n| n.raft_stats())
        .map_or(0, |s| s.applied);
    let written = 4 * acked.len() as u64;
    assert!(
        replayed * 2 < written,
        "{point}: node 1 replayed {replayed} entries at restart of at least {written} written"
    );
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    for i in &acked {
        for k in keys(*i) {
            assert_eq!(
                t.get(&k).expect("get"),
                Some(format!("v{i}").into_bytes()),
                "{point}: acknowledged transaction {i} lost key {k:?}"
            );
        }
    }
    println!(
        "{point}: {} acknowledged commits kept; node 1 replayed {replayed} entries",
        acked.len()
    );
}

#[test]
fn killed_before_an_engine_batch() {
    crash_at(engine_crash_points::BEFORE_BATCH, 600, 1_000_000);
}

#[test]
fn killed_after_an_engine_batch() {
    crash_at(engine_crash_points::AFTER_BATCH, 600, 1_000_000);
}

#[test]
fn killed_before_persist() {
    crash_at(engine_crash_points::BEFORE_PERSIST, 12, 40);
}

#[test]
fn killed_after_persist_before_log_compaction() {
    crash_at(engine_crash_points::AFTER_PERSIST, 12, 40);
}

#[test]
fn killed_after_log_compaction() {
    crash_at(AFTER_COMPACTION, 0, 40);
}

fn small() -> FjallOptions {
    FjallOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(1 << 20)
        .with_worker_threads(1)
}

fn record() -> RegionRecord {
    RegionRecord {
        start: Vec::new(),
        end: Vec::new(),
        state: b"s".to_vec(),
    }
}

/// An export of 100 lock keys with value `v` (raw keys: every key sorts above the
/// encoding of the empty key, where the whole-key-space region starts).
fn export_of(v: &[u8]) -> Vec<u8> {
    let mem = MemEngine::new();
    let modifies = (0..100u32)
        .map(|i| Modify::Put {
            cf: Cf::Lock,
            key: format!("k{i:03}").into_bytes(),
            value: v.to_vec(),
        })
        .collect();
    mem.write(&WriteBatch {
        modifies,
        applied_index: 50,
    })
    .expect("write");
    mem.export()
}

#[test]
fn snapshot_apply_child() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let engine = FjallEngine::open(&dir, &EngineIdentity::new("t", 1), small()).expect("open");
    let view = engine.region(1, b"", b"").expect("view");
    view.import_region(&export_of(b"old"), 50, &record())
        .expect("first import");
    println!("imported");
    // The point is armed for the second import only (skip 1).
    view.import_region(&export_of(b"new"), 60, &record())
        .expect("second import");
    println!("not reached");
}

#[test]
fn killed_during_a_snapshot_apply_the_marker_makes_it_apply_again() {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "snapshot_apply_child",
        [
            (DIR_ENV, dir.path().as_os_str()),
            (
                ENGINE_CRASH_ENV,
                OsStr::new(engine_crash_points::SNAPSHOT_APPLY_AFTER_DELETE),
            ),
            (ENGINE_CRASH_SKIP_ENV, OsStr::new("1")),
        ],
    );
    child.wait_reached(|_| {});
    child.kill();
    let engine =
        FjallEngine::open(dir.path(), &EngineIdentity::new("t", 1), small()).expect("reopen");
    let view = engine.region(1, b"", b"").expect("view");
    assert_eq!(
        view.durable_region(),
        None,
        "a half-applied snapshot leaves no durable state"
    );
    let snap = view.snapshot();
    assert_eq!(snap.get(Cf::Lock, b"k007"), None, "the range was deleted");
    drop(snap);
    view.import_region(&export_of(b"new"), 60, &record())
        .expect("apply again");
    assert_eq!(view.durable_region(), Some((60, record())));
    let snap = view.snapshot();
    for i in 0..100u32 {
        assert_eq!(
            snap.get(Cf::Lock, &format!("k{i:03}").into_bytes()),
            Some(b"new".to_vec())
        );
    }
}
