//! Leader transfer (thesis §3.10).

use crate::common::*;
use surge_raft_lite::*;

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

#[test]
fn test_leader_transfer_back_cancels() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    net.node_mut(1).transfer_leader(1).unwrap();
    assert_eq!(net.node(1).transferee(), None);
    net.propose(1, b"accepted again").unwrap();
    net.recover();
    net.tick_all(3);
    assert_eq!(net.leaders(), vec![1]);
}

#[test]
fn test_leader_transfer_second_transfer_to_another_node() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.node_mut(1).transfer_leader(3).unwrap();
    net.settle();
    // Re-targeting while the first transfer is stuck goes to the new target.
    net.node_mut(1).transfer_leader(2).unwrap();
    net.settle();
    assert_eq!(net.leaders(), vec![2]);
}

#[test]
fn test_leader_transfer_to_follower_that_lost_entries_catches_it_up() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.isolate(2);
    for i in 0..5u8 {
        net.propose(1, &[i]).unwrap();
    }
    net.recover();
    // The target is behind by five entries; the transfer completes only once it has them.
    net.node_mut(1).transfer_leader(2).unwrap();
    net.settle();
    assert_eq!(net.leaders(), vec![2]);
    assert_eq!(net.applied_data(2).len(), 5);
    assert!(net.node(2).term() > 1);
}
