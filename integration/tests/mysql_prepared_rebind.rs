//! COM_STMT_EXECUTE with new-params-bound = 0 reuses the parameter types bound by an earlier
//! execution. MariaDB Connector/C (so sysbench and the `mariadb` tools) sends the types only
//! on the first execution after binding; a server that reads types (or the flag) again on
//! the next one decodes every value from the wrong offset. The packets are built by hand
//! here, byte by byte, so this test does not share the server's encoder.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use mysql_backend::start;
use mysql_raw::{Raw, client_caps, err};
use surgedb::mysql::MysqlConfig;

/// Prepares `sql`; returns (statement id, params, columns) after reading every definition.
fn prepare(raw: &mut Raw, sql: &str) -> (u32, u16, u16) {
    let mut p = vec![0x16];
    p.extend_from_slice(sql.as_bytes());
    raw.command(&p);
    let ok = raw.read().unwrap();
    assert_eq!(ok[0], 0x00, "{ok:?}");
    assert_eq!(ok.len(), 12);
    let id = u32::from_le_bytes(ok[1..5].try_into().unwrap());
    let cols = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    for block in [params, cols] {
        if block > 0 {
            for _ in 0..block {
                let def = raw.read().unwrap();
                assert_eq!(&def[..4], b"\x03def", "a column definition");
            }
            let eof = raw.read().unwrap();
            assert_eq!(eof[0], 0xFE);
            assert_eq!(eof.len(), 5);
        }
    }
    (id, params, cols)
}

/// A COM_STMT_EXECUTE for two parameters: a BIGINT and a string (NULL when `None`).
fn execute(id: u32, types: bool, n: i64, s: Option<&[u8]>) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    p.push(if s.is_none() { 0b10 } else { 0 }); // NULL bitmap
    p.push(u8::from(types)); // new-params-bound
    if types {
        p.extend_from_slice(&[0x08, 0x00, 0xFD, 0x00]); // LONGLONG, VAR_STRING
    }
    p.extend_from_slice(&n.to_le_bytes());
    if let Some(s) = s {
        p.push(s.len() as u8);
        p.extend_from_slice(s);
    }
    p
}

/// Reads a binary result set of one row echoing (BIGINT, string); returns the row.
fn read_echo_row(raw: &mut Raw) -> (i64, Option<Vec<u8>>) {
    let count = raw.read().unwrap();
    assert_eq!(count, [2], "{count:?}");
    raw.read().unwrap();
    raw.read().unwrap();
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    let row = raw.read().unwrap();
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    assert_eq!(row[0], 0x00);
    // NULL bitmap: one byte, offset 2 (column 1 is bit 3).
    let null_s = row[1] & 0b1000 != 0;
    let n = i64::from_le_bytes(row[2..10].try_into().unwrap());
    let s = (!null_s).then(|| {
        let len = usize::from(row[10]);
        row[11..11 + len].to_vec()
    });
    (n, s)
}

#[test]
fn reexecution_without_types_reuses_the_bound_ones() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let (id, params, cols) = prepare(&mut raw, "select ?, ?");
    assert_eq!((params, cols), (2, 2));

    raw.command(&execute(id, true, 42, Some(b"first")));
    assert_eq!(read_echo_row(&mut raw), (42, Some(b"first".to_vec())));

    // No types: the values start right after the flag byte, typed as bound before.
    raw.command(&execute(id, false, -7, Some(b"second")));
    assert_eq!(read_echo_row(&mut raw), (-7, Some(b"second".to_vec())));
    raw.command(&execute(id, false, i64::MAX, None));
    assert_eq!(read_echo_row(&mut raw), (i64::MAX, None));

    // A statement never executed with types cannot be re-executed without them.
    let (id2, _, _) = prepare(&mut raw, "select ?, ?");
    raw.command(&execute(id2, false, 1, Some(b"x")));
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!(code, 1835);
    assert!(
        msg.contains("no parameter types were bound before"),
        "{msg}"
    );
    assert!(raw.closed());
    server.shutdown();
}

