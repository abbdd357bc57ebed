//! The three small answers: OK (`0x00`), EOF (`0xFE`, classic or as an OK when the client
//! asked for `CLIENT_DEPRECATE_EOF`) and ERR (`0xFF`).
//!
//! Layouts (<https://mariadb.com/kb/en/ok_packet/>, <https://mariadb.com/kb/en/eof_packet/>,
//! <https://mariadb.com/kb/en/err_packet/>):
//! - OK: `00`, affected rows (lenenc), last insert id (lenenc), status u16, warnings u16,
//!   then, when there is one, the info text as a length-encoded string (what MariaDB's and
//!   MySQL's `net_send_ok` write and Connector/C reads, whatever the KB page's `string<EOF>`
//!   says; `CLIENT_SESSION_TRACK` is never agreed, so no session state follows).
//! - classic EOF: `FE`, warnings u16, status u16.
//! - OK-for-EOF: as OK with header `FE` (and affected rows and insert id 0).
//! - ERR: `FF`, code u16, `#`, SQLSTATE (5 bytes), message.

use mysql_common::constants::StatusFlags;
use mysql_common::packets::{ErrPacket, ServerError, SqlState};
use mysql_common::proto::MySerialize;

/// The fields of an OK packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OkInfo<'a> {
    pub(crate) affected_rows: u64,
    pub(crate) last_insert_id: u64,
    pub(crate) status: u16,
    pub(crate) warnings: u16,
    pub(crate) info: &'a str,
}

/// The status flags of a session: `SERVER_STATUS_IN_TRANS` and `SERVER_STATUS_AUTOCOMMIT`,
/// plus `SERVER_MORE_RESULTS_EXISTS` when another result follows.
pub(crate) fn status_flags(in_trans: bool, autocommit: bool, more_results: bool) -> u16 {
    let mut s = StatusFlags::empty();
    s.set(StatusFlags::SERVER_STATUS_IN_TRANS, in_trans);
    s.set(StatusFlags::SERVER_STATUS_AUTOCOMMIT, autocommit);
    s.set(StatusFlags::SERVER_MORE_RESULTS_EXISTS, more_results);
    s.bits()
}

/// Appends `v` as a length-encoded integer.
pub(crate) fn put_lenenc_int(buf: &mut Vec<u8>, v: u64) {
    match v {
        0..=250 => buf.push(v as u8),
        251..=0xFFFF => {
            buf.push(0xFC);
            buf.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            buf.push(0xFD);
            buf.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            buf.push(0xFE);
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Appends `bytes` as a length-encoded string.
pub(crate) fn put_lenenc_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// An OK packet.
pub(crate) fn ok_packet(ok: &OkInfo<'_>) -> Vec<u8> {
    let mut buf = vec![0x00];
    put_lenenc_int(&mut buf, ok.affected_rows);
    put_lenenc_int(&mut buf, ok.last_insert_id);
    buf.extend_from_slice(&ok.status.to_le_bytes());
    buf.extend_from_slice(&ok.warnings.to_le_bytes());
    if !ok.info.is_empty() {
        put_lenenc_bytes(&mut buf, ok.info.as_bytes());
    }
    buf
}

/// The packet that ends column definitions or rows: a classic EOF, or an OK with the EOF
/// header when `deprecate_eof` was agreed.
pub(crate) fn eof_packet(deprecate_eof: bool, status: u16, warnings: u16) -> Vec<u8> {
    if deprecate_eof {
        let mut buf = vec![0xFE, 0, 0];
        buf.extend_from_slice(&status.to_le_bytes());
        buf.extend_from_slice(&warnings.to_le_bytes());
        buf
    } else {
        let mut buf = vec![0xFE];
        buf.extend_from_slice(&warnings.to_le_bytes());
        buf.extend_from_slice(&status.to_le_bytes());
        buf
    }
}

/// An ERR packet. A SQLSTATE that is not five ASCII characters becomes `HY000`.
pub(crate) fn err_packet(code: u16, state: &str, message: &str) -> Vec<u8> {
    let state: [u8; 5] = match <[u8; 5]>::try_from(state.as_bytes()) {
        Ok(s) if s.iter().all(u8::is_ascii_alphanumeric) => s,
        _ => *b"HY000",
    };
    let packet = ErrPacket::Error(ServerError::new(
        code,
        Some(SqlState::new(state)),
        message.as_bytes(),
    ));
    let mut buf = Vec::new();
    packet.serialize(&mut buf);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_common::constants::CapabilityFlags;
    use mysql_common::io::ParseBuf;
    use mysql_common::packets::{OkPacketDeserializer, OldEofPacket, ResultSetTerminator};

    #[test]
    fn lenenc_boundaries() {
        let cases: [(u64, &[u8]); 5] = [
            (250, &[250]),
            (251, &[0xFC, 251, 0]),
            (0xFFFF, &[0xFC, 0xFF, 0xFF]),
            (0x1_0000, &[0xFD, 0, 0, 1]),
            (0x100_0000, &[0xFE, 0, 0, 0, 1, 0, 0, 0, 0]),
        ];
        for (v, want) in cases {
            let mut buf = Vec::new();
            put_lenenc_int(&mut buf, v);
            assert_eq!(buf, want, "{v}");
            assert_eq!(ParseBuf(&buf).eat_lenenc_int(), v);
        }
    }

    #[test]
    fn ok_packet_reads_back() {
        let status = status_flags(true, false, true);
        let bytes = ok_packet(&OkInfo {
            affected_rows: 300,
            last_insert_id: 7,
            status,
            warnings: 2,
            info: "Rows matched: 1",
        });
        let caps = CapabilityFlags::CLIENT_PROTOCOL_41;
        let ok = ParseBuf(&bytes)
            .parse::<OkPacketDeserializer<'_, mysql_common::packets::CommonOkPacket>>(caps)
            .unwrap()
            .into_inner();
        assert_eq!(ok.affected_rows(), 300);
        assert_eq!(ok.last_insert_id(), Some(7));
        assert_eq!(ok.warnings(), 2);
        assert_eq!(ok.status_flags().bits(), status);
        assert_eq!(ok.info_str().as_deref(), Some("Rows matched: 1"));
    }

    #[test]
    fn eof_forms() {
        let caps = CapabilityFlags::CLIENT_PROTOCOL_41;
        let old = eof_packet(false, 0x0002, 1);
        assert_eq!(old, [0xFE, 1, 0, 2, 0]);
        let ok = ParseBuf(&old)
            .parse::<OkPacketDeserializer<'_, OldEofPacket>>(caps)
            .unwrap()
            .into_inner();
        assert_eq!(ok.status_flags().bits(), 2);
        let new = eof_packet(true, 0x0003, 0);
        let ok = ParseBuf(&new)
            .parse::<OkPacketDeserializer<'_, ResultSetTerminator>>(
                caps | CapabilityFlags::CLIENT_DEPRECATE_EOF,
            )
            .unwrap()
            .into_inner();
        assert_eq!(ok.status_flags().bits(), 3);
    }

    #[test]
    fn err_packet_layout() {
        let e = err_packet(1045, "28000", "Access denied");
        assert_eq!(
            &e[..9],
            &[0xFF, 0x15, 0x04, b'#', b'2', b'8', b'0', b'0', b'0']
        );
        assert_eq!(&e[9..], b"Access denied");
        let bad_state = err_packet(1105, "x", "m");
        assert_eq!(&bad_state[4..9], b"HY000");
    }
}
