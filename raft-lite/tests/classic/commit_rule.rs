//! Figure 8: only entries of the current term commit by counting (Raft §5.4.2).

use crate::common::*;
use surge_raft_lite::*;

#[test]
fn test_leader_only_commits_log_from_current_term() {
    // Node 1 holds an entry of term 2 at index 2, becomes leader in term 3.
    let mut n = node_with_log(1, &[1, 2, 3], &[(1, 1), (2, 2)], 2);
    make_leader(&mut n, &[1, 2, 3]);
    let _ = cycle(&mut n); // persists the no-op at index 3
    assert_eq!(n.last_index(), 3);
    // A quorum (1 and 2) holds index 2, which is from an older term: not committed.
    n.step(msg(
        2,
        1,
        3,
        MessageKind::AppendResp {
            index: 2,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    assert_eq!(
        n.committed(),
        0,
        "figure 8: an old-term entry is not committed by counting"
    );
    // Once the no-op of term 3 is on a quorum, both commit.
    n.step(msg(
        2,
        1,
        3,
        MessageKind::AppendResp {
            index: 3,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    assert_eq!(n.committed(), 3);
}

#[test]
fn test_cannot_commit_without_new_term_entry() {
    let mut net = Net::with_config(&[1, 2, 3, 4, 5], no_lease);
    net.campaign(1);
    // Entries reach only node 2: not committed.
    for p in [3, 4, 5] {
        net.cut.insert((1, p));
    }
    net.propose(1, b"a").unwrap();
    net.propose(1, b"b").unwrap();
    assert_eq!(net.node(1).committed(), 1);
    // Node 2 becomes leader of term 2 and the old entries commit only with its no-op.
    net.recover();
    net.isolate(1);
    net.campaign(2);
    assert_eq!(net.node(2).role(), Role::Leader);
    let last = net.node(2).last_index();
    assert_eq!(net.node(2).term_at(last), Some(net.node(2).term()));
    assert_eq!(net.node(2).committed(), last);
    assert_eq!(net.applied_data(2), vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn test_commit_without_new_term_entry() {
    let mut net = Net::with_config(&[1, 2, 3], no_lease);
    net.campaign(1);
    net.propose(1, b"x").unwrap();
    net.campaign(2);
    assert_eq!(net.leaders(), vec![2]);
    // The new leader's no-op commits it, and the old entry with it, everywhere.
    net.tick(2, 2);
    for id in [1, 2, 3] {
        assert_eq!(
            net.node(id).committed(),
            net.node(2).last_index(),
            "node {id}"
        );
        assert_eq!(net.applied_data(id), vec![b"x".to_vec()]);
    }
}
