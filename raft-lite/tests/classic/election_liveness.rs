//! Pre-vote and check-quorum liveness (thesis §9.6, §6.2).

use crate::common::*;
use surge_raft_lite::*;

#[test]
fn test_disruptive_follower_pre_vote() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    let term = net.node(1).term();
    net.isolate(3);
    net.tick(3, 50);
    assert_eq!(
        net.node(3).term(),
        term,
        "pre-vote keeps an isolated node's term"
    );
    net.recover();
    net.tick_all(5);
    assert_eq!(
        net.leaders(),
        vec![1],
        "rejoining node does not depose the leader"
    );
    assert_eq!(net.node(1).term(), term);
}

#[test]
fn test_disruptive_follower_without_pre_vote_is_held_by_lease() {
    let mut net = Net::with_config(&[1, 2, 3], |c| c.pre_vote = false);
    net.campaign(1);
    net.isolate(3);
    net.tick(3, 50);
    assert!(net.node(3).term() > net.node(1).term());
    net.recover();
    net.tick_all(1);
    // With check-quorum, 1 and 2 ignore 3's vote requests while their leader is alive;
    // 3 may learn a leader only after a new election, but never two leaders at once.
    net.tick_all(40);
    assert_eq!(net.leaders().len(), 1);
}

#[test]
fn test_leader_stepdown_when_quorum_lost() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(1);
    net.tick(1, 25);
    assert_eq!(net.node(1).role(), Role::Follower);
}

#[test]
fn test_node_with_smaller_term_can_complete_election() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    // Node 2 gets a higher term while cut off, without pre-vote reaching anyone.
    net.isolate(2);
    for _ in 0..3 {
        let n = net.node_mut(2);
        n.campaign_now().unwrap();
        net.settle();
    }
    net.recover();
    net.isolate(1);
    // Node 3 (smaller term) and node 2 must still elect someone.
    net.tick_all(60);
    let leaders: Vec<u64> = net.leaders().into_iter().filter(|l| *l != 1).collect();
    assert_eq!(leaders.len(), 1, "a leader is elected among 2 and 3");
}

#[test]
fn test_free_stuck_candidate_with_check_quorum() {
    let mut net = Net::with_config(&[1, 2, 3], |c| c.pre_vote = false);
    net.campaign(1);
    net.isolate(1);
    net.campaign(3);
    net.campaign(3);
    assert!(net.node(3).term() > net.node(1).term());
    net.recover();
    // The old leader hears the higher term (via answers to its heartbeats) and steps down;
    // the cluster converges on one leader at the highest term.
    net.tick_all(60);
    let ls = net.leaders();
    assert_eq!(ls.len(), 1);
    let t = net.node(ls[0]).term();
    assert!(t >= net.node(3).term());
}

#[test]
fn test_prevote_with_check_quorum() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(1);
    net.tick_all(60);
    let ls: Vec<u64> = net.leaders().into_iter().filter(|l| *l != 1).collect();
    assert_eq!(
        ls.len(),
        1,
        "after the leader is cut off, the others elect one"
    );
}

#[test]
fn test_dueling_pre_candidates() {
    let mut net = Net::new(&[1, 2, 3]);
    net.cut.insert((1, 3));
    net.campaign(1);
    net.campaign(3);
    assert_eq!(net.node(1).role(), Role::Leader);
    assert_ne!(net.node(3).role(), Role::Leader);
    net.recover();
    net.tick_all(30);
    assert_eq!(net.leaders().len(), 1);
}

/// Regression: pre-vote rejections are sent at the responder's own term, which the
/// pre-candidate (one term behind its pre-campaign) ignored, so a pre-candidate that the
/// quorum refused waited for its election timeout instead of stepping down at once.
#[test]
fn test_pre_candidate_steps_down_when_the_quorum_refuses() {
    let node = |id, log: &[(u64, u64)]| {
        let mut c = cfg(id);
        c.pre_vote = true;
        let st = RaftState {
            hard_state: HardState {
                term: 2,
                vote: 0,
                commit: 0,
            },
            conf: ConfState::with_voters([1, 2, 3]),
            snapshot: None,
            entries: ents(log),
        };
        RawNode::new(c, st).unwrap()
    };
    // Node 1's log is behind: both others refuse it.
    let mut n1 = node(1, &[(1, 1)]);
    let mut others = [node(2, &[(1, 1), (2, 2)]), node(3, &[(1, 1), (2, 2)])];
    n1.campaign_now().unwrap();
    assert_eq!(n1.role(), Role::PreCandidate);
    let asks = cycle(&mut n1).persisted_messages;
    assert_eq!(asks.len(), 2);
    let mut answers = Vec::new();
    for m in asks {
        let o = &mut others[m.to as usize - 2];
        o.step(m).unwrap();
        answers.extend(cycle(o).persisted_messages);
    }
    assert!(
        answers
            .iter()
            .all(|m| m.kind == MessageKind::PreVoteResp { reject: true } && m.term == 2),
        "{answers:?}"
    );
    for m in answers {
        n1.step(m).unwrap();
    }
    assert_eq!(n1.role(), Role::Follower, "refused by a quorum");
    assert_eq!(n1.term(), 2, "a pre-vote never changes the term");
}
