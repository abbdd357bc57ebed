//! `surgedb bench` on small settings: every variant runs side by side and the figures that
//! tell the variants apart come out as the techniques say.

use surgedb::bench::{
    BenchTarget, BigTxnOptions, LocksOptions, NoProgress, WriteMode, bigtxn_table, locks_series,
    locks_table, run_bigtxn, run_hot_txn, run_locks,
};

#[test]
fn bench_locks_runs_the_four_modes_and_only_sync_and_pipelined_write_locks_to_raft() {
    let target = BenchTarget::embedded().unwrap();
    let opts = LocksOptions::default()
        .with_clients(vec![2])
        .with_modes(WriteMode::ALL.to_vec())
        // Long enough that a slice outlasts a lock wait (1 s) left by the slice before it,
        // on a loaded CI machine too; a 0.6 s slice once committed nothing.
        .with_seconds(2.0)
        .with_slice(2.0)
        .with_warmup(0.2)
        .with_rows(2000);
    let points = run_locks(&target, &opts, &mut NoProgress).unwrap();
    let modes: Vec<&str> = points.iter().map(|p| p.mode).collect();
    assert_eq!(modes, ["optimistic", "sync", "pipelined", "in-memory"]);
    for p in &points {
        assert!(p.committed > 0, "{p:?}");
        assert!(p.latency.p50_us <= p.latency.p99_us && p.latency.p99_us <= p.latency.max_us);
        let writes_locks = matches!(p.mode, "sync" | "pipelined");
        assert_eq!(p.lock_raft_bytes_per_txn > 0, writes_locks, "{p:?}");
    }
    assert!(points[3].in_memory_locks > 0, "{:?}", points[3]);
    let table = locks_table(&points);
    assert!(table.contains("1.00x"), "sync is its own baseline: {table}");
    assert_eq!(locks_series(&points).len(), 4);
}

#[test]
fn bench_bigtxn_runs_none_copy_and_rename_through_txn_and_reads_every_commit_back() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BigTxnOptions::default()
        .with_mib(4)
        .with_rounds(1)
        .with_clients(2)
        // Long enough for a small commit to finish in it on a loaded machine with the disk
        // engine (500 ms once saw none).
        .with_window_ms(1500);
    let points = run_bigtxn(dir.path(), None, &opts, &mut NoProgress).unwrap();
    let methods: Vec<&str> = points.iter().map(|p| p.method).collect();
    assert_eq!(methods, ["none", "copy", "rename"]);
    for p in &points {
        assert!(p.read_back_ok, "{p:?}");
        assert!(p.small_commits > 0, "{p:?}");
        assert!(p.small.p99_us <= p.small.max_us, "{p:?}");
        // Every commit that started in the window was in flight in it.
        let in_flight_max_us = p.small_max_ms.map_or(0.0, |ms| ms * 1e3);
        assert!(in_flight_max_us >= p.small.max_us as f64, "{p:?}");
    }
    assert_eq!((points[0].big_mib, points[0].renames), (0, 0));
    assert_eq!((points[1].big_mib, points[1].renames), (4, 0));
    assert_eq!((points[2].big_mib, points[2].renames), (4, 1));
    assert!(points[2].commit_step_ms > 0.0 && points[2].prewrite_s > 0.0);
    let table = bigtxn_table(&points);
    assert!(table.contains("1.00x"), "none is its own baseline: {table}");
    // The scratch directory is left empty: every run removes its cluster and binlog.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bench_hotspot_through_txn_groups_updates_and_the_row_moves_by_the_acknowledged_count() {
    let target = BenchTarget::embedded().unwrap();
    let run = run_hot_txn(&target, &[1, 8], 0.6, &mut NoProgress).unwrap();
    let shape: Vec<(usize, &str)> = run.points.iter().map(|p| (p.clients, p.grouping)).collect();
    assert_eq!(shape, [(1, "off"), (1, "on"), (8, "off"), (8, "on")]);
    for p in &run.points {
        assert!(p.acknowledged > 0, "{p:?}");
        assert_eq!(p.on_off.is_some(), p.grouping == "on", "{p:?}");
    }
    // Eight clients of one TxnClient on one row: the coordinator groups them.
    assert!(
        run.points[3].updates_per_commit > 1.0,
        "{:?}",
        run.points[3]
    );
    assert!(
        run.check.contains("none lost or applied twice"),
        "{}",
        run.check
    );
}
