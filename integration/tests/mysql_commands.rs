//! The smaller commands and what every answer carries, checked byte by byte: status flags
//! (IN_TRANS, AUTOCOMMIT, MORE_RESULTS_EXISTS) in OK and EOF packets, classic EOFs versus
//! OK-for-EOF under CLIENT_DEPRECATE_EOF, COM_FIELD_LIST, COM_STATISTICS, COM_SET_OPTION,
//! COM_RESET_CONNECTION, COM_INIT_DB, and the AuthSwitchRequest for a client that answered
//! for another authentication plugin.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use mysql_backend::start;
use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::CapabilityFlags;
use mysql_common::packets::AuthPlugin;
use mysql_raw::{Raw, client_caps, eof_status, err, ok_status};
use surgedb::mysql::MysqlConfig;

const IN_TRANS: u16 = 0x0001;
const AUTOCOMMIT: u16 = 0x0002;
const MORE: u16 = 0x0008;

#[test]
fn status_flags_follow_the_session() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let status = |raw: &mut Raw, sql: &str| ok_status(&raw.query(sql)[0]);
    assert_eq!(status(&mut raw, "begin"), IN_TRANS | AUTOCOMMIT);
    assert_eq!(status(&mut raw, "commit"), AUTOCOMMIT);
    assert_eq!(status(&mut raw, "set autocommit = 0"), 0);
    assert_eq!(status(&mut raw, "insert into t values (1, 'a')"), IN_TRANS);
    assert_eq!(status(&mut raw, "rollback"), 0);
    assert_eq!(status(&mut raw, "set autocommit = 1"), AUTOCOMMIT);

    // Three results: MORE_RESULTS_EXISTS on all but the last, in OKs and in EOFs, and each
    // with the session's flags right after its own statement, as MariaDB answers.
    let all = raw.query("begin; select 1; commit");
    // OK, then count, definition, EOF, row, EOF, then OK.
    assert_eq!(all.len(), 7, "{all:?}");
    assert_eq!(ok_status(&all[0]), IN_TRANS | AUTOCOMMIT | MORE);
    assert_eq!(eof_status(&all[3], false), IN_TRANS | AUTOCOMMIT | MORE);
    assert_eq!(eof_status(&all[5], false), IN_TRANS | AUTOCOMMIT | MORE);
    assert_eq!(ok_status(&all[6]), AUTOCOMMIT);
    // An error ends the list: no further results.
    let all = raw.query("select 1; select boom; select 2");
    assert_eq!(all.len(), 6);
    assert_eq!(err(&all[5]).0, 1054);
    server.shutdown();
}

#[test]
fn eof_packets_classic_or_as_ok() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut classic = Raw::login(server.local_addr(), "root", "", client_caps());
    let a = classic.query("select 5");
    assert_eq!(a.len(), 5);
    assert_eq!(a[2], [0xFE, 0, 0, AUTOCOMMIT as u8, 0]);
    assert_eq!(a[4], [0xFE, 0, 0, AUTOCOMMIT as u8, 0]);

    let caps = client_caps() | CapabilityFlags::CLIENT_DEPRECATE_EOF;
    let mut modern = Raw::login(server.local_addr(), "root", "", caps);
    let b = modern.query("select 5");
    // count, definition, row, OK-for-EOF
    assert_eq!(b.len(), 4, "{b:?}");
    assert_eq!(b[3], [0xFE, 0, 0, AUTOCOMMIT as u8, 0, 0, 0]);
    server.shutdown();
}

#[test]
fn field_list_statistics_set_option_reset_and_init_db() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());

    raw.command(b"\x04t\x00");
    let (code, _) = err(&raw.read().unwrap());
    assert_eq!(code, 1046, "no database yet");
    raw.command(b"\x02test");
    assert_eq!(ok_status(&raw.read().unwrap()), AUTOCOMMIT);
    raw.command(b"\x02nope");
    assert_eq!(err(&raw.read().unwrap()).0, 1049);

    raw.command(b"\x04t\x00");
    for name in ["id", "name"] {
        let def = raw.read().unwrap();
        assert_eq!(*def.last().unwrap(), 0xFB, "the default value, NULL");
        let text = String::from_utf8_lossy(&def);
        assert!(text.contains(name), "{text}");
    }
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    raw.command(b"\x04t\x00na%");
    let def = raw.read().unwrap();
    assert!(String::from_utf8_lossy(&def).contains("name"));
    assert_eq!(raw.read().unwrap()[0], 0xFE);
    raw.command(b"\x04nope\x00");
    assert_eq!(err(&raw.read().unwrap()).0, 1146);

    raw.command(&[0x09]);
    let stats = String::from_utf8(raw.read().unwrap()).unwrap();
    assert!(
        stats.starts_with("Uptime: 1  Threads: 1  Questions: "),
        "{stats}"
    );

    raw.command(&[0x1B, 1, 0]);
    assert_eq!(raw.read().unwrap(), [0xFE, 0, 0, AUTOCOMMIT as u8, 0]);
    // Multi-statements off: a query of two statements runs neither (1064), one still runs.
    let refused = raw.query("begin; select 1");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let (code, message) = err(&refused[0]);
    assert_eq!(code, 1064);
    assert!(message.contains("near 'select 1'"), "{message}");
    assert_eq!(
        eof_status(&raw.query("select 1")[4], false),
        AUTOCOMMIT,
        "begin did not run"
    );
    raw.command(&[0x1B, 0, 0]);
    assert_eq!(raw.read().unwrap(), [0xFE, 0, 0, AUTOCOMMIT as u8, 0]);
    assert_eq!(raw.query("select 1; select 2").len(), 10, "on again");
    raw.command(&[0x1B, 9, 0]);
    assert_eq!(err(&raw.read().unwrap()).0, 1047);

    raw.query("begin");
    raw.command(&[0x1F]);
    assert_eq!(
        ok_status(&raw.read().unwrap()),
        AUTOCOMMIT,
        "reset rolled back"
    );
    raw.command(&[0x1A, 9, 0, 0, 0]);
    assert_eq!(err(&raw.read().unwrap()).0, 1243);
    server.shutdown();
}

#[test]
fn another_plugin_gets_an_auth_switch() {
    let (server, _backend) = start(MysqlConfig::default().with_user("u", "pw"));
    for (password, ok) in [("pw", true), ("bad", false)] {
        let mut raw = Raw::open(server.local_addr());
        let answer = raw.handshake(
            "u",
            password,
            Some("test"),
            client_caps(),
            AuthPlugin::CachingSha2Password,
        );
        assert_eq!(answer[0], 0xFE, "an AuthSwitchRequest: {answer:?}");
        let rest = &answer[1..];
        let nul = rest.iter().position(|&b| b == 0).unwrap();
        assert_eq!(&rest[..nul], b"mysql_native_password");
        let salt = &rest[nul + 1..rest.len() - 1];
        assert_eq!(salt, &raw.salt[..], "the same salt as the greeting");
        raw.write(&scramble_native(salt, password.as_bytes()).unwrap());
        let answer = raw.read().unwrap();
        if ok {
            assert_eq!(answer[0], 0x00, "{answer:?}");
        } else {
            assert_eq!(err(&answer).0, 1045);
        }
    }
    server.shutdown();
}
