//! A range read raced by a split of its region: the read's epoch was checked, then the
//! region split while the read waited (here: parked at a pause point; in a cluster, its
//! read index round). The read must be refused (`EpochNotMatch`, the client re-reads the
//! region map) rather than answered for the shrunk range: the client resumes at the end
//! of the region it knows, so a part answer skipped the keys of the split-off half (the
//! stream reader's `ScanWrites` lost committed records that way, its `ScanLock` missed
//! record locks, the registry `Scan` missed lanes).

use std::time::Duration;

mod support;

use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClientConfig, LockMode, RegionError, TxnClient, TxnMode, region_pause_points};

#[test]
fn a_range_read_raced_by_a_split_is_refused_not_cut() {
    let dir = tempfile::tempdir().expect("dir");
    let c = support::one_region_cluster(dir.path(), LockMode::InMemory);
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(b"\x10a", b"1").expect("put");
    t.put(b"\x90b", b"2").expect("put");
    t.commit().expect("commit");

    let version = support::timestamp(&c);
    let region = c.region_of(b"\x10a").expect("region");
    let (leader, ctx) = support::leader_and_ctx(&c, b"\x10a");
    let leader_node = c.node(leader).expect("leader node");
    let pause = leader_node.pause_points();
    pause.arm(region_pause_points::RANGE_READ_AFTER_READY);
    let scan = KvRequest::Scan {
        ctx,
        start: b"\x10".to_vec(),
        end: None,
        limit: 100,
        version,
        bypass_locks: Vec::new(),
    };
    std::thread::scope(|s| {
        let reader = s.spawn(|| c.call(leader, scan));
        assert!(
            pause.wait_parked(
                region_pause_points::RANGE_READ_AFTER_READY,
                Duration::from_secs(10)
            ),
            "the scan reached its pause point"
        );
        let regions = c
            .split_region(region.id, Some(b"\x80".to_vec()))
            .expect("split");
        assert_eq!(regions.len(), 2, "{regions:?}");
        assert!(
            pause.release(region_pause_points::RANGE_READ_AFTER_READY),
            "the scan was still parked after the split"
        );
        match reader.join().expect("reader thread") {
            Ok(KvResponse::RegionError(RegionError::EpochNotMatch { .. })) => {}
            Ok(KvResponse::Pairs { pairs }) => {
                let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| k.as_slice()).collect();
                assert!(
                    keys.contains(&&b"\x90b"[..]),
                    "the scan answered for a part of the range the request was checked \
                     for: {keys:?}"
                );
            }
            other => panic!("scan: {other:?}"),
        }
    });
    // And through the client, which retries the refusal on the new region map: both keys.
    let pairs = client
        .begin(TxnMode::Optimistic)
        .expect("begin")
        .scan(b"\x10", None, 100)
        .expect("scan");
    assert_eq!(pairs.len(), 2, "{pairs:?}");
}
