//! `CheckTxnStatus` decides a transaction's fate on its primary key, and may push the
//! primary lock's `min_commit_ts` past a reader. Asked on a secondary (by a reader that
//! took the key for its own primary), it must refuse (TiKV's `PrimaryMismatch`) instead of
//! pushing the secondary's lock: the transaction would then commit its primary below the
//! reader while its secondary's commit fails `CommitTsExpired`, and the reader would see
//! the primary's new value beside the secondary's old one.

mod support;

use support::{commit_keys, get_at, leader_and_ctx, prewrite_request, timestamp, txn_props};
use surge_txn::actions::CommitKind;
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClusterConfig, KeyError, LocalCluster, MvccError};

#[test]
fn check_txn_status_on_a_secondary_is_refused_and_leaves_its_lock_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    let (primary, secondary): (&[u8], &[u8]) = (b"\x10p", b"\x10s");
    let start_ts = timestamp(&c);
    let (leader, ctx) = leader_and_ctx(&c, primary);
    let r = c
        .call(
            leader,
            prewrite_request(
                ctx,
                &[(primary, b"new"), (secondary, b"new")],
                txn_props(primary, start_ts, 0, CommitKind::TwoPc),
            ),
        )
        .expect("prewrite call");
    assert!(matches!(r, KvResponse::Prewrite { .. }), "prewrite: {r:?}");
    let commit_ts = timestamp(&c);
    let reader_ts = timestamp(&c);

    // A reader above the coming commit asks the secondary as if it were the primary.
    let checked = c
        .call(
            leader,
            KvRequest::CheckTxnStatus {
                ctx,
                primary_key: secondary.to_vec(),
                lock_ts: start_ts,
                caller_start_ts: reader_ts,
                current_ts: reader_ts,
                rollback_if_not_exist: false,
                resolving_pessimistic_lock: false,
            },
        )
        .expect("check txn status call");

    // The transaction commits at commit_ts, below the reader: a snapshot at reader_ts
    // sees both keys' new values.
    let r = commit_keys(&c, &[primary], start_ts, commit_ts);
    assert!(matches!(r, KvResponse::Done), "primary commit: {r:?}");
    let r = commit_keys(&c, &[secondary], start_ts, commit_ts);
    assert!(
        matches!(r, KvResponse::Done),
        "the secondary's commit was refused after CheckTxnStatus on it answered {checked:?}: {r:?}"
    );
    assert_eq!(
        (
            get_at(&c, primary, reader_ts),
            get_at(&c, secondary, reader_ts)
        ),
        (Some(b"new".to_vec()), Some(b"new".to_vec()))
    );
    match checked {
        KvResponse::KeyError(KeyError::Mvcc(MvccError::PrimaryMismatch { key, lock })) => {
            assert_eq!(key, secondary);
            assert_eq!(
                (lock.key.as_slice(), lock.primary.as_slice()),
                (secondary, primary)
            );
            assert_eq!(lock.lock_ts, start_ts);
        }
        other => panic!("CheckTxnStatus on a secondary: {other:?}"),
    }
}
