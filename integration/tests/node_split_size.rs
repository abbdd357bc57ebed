//! `surgedb node --split-size-mib N`: a region the node leads splits once its data passes
//! N MiB (the default, 96, as TiKV's `region-split-size`).

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use std::time::Duration;

use common::{SoloNode, wait_until};
use surge_txn::TxnMode;

#[test]
fn a_region_past_the_split_size_splits() {
    let tmp = tempfile::tempdir().unwrap();
    let node = SoloNode::spawn(&tmp.path().join("n1"), &["--split-size-mib", "1"]);
    let client = node.wait_serving();
    let regions = || client.node_status(1).unwrap().regions.len();
    let before = regions();
    // 2 MiB under one prefix, so in one region: 64 transactions of a 32 KiB value.
    for i in 0..64 {
        let mut t = client.txn().begin(TxnMode::Optimistic).unwrap();
        t.put(format!("\x10split/{i:04}").as_bytes(), &[b'x'; 32 << 10])
            .unwrap();
        t.commit().unwrap();
    }
    wait_until(Duration::from_secs(30), || regions() > before);
    node.stop();
}
