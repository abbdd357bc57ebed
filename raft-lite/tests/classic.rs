//! The classic Raft bugs, one test each, named after their raft-rs counterparts
//! (harness/tests/integration_cases/*). See ../shared/reference/raft.md §3.

#![allow(clippy::unwrap_used, clippy::type_complexity)] // Tests: a failure is a test failure.

mod common;

use bytes::Bytes;
use common::*;
use surge_raft_lite::*;

fn append(prev: (u64, u64), entries: &[(u64, u64)], commit: u64) -> MessageKind {
    MessageKind::Append {
        prev_index: prev.0,
        prev_term: prev.1,
        entries: ents(entries),
        commit,
    }
}

fn append_resp(rd: &Ready) -> Vec<(u64, bool, u64)> {
    rd.persisted_messages
        .iter()
        .chain(rd.messages.iter())
        .filter_map(|m| match m.kind {
            MessageKind::AppendResp {
                index,
                reject,
                hint,
            } => Some((index, reject, hint)),
            _ => None,
        })
        .collect()
}

/// Direct campaigns in tests need voters without a leader lease.
fn no_lease(c: &mut Config) {
    c.pre_vote = false;
    c.check_quorum = false;
}

// ---- 1. Figure 8 ---------------------------------------------------------------------

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

// ---- 2. Follower truncation ------------------------------------------------------------

#[test]
fn test_log_replication_with_reordered_message() {
    let mut f = node_with_log(2, &[1, 2, 3], &[(1, 1)], 1);
    // The newer append arrives first...
    f.step(msg(1, 2, 1, append((1, 1), &[(2, 1), (3, 1)], 0)))
        .unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(3, false, 0)]);
    // ...then the older one, a prefix of it: nothing is truncated, and the ack is for
    // what this message proves (index 2), not for our whole log.
    f.step(msg(1, 2, 1, append((1, 1), &[(2, 1)], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, false, 0)]);
    assert_eq!(
        f.last_index(),
        3,
        "a stale append must not drop a matching suffix"
    );
}

#[test]
fn test_follower_append_entries() {
    // (prev, entries, resulting log terms)
    let cases: Vec<((u64, u64), Vec<(u64, u64)>, Vec<u64>)> = vec![
        ((2, 2), vec![(3, 3)], vec![1, 2, 3]),
        ((1, 1), vec![(2, 3), (3, 4)], vec![1, 3, 4]),
        ((0, 0), vec![(1, 1)], vec![1, 2]),
        ((0, 0), vec![(1, 3)], vec![3]),
    ];
    for (prev, es, want) in cases {
        let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
        f.step(msg(1, 2, 4, append(prev, &es, 0))).unwrap();
        let rd = cycle(&mut f);
        let got: Vec<u64> = (1..=f.last_index())
            .map(|i| f.term_at(i).unwrap())
            .collect();
        assert_eq!(got, want, "prev {prev:?} entries {es:?}");
        let first_new = es
            .iter()
            .find(|(i, t)| f.term_at(*i) == Some(*t))
            .map(|e| e.0);
        if let (Some(fst), Some(last)) = (rd.entries.first(), rd.entries.last()) {
            assert!(fst.index >= first_new.unwrap_or(1));
            assert_eq!(last.index, f.last_index());
        }
    }
}

#[test]
fn test_follower_check_msg_append() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
    // prev term mismatch at 2: reject with hint.
    f.step(msg(1, 2, 2, append((2, 3), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, true, 2)]);
    // prev beyond our log: reject, hint = our last index.
    f.step(msg(1, 2, 2, append((5, 2), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(5, true, 2)]);
    // match: accept.
    f.step(msg(1, 2, 2, append((2, 2), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, false, 0)]);
}

#[test]
fn test_handle_msg_append() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
    // Commit is capped by what the message proves: leader commit 3, message ends at 2.
    f.step(msg(1, 2, 2, append((1, 1), &[(2, 2)], 3))).unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.committed(), 2);
    f.step(msg(1, 2, 2, append((2, 2), &[(3, 2), (4, 2)], 3)))
        .unwrap();
    let rd = cycle(&mut f);
    assert_eq!(f.committed(), 3);
    assert_eq!(
        rd.committed_entries
            .iter()
            .map(|e| e.index)
            .collect::<Vec<_>>(),
        vec![3]
    );
}

