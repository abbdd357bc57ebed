//! What snapshot isolation allows and what it forbids, with two optimistic transactions over
//! two regions:
//! - write skew is allowed: two transactions read both keys from their snapshots, each
//!   writes a different key, and both commit (SI checks only write-write conflicts);
//! - reading with `get_for_update` turns each read into a checked write intent, so the same
//!   pair conflicts and exactly one commits (the way an application asks for
//!   serializability of that pair);
//! - a lost update is forbidden: two read-modify-write transactions of one key cannot both
//!   commit.

mod support;

use support::{Layout, TestCluster};
use surge_txn::{ClientConfig, LockMode, TxnClient, TxnError, TxnMode};

const X: &[u8] = b"\x10x";
const Y: &[u8] = b"\x90y";

fn setup() -> (TestCluster, TxnClient) {
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let client = tc.client(ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(X, b"on").expect("put");
    t.put(Y, b"on").expect("put");
    t.commit().expect("seed");
    (tc, client)
}

#[test]
fn write_skew_is_allowed_under_snapshot_isolation() {
    let (_tc, client) = setup();
    let mut t1 = client.begin(TxnMode::Optimistic).expect("begin");
    let mut t2 = client.begin(TxnMode::Optimistic).expect("begin");
    for t in [&mut t1, &mut t2] {
        assert_eq!(t.get(X).expect("get"), Some(b"on".to_vec()));
        assert_eq!(t.get(Y).expect("get"), Some(b"on".to_vec()));
    }
    // Each turns one off, believing the other stays on.
    t1.put(X, b"off").expect("put");
    t2.put(Y, b"off").expect("put");
    t1.commit().expect("T1 commits");
    t2.commit()
        .expect("T2 commits too: no write-write conflict");
    assert_eq!(client.get(X).expect("get"), Some(b"off".to_vec()));
    assert_eq!(client.get(Y).expect("get"), Some(b"off".to_vec()));
}

#[test]
fn reads_for_update_turn_write_skew_into_a_conflict() {
    let (_tc, client) = setup();
    let mut t1 = client.begin(TxnMode::Optimistic).expect("begin");
    let mut t2 = client.begin(TxnMode::Optimistic).expect("begin");
    assert_eq!(t1.get_for_update(Y).expect("gfu"), Some(b"on".to_vec()));
    assert_eq!(t2.get_for_update(X).expect("gfu"), Some(b"on".to_vec()));
    t1.put(X, b"off").expect("put");
    t2.put(Y, b"off").expect("put");
    t1.commit().expect("T1 commits first");
    match t2.commit() {
        Err(TxnError::WriteConflict { key, .. }) => assert_eq!(key, X),
        other => panic!("T2 read x for update, x changed since: {other:?}"),
    }
    assert_eq!(client.get(X).expect("get"), Some(b"off".to_vec()));
    assert_eq!(
        client.get(Y).expect("get"),
        Some(b"on".to_vec()),
        "T2 wrote nothing"
    );
}

#[test]
fn read_modify_write_of_one_key_never_loses_an_update() {
    let (_tc, client) = setup();
    let mut t1 = client.begin(TxnMode::Optimistic).expect("begin");
    let mut t2 = client.begin(TxnMode::Optimistic).expect("begin");
    let v1 = t1.get(X).expect("get").expect("value");
    let v2 = t2.get(X).expect("get").expect("value");
    t1.put(X, &[v1, b"+1".to_vec()].concat()).expect("put");
    t2.put(X, &[v2, b"+2".to_vec()].concat()).expect("put");
    t2.commit().expect("T2 commits first");
    assert!(
        matches!(t1.commit(), Err(TxnError::WriteConflict { .. })),
        "T1 would overwrite T2's update"
    );
    assert_eq!(client.get(X).expect("get"), Some(b"on+2".to_vec()));
}
