//! A node refuses, with a clear message, a data directory another process holds and one
//! that belongs to another cluster.

mod common;

use common::SoloNode;

#[test]
fn a_held_directory_and_another_clusters_directory_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("n1");
    let first = SoloNode::spawn(&data, &["--cluster-id", "alpha"]);
    first.wait_serving();

    let second = SoloNode::spawn(&data, &["--cluster-id", "alpha"]);
    let out = second.wait_exit();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("is in use by another process"),
        "stderr: {err}"
    );

    let out = first.stop();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("surgedb node 1: stopped"));

    let other = SoloNode::spawn(&data, &["--cluster-id", "beta"]);
    let out = other.wait_exit();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("belongs to cluster \"alpha\", not \"beta\""),
        "stderr: {err}"
    );
}
