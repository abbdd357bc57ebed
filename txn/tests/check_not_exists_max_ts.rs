//! A prewrite's `CheckNotExists` is a read at the transaction's `start_ts` (the key has no
//! value there) that leaves no lock behind. The region's `max_ts` must cover it, as TiKV's
//! prewrite raises `max_ts` to `start_ts` for every mutation that should not exist: else a
//! one-phase commit of the key chosen afterwards can land at or below that `start_ts`, and
//! the checker's snapshot, in which the key does not exist, changes under it while it goes
//! on to commit on that answer.

mod support;

use support::{get_at, leader_and_ctx, timestamp, txn_props};
use surge_txn::actions::{CommitKind, Mutation, PessimisticAction};
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClientConfig, LockMode, TxnClient, TxnMode};

/// Raw requests, one region. The checker C prewrites its primary and a `CheckNotExists` of
/// `k` at `start_ts` S; a one-phase commit T of `k` then comes with a commit_ts hint (and a
/// start_ts) taken before S. T must land above S, so that C's snapshot at S still has no `k`.
#[test]
fn a_check_not_exists_raises_max_ts_so_a_one_phase_commit_lands_above_it() {
    let dir = tempfile::tempdir().expect("dir");
    let c = support::one_region_cluster(dir.path(), LockMode::InMemory);
    let key: &[u8] = b"\x10k";
    let primary: &[u8] = b"\x10p";

    // A one-phase commit of another key first: the region's max_ts is synced, from a
    // timestamp below all those taken next.
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let mut warm = client.begin(TxnMode::Optimistic).expect("begin");
    warm.put(b"\x10w", b"w").expect("put");
    warm.commit().expect("warm-up one-phase commit");

    let t_start = timestamp(&c);
    let t_hint = timestamp(&c);
    let s = timestamp(&c);

    // C: its primary, and `k` must not exist (checked at S, nothing written for it).
    let (leader, ctx) = leader_and_ctx(&c, key);
    let reply = c
        .call(
            leader,
            KvRequest::Prewrite {
                ctx,
                mutations: vec![
                    (
                        Mutation::Put {
                            key: primary.to_vec(),
                            value: b"c".to_vec(),
                        },
                        PessimisticAction::SkipPessimisticCheck,
                    ),
                    (
                        Mutation::CheckNotExists { key: key.to_vec() },
                        PessimisticAction::SkipPessimisticCheck,
                    ),
                ],
                props: txn_props(primary, s, 0, CommitKind::TwoPc),
            },
        )
        .expect("prewrite call");
    assert!(
        matches!(
            reply,
            KvResponse::Prewrite {
                one_pc_commit_ts: 0
            }
        ),
        "C's prewrite: {reply:?}"
    );

    // T: one-phase commit of `k`, its hint below S.
    let reply = c
        .call(
            leader,
            KvRequest::Prewrite {
                ctx,
                mutations: vec![(
                    Mutation::Put {
                        key: key.to_vec(),
                        value: b"t".to_vec(),
                    },
                    PessimisticAction::SkipPessimisticCheck,
                )],
                props: txn_props(key, t_start, 0, CommitKind::OnePc { commit_ts: t_hint }),
            },
        )
        .expect("prewrite call");
    let KvResponse::Prewrite { one_pc_commit_ts } = reply else {
        panic!("T's one-phase prewrite: {reply:?}");
    };
    assert!(one_pc_commit_ts > 0, "committed in one phase");
    assert!(
        one_pc_commit_ts > s,
        "T landed at {one_pc_commit_ts} (hint {t_hint}), at or below C's start_ts {s}, where \
         C's CheckNotExists found no value"
    );
    assert_eq!(
        get_at(&c, key, s),
        None,
        "C's snapshot at {s} must still have no value for the key it checked"
    );
}
