//! What a replica sends before its binlog stream: `COM_REGISTER_SLAVE` and
//! `COM_BINLOG_DUMP` bodies, the GTID state of `SET @slave_connect_state=...` and the
//! connect queries. Nothing may panic; what decodes must encode back to what was read
//! (commands) or print back to a state that parses to the same value (GTID positions).
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::mysql::{BinlogDump, GtidPos, RegisterSlave, ReplicaQuery};

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = BinlogDump::decode(data) {
        assert_eq!(BinlogDump::decode(&d.encode()).ok(), Some(d));
    }
    if let Ok(r) = RegisterSlave::decode(data) {
        assert_eq!(RegisterSlave::decode(&r.encode()).ok(), Some(r));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(pos) = GtidPos::parse(text) {
            let again = GtidPos::parse(&pos.to_string()).expect("a printed position parses");
            assert_eq!(again, pos);
        }
        let _ = ReplicaQuery::parse(text);
    }
});