#[test]
fn long_data_then_execution_without_types() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let (id, _, _) = prepare(&mut raw, "select ?, ?");
    raw.command(&execute(id, true, 1, Some(b"a")));
    assert_eq!(read_echo_row(&mut raw), (1, Some(b"a".to_vec())));

    // Parameter 1 by COM_STMT_SEND_LONG_DATA in two pieces (no answer), then an execution
    // without types whose packet leaves parameter 1 out.
    for piece in [&b"long "[..], b"data"] {
        let mut p = vec![0x18];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&1u16.to_le_bytes());
        p.extend_from_slice(piece);
        raw.command(&p);
    }
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0]);
    p.extend_from_slice(&5i64.to_le_bytes());
    raw.command(&p);
    assert_eq!(read_echo_row(&mut raw), (5, Some(b"long data".to_vec())));

    // The long data is used once; COM_STMT_RESET answers OK.
    raw.command(&execute(id, false, 6, Some(b"b")));
    assert_eq!(read_echo_row(&mut raw), (6, Some(b"b".to_vec())));
    let mut p = vec![0x1A];
    p.extend_from_slice(&id.to_le_bytes());
    raw.command(&p);
    assert_eq!(raw.read().unwrap()[0], 0x00);

    // COM_STMT_CLOSE has no answer; the statement is gone.
    let mut p = vec![0x19];
    p.extend_from_slice(&id.to_le_bytes());
    raw.command(&p);
    raw.command(&execute(id, false, 6, Some(b"b")));
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!(code, 1243, "{msg}");
    server.shutdown();
}

/// One COM_STMT_SEND_LONG_DATA of `data` for parameter `param` of statement `id`.
fn long_data(raw: &mut Raw, id: u32, param: u16, data: &[u8]) {
    let mut p = vec![0x18];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&param.to_le_bytes());
    p.extend_from_slice(data);
    raw.command(&p);
}

/// Long data is bounded by `max_allowed_packet` per parameter in all, not per packet: every
/// piece fits, their sum does not, so the data is dropped and the execution fails with
/// MariaDB's 1105 (a client could otherwise grow the server without bound). The statement
/// and the connection go on.
#[test]
fn long_data_past_max_allowed_packet_fails_the_execution() {
    let (server, _backend) = start(MysqlConfig::default().with_max_allowed_packet(1024));
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let (id, _, _) = prepare(&mut raw, "select ?, ?");
    raw.command(&execute(id, true, 1, Some(b"a")));
    assert_eq!(read_echo_row(&mut raw), (1, Some(b"a".to_vec())));
    // Exactly the limit in all is fine.
    long_data(&mut raw, id, 1, &[b'x'; 1000]);
    long_data(&mut raw, id, 1, &[b'y'; 24]);
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0]);
    p.extend_from_slice(&2i64.to_le_bytes());
    raw.command(&p);
    let (n, s) = read_echo_row_long(&mut raw);
    assert_eq!((n, s.len()), (2, 1024));
    // One byte more is not.
    long_data(&mut raw, id, 1, &[b'z'; 1000]);
    long_data(&mut raw, id, 1, &[b'z'; 25]);
    raw.command(&p);
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!(code, 1105, "{msg}");
    assert!(msg.contains("max_allowed_packet"), "{msg}");
    // The failure used the data up: the statement runs again with types as bound.
    raw.command(&execute(id, false, 3, Some(b"c")));
    assert_eq!(read_echo_row(&mut raw), (3, Some(b"c".to_vec())));
    server.shutdown();
}

/// [`read_echo_row`] for a string too long for a one-byte length (a two-byte lenenc).
fn read_echo_row_long(raw: &mut Raw) -> (i64, Vec<u8>) {
    assert_eq!(raw.read().unwrap(), [2]);
    raw.read().unwrap();
    raw.read().unwrap();
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    let row = raw.read().unwrap();
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    let n = i64::from_le_bytes(row[2..10].try_into().unwrap());
    assert_eq!(row[10], 0xFC, "a two-byte length");
    let len = usize::from(u16::from_le_bytes([row[11], row[12]]));
    (n, row[13..13 + len].to_vec())
}
