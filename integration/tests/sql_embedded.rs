//! The write-ups' SQL transcripts against an embedded cluster's MySQL port, through two
//! independent client libraries: Rust's `mysql` crate (the demo's scenarios) and PyMySQL
//! (pure Python, text protocol), so that no one client's habits hide a protocol bug. PyMySQL
//! missing: `SKIPPED`, unless `SURGE_REQUIRE_PYMYSQL=1` (as in CI).

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

use std::process::Command;

use surge_txn::LockMode;
use surgedb::scenarios::{self, SqlAnswer, SqlCluster};

#[test]
fn the_hot_row_transcript_through_the_mysql_crate() {
    let dir = tempfile::tempdir().unwrap();
    let t = scenarios::run_sql_hot_row(dir.path()).unwrap();
    // The selects after each update, then SELECT ... FROM UPDATE's own row.
    for value in ["2", "3", "4"] {
        assert!(
            t.contains(&format!("| 1  | {value:<4} |")),
            "no row (1, {value}) in:\n{t}"
        );
    }
    assert!(t.contains("Group_update_leader_count"), "{t}");
}

#[test]
fn the_lock_loss_transcript_in_both_lock_modes() {
    let dir = tempfile::tempdir().unwrap();
    let lost = scenarios::run_sql_lock_loss(&dir.path().join("m"), LockMode::InMemory).unwrap();
    assert_eq!(
        lost.t2_delete,
        SqlAnswer::Done { affected: 1 },
        "{}",
        lost.transcript
    );
    match &lost.t1_commit {
        SqlAnswer::Error { code, message } => {
            assert_eq!(*code, 1213, "{}", lost.transcript);
            assert!(message.contains("PessimisticLockNotFound"), "{message}");
        }
        other => panic!("T1's commit must fail, got {other:?}:\n{}", lost.transcript),
    }
    assert_eq!(lost.ids_left, ["2"]);

    let kept = scenarios::run_sql_lock_loss(&dir.path().join("s"), LockMode::Sync).unwrap();
    assert_eq!(
        kept.t1_commit,
        SqlAnswer::Done { affected: 0 },
        "{}",
        kept.transcript
    );
    assert_eq!(
        kept.t2_delete,
        SqlAnswer::Done { affected: 0 },
        "{}",
        kept.transcript
    );
    assert_eq!(kept.ids_left, ["2"]);
}

const PYMYSQL_SCRIPT: &str = r#"
import sys, pymysql
host, port = sys.argv[1], int(sys.argv[2])
c = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True)
cur = c.cursor()
out = []
for sql in [
    "create database s004p", "use s004p",
    "set global hotspot=ON", "set global hotspot_lock_type=ON",
    "create table test (id int primary key, data int)",
    "insert into test values (1, 1)",
    "update /*+ commit_on_success */ test set data = data + 1 where id = 1",
    "update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 1",
    "select id, data from update /*+ commit_on_success */ test set data = data + 1 where id = 1",
    "select * from test",
]:
    n = cur.execute(sql)
    if cur.description:
        out.append(repr(cur.fetchall()))
try:
    cur.execute("insert into test values (1, 9)")
    out.append("no error")
except pymysql.err.IntegrityError as e:
    out.append("dup %d" % e.args[0])
print("\n".join(out))
"#;

#[test]
fn the_hot_row_transcript_through_pymysql() {
    // The first Python that has PyMySQL (Debian's package is for /usr/bin/python3, which
    // another python3 on the PATH may hide).
    let python = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import pymysql"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        assert!(
            std::env::var("SURGE_REQUIRE_PYMYSQL").as_deref() != Ok("1"),
            "PyMySQL is required (SURGE_REQUIRE_PYMYSQL=1) but missing (apt-get install python3-pymysql)"
        );
        eprintln!("SKIPPED: PyMySQL is not installed (apt-get install python3-pymysql)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let c = SqlCluster::start(dir.path(), LockMode::InMemory).unwrap();
    let addr = c.addr();
    let out = Command::new(python)
        .args([
            "-c",
            PYMYSQL_SCRIPT,
            &addr.ip().to_string(),
            &addr.port().to_string(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "PyMySQL script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["((1, 4),)", "((1, 4),)", "dup 1062"]
    );
}
