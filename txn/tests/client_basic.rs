//! The client's happy paths over a three-node cluster: commit and read back, snapshot
//! isolation, one-phase commit for single-region transactions, scans across regions.

mod client_support;

use client_support::{config, key, start};
use surge_txn::{TxnError, TxnMode};

#[test]
fn put_commit_then_get_in_both_modes() {
    let env = start(config(3000));
    for (i, mode) in [TxnMode::Optimistic, TxnMode::Pessimistic]
        .into_iter()
        .enumerate()
    {
        let k = key(2, &format!("k{i}"));
        let mut t = env.client.begin(mode).expect("begin");
        t.put(&k, b"v1").expect("put");
        assert_eq!(t.get(&k).expect("own write"), Some(b"v1".to_vec()));
        let start_ts = t.start_ts();
        let commit_ts = t.commit().expect("commit");
        assert!(commit_ts > start_ts, "{mode}: commit_ts after start_ts");
        assert_eq!(
            env.client.get(&k).expect("get"),
            Some(b"v1".to_vec()),
            "{mode}"
        );
        let mut d = env.client.begin(mode).expect("begin");
        d.delete(&k).expect("delete");
        assert_eq!(d.get(&k).expect("own delete"), None);
        d.commit().expect("commit delete");
        assert_eq!(env.client.get(&k).expect("get"), None, "{mode}: deleted");
    }
    assert_eq!(env.client.counters().commits, 4);
    assert!(env.client.region_cache_len() >= 1);
}

#[test]
fn reads_see_committed_data_only_and_keep_their_snapshot() {
    let env = start(config(3000));
    let k = key(3, "snap");
    let mut writer = env.client.begin(TxnMode::Optimistic).expect("begin");
    writer.put(&k, b"new").expect("put");
    let mut before = env.client.begin(TxnMode::Optimistic).expect("begin");
    assert_eq!(
        before.get(&k).expect("get"),
        None,
        "buffered writes are not visible to others"
    );
    writer.commit().expect("commit");
    assert_eq!(
        before.get(&k).expect("get"),
        None,
        "a snapshot taken before the commit"
    );
    let mut after = env.client.begin(TxnMode::Optimistic).expect("begin");
    assert_eq!(after.get(&k).expect("get"), Some(b"new".to_vec()));
    let start_ts = before.start_ts();
    assert_eq!(before.commit().expect("read-only commit"), start_ts);
}

#[test]
fn single_region_transactions_commit_in_one_phase() {
    let env = start(config(3000));
    let mut one = env.client.begin(TxnMode::Pessimistic).expect("begin");
    one.put(&key(4, "a"), b"1").expect("put");
    one.put(&key(4, "b"), b"2").expect("put");
    one.commit().expect("commit");
    assert_eq!(env.client.counters().one_pc_commits, 1);
    let mut two = env.client.begin(TxnMode::Optimistic).expect("begin");
    two.put(&key(4, "c"), b"3").expect("put");
    two.put(&key(9, "c"), b"3").expect("put");
    two.commit().expect("commit");
    assert_eq!(
        env.client.counters().one_pc_commits,
        1,
        "two regions: two-phase"
    );
    let got = env
        .client
        .scan(&key(4, ""), Some(&key(5, "")), 10)
        .expect("scan");
    assert_eq!(got.len(), 3);
    assert_eq!(
        env.client.get(&key(9, "c")).expect("get"),
        Some(b"3".to_vec())
    );
}

#[test]
fn scan_crosses_regions_in_key_order_and_merges_own_writes() {
    let env = start(config(3000));
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    let mut expected = Vec::new();
    for region in 0..16u8 {
        for i in 0..3 {
            let k = key(region, &format!("s{i}"));
            t.put(&k, &k).expect("put");
            expected.push((k.clone(), k));
        }
    }
    t.commit().expect("commit 48 keys over 16 regions");
    let all = env.client.scan(b"", None, 1000).expect("scan");
    assert_eq!(all, expected);
    let first_five = env.client.scan(b"", None, 5).expect("scan");
    assert_eq!(first_five, expected[..5].to_vec());
    let middle = env
        .client
        .scan(&key(3, "s1"), Some(&key(6, "s1")), 100)
        .expect("scan");
    assert_eq!(middle, expected[10..19].to_vec());

    let mut m = env.client.begin(TxnMode::Optimistic).expect("begin");
    m.delete(&key(0, "s0")).expect("delete");
    m.delete(&key(0, "s1")).expect("delete");
    m.put(&key(0, "s15"), b"x").expect("put");
    let got = m.scan(b"", None, 3).expect("scan with own writes");
    let want = vec![
        (key(0, "s15"), b"x".to_vec()),
        (key(0, "s2"), key(0, "s2")),
        (key(1, "s0"), key(1, "s0")),
    ];
    assert_eq!(got, want);
    m.rollback();
}

