//! `bench sysbench` in short: every experiment (and the OLTP side-by-side) with stock
//! sysbench against a fresh 3-node cluster (and for 003 a second one that copies large
//! transactions instead of renaming) and a private MariaDB, a second or so per variant. Asserts that every variant
//! ran and that the run's own consistency checks passed (the hot row equals what sysbench
//! acknowledged, sbtest's row counts, the big table's counter, every binlog file through
//! `mariadb-binlog --verify-binlog-checksum`), not timing.
//!
//! Needs sysbench, mariadb, mariadbd, mariadb-install-db and mariadb-binlog on PATH; a
//! machine without them fails here with the missing program's name.

use std::time::Duration;

use surgedb::bench::NoProgress;
use surgedb::bench::sysbench::{
    Experiment, HOTSPOT_OFF, HOTSPOT_ON, LOCK_MODES, SysbenchError, SysbenchOptions, run_sysbench,
};

fn short(dir: &std::path::Path) -> SysbenchOptions {
    let mut o = SysbenchOptions::new(env!("CARGO_BIN_EXE_surgedb"), dir);
    o.lock_threads = vec![2];
    o.hot_threads = vec![1, 4];
    o.seconds = 1;
    o.tables = 1;
    o.table_size = 100;
    o.big_mib = vec![2];
    o.big_seconds = 3;
    o.big_every = Duration::from_secs(1);
    // Rename from 1 MiB on, so the 2 MiB transactions commit by rename on the first
    // cluster and by copy on the second.
    o.node_args = vec!["--binlog-large-commit-threshold=1048576".into()];
    o.big_copy = true;
    o.experiments.push(Experiment::Oltp);
    o.point_threads = 2;
    o.write_threads = 2;
    // Node 1 leads before each SurgeDB slice (the bootstrap may have put the leaders on
    // node 2).
    o.oltp_leaders_on = Some(1);
    o
}

