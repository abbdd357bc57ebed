//! Property tests of the replication decoders: `@slave_connect_state` (GtidPos),
//! COM_BINLOG_DUMP, COM_REGISTER_SLAVE and the replica statement matcher never panic on any
//! input, report errors within the input, and round-trip what they produce.
#![allow(clippy::unwrap_used)]

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
