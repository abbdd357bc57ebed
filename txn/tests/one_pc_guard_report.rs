//! A one-phase commit registers guards on its keys between choosing its commit_ts and
//! applying, and a read at or above that timestamp is refused as locked instead of missing
//! the write. The lock it is told of stands for the commit, so it must name the commit's real
//! primary and TTL: a reader then resolves through the primary at once (never deciding on a
//! secondary) and treats the lock as alive for as long as the transaction's own locks live.
//! A lock naming the key itself with TTL 0 sent the reader's `CheckTxnStatus` to the
//! secondary, already "expired", where it could write a rollback record.

use std::time::Duration;

mod support;

use support::{leader_and_ctx, prewrite_request, timestamp, txn_props};
use surge_txn::actions::CommitKind;
use surge_txn::region_pause_points::WRITE_BEFORE_PROPOSE;
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClusterConfig, KeyError, LocalCluster, MvccError};

#[test]
fn a_read_that_meets_a_one_phase_guard_is_told_the_commits_primary_and_ttl() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    let (primary, secondary): (&[u8], &[u8]) = (b"\x10p", b"\x10s");
    let (leader, ctx) = leader_and_ctx(&c, primary);
    let node = c.node(leader).expect("leader node");
    let start_ts = timestamp(&c);
    let props = txn_props(primary, start_ts, 0, CommitKind::OnePc { commit_ts: 0 });
    let ttl = props.lock_ttl;
    let prewrite = prewrite_request(ctx, &[(primary, b"v"), (secondary, b"v")], props);
    let pause = node.pause_points();
    pause.arm(WRITE_BEFORE_PROPOSE);
    std::thread::scope(|s| {
        let writer = s.spawn(|| node.handle(prewrite));
        assert!(
            pause.wait_parked(WRITE_BEFORE_PROPOSE, Duration::from_secs(10)),
            "the one-phase prewrite never reached its proposal"
        );
        // Its guards are registered: a read above its commit_ts meets them.
        let read_ts = timestamp(&c);
        let r = c
            .call(
                leader,
                KvRequest::Get {
                    ctx,
                    key: secondary.to_vec(),
                    version: read_ts,
                    bypass_locks: vec![],
                },
            )
            .expect("get call");
        assert!(
            pause.release(WRITE_BEFORE_PROPOSE),
            "the prewrite went on by itself (its park ran out)"
        );
        let committed = writer.join().expect("prewrite thread");
        assert!(
            matches!(committed, KvResponse::Prewrite { one_pc_commit_ts } if one_pc_commit_ts > 0),
            "one-phase prewrite: {committed:?}"
        );
        let KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock))) = r else {
            panic!("a read above the commit's timestamp did not meet its guard: {r:?}");
        };
        assert_eq!(
            (
                lock.key.as_slice(),
                lock.primary.as_slice(),
                lock.lock_ts,
                lock.ttl
            ),
            (secondary, primary, start_ts, ttl),
            "the guard's lock (key, primary, lock_ts, ttl): {lock:?}"
        );
    });
}