#[test]
fn every_experiment_and_variant_runs_and_the_data_matches_what_sysbench_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = short(dir.path());
    let r = run_sysbench(&opts, &mut NoProgress).expect("bench sysbench (short)");

    let mut lock_variants: Vec<&str> = LOCK_MODES.iter().map(|(m, _)| *m).collect();
    lock_variants.push("mariadb");
    for v in lock_variants {
        let p = r
            .locks
            .iter()
            .find(|p| p.variant == v && p.threads == 2)
            .unwrap_or_else(|| panic!("000 variant {v} missing: {:?}", r.locks));
        assert!(p.transactions > 0 && p.tps > 0.0, "000 {v}: {p:?}");
        // Raft bytes per transaction: SurgeDB's modes have them, MariaDB not; locks go
        // through Raft in the sync and pipelined modes only (the tables fit the in-memory
        // budget, and nothing moves regions here).
        let locks = p.lock_raft_bytes_per_txn();
        match v {
            "mariadb" => assert_eq!(p.raft_bytes, None, "000 {v}: {p:?}"),
            "pessimistic" | "pipelined" => {
                assert!(locks.is_some_and(|b| b > 50.0), "000 {v}: {p:?}");
            }
            _ => assert!(locks.is_some_and(|b| b < 1.0), "000 {v}: {p:?}"),
        }
        if v != "mariadb" {
            assert!(
                p.raft_bytes_per_txn().is_some_and(|b| b > 100.0),
                "000 {v}: {p:?}"
            );
        }
    }
    for v in [HOTSPOT_ON, HOTSPOT_OFF, "mariadb"] {
        for t in [1, 4] {
            let p = r
                .hot
                .iter()
                .find(|p| p.variant == v && p.threads == t)
                .unwrap_or_else(|| panic!("004 {v} at {t} threads missing: {:?}", r.hot));
            assert!(p.transactions > 0, "004 {v} {t}: {p:?}");
        }
    }
    for v in ["surgedb (rename)", "surgedb (copy)", "mariadb (copy)"] {
        for size in [0, 2] {
            let p = r
                .big
                .iter()
                .find(|p| p.variant == v && p.size_mib == size)
                .unwrap_or_else(|| panic!("003 {v} {size} MiB missing: {:?}", r.big));
            assert!(p.tps > 0.0, "003 {v} {size}: {p:?}");
            if size > 0 {
                assert!(p.big_commits >= 1 && p.rows > 0, "003 {v}: {p:?}");
                assert!(p.binlog_mib >= 1.8, "003 {v} sized below 2 MiB: {p:?}");
            }
        }
    }
    // Commit by rename gives each big transaction a binlog file of its own on node 1 (the
    // one sysbench and the big client use); copying keeps them in one file.
    let node1_files = |cluster: &str| {
        r.verified_binlogs
            .iter()
            .filter(|f| f.contains(&format!("/{cluster}/")) && f.contains("node-1"))
            .count()
    };
    assert!(
        node1_files("cluster") > node1_files("cluster-copy"),
        "rename gave no more files than copy: {:?}",
        r.verified_binlogs
    );
    assert!(
        r.verified_binlogs.iter().any(|f| f.contains("mdb-bin.")),
        "MariaDB's binlog verified: {:?}",
        r.verified_binlogs
    );
    assert!(
        r.verified_binlogs.iter().any(|f| f.contains("surge-bin.")),
        "SurgeDB's binlogs verified: {:?}",
        r.verified_binlogs
    );
    for (workload, points) in [
        ("oltp_point_select", &r.oltp.point_select),
        ("oltp_write_only", &r.oltp.write_only),
    ] {
        for v in ["surgedb", "mariadb"] {
            let p = points
                .iter()
                .find(|p| p.variant == v && p.threads == 2)
                .unwrap_or_else(|| panic!("oltp {workload} {v} missing: {points:?}"));
            assert!(
                p.transactions > 0 && p.slices == 1,
                "oltp {workload} {v}: {p:?}"
            );
        }
    }
    // One leader count per SurgeDB slice, of the one region a 100-row table lies in, which
    // node 1 leads (`oltp_leaders_on`).
    assert_eq!(r.oltp.leaders.len(), 2, "{:?}", r.oltp.leaders);
    assert!(
        r.oltp
            .leaders
            .iter()
            .all(|l| l.regions == 1 && l.local == 1),
        "{:?}",
        r.oltp.leaders
    );
    assert!(r.machine.cores >= 1);
    let text = surgedb::cli::sysbench_text(&r);
    assert!(
        text.contains("hotspot ON")
            && text.contains("in-memory / pessimistic")
            && text.contains("SurgeDB / MariaDB")
            && text.contains("led by node 1"),
        "{text}"
    );
}

#[test]
fn impossible_options_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = short(dir.path());
    o.experiments = Vec::new();
    let e = run_sysbench(&o, &mut NoProgress).expect_err("nothing to run");
    assert!(
        matches!(
            e,
            SysbenchError::BadOption {
                option: "experiments",
                ..
            }
        ),
        "{e}"
    );
    let mut o = short(dir.path());
    o.experiments = vec![Experiment::HotRow];
    o.hot_threads = vec![0];
    let e = run_sysbench(&o, &mut NoProgress).expect_err("0 threads");
    assert!(e.to_string().contains("threads"), "{e}");
    for (leaders_on, experiments) in [(4, vec![Experiment::Oltp]), (2, vec![Experiment::HotRow])] {
        let mut o = short(dir.path());
        o.experiments = experiments;
        o.oltp_leaders_on = Some(leaders_on);
        let e = run_sysbench(&o, &mut NoProgress).expect_err("leaders on");
        assert!(e.to_string().contains("oltp-leaders-on"), "{e}");
    }
    assert!(
        !dir.path().join("cluster").exists(),
        "no cluster was started"
    );
}
