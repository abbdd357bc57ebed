//! Tests of a region's streamed Raft snapshot through [`RegionStateMachine`]: round trips on
//! both engines (range, epoch and merge state included), the skip when the engine holds
//! the snapshot's index, and refusals naming the region and the stream's offset.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use surge_lock_table::{BudgetConfig, LockWaitManager, MemoryBudget, WaitConfig};
use surge_raft_lite::StateMachine;

use super::counters::Counters;
use super::host::RegionHost;
use super::peer::{MergeState, RegionPeer};
use super::region_info::{RegionEpoch, RegionInfo};
use super::state_machine::RegionStateMachine;
use crate::{
    Cf, Engine, EngineIdentity, FjallEngine, FjallOptions, MemEngine, Modify, WriteBatch,
    encode_key, encode_key_with_ts,
};

/// A host for a region that never splits nor merges here.
struct NoHost;

impl RegionHost for NoHost {
    fn spawn_split_child(&self, _child: Arc<RegionPeer>, _seed: Bytes) {}
    fn hosts(&self, _id: u64) -> bool {
        false
    }
    fn region_merged(&self, _source: u64, _target: u64) {}
}

fn info(id: u64, start: &[u8], end: &[u8], version: u64) -> RegionInfo {
    RegionInfo {
        id,
        start: start.to_vec(),
        end: end.to_vec(),
        epoch: RegionEpoch {
            version,
            conf_ver: 2,
        },
        peers: vec![1, 2, 3],
    }
}

fn peer(info: RegionInfo, engine: Arc<dyn Engine>) -> Arc<RegionPeer> {
    RegionPeer::new(
        1,
        info,
        engine,
        &MemoryBudget::new(BudgetConfig::default()),
        LockWaitManager::new(WaitConfig::default()),
        Arc::new(Counters::default()),
        Arc::new(NoHost),
        Arc::default(),
        Duration::from_secs(1),
    )
}

/// Writes `n` user keys `k0000..` (lock, write and default entries) at `index`.
fn fill(engine: &dyn Engine, n: u32, index: u64) {
    let mut modifies = Vec::new();
    for i in 0..n {
        let user = format!("k{i:04}").into_bytes();
        for (cf, key) in [
            (Cf::Lock, encode_key(&user)),
            (Cf::Write, encode_key_with_ts(&user, 5)),
            (Cf::Default, encode_key_with_ts(&user, 4)),
        ] {
            modifies.push(Modify::Put {
                cf,
                key,
                value: vec![i as u8; 40],
            });
        }
    }
    engine
        .write(&WriteBatch {
            modifies,
            applied_index: index,
        })
        .unwrap();
}

/// Every entry of the engine, per column family.
fn entries(engine: &dyn Engine) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let snap = engine.snapshot();
    Cf::ALL
        .iter()
        .map(|cf| {
            let mut out = Vec::new();
            snap.scan(*cf, b"", None, &mut |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                true
            });
            out
        })
        .collect()
}

fn run(sm: &mut RegionStateMachine) -> Vec<u8> {
    let stream = sm.snapshot_stream();
    let mut out = Vec::new();
    stream(&mut |piece: &[u8]| -> io::Result<()> {
        out.extend_from_slice(piece);
        Ok(())
    })
    .unwrap();
    out
}

fn fjall(dir: &std::path::Path) -> Arc<FjallEngine> {
    let options = FjallOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(1 << 20)
        .with_worker_threads(1);
    FjallEngine::open(dir, &EngineIdentity::new("c1", 1), options).unwrap()
}

