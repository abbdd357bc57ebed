//! Votes and acknowledgements go out only after the state they depend on is durable.

use crate::common::*;
use bytes::Bytes;
use surge_raft_lite::*;

#[test]
fn test_vote_sent_only_after_persist() {
    let mut f = node_with_log(2, &[1, 2, 3], &[(1, 1)], 1);
    f.step(msg(
        1,
        2,
        2,
        MessageKind::Vote {
            last_index: 1,
            last_term: 1,
            transfer: false,
        },
    ))
    .unwrap();
    let rd = cycle(&mut f);
    assert!(
        rd.messages.is_empty(),
        "a vote must not go out before the write"
    );
    assert!(matches!(
        rd.persisted_messages[0].kind,
        MessageKind::VoteResp { reject: false }
    ));
    assert_eq!(
        rd.hard_state,
        Some(HardState {
            term: 2,
            vote: 1,
            commit: 0
        })
    );
}

#[test]
fn test_append_ack_sent_only_after_persist() {
    let mut f = node_with_log(2, &[1, 2, 3], &[(1, 1)], 1);
    f.step(msg(1, 2, 1, append((1, 1), &[(2, 1)], 0))).unwrap();
    let rd = cycle(&mut f);
    assert!(rd.messages.is_empty());
    assert_eq!(
        rd.entries.len(),
        1,
        "the acknowledged entry is in the same Ready's write"
    );
    assert_eq!(append_resp(&rd), vec![(2, false, 0)]);
}

#[test]
fn test_candidate_vote_requests_after_persist() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    n.campaign_now().unwrap();
    let rd = cycle(&mut n);
    assert!(rd.messages.is_empty());
    assert_eq!(rd.persisted_messages.len(), 2);
    assert_eq!(rd.hard_state.unwrap().vote, 1);
}

#[test]
fn test_leader_counts_itself_only_after_persist() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    let _ = cycle(&mut n);
    n.step(msg(
        2,
        1,
        2,
        MessageKind::AppendResp {
            index: 1,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    assert_eq!(n.committed(), 1);
    let id = n.propose(Bytes::from_static(b"p")).unwrap();
    // Follower 2 acks before the leader persisted: 1 of 3 durable, no commit.
    n.step(msg(
        2,
        1,
        2,
        MessageKind::AppendResp {
            index: id.index,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    assert_eq!(n.committed(), 1);
    let rd = n.ready().unwrap();
    assert!(rd.entries.iter().any(|e| e.index == id.index));
    assert!(matches!(
        n.step(msg(3, 1, 2, MessageKind::HeartbeatResp { read_seq: 0 })),
        Err(Error::ReadyOutstanding)
    ));
    n.advance();
    assert_eq!(
        n.committed(),
        id.index,
        "after its own persist the leader completes the quorum"
    );
}
