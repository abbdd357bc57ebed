//! The events the server makes up for a replica, and the one it alters:
//!
//! * the fake Rotate before each file: timestamp 0, `log_pos` 0, flag
//!   `LOG_EVENT_ARTIFICIAL_F` (0x20), body = position u64 (the position a client asked
//!   for, in the first file; 4 after) + file name;
//! * the Heartbeat sent while idle (type 27): timestamp 0, flags 0, `log_pos` = the offset
//!   reached in the current file, body = the file name;
//! * the file's Format_description as sent: the in-use flag (0x01) cleared (the replica
//!   would otherwise think the master crashed), `log_pos` 0 (it says nothing about the
//!   position) and, while the dump still skips to the start GTID, `created` 0 (non-zero
//!   tells the replica the master restarted and to drop a half-applied group).
//!
//! All carry a CRC-32, the checksum the replica was told with `@master_binlog_checksum`,
//! but the first fake Rotate of a dump: it has one only when that variable said `CRC32`
//! (a replica sets it to the master's `@@global.binlog_checksum`; `mariadb-binlog
//! --read-from-remote-server` sets `NONE` and reads the whole rest of the event as the
//! file name), as MariaDB's server sends it with the checksum known at connect time
//! (<https://mariadb.com/kb/en/rotate_event/>, <https://mariadb.com/kb/en/heartbeat_log_event/>,
//! <https://mariadb.com/kb/en/format_description_event/>).

use surge_binlog::{CHECKSUM_LEN, FLAG_ARTIFICIAL, FLAG_BINLOG_IN_USE, HEADER_LEN};

use super::scan::code;

/// Offset of `created` in a Format_description: header, binlog version u16, server
/// version (50 bytes), then `created` u32.
const FD_CREATED: usize = HEADER_LEN + 2 + 50;

