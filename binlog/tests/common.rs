//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use surge_binlog::{Binlog, BinlogConfig, Event, EventBody, LogReader, Position, Result};

/// A config in `dir` sized for tests: 1 MiB rename threshold, 4 KiB cache buffers.
pub fn test_config(dir: &Path) -> BinlogConfig {
    BinlogConfig::new(dir)
        .with_large_commit_threshold(1 << 20)
        .with_cache_buffer_size(4096)
}

/// Every event of the log, in order.
pub fn all_events(dir: &Path) -> Result<Vec<(Position, Event)>> {
    LogReader::open(dir, "surge-bin", None)?.collect()
}

/// The key of the first `surgedb`.`kv` row of every rows event in the log at `dir`, in order.
pub fn first_row_keys(dir: &Path) -> Vec<Vec<u8>> {
    all_events(dir)
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match &e.body {
            EventBody::Rows(r) => Some(r.kv_rows().unwrap()[0].key.clone()),
            _ => None,
        })
        .collect()
}

/// Transactions found in the log: (GTID seq, xid) for every GTID ... Xid group, and the
/// seqs of groups without an Xid.
pub fn groups(events: &[(Position, Event)]) -> (Vec<(u64, u64)>, Vec<u64>) {
    let mut complete = Vec::new();
    let mut incomplete = Vec::new();
    let mut open: Option<u64> = None;
    for (_, ev) in events {
        match &ev.body {
            EventBody::Gtid(g) => {
                if let Some(s) = open.replace(g.seq_no) {
                    incomplete.push(s);
                }
            }
            EventBody::Xid(x) => {
                if let Some(s) = open.take() {
                    complete.push((s, *x));
                }
            }
            EventBody::FormatDescription(_) => {
                if let Some(s) = open.take() {
                    incomplete.push(s);
                }
            }
            _ => {}
        }
    }
    if let Some(s) = open {
        incomplete.push(s);
    }
    (complete, incomplete)
}

/// Opens a fresh log in a new temp dir.
pub fn fresh() -> (tempfile::TempDir, Binlog) {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    (dir, log)
}

/// Paths of every binlog file in `dir` (index order).
pub fn binlog_files(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(dir.join("surge-bin.index")).unwrap();
    text.lines()
        .map(|l| dir.join(l.trim_start_matches("./")))
        .collect()
}

/// The `# at N` offsets mariadb-binlog printed, deduplicated, in order.
pub fn at_offsets(text: &str) -> Vec<u64> {
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# at "))
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    v.dedup();
    v
}

/// Checks one of our files with mariadb-binlog: exit 0 and the same event offsets as our
/// reader. Returns the tool's output (None when skipped).
pub fn verify_with_mariadb(file: &Path) -> Option<String> {
    let text = surge_testkit::mariadb_binlog::verify(&[file], "-vv")?;
    let ours: Vec<u64> = surge_binlog::read_file_events(file)
        .unwrap()
        .into_iter()
        .map(|(o, _)| o)
        .collect();
    assert_eq!(
        at_offsets(&text),
        ours,
        "offsets differ for {}",
        file.display()
    );
    Some(text)
}

/// Reads every file of the log in `dir` with our reader and with mariadb-binlog (when
/// installed). Call after the log was closed or dropped.
pub fn verify_all(dir: &Path) {
    for f in binlog_files(dir) {
        surge_binlog::read_file_events(&f).unwrap();
        verify_with_mariadb(&f);
    }
}
