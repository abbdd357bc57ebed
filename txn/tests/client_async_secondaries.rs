//! `ClientConfig::async_secondaries`: a transaction's secondary keys are committed in the
//! background after the primary; readers see the commit at once, and the locks go.

use std::time::{Duration, Instant};

use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, TxnClient, TxnMode,
    rpc::{KvRequest, KvResponse},
};

#[test]
fn secondaries_committed_in_the_background_are_visible_and_their_locks_go() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(4)).expect("cluster");
    let cl = TxnClient::new(
        c.router(),
        ClientConfig::default().with_async_secondaries(true),
    );
    let keys: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i * 64 + 1, b'k']).collect();
    for round in 0..20u8 {
        let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
        for k in &keys {
            t.put(k, &[round]).expect("put");
        }
        t.commit().expect("commit");
        // A reader right after the commit sees every key (resolving a secondary lock from
        // the primary's record if the background commit has not reached it yet).
        let mut r = cl.begin(TxnMode::Optimistic).expect("begin");
        for k in &keys {
            assert_eq!(r.get(k).expect("get"), Some(vec![round]), "round {round}");
        }
    }
    // And no lock stays behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut left = 0;
        for region in c.regions() {
            let leader = c.leader_of_group(region.id).expect("leader");
            if let Ok(KvResponse::Locks { locks }) = c.call(
                leader,
                KvRequest::ScanLock {
                    ctx: surge_txn::rpc::Context {
                        region_id: region.id,
                        epoch: region.epoch,
                        gc_hold_ts: 0,
                    },
                    max_ts: u64::MAX,
                    start: region.start.clone(),
                    end: None,
                    limit: 0,
                },
            ) {
                left += locks.len();
            }
        }
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{left} locks left behind");
        std::thread::sleep(Duration::from_millis(20));
    }
}
