//! Bad bytes from a client: an oversized packet gets 1153 and the connection is closed;
//! garbage instead of a handshake response, a malformed command and a packet out of sequence
//! get an error naming what was wrong and the connection is closed; an unknown command gets
//! 1047 and the connection goes on. The server serves the next connection every time.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use std::io::Write;
use std::sync::atomic::Ordering;

use mysql_backend::{eventually, start};
use mysql_raw::{Raw, client_caps, err};
use surgedb::mysql::{MysqlConfig, MysqlServer};

/// A fresh connection logs in and answers a query: the server is still serving.
fn still_serving(server: &MysqlServer) {
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let answer = raw.query("select 3");
    assert_eq!(answer.len(), 5, "{answer:?}");
    assert_eq!(answer[3], [1, b'3']);
}

#[test]
fn oversized_packet_gets_1153_and_is_closed() {
    let (server, backend) = start(MysqlConfig::default().with_max_allowed_packet(1024));
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("begin");
    // The header alone announces too much: the answer (sequence id 1, after the refused
    // packet's 0) comes before the payload is sent.
    raw.seq = 1;
    raw.stream
        .write_all(&[0x01, 0x08, 0x00, 0x00, 0x03])
        .unwrap();
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!(code, 1153);
    assert_eq!(msg, "Got a packet bigger than 'max_allowed_packet' bytes");
    assert!(raw.closed());
    // Its session was dropped with its transaction open: rolled back.
    eventually("the rollback", || {
        backend.shared.rollbacks_on_drop.load(Ordering::SeqCst) == 1
    });
    // A query of exactly the limit is fine.
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let sql = format!("select 1{}", " ".repeat(1024 - 9));
    assert_eq!(raw.query(&sql).len(), 5);
    still_serving(&server);
    server.shutdown();
}

#[test]
fn garbage_handshake_is_refused_and_closed() {
    let (server, backend) = start(MysqlConfig::default());
    let cases: [(&[u8], &str); 3] = [
        (&[0xDE, 0xAD, 0xBE, 0xEF, 0x00], "handshake response"),
        (&[1, 2], "shorter than its capability flags"),
        (&[0, 0, 0, 0, 0, 0, 0, 0, 0], "protocol 4.1"),
    ];
    for (garbage, needle) in cases {
        let mut raw = Raw::open(server.local_addr());
        raw.write(garbage);
        let (code, msg) = err(&raw.read().unwrap());
        assert_eq!(code, 1835, "{msg}");
        assert!(msg.contains(needle), "{msg} lacks {needle}");
        assert!(raw.closed());
    }
    // A handshake response over 16 KiB is refused before authentication, whatever
    // max_allowed_packet says.
    let mut raw = Raw::open(server.local_addr());
    raw.write(&vec![0x0Fu8; 20_000]);
    let (code, _) = err(&raw.read().unwrap());
    assert_eq!(code, 1153);
    assert!(raw.closed());
    assert_eq!(backend.shared.opened.load(Ordering::SeqCst), 0);
    still_serving(&server);
    server.shutdown();
}

#[test]
fn malformed_commands_are_named_and_closed() {
    let (server, _backend) = start(MysqlConfig::default());
    let cases: [(&[u8], &str); 6] = [
        (&[], "empty packet"),
        (&[0x17, 1, 0], "COM_STMT_EXECUTE"),
        (&[0x18, 1], "COM_STMT_SEND_LONG_DATA"),
        (&[0x19], "COM_STMT_CLOSE"),
        (&[0x1B, 0], "COM_SET_OPTION"),
        (&[0x02, 0xFF, 0xFE], "COM_INIT_DB packet: not UTF-8"),
    ];
    for (packet, needle) in cases {
        let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
        raw.command(packet);
        let (code, msg) = err(&raw.read().unwrap());
        assert_eq!(code, 1835, "{msg}");
        assert!(msg.contains(needle), "{msg} lacks {needle}");
        assert!(raw.closed(), "{needle}: still open");
    }
    // A packet whose sequence id is not 0 at the start of a command.
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.seq = 5;
    raw.write(&[0x0E]);
    raw.seq = 0;
    let (code, _) = err(&raw.read().unwrap());
    assert_eq!(code, 1156);
    assert!(raw.closed());
    // The peer vanishing in the middle of a packet.
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.stream.write_all(&[0x10, 0, 0, 0, 0x03, b's']).unwrap();
    drop(raw);
    still_serving(&server);
    eventually("every connection closed", || server.connections() == 0);
    server.shutdown();
}

#[test]
fn unknown_command_gets_1047_and_the_connection_goes_on() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    for command in [0x42u8, 0x11, 0xFF] {
        raw.command(&[command]);
        let (code, msg) = err(&raw.read().unwrap());
        assert_eq!(code, 1047, "{msg}");
    }
    raw.command(&[0x0E]);
    assert_eq!(raw.read().unwrap()[0], 0x00);
    // A query that is not UTF-8 is an ordinary error too.
    let mut p = vec![0x03];
    p.extend_from_slice(b"select \xFF");
    raw.command(&p);
    let (code, _) = err(&raw.read().unwrap());
    assert_eq!(code, 1300);
    raw.command(&[0x03]);
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!((code, msg.as_str()), (1065, "Query was empty"));
    raw.command(&[0x0E]);
    assert_eq!(raw.read().unwrap()[0], 0x00);
    server.shutdown();
}

/// A session that panics takes its connection down, not the server: the client sees the
/// connection closed at once, its transaction is rolled back (the session drops while the
/// thread unwinds), and its place under `max_connections` is free again, so a server with
/// room for one connection still serves the next.
#[test]
fn a_panicking_session_frees_its_connection() {
    let (server, backend) = start(MysqlConfig::default().with_max_connections(1));
    for _ in 0..3 {
        let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
        raw.query("begin");
        let mut p = vec![0x03];
        p.extend_from_slice(b"select test_panic()");
        raw.command(&p);
        assert!(raw.closed(), "still open after the panic");
        eventually("the connection's place freed", || server.connections() == 0);
    }
    eventually("every rollback", || {
        backend.shared.rollbacks_on_drop.load(Ordering::SeqCst) == 3
    });
    still_serving(&server);
    server.shutdown();
}
