//! The timestamp oracle: strictly increasing across a meta leader crash and a full restart.

use std::time::{Duration, Instant};

use surge_txn::{
    ClusterConfig, LocalCluster,
    rpc::{KvRequest, KvResponse, META_REGION_ID},
};

/// A timestamp from whichever node leads the meta group (retrying through elections).
fn ts(c: &LocalCluster) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        for id in c.node_ids() {
            if let Ok(KvResponse::Timestamp { ts }) =
                c.call(*id, KvRequest::GetTimestamp { count: 1 })
            {
                return ts;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no timestamp within 30 s");
}

#[test]
fn timestamps_increase_across_a_meta_leader_crash() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    let mut last = 0;
    for round in 0..3 {
        for _ in 0..200 {
            let t = ts(&c);
            assert!(t > last, "round {round}: {t} after {last}");
            last = t;
        }
        let leader = c.leader_of_group(META_REGION_ID).expect("meta leader");
        c.stop_node(leader).expect("stop");
        let t = ts(&c);
        assert!(
            t > last,
            "after the crash of node {leader}: {t} after {last}"
        );
        last = t;
        c.restart_node(leader).expect("restart");
    }
}

#[test]
fn timestamps_increase_across_a_full_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let mut last = 0;
    for run in 0..3 {
        let c =
            LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
        for _ in 0..100 {
            let t = ts(&c);
            assert!(t > last, "run {run}: {t} after {last}");
            last = t;
        }
        // A batch hands out `count` timestamps and returns the last.
        match c.call(
            c.leader_of_group(META_REGION_ID).expect("leader"),
            KvRequest::GetTimestamp { count: 1000 },
        ) {
            Ok(KvResponse::Timestamp { ts }) => {
                assert!(ts >= last + 1000, "batch end {ts} after {last}");
                last = ts;
            }
            other => panic!("batch: {other:?}"),
        }
        drop(c);
    }
}

#[test]
fn timestamps_from_concurrent_callers_are_unique() {
    let dir = tempfile::tempdir().expect("dir");
    let c = std::sync::Arc::new(
        LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster"),
    );
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || (0..200).map(|_| ts(&c)).collect::<Vec<u64>>())
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("caller"))
        .collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "a timestamp was handed out twice");
}