#[test]
fn test_committed_entry_never_overwritten() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 1)], 1);
    f.step(msg(1, 2, 1, append((2, 1), &[], 2))).unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.committed(), 2);
    // A (buggy) append that conflicts below commit is refused, log unchanged.
    f.step(msg(1, 2, 3, append((0, 0), &[(1, 1), (2, 3)], 2)))
        .unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.term_at(2), Some(1));
}

// ---- 3. Persist before responding ----------------------------------------------------

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

// ---- 4. Term handling ------------------------------------------------------------------

#[test]
fn test_update_term_from_message() {
    for role in ["follower", "candidate", "leader"] {
        let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
        match role {
            "candidate" => {
                n.campaign_now().unwrap();
                let _ = cycle(&mut n);
            }
            "leader" => make_leader(&mut n, &[1, 2, 3]),
            _ => {}
        }
        n.step(msg(2, 1, 9, append((0, 0), &[], 0))).unwrap();
        assert_eq!(n.term(), 9, "{role}");
        assert_eq!(n.role(), Role::Follower, "{role}");
        assert_eq!(n.leader(), Some(2), "{role}");
    }
}

#[test]
fn test_reject_stale_term_message() {
    let mut n = node_with_log(1, &[1, 2, 3], &[(1, 1)], 5);
    n.step(msg(2, 1, 3, append((1, 1), &[(2, 3)], 0))).unwrap();
    let rd = cycle(&mut n);
    assert_eq!(n.last_index(), 1, "stale append ignored");
    // The stale leader is told our term so it steps down.
    let m = &rd.persisted_messages[0];
    assert_eq!((m.to, m.term), (2, 5));
    n.step(msg(
        2,
        1,
        3,
        MessageKind::Vote {
            last_index: 9,
            last_term: 9,
            transfer: false,
        },
    ))
    .unwrap();
    assert_eq!(n.hard_state().vote, 0);
}

#[test]
fn test_old_leader_steps_down_on_newer_term_answer() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    let t = n.term();
    n.step(msg(
        2,
        1,
        t + 3,
        MessageKind::AppendResp {
            index: 0,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    assert_eq!(n.role(), Role::Follower);
    assert_eq!(n.term(), t + 3);
}

#[test]
fn test_vote_request_up_to_date_is_lexicographic() {
    // Our log ends at (index 3, term 2).
    let cases = [
        ((3, 2), true),
        ((4, 2), true),
        ((2, 2), false),
        ((1, 3), true), // higher last term wins even with a shorter log
        ((9, 1), false),
    ];
    for ((li, lt), grant) in cases {
        let mut n = node_with_log(1, &[1, 2, 3], &[(1, 1), (2, 2), (3, 2)], 2);
        n.step(msg(
            2,
            1,
            3,
            MessageKind::Vote {
                last_index: li,
                last_term: lt,
                transfer: false,
            },
        ))
        .unwrap();
        let rd = cycle(&mut n);
        let rej = matches!(
            rd.persisted_messages[0].kind,
            MessageKind::VoteResp { reject: true }
        );
        assert_eq!(!rej, grant, "candidate log ({li},{lt})");
    }
}

#[test]
fn test_voter_votes_once_per_term() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    let v = |from| {
        msg(
            from,
            1,
            2,
            MessageKind::Vote {
                last_index: 0,
                last_term: 0,
                transfer: false,
            },
        )
    };
    n.step(v(2)).unwrap();
    n.step(v(3)).unwrap();
    n.step(v(2)).unwrap();
    let rd = cycle(&mut n);
    let grants: Vec<(u64, bool)> = rd
        .persisted_messages
        .iter()
        .map(|m| {
            (
                m.to,
                matches!(m.kind, MessageKind::VoteResp { reject: false }),
            )
        })
        .collect();
    assert_eq!(grants, vec![(2, true), (3, false), (2, true)]);
}

// ---- 7. Pre-vote and check-quorum liveness --------------------------------------------

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

// ---- 8. Leader transfer ------------------------------------------------------------------

#[test]
fn test_leader_transfer_to_up_to_date_node() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.node_mut(1).transfer_leader(2).unwrap();
    net.settle();
    assert_eq!(net.leaders(), vec![2]);
}

