//! A one-phase commit registers guards on its keys when it chooses its commit_ts, so that a
//! read at or above that timestamp waits for it instead of missing it. When apply refuses
//! the write (its region split between the command's checks and its proposal), nothing will
//! ever be written: the guards must go with the refusal, or every read of those keys at or
//! above the chosen timestamp meets a lock that is not there until the next leader change.

use std::time::Duration;

mod support;

use support::{leader_and_ctx, prewrite_request, timestamp, txn_props};
use surge_txn::actions::CommitKind;
use surge_txn::region_pause_points::WRITE_BEFORE_PROPOSE;
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClusterConfig, LocalCluster, RegionError};

#[test]
fn a_one_phase_commit_refused_at_apply_releases_its_guards() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    // Stays in the parent region when it splits at 0x80.
    let key: &[u8] = b"\x10s";
    let (leader, ctx) = leader_and_ctx(&c, key);
    let node = c.node(leader).expect("leader node");
    let start_ts = timestamp(&c);
    let prewrite = prewrite_request(
        ctx,
        &[(key, b"one-phase")],
        txn_props(key, start_ts, 0, CommitKind::OnePc { commit_ts: 0 }),
    );
    let pause = node.pause_points();
    pause.arm(WRITE_BEFORE_PROPOSE);
    let reply = std::thread::scope(|s| {
        let writer = s.spawn(|| node.handle(prewrite));
        assert!(
            pause.wait_parked(WRITE_BEFORE_PROPOSE, Duration::from_secs(10)),
            "the one-phase prewrite never reached its proposal"
        );
        // The split applies before the write is proposed: apply refuses the write.
        c.split_region(ctx.region_id, Some(b"\x80".to_vec()))
            .expect("split");
        assert!(
            pause.release(WRITE_BEFORE_PROPOSE),
            "the prewrite went on before the split (its park ran out)"
        );
        writer.join().expect("prewrite thread")
    });
    assert!(
        matches!(
            reply,
            KvResponse::RegionError(RegionError::EpochNotMatch { .. })
        ),
        "the one-phase prewrite raced a split: {reply:?}"
    );

    // Above any commit_ts the refused commit could have chosen.
    let read_ts = timestamp(&c);
    let parent = ctx.region_id;
    let (leader, ctx) = leader_and_ctx(&c, key);
    assert_eq!(ctx.region_id, parent, "the key stayed in the parent region");
    let r = c
        .call(
            leader,
            KvRequest::Get {
                ctx,
                key: key.to_vec(),
                version: read_ts,
                bypass_locks: vec![],
            },
        )
        .expect("get call");
    assert!(
        matches!(r, KvResponse::Get { value: None }),
        "a read after the refused one-phase commit met its guard: {r:?}"
    );
}