#[test]
fn a_mem_engine_region_round_trips_through_a_stream() {
    let src_engine = Arc::new(MemEngine::new());
    fill(&*src_engine, 500, 8);
    let src = peer(info(7, b"a", b"z", 3), src_engine.clone());
    *src.merge.lock() = MergeState::Merging { target: 9 };
    let want = entries(&*src_engine);
    let mut sm = RegionStateMachine::new(src.clone());
    let stream = sm.snapshot_stream();
    // Written after the view was taken: not in the stream.
    fill(&*src_engine, 600, 9);
    let mut bytes = Vec::new();
    stream(&mut |piece: &[u8]| -> io::Result<()> {
        bytes.extend_from_slice(piece);
        Ok(())
    })
    .unwrap();

    let dst_engine = Arc::new(MemEngine::new());
    fill(&*dst_engine, 700, 2);
    let dst = peer(info(7, b"", b"", 1), dst_engine.clone());
    let mut dst_sm = RegionStateMachine::new(dst.clone());
    dst_sm.restore_from(10, &mut bytes.as_slice()).unwrap();
    assert_eq!(entries(&*dst_engine), want);
    assert_eq!(dst_engine.applied_index(), 10);
    assert_eq!(dst.info(), info(7, b"a", b"z", 3));
    assert_eq!(dst.merge_state(), MergeState::Merging { target: 9 });
}

#[test]
fn a_disk_engine_region_round_trips_and_skips_what_it_holds() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src_engine = fjall(a.path()).region(7, b"a", b"z").unwrap();
    fill(&*src_engine, 2000, 20);
    let mut src = RegionStateMachine::new(peer(info(7, b"a", b"z", 3), src_engine.clone()));
    let bytes = run(&mut src);
    {
        let dst_engine = fjall(b.path()).region(7, b"", b"").unwrap();
        let dst = peer(info(7, b"", b"", 1), dst_engine.clone());
        let mut sm = RegionStateMachine::new(dst.clone());
        sm.restore_from(30, &mut bytes.as_slice()).unwrap();
        assert_eq!(entries(&*dst_engine), entries(&*src_engine));
        assert_eq!(dst.info(), info(7, b"a", b"z", 3));
    }
    let dst_engine = fjall(b.path()).region(7, b"", b"").unwrap();
    let dst = peer(info(7, b"", b"", 1), dst_engine);
    let mut sm = RegionStateMachine::new(dst.clone());
    assert_eq!(sm.durable_applied(), 30, "the engine holds the snapshot");
    assert_eq!(dst.info(), info(7, b"a", b"z", 3));
    // Held durably at 30: the same snapshot or an older one is not read at all.
    for index in [25, 30] {
        sm.restore_from(index, &mut b"not a stream".as_slice())
            .unwrap();
    }
    let err = sm
        .restore_from(31, &mut b"not a stream".as_slice())
        .unwrap_err();
    assert!(err.contains("byte 0"), "{err}");
}

#[test]
fn bad_streams_are_refused_naming_the_region_and_what() {
    let src_engine = Arc::new(MemEngine::new());
    fill(&*src_engine, 50, 20);
    let mut other = RegionStateMachine::new(peer(info(8, b"a", b"z", 3), src_engine.clone()));
    let mut same = RegionStateMachine::new(peer(info(7, b"a", b"z", 3), src_engine));
    let (of_other, of_same) = (run(&mut other), run(&mut same));

    let dst_engine = Arc::new(MemEngine::new());
    fill(&*dst_engine, 5, 2);
    let before = entries(&*dst_engine);
    let dst = peer(info(7, b"", b"", 1), dst_engine.clone());
    let mut sm = RegionStateMachine::new(dst.clone());
    let cases: [(&str, &[u8], u64, &str); 4] = [
        ("garbage", b"garbage!garbage!", 30, "byte 0"),
        ("another region", &of_other, 30, "region 8"),
        ("data newer than the index", &of_same, 10, "of index 20"),
        (
            "truncated",
            &of_same[..of_same.len() - 3],
            30,
            "truncated at byte",
        ),
    ];
    for (name, mut bytes, index, says) in cases {
        let err = sm.restore_from(index, &mut bytes).unwrap_err();
        assert!(err.contains("region 7"), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert_eq!(dst.info(), info(7, b"", b"", 1), "{name}");
        assert_eq!(
            entries(&*dst_engine),
            before,
            "{name}: a MemEngine is unchanged"
        );
    }
    sm.restore_from(30, &mut of_same.as_slice()).unwrap();
    assert_eq!(dst.info(), info(7, b"a", b"z", 3));
}