#[test]
fn test_leader_transfer_to_slow_follower() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.propose(1, b"a").unwrap();
    net.propose(1, b"b").unwrap();
    net.recover();
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    assert_eq!(net.leaders(), vec![3], "the target was caught up first");
    assert_eq!(net.applied_data(3), vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn test_leader_transfer_timeout() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    assert_eq!(net.node(1).transferee(), Some(3));
    net.tick(1, 10);
    assert_eq!(
        net.node(1).transferee(),
        None,
        "abandoned after an election timeout"
    );
    assert_eq!(net.leaders(), vec![1]);
}

#[test]
fn test_leader_transfer_ignore_proposal() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.node_mut(1).transfer_leader(3).unwrap();
    assert!(matches!(
        net.propose(1, b"x"),
        Err(Error::TransferInProgress { to: 3 })
    ));
}

#[test]
fn test_leader_transfer_rejects_bad_targets() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    assert!(matches!(
        net.node_mut(1).transfer_leader(1),
        Err(Error::InvalidTransfer { .. })
    ));
    assert!(matches!(
        net.node_mut(1).transfer_leader(9),
        Err(Error::InvalidTransfer { .. })
    ));
    net.node_mut(1)
        .propose_conf_change(ConfChange::AddLearner(4))
        .unwrap();
    net.add_empty_node(4);
    net.settle();
    assert!(matches!(
        net.node_mut(1).transfer_leader(4),
        Err(Error::InvalidTransfer { .. })
    ));
    assert!(matches!(
        net.node_mut(2).transfer_leader(3),
        Err(Error::NotLeader { leader: Some(1) })
    ));
}

#[test]
fn test_leader_transfer_receive_higher_term_vote() {
    let mut net = Net::with_config(&[1, 2, 3], no_lease);
    net.campaign(1);
    net.isolate(3);
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    // Another node wins a higher term meanwhile; the old leader steps down and forgets
    // the transfer.
    net.campaign(2);
    net.recover();
    net.tick_all(3);
    assert_eq!(net.leaders(), vec![2]);
    assert_eq!(net.node(1).transferee(), None);
}

#[test]
fn test_leader_transfer_after_snapshot() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.propose(1, b"a").unwrap();
    compact_leader(&mut net, 1);
    net.recover();
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    assert_eq!(net.leaders(), vec![3]);
    assert!(net.nodes[&3].snapshot_installed.is_some());
}

fn compact_leader(net: &mut Net, id: u64) {
    let n = net.node(id);
    let idx = n.applied();
    let snap = Snapshot {
        meta: SnapshotMeta {
            index: idx,
            term: n.term_at(idx).unwrap(),
            conf: n.conf().clone(),
        },
        data: Bytes::from(format!("state@{idx}")),
    };
    net.node_mut(id).compact(snap).unwrap();
    assert_eq!(net.node(id).snapshot_index(), idx);
}

// ---- 9. Snapshots --------------------------------------------------------------------------

#[test]
fn test_restore_ignore_snapshot() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 1), (3, 1)], 1);
    f.step(msg(1, 2, 1, append((3, 1), &[], 3))).unwrap();
    let _ = cycle(&mut f);
    let snap = Snapshot {
        meta: SnapshotMeta {
            index: 2,
            term: 1,
            conf: ConfState::with_voters([1, 2]),
        },
        data: Bytes::new(),
    };
    f.step(msg(1, 2, 1, MessageKind::Snapshot { snapshot: snap }))
        .unwrap();
    let rd = cycle(&mut f);
    assert!(
        rd.snapshot.is_none(),
        "a snapshot older than commit is ignored"
    );
    assert_eq!(f.last_index(), 3);
}

