//! Single-server membership changes with learners (thesis §4).

use crate::common::*;
use bytes::Bytes;
use surge_raft_lite::*;

#[test]
fn test_new_leader_pending_config() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    // The no-op is not committed yet: conf changes are refused.
    assert!(matches!(
        n.propose_conf_change(ConfChange::AddVoter(4)),
        Err(Error::LeaderNotReady { .. })
    ));
}

#[test]
fn test_step_ignore_config() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(2);
    net.isolate(3);
    net.node_mut(1)
        .propose_conf_change(ConfChange::AddLearner(4))
        .unwrap();
    assert!(matches!(
        net.node_mut(1)
            .propose_conf_change(ConfChange::AddLearner(5)),
        Err(Error::ConfChangePending { .. })
    ));
}

#[test]
fn test_add_learner_then_promote() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.propose(1, b"a").unwrap();
    net.node_mut(1)
        .propose_conf_change(ConfChange::AddLearner(4))
        .unwrap();
    net.add_empty_node(4);
    net.settle();
    net.tick_all(2);
    assert!(net.node(4).conf().learners.contains(&4));
    assert_eq!(net.applied_data(4), vec![b"a".to_vec()]);
    net.tick(4, 100);
    assert_ne!(
        net.node(4).role(),
        Role::Leader,
        "a learner never campaigns"
    );
    net.node_mut(1)
        .propose_conf_change(ConfChange::AddVoter(4))
        .unwrap();
    net.settle();
    assert!(net.node(1).conf().voters.contains(&4));
    assert_eq!(net.node(1).conf().voters.len(), 4);
}

#[test]
fn test_learner_is_not_counted_in_quorum() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    let _ = cycle(&mut n);
    n.step(msg(
        2,
        1,
        n.term(),
        MessageKind::AppendResp {
            index: 1,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    n.propose_conf_change(ConfChange::AddLearner(4)).unwrap();
    let _ = cycle(&mut n);
    n.step(msg(
        2,
        1,
        n.term(),
        MessageKind::AppendResp {
            index: 2,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    let id = n.propose(Bytes::from_static(b"x")).unwrap();
    let _ = cycle(&mut n);
    // Only the learner acks: no commit.
    n.step(msg(
        4,
        1,
        n.term(),
        MessageKind::AppendResp {
            index: id.index,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    assert!(n.committed() < id.index);
    // A learner's vote does not count either.
    let mut c = node_with_log(1, &[1, 2, 3], &[], 1);
    c.campaign_now().unwrap();
    let _ = cycle(&mut c);
    c.step(msg(4, 1, 2, MessageKind::VoteResp { reject: false }))
        .unwrap();
    assert_eq!(c.role(), Role::Candidate);
}

#[test]
fn test_remove_node_and_commit_after() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.node_mut(1)
        .propose_conf_change(ConfChange::RemoveNode(3))
        .unwrap();
    net.settle();
    net.isolate(3);
    assert_eq!(net.node(1).conf().voters.len(), 2);
    // With 3 gone, 1 and 2 still commit.
    net.propose(1, b"y").unwrap();
    assert_eq!(net.applied_data(2), vec![b"y".to_vec()]);
}

#[test]
fn test_removed_leader_steps_down() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.node_mut(1)
        .propose_conf_change(ConfChange::RemoveNode(1))
        .unwrap();
    net.settle();
    net.tick_all(2);
    assert_eq!(net.node(1).role(), Role::Follower);
    net.isolate(1);
    net.tick_all(40);
    let ls = net.leaders();
    assert_eq!(ls.len(), 1);
    assert_ne!(ls[0], 1);
}

#[test]
fn test_invalid_conf_changes_refused() {
    let cs = ConfState::with_voters([1]);
    assert!(cs.apply(ConfChange::RemoveNode(1)).is_err());
    assert!(cs.apply(ConfChange::AddVoter(1)).is_err());
    assert!(cs.apply(ConfChange::AddVoter(0)).is_err());
    assert!(cs.apply(ConfChange::RemoveNode(7)).is_err());
    let two = cs.apply(ConfChange::AddLearner(2)).unwrap();
    assert!(two.apply(ConfChange::AddLearner(2)).is_err());
    assert_eq!(
        two.apply(ConfChange::AddVoter(2)).unwrap(),
        ConfState::with_voters([1, 2])
    );
}

/// A follower appended an uncommitted conf change (which took effect at once); a new
/// leader overwrites it with a longer suffix holding no conf change. The follower must go
/// back to the previous membership, not keep the overwritten one (regression: the
/// membership was only recomputed when the log got shorter than the conf entry's index).
#[test]
fn test_overwritten_conf_change_is_reverted() {
    let mut n = node_with_log(2, &[1, 2, 3], &[(1, 1)], 2);
    let four = codec_conf(&[1, 2, 3, 4]);
    let mut conf_entry = ents(&[(2, 2)]);
    conf_entry[0].kind = EntryKind::ConfChange;
    conf_entry[0].data = four;
    n.step(msg(
        1,
        2,
        2,
        MessageKind::Append {
            prev_index: 1,
            prev_term: 1,
            entries: conf_entry,
            commit: 1,
        },
    ))
    .unwrap();
    let _ = cycle(&mut n);
    assert!(n.conf().voters.contains(&4), "appended conf takes effect");
    // Leader 3 of term 3 never had the change: it replaces index 2 and adds index 3.
    n.step(msg(3, 2, 3, append((1, 1), &[(2, 3), (3, 3)], 1)))
        .unwrap();
    let _ = cycle(&mut n);
    assert_eq!(n.last_index(), 3);
    assert_eq!(n.term_at(2), Some(3));
    assert_eq!(
        n.conf(),
        &ConfState::with_voters([1, 2, 3]),
        "the overwritten change must no longer be in effect"
    );
}

fn codec_conf(voters: &[u64]) -> Bytes {
    encode_conf_state(&ConfState::with_voters(voters.iter().copied()))
}
