//! `wait_timeout` over the real SQL engine and the MySQL port, through Rust's `mysql`
//! crate: a connection silent past its session's `wait_timeout` is closed and its open
//! transaction rolled back (so an abandoned client no longer holds its locks, or the GC
//! safe point, for ever); a busy one is not; an interactive client (CLIENT_INTERACTIVE)
//! starts with `interactive_timeout`; a session keeps the value it connected with.
#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

use std::time::{Duration, Instant};

use mysql::consts::CapabilityFlags;
use mysql::prelude::*;
use mysql::{Conn, Opts, OptsBuilder};
use surge_txn::LockMode;
use surgedb::scenarios::SqlCluster;

fn opts(db: &SqlCluster, interactive: bool) -> Opts {
    let flags = if interactive {
        CapabilityFlags::CLIENT_INTERACTIVE
    } else {
        CapabilityFlags::empty()
    };
    OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(db.addr().port())
        .user(Some("root"))
        .prefer_socket(false)
        .additional_capabilities(flags)
        .into()
}

#[test]
fn a_silent_connection_is_closed_after_its_wait_timeout_and_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlCluster::start(dir.path(), LockMode::InMemory).unwrap();
    let mut admin = Conn::new(opts(&db, false)).unwrap();
    admin
        .query_drop("create database w; create table w.t (id int primary key, v int)")
        .unwrap();

    let mut idle = Conn::new(opts(&db, false)).unwrap();
    idle.query_drop("set session wait_timeout = 1").unwrap();
    idle.query_drop("begin").unwrap();
    idle.query_drop("insert into w.t values (1, 1)").unwrap();
    // Commands closer together than the timeout keep it open.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(500));
        let n: Option<i64> = idle.query_first("select count(*) from w.t").unwrap();
        assert_eq!(n, Some(1), "its own insert");
    }
    // Silent past it: closed, without an answer to the next command.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        idle.query_drop("commit").is_err(),
        "the connection outlived its wait_timeout"
    );
    // Rolled back: the row is not there, and its lock is gone (a writer gets it at once).
    let started = Instant::now();
    admin.query_drop("insert into w.t values (1, 2)").unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let v: Option<i64> = admin.query_first("select v from w.t where id = 1").unwrap();
    assert_eq!(v, Some(2));
}

#[test]
fn an_interactive_client_starts_with_interactive_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlCluster::start(dir.path(), LockMode::InMemory).unwrap();
    let mut admin = Conn::new(opts(&db, false)).unwrap();
    admin
        .query_drop("set global interactive_timeout = 1234")
        .unwrap();
    let wait = |c: &mut Conn| -> Option<i64> { c.query_first("select @@wait_timeout").unwrap() };
    assert_eq!(wait(&mut admin), Some(28_800));
    let mut interactive = Conn::new(opts(&db, true)).unwrap();
    assert_eq!(wait(&mut interactive), Some(1234));
    let mut batch = Conn::new(opts(&db, false)).unwrap();
    assert_eq!(wait(&mut batch), Some(28_800));
    // A session keeps the value it connected with; SET GLOBAL reaches new sessions only.
    admin.query_drop("set global wait_timeout = 99").unwrap();
    assert_eq!(wait(&mut batch), Some(28_800));
    assert_eq!(wait(&mut Conn::new(opts(&db, false)).unwrap()), Some(99));
}