#[test]
fn test_slow_node_restore() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    for i in 0..10 {
        net.propose(1, format!("v{i}").as_bytes()).unwrap();
    }
    compact_leader(&mut net, 1);
    net.recover();
    net.tick_all(3);
    let n3 = &net.nodes[&3];
    assert!(n3.snapshot_installed.is_some());
    assert_eq!(n3.raw.committed(), net.node(1).committed());
    net.propose(1, b"after").unwrap();
    net.tick_all(2);
    assert_eq!(net.applied_data(3).last().unwrap(), b"after");
}

#[test]
fn test_provide_snap() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    let _ = cycle(&mut n);
    let id = n.propose(Bytes::from_static(b"a")).unwrap();
    let _ = cycle(&mut n);
    n.step(msg(
        2,
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
    let _ = cycle(&mut n);
    assert_eq!(n.applied(), id.index);
    let snap = Snapshot {
        meta: SnapshotMeta {
            index: id.index,
            term: id.term,
            conf: n.conf().clone(),
        },
        data: Bytes::from_static(b"s"),
    };
    n.compact(snap).unwrap();
    // Node 3 never answered; the entries it needs are gone: the leader sends the snapshot.
    n.step(msg(
        3,
        1,
        n.term(),
        MessageKind::HeartbeatResp { read_seq: 0 },
    ))
    .unwrap();
    let rd = cycle(&mut n);
    assert!(
        rd.messages
            .iter()
            .any(|m| m.to == 3 && matches!(m.kind, MessageKind::Snapshot { .. }))
    );
}

// ---- 5. Membership changes -----------------------------------------------------------------

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

// ---- 6. ReadIndex ------------------------------------------------------------------------

#[test]
fn test_read_only_for_new_leader() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    assert!(matches!(n.read_index(7), Err(Error::LeaderNotReady { .. })));
}

#[test]
fn test_read_index_confirmed_by_quorum() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.propose(1, b"a").unwrap();
    net.node_mut(1).read_index(42).unwrap();
    net.settle();
    let rs = &net.nodes[&1].read_states;
    assert_eq!(
        rs,
        &vec![ReadState {
            index: net.node(1).committed(),
            ctx: 42
        }]
    );
    // A partitioned leader cannot confirm a read.
    net.isolate(1);
    net.node_mut(1).read_index(43).unwrap();
    net.settle();
    assert_eq!(net.nodes[&1].read_states.len(), 1);
}

// ---- 11. Restart edge cases ------------------------------------------------------------

#[test]
fn test_restart_replays_committed_entries() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.propose(1, b"a").unwrap();
    net.propose(1, b"b").unwrap();
    net.tick_all(2);
    net.restart(2);
    net.tick_all(2);
    assert_eq!(net.applied_data(2), vec![b"a".to_vec(), b"b".to_vec()]);
    let st = RaftState {
        hard_state: HardState {
            term: 1,
            vote: 0,
            commit: 99,
        },
        conf: ConfState::with_voters([1]),
        snapshot: None,
        entries: ents(&[(1, 1)]),
    };
    let n = RawNode::new(cfg(1), st).unwrap();
    assert_eq!(n.committed(), 1, "a commit beyond the log is clamped");
}

#[test]
fn test_single_node_commits_after_persist() {
    let mut net = Net::new(&[1]);
    net.campaign(1);
    assert_eq!(net.leaders(), vec![1]);
    net.propose(1, b"solo").unwrap();
    assert_eq!(net.applied_data(1), vec![b"solo".to_vec()]);
}

#[test]
fn test_flow_control_window() {
    let mut net = Net::with_config(&[1, 2], |c| {
        c.max_inflight_msgs = 2;
        c.max_size_per_msg = 1;
    });
    net.campaign(1);
    // Stop acks: the leader must not send more than the window.
    net.drop_kinds.insert("AppendResp");
    for i in 0..10u8 {
        net.node_mut(1).propose(Bytes::from(vec![i])).unwrap();
        net.process(1);
    }
    let appends = net
        .queue
        .iter()
        .filter(|m| matches!(&m.kind, MessageKind::Append { entries, .. } if !entries.is_empty()))
        .count();
    assert!(appends <= 2, "in-flight window exceeded: {appends}");
    net.recover();
    net.settle();
    net.tick_all(3);
    assert_eq!(net.applied_data(2).len(), 10);
}
