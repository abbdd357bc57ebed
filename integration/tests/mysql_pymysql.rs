//! PyMySQL (a pure-Python client, text protocol only) against the MySQL server over the test
//! backend: a Python script run with `std::process::Command` connects, queries, checks typed
//! values, multi-statements, errors with codes, autocommit and transaction status flags, and a
//! wrong password; it prints `PYMYSQL OK` at its end.
//!
//! Without a `python3` that can `import pymysql` the test prints
//! `SKIPPED: PyMySQL not installed` and passes, unless `SURGE_REQUIRE_PYMYSQL` is set.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;

use std::process::Command;
use std::sync::atomic::Ordering;

use mysql_backend::{eventually, required, start};
use surgedb::mysql::MysqlConfig;

const SCRIPT: &str = r#"
import datetime, decimal, sys
import pymysql
from pymysql.constants import CLIENT

port = int(sys.argv[1])
def connect(**kw):
    args = dict(host="127.0.0.1", port=port, user="py", password="pw", database="test",
                connect_timeout=10)
    args.update(kw)
    return pymysql.connect(**args)

c = connect(autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)
cur = c.cursor()
assert cur.execute("insert into t values (1, 'one')") == 1
assert cur.lastrowid == 1, cur.lastrowid
cur.execute("insert into t values (2, 'two')")
cur.execute("select id, name from t")
assert cur.fetchall() == ((1, "one"), (2, "two")), "rows"
assert [d[0] for d in cur.description] == ["id", "name"]

cur.execute("select types")
row = cur.fetchone()
want = (-5, 65535, -70000, 123456, 18446744073709551615, 1.5, 2.25,
        decimal.Decimal("-123.45"), "char", "h\u00e9llo", b"blob\x01",
        datetime.date(2026, 12, 2), datetime.datetime(2026, 12, 2, 1, 2, 3, 456),
        datetime.datetime(2026, 12, 2, 23, 59, 58), None)
assert row == want, row

# Multi-statements: one result per statement.
cur.execute("select 1; insert into t values (3, 'three'); select id, name from t where id = 3")
assert cur.fetchall() == ((1,),)
assert cur.nextset()
assert cur.rowcount == 1
assert cur.nextset()
assert cur.fetchall() == ((3, "three"),)
assert not cur.nextset()

# Errors with their codes; the connection goes on.
for sql, code, kind in [("select boom", 1054, pymysql.err.OperationalError),
                        ("insert into t values (1, 'x')", 1062, pymysql.err.IntegrityError),
                        ("frobnicate", 1064, pymysql.err.ProgrammingError)]:
    try:
        cur.execute(sql)
        raise SystemExit("no error for " + sql)
    except kind as e:
        assert e.args[0] == code, e.args
c.ping(reconnect=False)
c.select_db("sbtest")
cur.execute("select database()")
assert cur.fetchone() == ("sbtest",)
try:
    c.select_db("nope")
    raise SystemExit("no error for a missing database")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1049, e.args

# PyMySQL's default: autocommit off, read back from the server's status flags.
c2 = connect()
assert c2.get_autocommit() is False
cur2 = c2.cursor()
cur2.execute("insert into t values (10, 'ten')")
assert c2.server_status & 1, "SERVER_STATUS_IN_TRANS"
c2.rollback()
assert not c2.server_status & 1
cur2.execute("insert into t values (11, 'eleven')")
c2.commit()
cur.execute("select id, name from t where id = 11")
assert cur.fetchone() == (11, "eleven")
cur.execute("select id, name from t where id = 10")
assert cur.fetchone() is None
c2.close()

try:
    connect(password="bad")
    raise SystemExit("no error for a wrong password")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e.args
    assert "Access denied for user 'py'@'127.0.0.1' (using password: YES)" in e.args[1], e.args
c.close()
print("PYMYSQL OK")
"#;

/// A Python interpreter that has PyMySQL.
fn python() -> Option<&'static str> {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import pymysql"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    match found {
        Some(p) => Some(p),
        None if required(&["SURGE_REQUIRE_PYMYSQL"]) => {
            panic!("PyMySQL not installed, and SURGE_REQUIRE_PYMYSQL is set")
        }
        None => {
            println!("SKIPPED: PyMySQL not installed");
            None
        }
    }
}

#[test]
fn pymysql_script_passes() {
    let Some(py) = python() else { return };
    let (server, backend) = start(MysqlConfig::default().with_user("py", "pw"));
    let out = Command::new(py)
        .args(["-c", SCRIPT, &server.local_addr().port().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("PYMYSQL OK"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // Both sessions were opened and dropped; c2's rollback and commit were its own.
    eventually("both sessions dropped", || {
        backend.shared.dropped.load(Ordering::SeqCst) == 2
    });
    assert_eq!(backend.shared.rollbacks_on_drop.load(Ordering::SeqCst), 0);
    server.shutdown();
}
