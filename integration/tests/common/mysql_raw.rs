//! A raw MySQL protocol client for the tests that need bytes no driver sends: hand-built
//! COM_STMT_EXECUTE packets (new-params-bound = 0), oversized and malformed packets,
//! unknown commands, and checks of status flags and EOF forms byte by byte.
#![allow(dead_code)] // Each test file uses a different part.
#![allow(clippy::unwrap_used)] // Test code.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;

/// What a driver like Connector/C asks for (no DEPRECATE_EOF).
pub fn client_caps() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
}

pub struct Raw {
    pub stream: TcpStream,
    pub seq: u8,
    pub conn_id: u32,
    pub salt: Vec<u8>,
    pub deprecate_eof: bool,
}

impl Raw {
    /// Connects and reads the greeting.
    pub fn open(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut raw = Raw {
            stream,
            seq: 0,
            conn_id: 0,
            salt: Vec::new(),
            deprecate_eof: false,
        };
        let greeting = raw.read().unwrap();
        let p: HandshakePacket<'_> = ParseBuf(&greeting).parse(()).unwrap();
        raw.conn_id = p.connection_id();
        raw.salt = p.nonce();
        raw
    }

    /// Opens and logs in as `user`/`password`; panics unless the server says OK.
    pub fn login(addr: SocketAddr, user: &str, password: &str, caps: CapabilityFlags) -> Raw {
        let mut raw = Raw::open(addr);
        let answer = raw.handshake(user, password, None, caps, AuthPlugin::MysqlNativePassword);
        assert_eq!(answer[0], 0x00, "login failed: {answer:?}");
        raw
    }

    /// Sends a HandshakeResponse; returns the server's answer.
    pub fn handshake(
        &mut self,
        user: &str,
        password: &str,
        db: Option<&str>,
        caps: CapabilityFlags,
        plugin: AuthPlugin<'_>,
    ) -> Vec<u8> {
        self.deprecate_eof = caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
        let scramble = scramble_native(&self.salt, password.as_bytes());
        let resp = HandshakeResponse::new(
            scramble.as_ref().map(|s| &s[..]),
            (10, 11, 99),
            Some(user.as_bytes()),
            db.map(str::as_bytes),
            Some(plugin),
            caps,
            None,
            1 << 24,
        );
        let mut buf = Vec::new();
        resp.serialize(&mut buf);
        self.write(&buf);
        self.read().unwrap()
    }

    /// Writes one packet with the next sequence id.
    pub fn write(&mut self, payload: &[u8]) {
        let mut frame = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        frame.push(self.seq);
        frame.extend_from_slice(payload);
        self.stream.write_all(&frame).unwrap();
        self.seq = self.seq.wrapping_add(1);
    }

    /// Starts a command: sequence id 0.
    pub fn command(&mut self, payload: &[u8]) {
        self.seq = 0;
        self.write(payload);
    }

    /// Reads one packet (joining 16 MiB chunks). `Err` on end of file or error.
    pub fn read(&mut self) -> std::io::Result<Vec<u8>> {
        let mut payload = Vec::new();
        loop {
            let mut head = [0u8; 4];
            self.stream.read_exact(&mut head)?;
            let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
            assert_eq!(head[3], self.seq, "server sequence id");
            self.seq = head[3].wrapping_add(1);
            let start = payload.len();
            payload.resize(start + len, 0);
            self.stream.read_exact(&mut payload[start..])?;
            if len < 0xFF_FFFF {
                return Ok(payload);
            }
        }
    }

    /// Whether the server closed the connection (the next read sees end of file).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.stream.read(&mut b), Ok(0) | Err(_))
    }

    /// Reads one whole answer to a query: every packet of every result (following
    /// SERVER_MORE_RESULTS_EXISTS).
    pub fn read_results(&mut self) -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        loop {
            let first = self.read().unwrap();
            let head = first[0];
            all.push(first.clone());
            let status = match head {
                0xFF => return all,
                0x00 => ok_status(&first),
                _ => {
                    let mut cols = ParseBuf(&first).eat_lenenc_int();
                    while cols > 0 {
                        all.push(self.read().unwrap());
                        cols -= 1;
                    }
                    if !self.deprecate_eof {
                        let eof = self.read().unwrap();
                        assert_eq!(eof[0], 0xFE);
                        all.push(eof);
                    }
                    loop {
                        let p = self.read().unwrap();
                        let end = p[0] == 0xFE && p.len() < 0xFF_FFFF;
                        let err = p[0] == 0xFF;
                        all.push(p.clone());
                        if err {
                            return all;
                        }
                        if end {
                            break eof_status(&p, self.deprecate_eof);
                        }
                    }
                }
            };
            if status & 0x0008 == 0 {
                return all;
            }
        }
    }

    /// Sends a COM_QUERY and reads its answer.
    pub fn query(&mut self, sql: &str) -> Vec<Vec<u8>> {
        let mut p = vec![0x03];
        p.extend_from_slice(sql.as_bytes());
        self.command(&p);
        self.read_results()
    }
}

/// The status flags of an OK packet.
pub fn ok_status(p: &[u8]) -> u16 {
    let mut buf = ParseBuf(&p[1..]);
    buf.eat_lenenc_int();
    buf.eat_lenenc_int();
    buf.eat_u16_le()
}

/// The status flags of an EOF (classic, or OK-for-EOF).
pub fn eof_status(p: &[u8], deprecate_eof: bool) -> u16 {
    if deprecate_eof {
        ok_status(p)
    } else {
        u16::from_le_bytes([p[3], p[4]])
    }
}

/// The code and message of an ERR packet.
pub fn err(p: &[u8]) -> (u16, String) {
    assert_eq!(p[0], 0xFF, "not an error: {p:?}");
    (
        u16::from_le_bytes([p[1], p[2]]),
        String::from_utf8_lossy(&p[9..]).into_owned(),
    )
}