/// An event of `type_code` with `body`, a CRC-32 appended.
fn event(type_code: u8, server_id: u32, log_pos: u32, flags: u16, body: &[&[u8]]) -> Vec<u8> {
    let mut out = event_without_checksum(type_code, server_id, log_pos, flags, body, CHECKSUM_LEN);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// An event of `type_code` with `body` whose length counts `trailer` bytes more (a CRC-32
/// the caller appends, or none).
fn event_without_checksum(
    type_code: u8,
    server_id: u32,
    log_pos: u32,
    flags: u16,
    body: &[&[u8]],
    trailer: usize,
) -> Vec<u8> {
    let len: usize = body.iter().map(|b| b.len()).sum::<usize>() + HEADER_LEN + trailer;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(type_code);
    out.extend_from_slice(&server_id.to_le_bytes());
    // Event sizes are u32: names are at most a few hundred bytes.
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&log_pos.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    for b in body {
        out.extend_from_slice(b);
    }
    out
}

/// The fake Rotate that opens the stream of `file` at `position`, with a CRC-32 when
/// `checksum` (module docs).
pub(crate) fn fake_rotate(server_id: u32, file: &str, position: u64, checksum: bool) -> Vec<u8> {
    let body: [&[u8]; 2] = [&position.to_le_bytes(), file.as_bytes()];
    if checksum {
        event(code::ROTATE, server_id, 0, FLAG_ARTIFICIAL, &body)
    } else {
        event_without_checksum(code::ROTATE, server_id, 0, FLAG_ARTIFICIAL, &body, 0)
    }
}

/// A Heartbeat at `offset` of `file`. Offsets past 4 GiB become `u32::MAX`: the replica
/// only checks that the position does not go backwards.
pub(crate) fn heartbeat(server_id: u32, file: &str, offset: u64) -> Vec<u8> {
    let log_pos = u32::try_from(offset).unwrap_or(u32::MAX);
    event(code::HEARTBEAT, server_id, log_pos, 0, &[file.as_bytes()])
}

/// `fd` (a whole Format_description with its CRC) as sent: in-use flag cleared, `log_pos`
/// 0, `created` 0 when `zero_created`, CRC recomputed. `None` when it is too short to be
/// one.
pub(crate) fn format_description_as_sent(fd: &[u8], zero_created: bool) -> Option<Vec<u8>> {
    if fd.len() < FD_CREATED + 4 + CHECKSUM_LEN || fd[4] != code::FORMAT_DESCRIPTION {
        return None;
    }
    let mut out = fd.to_vec();
    let flags = u16::from_le_bytes([out[17], out[18]]) & !FLAG_BINLOG_IN_USE;
    out[17..19].copy_from_slice(&flags.to_le_bytes());
    out[13..17].copy_from_slice(&0u32.to_le_bytes());
    if zero_created {
        out[FD_CREATED..FD_CREATED + 4].copy_from_slice(&0u32.to_le_bytes());
    }
    let body_end = out.len() - CHECKSUM_LEN;
    let crc = crc32fast::hash(&out[..body_end]);
    out[body_end..].copy_from_slice(&crc.to_le_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_binlog::{ChecksumAlg, Event, EventBody, FormatDescription, Rotate};

    #[test]
    fn fake_rotate_decodes() {
        let bytes = fake_rotate(7, "surge-bin.000002", 4, true);
        let ev = Event::decode(&bytes, ChecksumAlg::Crc32).unwrap();
        let bare = fake_rotate(7, "surge-bin.000002", 4, false);
        assert_eq!(bare.len() + CHECKSUM_LEN, bytes.len());
        assert_eq!(
            Event::decode(&bare, ChecksumAlg::Off).unwrap().body,
            ev.body
        );
        assert_eq!(ev.header.timestamp, 0);
        assert_eq!(ev.header.log_pos, 0);
        assert_eq!(ev.header.flags, FLAG_ARTIFICIAL);
        assert_eq!(ev.header.server_id, 7);
        assert_eq!(
            ev.body,
            EventBody::Rotate(Rotate {
                position: 4,
                next_file: "surge-bin.000002".into()
            })
        );
    }

    #[test]
    fn heartbeat_layout() {
        let hb = heartbeat(3, "b.000001", 1234);
        assert_eq!(hb.len(), 19 + 8 + 4);
        assert_eq!(hb[4], 27);
        assert_eq!(&hb[13..17], &1234u32.to_le_bytes());
        assert_eq!(&hb[19..27], b"b.000001");
        let crc = crc32fast::hash(&hb[..27]);
        assert_eq!(&hb[27..], &crc.to_le_bytes());
        let far = heartbeat(3, "b.000001", 5 << 30);
        assert_eq!(&far[13..17], &u32::MAX.to_le_bytes());
    }

    #[test]
    fn format_description_rewrite() {
        let mut ev = Event::new(
            EventBody::FormatDescription(FormatDescription::mariadb(
                ChecksumAlg::Crc32,
                1_700_000_000,
            )),
            1_700_000_000,
            1,
        );
        ev.header.flags |= FLAG_BINLOG_IN_USE;
        let mut bytes = Vec::new();
        ev.encode_at(4, ChecksumAlg::Crc32, &mut bytes);
        for zero in [false, true] {
            let sent = format_description_as_sent(&bytes, zero).unwrap();
            let back = Event::decode(&sent, ChecksumAlg::Crc32).unwrap();
            assert_eq!(back.header.flags & FLAG_BINLOG_IN_USE, 0);
            assert_eq!(back.header.log_pos, 0);
            let EventBody::FormatDescription(fd) = back.body else {
                panic!("not an FD")
            };
            assert_eq!(fd.create_timestamp, if zero { 0 } else { 1_700_000_000 });
            // The CRC covers the whole event as sent (the reader checks it).
            let end = sent.len() - 4;
            assert_eq!(&sent[end..], &crc32fast::hash(&sent[..end]).to_le_bytes());
        }
        assert!(format_description_as_sent(&bytes[..40], false).is_none());
        assert!(format_description_as_sent(&fake_rotate(1, "x", 4, true), false).is_none());
    }
}
