//! The big-transaction scenario through surge-txn: with no big transaction, by copy and by
//! rename, every acknowledged commit is in the coordinator's binlog exactly once, the big one
//! goes by rename only when asked, and the files are valid binlogs.

use surge_binlog::CommitMethod;
use surgedb::scenarios::run_big_txn;

#[test]
fn big_txn_commits_by_copy_and_by_rename_and_every_commit_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_big_txn(dir.path(), 4).unwrap();
    let [none, copy, rename] = &report.runs[..] else {
        panic!("three runs expected: {report:?}");
    };
    assert_eq!(none.method, None);
    assert_eq!(copy.method, Some(CommitMethod::Copied));
    assert_eq!(rename.method, Some(CommitMethod::Renamed));
    assert_eq!((none.big_rows, none.renames), (0, 0), "{none:?}");
    for run in [none, copy, rename] {
        assert!(run.small_commits > 0, "{run:?}");
        assert!(run.small_in_window > 0, "{run:?}");
        // Every small commit that returned plus the big one, each exactly once.
        assert!(run.read_back_ok(), "{run:?}");
        if std::env::var_os("SURGE_REQUIRE_MARIADB_BINLOG").is_some() {
            assert_eq!(run.mariadb_binlog_ok, Some(true), "{run:?}");
        } else {
            assert_ne!(run.mariadb_binlog_ok, Some(false), "{run:?}");
            if run.mariadb_binlog_ok.is_none() {
                eprintln!("SKIPPED: mariadb-binlog check (apt-get install mariadb-client)");
            }
        }
    }
    for run in [copy, rename] {
        assert!(run.big_bytes >= 4 << 20, "{run:?}");
        assert_eq!(run.big_rows, 64, "{run:?}");
    }
    // The copy stays in the first file; the rename makes the cache file a binlog file.
    assert_eq!((copy.renames, copy.files), (0, 1), "{copy:?}");
    assert_eq!(rename.renames, 1, "{rename:?}");
    assert!(rename.files >= 2, "{rename:?}");
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
