//! Snapshots and compaction (Raft §7).

use crate::common::*;
use bytes::Bytes;
use surge_raft_lite::*;

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
