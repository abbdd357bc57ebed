//! The cluster as a SQL layer shows it through a `TxnClient`: the regions covering a key
//! range with their leaders and peers (`SHOW TABLE t REGIONS`), the pessimistic lock mode
//! set on every node and read back (`SET CONFIG` / `SHOW CONFIG`), and node-wide counters
//! (`SHOW GLOBAL STATUS`).

mod binlog_support;

use binlog_support::{cluster, key};
use surge_txn::{ClientConfig, LockMode, TxnClient, TxnMode};

#[test]
fn regions_of_a_range_come_with_leaders_and_peers() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(dir.path());
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let all = client.regions_in_range(b"", None).expect("regions");
    let meta = c.regions();
    assert_eq!(all.len(), 4);
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        meta.iter().map(|r| r.id).collect::<Vec<_>>()
    );
    // Contiguous, from the start to the end of the key space.
    assert!(all[0].start.is_empty());
    assert!(all[3].end.is_empty());
    for pair in all.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    for r in &all {
        assert_eq!(r.peers.len(), 3);
        let leader = r.leader.expect("a leader");
        assert!(r.peers.contains(&leader));
        assert_eq!(Some(leader), c.leader_of_group(r.id));
    }
    // A range across regions 1 and 2, and one inside region 3.
    let some = client
        .regions_in_range(&key(1, "a"), Some(&key(2, "z")))
        .expect("regions");
    assert_eq!(
        some.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![all[1].id, all[2].id]
    );
    let one = client
        .regions_in_range(&key(3, "a"), Some(&key(3, "b")))
        .expect("regions");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].id, all[3].id);
    // An end at a region's start excludes that region.
    let upto = client
        .regions_in_range(b"", Some(&all[1].start))
        .expect("regions");
    assert_eq!(upto.len(), 1);
    assert!(client.region_cache_len() >= 4);
}

#[test]
fn lock_mode_is_set_on_every_node_and_counters_follow_it() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(dir.path());
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let statuses = client.node_statuses();
    assert_eq!(statuses.len(), 3);
    assert!(statuses.iter().all(|(_, s)| s.is_ok()));
    assert!(
        client
            .lock_modes()
            .iter()
            .all(|(_, m)| *m == LockMode::InMemory)
    );

    let lock_some = |n: u8| {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        for i in 0..n {
            t.put(&key(i % 4, &format!("k{i}")), b"v").expect("put");
        }
        t.commit().expect("commit");
    };
    let (before, answered) = client.cluster_counters().expect("counters");
    assert_eq!(answered, 3);
    lock_some(4);
    let (after, _) = client.cluster_counters().expect("counters");
    assert_eq!(after.since(&before).in_memory_success, 4);

    client.set_lock_mode(LockMode::Sync).expect("set");
    let modes = client.lock_modes();
    assert_eq!(modes.len(), 3);
    assert!(modes.iter().all(|(_, m)| *m == LockMode::Sync), "{modes:?}");
    let (before, _) = client.cluster_counters().expect("counters");
    lock_some(4);
    let (after, _) = client.cluster_counters().expect("counters");
    let grew = after.since(&before);
    assert_eq!(grew.in_memory_success, 0, "locks went through Raft");
    assert!(grew.lock_raft_bytes > 0);

    client.set_lock_mode(LockMode::InMemory).expect("set back");
    assert!(
        client
            .lock_modes()
            .iter()
            .all(|(_, m)| *m == LockMode::InMemory)
    );
}

#[test]
fn a_stopped_node_is_named_and_the_others_still_answer() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(dir.path());
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let down = c.node_ids()[2];
    c.stop_node(down).expect("stop");
    let e = client
        .set_lock_mode(LockMode::Pipelined)
        .expect_err("one node is down");
    assert!(matches!(&e, surge_txn::TxnError::Unavailable(_)), "{e}");
    let modes = client.lock_modes();
    assert_eq!(modes.len(), 2);
    assert!(
        modes
            .iter()
            .all(|(n, m)| *n != down && *m == LockMode::Pipelined)
    );
    let statuses = client.node_statuses();
    assert!(statuses.iter().any(|(n, s)| *n == down && s.is_err()));
    let (_, answered) = client.cluster_counters().expect("two nodes answer");
    assert_eq!(answered, 2);
}
