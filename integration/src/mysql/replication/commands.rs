//! The two replication commands a replica sends: COM_REGISTER_SLAVE (0x15) and
//! COM_BINLOG_DUMP (0x12), decoded from the packet body after the command byte, and
//! encoded (tests and tools build them).
//!
//! Layouts (<https://mariadb.com/kb/en/com_register_slave/>,
//! <https://mariadb.com/kb/en/com_binlog_dump/>), little-endian:
//! - COM_REGISTER_SLAVE: server_id u32, host (u8 length + bytes), user (u8 length +
//!   bytes), password (u8 length + bytes), port u16, replication rank u32, master id u32.
//! - COM_BINLOG_DUMP: position u32, flags u16, server_id u32, file name (the rest).

use crate::mysql::PacketError;

/// The command byte of COM_BINLOG_DUMP.
pub const COM_BINLOG_DUMP: u8 = 0x12;
/// The command byte of COM_REGISTER_SLAVE.
pub const COM_REGISTER_SLAVE: u8 = 0x15;
/// COM_BINLOG_DUMP flag: answer end-of-file at the end of the binlog instead of waiting.
pub const BINLOG_DUMP_NON_BLOCK: u16 = 0x01;

/// A decoded COM_REGISTER_SLAVE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterSlave {
    /// The replica's server_id.
    pub server_id: u32,
    /// The host it reports (`report_host`), often empty.
    pub host: Vec<u8>,
    /// The user it reports.
    pub user: Vec<u8>,
    /// The password it reports.
    pub password: Vec<u8>,
    /// The port it reports.
    pub port: u16,
    /// Replication rank (unused, 0).
    pub rank: u32,
    /// Master id (unused, 0).
    pub master_id: u32,
}

/// A decoded COM_BINLOG_DUMP.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BinlogDump {
    /// The position in `file` (ignored when the replica sent a GTID start state).
    pub position: u32,
    /// [`BINLOG_DUMP_NON_BLOCK`] and others.
    pub flags: u16,
    /// The replica's server_id.
    pub server_id: u32,
    /// The file name (empty with a GTID start state).
    pub file: Vec<u8>,
}

const REGISTER: &str = "COM_REGISTER_SLAVE";
const DUMP: &str = "COM_BINLOG_DUMP";

/// Reads fixed-width and length-prefixed fields, naming the field that runs out.
struct Fields<'a> {
    what: &'static str,
    body: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], PacketError> {
        match self.body.get(self.at..self.at + n) {
            Some(b) => {
                self.at += n;
                Ok(b)
            }
            None => Err(PacketError::malformed(
                self.what,
                format!(
                    "{field} needs {n} bytes at offset {}, the body has {}",
                    self.at,
                    self.body.len()
                ),
            )),
        }
    }

    fn u16(&mut self, field: &str) -> Result<u16, PacketError> {
        let b = self.take(2, field)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, field: &str) -> Result<u32, PacketError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn short_string(&mut self, field: &str) -> Result<Vec<u8>, PacketError> {
        let n = self.take(1, field)?[0];
        Ok(self.take(usize::from(n), field)?.to_vec())
    }
}

impl RegisterSlave {
    /// Decodes the body (after the command byte). Bytes after the master id are ignored,
    /// as MariaDB ignores them.
    ///
    /// # Errors
    /// [`PacketError::Malformed`] naming the field that is cut short and where.
    pub fn decode(body: &[u8]) -> Result<RegisterSlave, PacketError> {
        let mut f = Fields {
            what: REGISTER,
            body,
            at: 0,
        };
        Ok(RegisterSlave {
            server_id: f.u32("server_id")?,
            host: f.short_string("host")?,
            user: f.short_string("user")?,
            password: f.short_string("password")?,
            port: f.u16("port")?,
            rank: f.u32("replication rank")?,
            master_id: f.u32("master id")?,
        })
    }

    /// Encodes the body (after the command byte). Strings longer than 255 bytes are cut
    /// to 255, the most the length byte can say.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.server_id.to_le_bytes().to_vec();
        for s in [&self.host, &self.user, &self.password] {
            let s = &s[..s.len().min(255)];
            out.push(s.len() as u8);
            out.extend_from_slice(s);
        }
        out.extend_from_slice(&self.port.to_le_bytes());
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.master_id.to_le_bytes());
        out
    }
}

impl BinlogDump {
    /// Decodes the body (after the command byte).
    ///
    /// # Errors
    /// [`PacketError::Malformed`] when the 10 fixed bytes are not all there.
    pub fn decode(body: &[u8]) -> Result<BinlogDump, PacketError> {
        let mut f = Fields {
            what: DUMP,
            body,
            at: 0,
        };
        let position = f.u32("position")?;
        let flags = f.u16("flags")?;
        let server_id = f.u32("server_id")?;
        Ok(BinlogDump {
            position,
            flags,
            server_id,
            file: body[f.at..].to_vec(),
        })
    }

    /// Encodes the body (after the command byte).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.position.to_le_bytes().to_vec();
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.server_id.to_le_bytes());
        out.extend_from_slice(&self.file);
        out
    }

    /// Whether the replica asked for end-of-file at the end instead of waiting.
    pub fn non_blocking(&self) -> bool {
        self.flags & BINLOG_DUMP_NON_BLOCK != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_round_trip_and_errors() {
        let r = RegisterSlave {
            server_id: 99,
            host: b"replica".to_vec(),
            user: b"root".to_vec(),
            password: vec![],
            port: 3307,
            rank: 0,
            master_id: 0,
        };
        let body = r.encode();
        assert_eq!(RegisterSlave::decode(&body).unwrap(), r);
        for cut in 0..body.len() {
            let e = RegisterSlave::decode(&body[..cut]).unwrap_err();
            assert!(e.to_string().contains("COM_REGISTER_SLAVE"), "{e}");
        }
        // A host length byte past the end names the host.
        let e = RegisterSlave::decode(&[1, 0, 0, 0, 200, b'x']).unwrap_err();
        assert!(
            e.to_string().contains("host needs 200 bytes at offset 5"),
            "{e}"
        );
    }

    #[test]
    fn dump_round_trip_and_errors() {
        let d = BinlogDump {
            position: 4,
            flags: BINLOG_DUMP_NON_BLOCK,
            server_id: 99,
            file: b"surge-bin.000001".to_vec(),
        };
        let body = d.encode();
        assert_eq!(body.len(), 10 + 16);
        let back = BinlogDump::decode(&body).unwrap();
        assert_eq!(back, d);
        assert!(back.non_blocking());
        let e = BinlogDump::decode(&body[..9]).unwrap_err();
        assert!(
            e.to_string()
                .contains("server_id needs 4 bytes at offset 6"),
            "{e}"
        );
        assert_eq!(BinlogDump::decode(&body[..10]).unwrap().file, b"");
    }
}
