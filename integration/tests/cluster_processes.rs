//! A 3-process cluster started by `surgedb cluster start`: put/get through `--cluster-dir`,
//! `--cluster`, a script, status; `cluster stop` stops every node cleanly and a restart keeps
//! every acknowledged write.

mod common;

use common::{ProcCluster, surgedb};

#[test]
fn three_processes_serve_the_command_line_and_keep_writes_across_stop_and_start() {
    let c = ProcCluster::start(3, "in-memory");
    let d = c.dir_str();
    let (ok, out, err) = surgedb(&["kv", "put", "--cluster-dir", d, "bar-key", "bar-value"]);
    assert!(ok && out.starts_with("OK (committed at "), "{out}{err}");
    let (ok, out, err) = surgedb(&["kv", "get", "--cluster-dir", d, "bar-key"]);
    assert!(ok, "{err}");
    assert_eq!(out, "bar-value\n");

    // Any one address is enough: the node's welcome names the others.
    let one = c.manifest.nodes[2].addr.clone();
    let (ok, out, err) = surgedb(&["kv", "delete", "--cluster", &one, "bar-key"]);
    assert!(ok, "{out}{err}");
    let (ok, out, err) = surgedb(&["kv", "get", "--cluster", &one, "bar-key"]);
    assert!(
        !ok && out.is_empty() && err.contains("not found"),
        "{out}{err}"
    );

    let script = c.tmp.path().join("t.txt");
    std::fs::write(
        &script,
        "begin pessimistic\nget_for_update acct/1\nput acct/1 90\nput acct/2 110\ncommit\n\
         begin optimistic\nget acct/1\nrollback\n",
    )
    .unwrap();
    let (ok, out, err) = surgedb(&["txn", "--cluster-dir", d, script.to_str().unwrap()]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("get_for_update acct/1: (not found)"), "{out}");
    assert!(out.contains("get acct/1: 90"), "{out}");
    let (ok, out, err) = surgedb(&["kv", "scan", "--cluster-dir", d, "acct/"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, "acct/1\t90\nacct/2\t110\n");

    // `sleep` stages a conflict between two scripts run side by side: A reads, sleeps and
    // writes; B writes the same key during A's sleep and commits first.
    let a = c.tmp.path().join("a.txt");
    std::fs::write(
        &a,
        "begin optimistic\nget race/1\nsleep 2000\nput race/1 a\ncommit\n",
    )
    .unwrap();
    let b = c.tmp.path().join("b.txt");
    std::fs::write(&b, "begin optimistic\nput race/1 b\ncommit\n").unwrap();
    let a_child = std::process::Command::new(common::exe())
        .args(["txn", "--cluster-dir", d])
        .arg(&a)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A has begun and read by then (a process start and two round trips), and B commits
    // well inside A's 2 s sleep.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (ok, out, err) = surgedb(&["txn", "--cluster-dir", d, b.to_str().unwrap()]);
    let a_out = a_child.wait_with_output().unwrap();
    assert!(ok && out.contains("commit: committed at"), "B: {out}{err}");
    let (a_stdout, a_stderr) = (
        String::from_utf8_lossy(&a_out.stdout),
        String::from_utf8_lossy(&a_out.stderr),
    );
    assert!(!a_out.status.success(), "A: {a_stdout}{a_stderr}");
    assert!(a_stdout.contains("sleep 2000 ms: done"), "{a_stdout}");
    assert!(
        a_stderr.contains("line 5: commit: ") && a_stderr.contains("write conflict"),
        "A: {a_stderr}"
    );
    let (ok, out, err) = surgedb(&["kv", "get", "--cluster-dir", d, "race/1"]);
    assert!(ok && out == "b\n", "{out}{err}");

    let (ok, out, err) = surgedb(&["cluster", "status", "--data", d]);
    assert!(ok, "{err}");
    for node in 1..=3 {
        assert!(out.contains(&format!("node {node} at ")), "{out}");
    }
    assert!(
        out.contains("lock mode in-memory") && out.contains("counters:"),
        "{out}"
    );
    assert_eq!(out.matches("  1/1 ").count(), 3 * 16, "{out}");
    // The key-range column says what it is, and shows whole keys.
    assert_eq!(
        out.matches("  region  keys [start, end)  ").count(),
        3,
        "{out}"
    );
    assert_eq!(out.matches(" [-inf, \\x10) ").count(), 3, "{out}");
    assert_eq!(out.matches(" [\\xf0, +inf) ").count(), 3, "{out}");
    // Every node's coordinator is up, with its own binlog under its data directory.
    assert_eq!(
        out.matches("  coordinator: ready, binlog ").count(),
        3,
        "{out}"
    );
    for node in 1..=3 {
        assert!(out.contains(&format!("node-{node}/binlog")), "{out}");
    }

    // Every region's leadership to node 2 (whoever led it), then one region to node 1,
    // then an unknown region (refused). Node 2 then leads 15 regions when it is stopped
    // below, so its stop hands them over.
    let move_leaders = |to: &str, region: Option<&str>| {
        let mut args = vec!["cluster", "move-leaders", "--data", d, "--to", to];
        args.extend(region.map(|r| ["--region", r]).into_iter().flatten());
        surgedb(&args)
    };
    let client = c.client();
    let leads = |node: u64| {
        let report = client.node_status(node).expect("status");
        report.regions.iter().filter(|r| r.is_leader).count()
    };
    let (ok, out, err) = move_leaders("2", None);
    assert!(ok && out.contains("; 0 not moved"), "{out}{err}");
    assert_eq!(leads(2), 16);
    let (ok, out, err) = move_leaders("1", Some("5"));
    assert!(
        ok && out.contains("region 5: node 2 -> node 1 ("),
        "{out}{err}"
    );
    assert_eq!((leads(1), leads(2)), (1, 15));
    // Counted once each: the one to move, and those already there.
    let (ok, out, err) = move_leaders("2", None);
    assert!(
        ok && out.contains("moved 1 region(s) to node 2; 15 already there"),
        "{out}{err}"
    );
    let (ok, out, err) = move_leaders("1", Some("5"));
    assert!(ok, "{out}{err}");
    let (ok, out, err) = move_leaders("1", Some("999"));
    assert!(
        !ok && out.contains("region 999: not moved: no node that answered has it"),
        "{out}{err}"
    );

    // Starting a running cluster starts nothing.
    let (ok, out, _) = surgedb(&["cluster", "start", "--nodes", "3", "--data", d]);
    assert!(ok && out.matches("already running").count() == 3, "{out}");

    // One node stopped alone (the others serve on), then started again.
    let (ok, out, err) = surgedb(&["cluster", "stop", "--data", d, "--node", "2"]);
    assert!(ok && out.contains("stopped nodes [2]"), "{out}{err}");
    assert!(c.log(2).contains("surgedb node 2: stopped"), "{}", c.log(2));
    // SIGTERM: node 2 handed its 15 regions (and the meta group, if it led it) over first.
    let log = c.log(2);
    let handed = common::leaders_handed_over(&log);
    assert!(
        matches!(handed, Some((moved, led, _)) if moved == led && led >= 15),
        "{handed:?}\n{log}"
    );
    // stderr too: this read once failed in CI with node 2 down (stdout empty, 2026-12-06).
    let (ok, out, err) = surgedb(&["kv", "get", "--cluster-dir", d, "acct/1"]);
    assert!(ok && out == "90\n", "{out}{err}");
    // Status names the node that is down and how to start it again.
    let (ok, out, err) = surgedb(&["cluster", "status", "--data", d]);
    let addr2 = &c.manifest.nodes[1].addr;
    assert!(
        ok && out.contains(&format!("node 2 at {addr2}: DOWN (connect: ")),
        "{out}{err}"
    );
    assert!(
        out.contains(&format!(
            "DOWN: node 2; run `surgedb cluster start --data {d}` to start it again"
        )),
        "{out}"
    );
    assert!(!out.contains("node 0"), "{out}");
    let (ok, _, err) = surgedb(&["cluster", "stop", "--data", d, "--node", "9"]);
    assert!(!ok && err.contains("has no node 9"), "{err}");
    let (ok, out, err) = surgedb(&["cluster", "start", "--nodes", "3", "--data", d]);
    assert!(
        ok && out.matches("already running").count() == 2 && out.contains("node 2: started"),
        "{out}{err}"
    );

    let (ok, out, err) = surgedb(&["cluster", "stop", "--data", d]);
    assert!(ok, "{out}{err}");
    for node in 1..=3 {
        assert!(
            c.log(node)
                .contains(&format!("surgedb node {node}: stopped")),
            "{}",
            c.log(node)
        );
    }
    // Every node stopped: the commands name each node and say how to start the cluster.
    let (ok, _, err) = surgedb(&["kv", "get", "--cluster-dir", d, "acct/1"]);
    assert!(!ok, "{err}");
    for n in &c.manifest.nodes {
        assert!(
            err.contains(&format!("node {} at {}: connect: ", n.id, n.addr)),
            "{err}"
        );
    }
    assert!(
        err.contains(&format!("run `surgedb cluster start --data {d}`")),
        "{err}"
    );
    let (ok, out, err) = surgedb(&["cluster", "status", "--data", d]);
    assert!(!ok && out.matches(": DOWN (").count() == 3, "{out}{err}");
    assert!(err.contains("no node answers"), "{err}");
    let (ok, out, err) = surgedb(&["cluster", "start", "--nodes", "3", "--data", d]);
    assert!(ok && out.matches(": started").count() == 3, "{out}{err}");
    let (ok, out, err) = surgedb(&["kv", "scan", "--cluster-dir", d]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, "acct/1\t90\nacct/2\t110\nrace/1\tb\n");
}
