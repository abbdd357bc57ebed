//! Row events of a SQL table replay into a real MariaDB server in STRICT mode: the table
//! created by a Query event of the same binlog, then inserts, an update and a delete with
//! full row images of every supported type; the server's rows then equal what was logged.
//! And a row event that does not match the replica's rows (an update of a missing row)
//! stops it, as MariaDB's own replicas stop on diverged data.
//!
//! The server is a private one (`surge_testkit::mariadb_server`); skipped with a message
//! when MariaDB is not installed, failing then if `SURGE_REQUIRE_MARIADB_SERVER=1`.

use surge_binlog::{Binlog, BinlogValue, SqlRowChange};
use surge_testkit::mariadb_server::MariadbServer;

use crate::common::test_config;
use crate::sql_rows::{every_type_row, every_type_table};

/// The DDL of `sql_rows::every_type_table`.
const CREATE_ITEMS: &str = "CREATE TABLE items (\
    id BIGINT UNSIGNED NOT NULL PRIMARY KEY, ti TINYINT NULL, si SMALLINT UNSIGNED NOT NULL, \
    mi MEDIUMINT NOT NULL, i INT NOT NULL, price DECIMAL(12,3) NOT NULL, f FLOAT NOT NULL, \
    d DOUBLE NULL, code CHAR(8) CHARACTER SET utf8mb4 NOT NULL, \
    name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL, note TEXT CHARACTER SET utf8mb4 NULL, \
    raw LONGBLOB NULL, bin BINARY(4) NOT NULL, vb VARBINARY(300) NOT NULL, day DATE NOT NULL, \
    at DATETIME(3) NOT NULL, ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB";

const SELECT_ITEMS: &str = "SELECT id, IFNULL(ti, 'NULL'), si, mi, i, price, f, IFNULL(d, 'NULL'), \
    code, name, IFNULL(note, 'NULL'), HEX(raw), HEX(bin), LENGTH(vb), day, at, \
    UNIX_TIMESTAMP(ts) FROM shop.items ORDER BY id";

#[test]
fn sql_rows_of_every_type_replay_into_a_strict_server() {
    let Some(server) = MariadbServer::start() else {
        return;
    };
    server.sql("CREATE DATABASE shop");
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let table = every_type_table();
    let mut ddl = log.new_cache();
    ddl.query("shop", CREATE_ITEMS).unwrap();
    log.commit(ddl, 1).unwrap();

    let r1 = every_type_row(1, "-123456789.125", "héllo wörld");
    let r2 = every_type_row(2, "0.500", "second");
    let mut r2b = every_type_row(2, "7.000", "second, renamed");
    r2b[1] = BinlogValue::Int(-128);
    r2b[7] = BinlogValue::Null;
    let r3 = every_type_row(3, "99.990", "third");
    let mut c = log.new_cache();
    c.table_rows(
        &table,
        &[
            SqlRowChange::Insert { after: r1.clone() },
            SqlRowChange::Insert { after: r2.clone() },
            SqlRowChange::Insert { after: r3.clone() },
        ],
    )
    .unwrap();
    log.commit(c, 2).unwrap();
    let mut c = log.new_cache();
    c.table_rows(
        &table,
        &[SqlRowChange::Update {
            before: r2,
            after: r2b,
        }],
    )
    .unwrap();
    c.table_rows(&table, &[SqlRowChange::Delete { before: r1 }])
        .unwrap();
    log.commit(c, 3).unwrap();
    let files = log.file_paths();
    log.close().unwrap();

    let (status, stderr) = server.replay_binlog(&files);
    assert!(
        status.success(),
        "replay failed: {stderr}\n{}",
        server.log_tail()
    );
    let rows: Vec<String> = server
        .sql(SELECT_ITEMS)
        .lines()
        .map(str::to_string)
        .collect();
    let common = "65535\t-8388608\t-7";
    let tail =
        "a note\t000102\t09080000\t260\t2024-02-29\t2023-12-31 23:59:58.125\t1700000000.654321";
    assert_eq!(
        rows,
        vec![
            format!("2\t-128\t{common}\t7.000\t1.5\tNULL\tAB\tsecond, renamed\t{tail}"),
            format!("3\tNULL\t{common}\t99.990\t1.5\t-2.25\tAB\tthird\t{tail}"),
        ]
    );
}

#[test]
fn an_update_of_a_missing_row_stops_a_strict_server() {
    let Some(server) = MariadbServer::start() else {
        return;
    };
    server.sql("CREATE DATABASE shop");
    server.sql(&format!("USE shop; {CREATE_ITEMS}"));
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let mut c = log.new_cache();
    c.table_rows(
        &every_type_table(),
        &[SqlRowChange::Update {
            before: every_type_row(9, "1.000", "x"),
            after: every_type_row(9, "2.000", "x"),
        }],
    )
    .unwrap();
    log.commit(c, 1).unwrap();
    let files = log.file_paths();
    log.close().unwrap();
    let (status, stderr) = server.replay_binlog(&files);
    assert!(!status.success());
    assert!(
        stderr.contains("1032") || stderr.contains("find record"),
        "{stderr}"
    );
}
