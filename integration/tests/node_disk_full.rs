//! A node whose disk fills up: the write that does not fit fails, and the node process
//! stops on its own, with a non-zero exit status and a message naming the storage
//! failure, instead of staying up serving nothing (its Raft driver stopped, its fjall
//! workers spinning). Once room is made it restarts and every acknowledged write is there.
//!
//! Needs a small filesystem: `SURGE_TXN_ENOSPC_DIR` names a directory on one (as for the
//! txn crate's `engine_faults` test; `.ci/run` mounts a 256 MiB tmpfs). Without it the test
//! says it is skipped, and fails when `SURGE_REQUIRE_ENOSPC=1`.

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use common::SoloNode;
use surge_txn::TxnMode;

/// Options that keep the node's own footprint small on the small filesystem.
const SMALL: &[&str] = &[
    "--engine-cache-mib=8",
    "--engine-memtable-mib=4",
    "--engine-write-buffer-mib=16",
    "--no-stream",
];

#[test]
fn a_node_whose_disk_fills_stops_and_restarts_with_every_acknowledged_write() {
    let Ok(base) = std::env::var("SURGE_TXN_ENOSPC_DIR") else {
        assert!(
            std::env::var("SURGE_REQUIRE_ENOSPC").is_err(),
            "SURGE_REQUIRE_ENOSPC is set but SURGE_TXN_ENOSPC_DIR is not"
        );
        println!("SURGE_TXN_ENOSPC_DIR not set: no small filesystem to fill; skipped");
        return;
    };
    let dir = tempfile::tempdir_in(&base).unwrap();
    let data = dir.path().join("n1");
    // Room to make once the disk is full, as an operator would.
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 32 << 20]).unwrap();

    let node = SoloNode::spawn(&data, SMALL);
    let client = node.wait_serving();
    let value = vec![0x5a_u8; 256 << 10];
    let mut acked = 0u32;
    let failure = loop {
        let put = client.begin(TxnMode::Optimistic).and_then(|mut t| {
            t.put(format!("k{acked:06}").as_bytes(), &value)?;
            t.commit()
        });
        match put {
            Ok(_) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 4096, "the filesystem never filled");
    };
    println!("after {acked} writes of 256 KiB: {failure}");
    assert!(acked > 0);
    drop(client);
    let addr = node.addr.clone();
    let out = node.wait_exit();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        err.contains("its Raft driver stopped: storage failed"),
        "stderr: {err}"
    );
    // The driver's own `tracing` error reaches the node's log too (the node's subscriber).
    assert!(
        err.contains("ERROR") && err.contains("raft node stops: storage failed"),
        "stderr: {err}"
    );

    std::fs::remove_file(&filler).unwrap();
    let node = SoloNode::spawn_at(&data, &addr, SMALL);
    let client = node.wait_serving();
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    for i in 0..acked {
        let got = t.get(format!("k{i:06}").as_bytes()).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(value.as_slice()),
            "acknowledged write {i}"
        );
    }
    drop(t);
    let out = node.stop();
    assert!(out.status.success(), "{out:?}");
}
