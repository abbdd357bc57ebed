//! `bench sysbench` in short: every experiment with stock sysbench against a fresh 3-node
//! cluster and a private MariaDB, a second or so per variant. Asserts that every variant
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
    o.big_mib = vec![1];
    o.big_seconds = 3;
    o.big_every = Duration::from_secs(1);
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
    for v in ["surgedb (rename)", "mariadb (copy)"] {
        for size in [0, 1] {
            let p = r
                .big
                .iter()
                .find(|p| p.variant == v && p.size_mib == size)
                .unwrap_or_else(|| panic!("003 {v} {size} MiB missing: {:?}", r.big));
            assert!(p.tps > 0.0, "003 {v} {size}: {p:?}");
            if size > 0 {
                assert!(p.big_commits >= 1 && p.rows > 0, "003 {v}: {p:?}");
                assert!(p.binlog_mib >= 0.9, "003 {v} sized below 1 MiB: {p:?}");
            }
        }
    }
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
    assert!(r.machine.cores >= 1);
    let text = surgedb::cli::sysbench_text(&r);
    assert!(
        text.contains("hotspot ON") && text.contains("in-memory / pessimistic"),
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
    assert!(
        !dir.path().join("cluster").exists(),
        "no cluster was started"
    );
}
