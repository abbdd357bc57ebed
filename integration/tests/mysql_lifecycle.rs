//! Connections and the server's life: connection ids rise from 1; a dropped connection's
//! session is dropped (its transaction rolled back); connections over the limit get 1040;
//! shutdown with connections open (idle, in a transaction, mid-handshake, mid-statement)
//! finishes in bounded time and drops every session.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mysql_backend::{eventually, start};
use mysql_raw::{Raw, client_caps, err};
use surgedb::mysql::MysqlConfig;

#[test]
fn connection_ids_rise_from_one_and_reach_the_session() {
    let (server, backend) = start(MysqlConfig::default());
    let a = Raw::login(server.local_addr(), "root", "", client_caps());
    let mut b = Raw::login(server.local_addr(), "root", "", client_caps());
    assert_eq!((a.conn_id, b.conn_id), (1, 2));
    let answer = b.query("select connection_id()");
    assert_eq!(answer[3], [1, b'2']);
    let seen = backend.shared.connections.lock().unwrap().clone();
    assert_eq!(seen[0].id, 1);
    assert_eq!(seen[0].user, "root");
    assert!(seen[0].peer.starts_with("127.0.0.1:"), "{}", seen[0].peer);
    assert_eq!(server.connections(), 2);
    server.shutdown();
}

#[test]
fn a_dropped_connection_drops_its_session_and_rolls_back() {
    let (server, backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("begin");
    raw.query("insert into t values (1, 'never')");
    drop(raw);
    eventually("the rollback", || {
        backend.shared.rollbacks_on_drop.load(Ordering::SeqCst) == 1
    });
    eventually("no connection", || server.connections() == 0);
    assert!(backend.shared.table.lock().unwrap().is_empty());
    // COM_QUIT ends a connection the same way, without a transaction to roll back.
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.command(&[0x01]);
    assert!(raw.closed());
    eventually("two sessions dropped", || {
        backend.shared.dropped.load(Ordering::SeqCst) == 2
    });
    assert_eq!(backend.shared.rollbacks_on_drop.load(Ordering::SeqCst), 1);
    server.shutdown();
}

#[test]
fn connections_over_the_limit_get_1040() {
    let (server, _backend) = start(MysqlConfig::default().with_max_connections(2));
    let _a = Raw::login(server.local_addr(), "root", "", client_caps());
    let b = Raw::login(server.local_addr(), "root", "", client_caps());
    let c = std::net::TcpStream::connect(server.local_addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut raw = Raw {
        stream: c.try_clone().unwrap(),
        seq: 0,
        conn_id: 0,
        salt: Vec::new(),
        deprecate_eof: false,
    };
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!((code, msg.as_str()), (1040, "Too many connections"));
    drop(b);
    eventually("a free slot", || server.connections() == 1);
    Raw::login(server.local_addr(), "root", "", client_caps());
    let _ = c.shutdown(std::net::Shutdown::Both);
    server.shutdown();
}

#[test]
fn shutdown_with_open_connections_is_bounded() {
    let (server, backend) = start(MysqlConfig::default());
    let mut idle = Raw::login(server.local_addr(), "root", "", client_caps());
    let mut in_txn = Raw::login(server.local_addr(), "root", "", client_caps());
    in_txn.query("begin");
    // Mid-handshake: greeted, never answers.
    let mut greeted = Raw::open(server.local_addr());
    // Mid-statement: a statement that takes 300 ms.
    let mut busy = Raw::login(server.local_addr(), "root", "", client_caps());
    busy.command(b"\x03sleep 300");
    eventually("four connections", || server.connections() == 4);
    std::thread::sleep(Duration::from_millis(50));

    let started = Instant::now();
    server.shutdown();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");

    // Every session was dropped, the open transaction rolled back.
    assert_eq!(backend.shared.opened.load(Ordering::SeqCst), 3);
    assert_eq!(backend.shared.dropped.load(Ordering::SeqCst), 3);
    assert_eq!(backend.shared.rollbacks_on_drop.load(Ordering::SeqCst), 1);
    assert!(idle.closed());
    assert!(in_txn.closed());
    assert!(greeted.closed());
    // The busy statement's answer may or may not have been written before the close.
    let _ = busy.read();
}
