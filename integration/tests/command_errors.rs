//! The command's errors say what is wrong and what to do: a file given where a directory is
//! wanted (and the other way round), and a cluster none of whose nodes answers.
#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use common::{free_port_pair, surgedb};
use surgedb::local::{ClusterManifest, ManifestNode};

/// A scratch directory holding a plain file `FILE`.
fn with_file() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("FILE");
    std::fs::write(&file, b"not a directory").unwrap();
    let file = file.to_str().unwrap().to_string();
    (tmp, file)
}

/// No operating-system error text: the sentence itself says what is wrong.
fn assert_no_os_error(err: &str) {
    assert!(!err.contains("os error"), "{err}");
}

#[test]
fn cluster_start_on_a_file_says_it_is_not_a_directory() {
    let (_tmp, file) = with_file();
    let (ok, out, err) = surgedb(&["cluster", "start", "--data", &file]);
    assert!(!ok && out.is_empty(), "{out}{err}");
    assert!(
        err.contains(&format!("{file} is a file, not a directory")) && err.contains("--data"),
        "{err}"
    );
    assert_no_os_error(&err);
}

#[test]
fn commands_reading_a_cluster_directory_given_a_file_say_so() {
    let (_tmp, file) = with_file();
    for args in [
        vec!["cluster", "status", "--data", &file],
        vec!["cluster", "stop", "--data", &file],
        vec!["kv", "get", "--cluster-dir", &file, "k"],
    ] {
        let (ok, _, err) = surgedb(&args);
        assert!(!ok, "{args:?}");
        assert!(
            err.contains(&format!("{file} is a file, not a directory")),
            "{args:?}: {err}"
        );
        assert_no_os_error(&err);
    }
}

#[test]
fn binlog_verify_of_a_file_points_to_binlog_dump() {
    let (_tmp, file) = with_file();
    let (ok, _, err) = surgedb(&["binlog", "verify", &file]);
    assert!(!ok);
    assert!(
        err.contains(&format!("{file} is a file"))
            && err.contains(&format!("surgedb binlog dump {file}")),
        "{err}"
    );
    assert_no_os_error(&err);
}

#[test]
fn binlog_dump_of_a_directory_points_to_binlog_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let (ok, _, err) = surgedb(&["binlog", "dump", dir]);
    assert!(!ok);
    assert!(
        err.contains(&format!("{dir} is a directory"))
            && err.contains(&format!("surgedb binlog verify {dir}")),
        "{err}"
    );
    assert_no_os_error(&err);
}

/// A cluster directory whose three nodes are all stopped: its manifest names loopback
/// ports nothing listens on.
fn stopped_cluster() -> (tempfile::TempDir, String, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir(&dir).unwrap();
    let nodes: Vec<ManifestNode> = (1..=3)
        .map(|id| ManifestNode {
            id,
            addr: format!("127.0.0.1:{}", free_port_pair()),
            mysql_addr: None,
            data: dir.join(format!("node-{id}")),
            log: dir.join(format!("node-{id}.log")),
            pid: 0,
        })
        .collect();
    let addrs = nodes.iter().map(|n| n.addr.clone()).collect();
    let manifest = ClusterManifest {
        cluster_id: "local-test".into(),
        nodes,
    };
    manifest.save(&dir).unwrap();
    (tmp, dir.to_str().unwrap().to_string(), addrs)
}

#[test]
fn kv_on_a_stopped_cluster_names_each_node_and_how_to_start_it() {
    let (_tmp, dir, addrs) = stopped_cluster();
    for args in [
        vec!["kv", "get", "--cluster-dir", &dir, "k"],
        vec!["kv", "put", "--cluster-dir", &dir, "k", "v"],
    ] {
        let (ok, _, err) = surgedb(&args);
        assert!(!ok, "{args:?}");
        for (i, addr) in addrs.iter().enumerate() {
            assert!(
                err.contains(&format!("node {} at {addr}: ", i + 1)),
                "{args:?}: {err}"
            );
        }
        assert!(
            err.contains(&format!("run `surgedb cluster start --data {dir}`")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("node 0"), "{args:?}: {err}");
    }
}

#[test]
fn kv_at_an_address_nobody_serves_names_the_address_not_node_0() {
    let addr = format!("127.0.0.1:{}", free_port_pair());
    let (ok, _, err) = surgedb(&["kv", "get", "--cluster", &addr, "k"]);
    assert!(!ok);
    assert!(err.contains(&format!("{addr}: ")), "{err}");
    assert!(!err.contains("node 0"), "{err}");
}

#[test]
fn status_of_a_stopped_cluster_shows_every_node_down_and_how_to_start_it() {
    let (_tmp, dir, addrs) = stopped_cluster();
    let (ok, out, err) = surgedb(&["cluster", "status", "--data", &dir]);
    assert!(!ok, "{out}{err}");
    for (i, addr) in addrs.iter().enumerate() {
        assert!(
            out.contains(&format!("node {} at {addr}: DOWN (", i + 1)),
            "{out}"
        );
    }
    assert!(
        !out.contains("node 0") && !err.contains("node 0"),
        "{out}{err}"
    );
    assert!(
        err.contains("no node answers")
            && err.contains(&format!("run `surgedb cluster start --data {dir}`")),
        "{err}"
    );
}
