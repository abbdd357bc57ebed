//! Property tests of the replication decoders: `@slave_connect_state` (GtidPos),
//! COM_BINLOG_DUMP, COM_REGISTER_SLAVE and the replica statement matcher never panic on any
//! input, report errors within the input, and round-trip what they produce. And a dump of
//! a binlog file damaged anywhere ends with EOF or ERR 1236, never a panic or a hang.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use proptest::prelude::*;
use surge_binlog::Gtid;
use surgedb::mysql::{BinlogDump, GtidPos, RegisterSlave, ReplicaQuery, SetValue};

fn gtid() -> impl Strategy<Value = Gtid> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(d, s, n)| Gtid {
        domain_id: d % 8,
        server_id: s,
        seq_no: n,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn gtid_pos_never_panics(input in "[0-9, x+-]{0,40}") {
        match GtidPos::parse(&input) {
            Ok(p) => {
                // What parsed prints to something that parses to the same position.
                prop_assert_eq!(GtidPos::parse(&p.to_string()).unwrap(), p);
            }
            Err(e) => {
                prop_assert!(e.at <= input.len(), "{e}");
                prop_assert_eq!(&e.input, &input);
            }
        }
    }

    #[test]
    fn gtid_pos_any_text_never_panics(input in any::<String>()) {
        if let Err(e) = GtidPos::parse(&input) {
            prop_assert!(e.at <= input.len());
        }
    }

    #[test]
    fn gtid_pos_round_trip(gtids in proptest::collection::vec(gtid(), 0..6), spaced in any::<bool>()) {
        let mut pos = GtidPos::new();
        for g in &gtids {
            pos.set(*g);
        }
        let text = if spaced {
            pos.to_string().replace(',', " , ")
        } else {
            pos.to_string()
        };
        let back = GtidPos::parse(&text).unwrap();
        prop_assert_eq!(&back, &pos);
        for g in pos.iter() {
            prop_assert_eq!(back.get(g.domain_id), Some(g));
        }
    }

    #[test]
    fn binlog_dump_decode(body in proptest::collection::vec(any::<u8>(), 0..64)) {
        match BinlogDump::decode(&body) {
            Ok(d) => prop_assert_eq!(d.encode(), body),
            Err(e) => {
                prop_assert!(body.len() < 10);
                prop_assert!(e.to_string().contains("COM_BINLOG_DUMP"));
            }
        }
    }

    #[test]
    fn binlog_dump_round_trip(position in any::<u32>(), flags in any::<u16>(), server_id in any::<u32>(), file in proptest::collection::vec(any::<u8>(), 0..40)) {
        let d = BinlogDump { position, flags, server_id, file };
        prop_assert_eq!(BinlogDump::decode(&d.encode()).unwrap(), d);
    }

    #[test]
    fn register_slave_decode(body in proptest::collection::vec(any::<u8>(), 0..80)) {
        match RegisterSlave::decode(&body) {
            // What decoded encodes back to the bytes it was read from (a prefix).
            Ok(r) => {
                let enc = r.encode();
                prop_assert!(body.starts_with(&enc));
            }
            Err(e) => prop_assert!(e.to_string().contains("COM_REGISTER_SLAVE")),
        }
    }

    #[test]
    fn register_slave_round_trip(
        server_id in any::<u32>(),
        host in proptest::collection::vec(any::<u8>(), 0..255),
        user in proptest::collection::vec(any::<u8>(), 0..20),
        password in proptest::collection::vec(any::<u8>(), 0..20),
        port in any::<u16>(),
        rank in any::<u32>(),
        master_id in any::<u32>(),
    ) {
        let r = RegisterSlave { server_id, host, user, password, port, rank, master_id };
        prop_assert_eq!(RegisterSlave::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn replica_query_never_panics(sql in any::<String>()) {
        let _ = ReplicaQuery::parse(&sql);
    }

    #[test]
    fn connect_state_strings_survive_quoting(state in "[ -~]{0,30}") {
        let quoted = state.replace('\\', "\\\\").replace('\'', "''");
        let q = ReplicaQuery::parse(&format!("SET @slave_connect_state='{quoted}'"));
        prop_assert_eq!(q, Some(ReplicaQuery::SetUserVariable {
            name: "slave_connect_state".into(),
            value: SetValue::Str(state),
        }));
    }
}

mod damaged_files {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::time::Duration;

    use proptest::prelude::*;
    use surge_binlog::{Binlog, BinlogConfig};
    use surgedb::mysql::{
        BINLOG_DUMP_NON_BLOCK, BinlogDump, COM_BINLOG_DUMP, DirSource, MysqlConfig, MysqlServer,
    };

    use super::{mysql_backend, mysql_raw};

    /// Reads one packet's payload, the sequence ids unchecked (the dump's own framing is
    /// checked elsewhere); `None` on end of file.
    fn read_packet(s: &mut TcpStream) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 4];
            s.read_exact(&mut h).ok()?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            let at = out.len();
            out.resize(at + len, 0);
            s.read_exact(&mut out[at..]).ok()?;
            if len < 0xFF_FFFF {
                return Some(out);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever bytes of a complete binlog file are damaged, a non-blocking dump ends
        /// with EOF or ERR 1236: no panic, no hang, never another answer.
        #[test]
        fn a_dump_of_a_damaged_file_ends_with_eof_or_1236(
            at in 4usize..2000,
            damage in proptest::collection::vec(any::<u8>(), 1..6),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let cfg = BinlogConfig::new(dir.path());
            let log = Binlog::open(cfg.clone()).unwrap();
            for i in 0..8u8 {
                let mut c = log.new_cache();
                c.put(&[i], &[i; 40]).unwrap();
                log.commit(c, 1).unwrap();
            }
            log.rotate().unwrap();
            let files = log.file_paths();
            log.close().unwrap();
            let mut bytes = std::fs::read(&files[0]).unwrap();
            let at = at % bytes.len().max(5);
            for (i, d) in damage.iter().enumerate() {
                if let Some(b) = bytes.get_mut(at.max(4) + i) {
                    *b = *d;
                }
            }
            std::fs::write(&files[0], &bytes).unwrap();

            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let config = MysqlConfig::default()
                .with_replication_source(Arc::new(DirSource::for_binlog(&cfg)));
            let server = MysqlServer::start(
                listener,
                config,
                mysql_backend::Backend::new().factory(),
            )
            .unwrap();
            let mut raw = mysql_raw::Raw::login(
                server.local_addr(),
                "root",
                "",
                mysql_raw::client_caps(),
            );
            raw.query("SET @slave_connect_state=''");
            let mut p = vec![COM_BINLOG_DUMP];
            p.extend_from_slice(
                &BinlogDump { position: 4, flags: BINLOG_DUMP_NON_BLOCK, server_id: 9, file: vec![] }
                    .encode(),
            );
            raw.command(&p);
            raw.stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let end = loop {
                let Some(p) = read_packet(&mut raw.stream) else {
                    panic!("the connection ended without EOF or an error");
                };
                match p.first() {
                    Some(0x00) => continue,
                    Some(0xFE) if p.len() < 8 => break None,
                    Some(0xFF) => break Some(mysql_raw::err(&p)),
                    other => panic!("unexpected packet head {other:?}"),
                }
            };
            if let Some((code, msg)) = end {
                prop_assert_eq!(code, 1236, "{}", msg);
                prop_assert!(msg.contains("surge-bin.00000"), "{}", msg);
            }
            let _ = raw.stream.flush();
            server.shutdown();
        }
    }
}
