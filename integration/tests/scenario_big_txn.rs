//! The big-transaction scenario: copy and rename both commit everything, and the files are
//! valid binlogs.

use surge_binlog::CommitMethod;
use surgedb::scenarios::run_big_txn;

#[test]
fn big_txn_commits_by_copy_and_by_rename_and_every_commit_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_big_txn(dir.path(), 4).unwrap();
    let [copy, rename] = &report.runs[..] else {
        panic!("two runs expected: {report:?}");
    };
    assert_eq!(copy.method, Some(CommitMethod::Copied));
    assert_eq!(rename.method, Some(CommitMethod::Renamed));
    for run in [copy, rename] {
        assert!(run.big_bytes >= 4 << 20, "{run:?}");
        assert!(run.small_commits > 0, "{run:?}");
        // Every small commit that returned plus the big one, each exactly once.
        assert_eq!(run.xids_read_back, run.small_commits + 1, "{run:?}");
        if std::env::var_os("SURGE_REQUIRE_MARIADB_BINLOG").is_some() {
            assert_eq!(run.mariadb_binlog_ok, Some(true), "{run:?}");
        } else {
            assert_ne!(run.mariadb_binlog_ok, Some(false), "{run:?}");
            if run.mariadb_binlog_ok.is_none() {
                eprintln!("SKIPPED: mariadb-binlog check (apt-get install mariadb-client)");
            }
        }
    }
    // The copy stays in the first file; the rename makes the cache file the second one.
    assert_eq!(copy.files, 1);
    assert!(rename.files >= 2);
    let text = report.to_string();
    assert!(
        text.contains("(MiB)") && text.contains("(ms)"),
        "units: {text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("Shows: "),
        "{text}"
    );
}
