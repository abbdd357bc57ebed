//! Durability of the whole store under `kill -9`: a child process runs a three-node
//! `LocalCluster` and commits transactions, printing each acknowledged one; the parent kills
//! it (SIGKILL) mid-run, restarts the cluster from the same directory in process, and finds
//! every acknowledged transaction, whole.

use surge_testkit::CrashChild;
use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient, TxnMode};

const CHILD_ENV: &str = "SURGE_TXN_CRASH_CHILD_DIR";

fn config(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig::new(dir)
        .with_regions(4)
        .with_lock_mode(LockMode::InMemory)
}

fn keys(i: u32) -> [Vec<u8>; 2] {
    // Two regions per transaction: a two-phase commit.
    [0x10u8, 0xc0].map(|first| {
        let mut k = vec![first];
        k.extend_from_slice(format!("k{i:05}").as_bytes());
        k
    })
}

/// The child: commit until killed, printing `acked i` after each acknowledged commit.
fn child(dir: &str) {
    let cluster = LocalCluster::start(config(std::path::Path::new(dir))).expect("child cluster");
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    for i in 0.. {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        for k in keys(i) {
            t.put(&k, format!("v{i}").as_bytes()).expect("put");
        }
        if t.commit().is_ok() {
            println!("acked {i}");
        }
    }
}

#[test]
fn every_acknowledged_commit_survives_kill_9_of_the_whole_store() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "every_acknowledged_commit_survives_kill_9_of_the_whole_store",
        [(CHILD_ENV, dir.path())],
    );
    let mut acked = Vec::new();
    child.wait_until("40 acknowledged commits", |line| {
        if let Some(i) = line.strip_prefix("acked ") {
            acked.push(i.parse::<u32>().expect("number"));
        }
        acked.len() >= 40
    });
    child.kill();
    assert!(
        acked.len() >= 40,
        "the child acknowledged only {}",
        acked.len()
    );

    let cluster = LocalCluster::start(config(dir.path())).expect("restart from the same dir");
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    for i in &acked {
        for k in keys(*i) {
            assert_eq!(
                t.get(&k).expect("get"),
                Some(format!("v{i}").into_bytes()),
                "acknowledged transaction {i} lost key {k:?} after kill -9"
            );
        }
    }
}