#[test]
fn batch_get_and_get_for_update_see_own_writes() {
    let env = start(config(3000));
    let mut seed = env.client.begin(TxnMode::Optimistic).expect("begin");
    for r in [1u8, 7, 12] {
        seed.put(&key(r, "b"), &[r]).expect("put");
    }
    seed.commit().expect("commit");
    for mode in [TxnMode::Optimistic, TxnMode::Pessimistic] {
        let mut t = env.client.begin(mode).expect("begin");
        t.put(&key(7, "b"), b"mine").expect("put");
        t.delete(&key(12, "b")).expect("delete");
        let keys = vec![key(1, "b"), key(7, "b"), key(12, "b"), key(13, "absent")];
        let got = t.batch_get(&keys).expect("batch_get");
        assert_eq!(
            got,
            vec![(key(1, "b"), vec![1]), (key(7, "b"), b"mine".to_vec())],
            "{mode}"
        );
        assert_eq!(
            t.get_for_update(&key(1, "b")).expect("gfu"),
            Some(vec![1]),
            "{mode}"
        );
        assert_eq!(
            t.get_for_update(&key(7, "b")).expect("gfu"),
            Some(b"mine".to_vec())
        );
        // Rollback takes the transaction: using it afterwards does not compile (the
        // `compile_fail` example on `Transaction`).
        t.rollback();
    }
    assert_eq!(
        env.client.get(&key(7, "b")).expect("get"),
        Some(vec![7]),
        "rolled back"
    );
}

#[test]
fn insert_refuses_a_key_that_exists() {
    let env = start(config(3000));
    let k = key(14, "ins");
    for mode in [TxnMode::Optimistic, TxnMode::Pessimistic] {
        let mut t = env.client.begin(mode).expect("begin");
        t.insert(&k, mode.as_str().as_bytes())
            .expect("first insert of the key");
        assert_eq!(
            t.insert(&k, b"again"),
            Err(TxnError::AlreadyExist { key: k.clone() }),
            "{mode}: own write"
        );
        t.commit().expect("commit");
        let mut t = env.client.begin(mode).expect("begin");
        assert_eq!(
            t.insert(&k, b"dup"),
            Err(TxnError::AlreadyExist { key: k.clone() }),
            "{mode}: committed value"
        );
        t.delete(&k).expect("delete");
        t.insert(&k, b"reinserted")
            .expect("a key deleted by the transaction may be inserted");
        t.commit().expect("commit");
        assert_eq!(
            env.client.get(&k).expect("get"),
            Some(b"reinserted".to_vec())
        );
        let mut d = env.client.begin(mode).expect("begin");
        d.delete(&k).expect("delete");
        d.commit().expect("commit");
    }
}

/// A transaction whose keys in one region outweigh a Raft entry (64 MiB) commits: its
/// prewrite goes out in bounded requests, not one proposal the log refuses.
#[test]
fn a_region_write_larger_than_a_raft_entry_commits_in_bounded_requests() {
    let env = start(config(3000));
    let value = vec![7u8; 1 << 20];
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    for i in 0..72 {
        t.put(&key(4, &format!("big{i:03}")), &value).expect("put");
    }
    t.commit()
        .expect("a 72 MiB single-region transaction commits");
    let got = env
        .client
        .scan(&key(4, "big"), Some(&key(4, "bih")), 100)
        .expect("scan");
    assert_eq!(got.len(), 72);
    assert!(got.iter().all(|(_, v)| v.len() == 1 << 20));
}
