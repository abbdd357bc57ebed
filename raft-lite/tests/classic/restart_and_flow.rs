//! Restart edge cases and flow control.

use crate::common::*;
use bytes::Bytes;
use surge_raft_lite::*;

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

#[test]
fn test_invalid_config_is_refused() {
    let cases: [(&str, fn(&mut Config)); 4] = [
        ("id", |c| c.id = 0),
        ("heartbeat_tick", |c| c.heartbeat_tick = 0),
        ("election_tick", |c| c.election_tick = c.heartbeat_tick),
        ("max_inflight_msgs", |c| c.max_inflight_msgs = 0),
    ];
    for (field, tweak) in cases {
        let mut c = cfg(1);
        tweak(&mut c);
        match RawNode::new(c, RaftState::bootstrap([1])) {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
}
