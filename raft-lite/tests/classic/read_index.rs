//! ReadIndex (thesis §6.4).

use crate::common::*;
use surge_raft_lite::*;

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

#[test]
fn test_cancelled_read_is_forgotten() {
    let mut net = Net::new(&[1, 2, 3]);
    net.campaign(1);
    net.propose(1, b"a").unwrap();
    net.isolate(1);
    net.node_mut(1).read_index(7).unwrap();
    net.node_mut(1).read_index(8).unwrap();
    assert_eq!(net.node(1).pending_read_count(), 2);
    assert!(net.node_mut(1).cancel_read(7));
    assert!(!net.node_mut(1).cancel_read(7));
    assert_eq!(net.node(1).pending_read_count(), 1);
    net.recover();
    net.tick_all(3);
    net.settle();
    // Only the read still wanted is confirmed.
    let ctxs: Vec<u64> = net.nodes[&1].read_states.iter().map(|r| r.ctx).collect();
    assert_eq!(ctxs, vec![8]);
}
