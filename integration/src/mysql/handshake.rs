//! The connection phase (<https://mariadb.com/kb/en/connection/>): the server's handshake
//! v10 with a fresh 20-byte salt, the client's HandshakeResponse, an AuthSwitchRequest when
//! the client answered for another plugin, and the `mysql_native_password` check.
//!
//! `mysql_native_password`: the client sends `SHA1(pw) XOR SHA1(salt ++ SHA1(SHA1(pw)))`, 20
//! bytes, or nothing for an empty password
//! (<https://mariadb.com/kb/en/connection/#mysql_native_password-plugin>).

use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::{CapabilityFlags, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, AuthSwitchRequest, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;

use super::columns::UTF8MB4_GENERAL_CI;
use super::error::PacketError;

/// The only authentication plugin this server speaks.
pub(crate) const NATIVE_PASSWORD: &str = "mysql_native_password";

/// What the server offers. `CLIENT_LONG_PASSWORD` is the bit MariaDB calls `CLIENT_MYSQL`:
/// set, it tells MariaDB clients this is not a MariaDB server, so they keep their
/// extensions (bulk execution, extended metadata) off. No `CLIENT_SSL`, no compression, no
/// session tracking.
pub(crate) fn server_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_CONNECT_ATTRS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
        | CapabilityFlags::CLIENT_INTERACTIVE
}

/// A fresh salt: 20 bytes from the OS's random source, each mapped into 1..=127 without
/// `$` (clients read the salt's parts as NUL-terminated strings; MySQL's own salts keep
/// to the same range).
pub(crate) fn new_salt() -> Result<[u8; 20], getrandom::Error> {
    let mut salt = [0u8; 20];
    getrandom::fill(&mut salt)?;
    for b in &mut salt {
        *b &= 0x7F;
        if *b == 0 || *b == b'$' {
            *b += 1;
        }
    }
    Ok(salt)
}

/// The handshake v10 packet.
pub(crate) fn greeting(conn_id: u32, server_version: &str, salt: &[u8; 20]) -> Vec<u8> {
    let mut part1 = [0u8; 8];
    part1.copy_from_slice(&salt[..8]);
    // The second part is 12 bytes plus a terminating NUL (auth data length 21).
    let mut part2 = salt[8..].to_vec();
    part2.push(0);
    let packet = HandshakePacket::new(
        10,
        server_version.as_bytes(),
        conn_id,
        part1,
        Some(part2),
        server_capabilities(),
        UTF8MB4_GENERAL_CI,
        StatusFlags::SERVER_STATUS_AUTOCOMMIT,
        Some(NATIVE_PASSWORD.as_bytes()),
    );
    let mut buf = Vec::new();
    packet.serialize(&mut buf);
    buf
}

/// What a client's HandshakeResponse said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientHello {
    /// The client's capabilities, already intersected with the server's.
    pub(crate) capabilities: CapabilityFlags,
    pub(crate) user: String,
    pub(crate) database: Option<String>,
    /// The plugin the auth response is for (`None`: a client without `CLIENT_PLUGIN_AUTH`).
    pub(crate) plugin: Option<String>,
    pub(crate) auth_response: Vec<u8>,
}

/// Parses a HandshakeResponse41.
///
/// # Errors
/// [`PacketError::Malformed`]: too short, not protocol 4.1, an SSL request, or a user or
/// database name that is not UTF-8.
pub(crate) fn parse_response(payload: &[u8]) -> Result<ClientHello, PacketError> {
    const WHAT: &str = "handshake response";
    if payload.len() < 4 {
        return Err(PacketError::malformed(
            WHAT,
            format!("{} bytes, shorter than its capability flags", payload.len()),
        ));
    }
    let caps = CapabilityFlags::from_bits_truncate(u32::from_le_bytes([
        payload[0], payload[1], payload[2], payload[3],
    ]));
    if !caps.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
        return Err(PacketError::malformed(
            WHAT,
            "the client does not speak protocol 4.1",
        ));
    }
    if caps.contains(CapabilityFlags::CLIENT_SSL) && payload.len() == 32 {
        return Err(PacketError::malformed(
            WHAT,
            "an SSL request, but this server offers no TLS",
        ));
    }
    let resp: HandshakeResponse<'_> = ParseBuf(payload)
        .parse(())
        .map_err(|e| PacketError::malformed(WHAT, e.to_string()))?;
    let text = |b: &[u8], field: &str| {
        String::from_utf8(b.to_vec())
            .map_err(|_| PacketError::malformed(WHAT, format!("the {field} is not UTF-8")))
    };
    let database = match resp.db_name() {
        Some(db) if !db.is_empty() => Some(text(db, "database name")?),
        _ => None,
    };
    Ok(ClientHello {
        capabilities: resp.capabilities() & server_capabilities(),
        user: text(resp.user(), "user name")?,
        database,
        plugin: resp
            .auth_plugin()
            .map(|p| String::from_utf8_lossy(p.as_bytes()).into_owned()),
        auth_response: resp.scramble_buf().to_vec(),
    })
}

/// The AuthSwitchRequest that asks the client to answer for `mysql_native_password`.
pub(crate) fn auth_switch(salt: &[u8; 20]) -> Vec<u8> {
    let mut data = salt.to_vec();
    data.push(0);
    let packet = AuthSwitchRequest::new(AuthPlugin::MysqlNativePassword.as_bytes(), data);
    let mut buf = Vec::new();
    packet.serialize(&mut buf);
    buf
}

/// Whether `response` proves knowledge of `password` for `salt`.
pub(crate) fn check_native(salt: &[u8; 20], password: &str, response: &[u8]) -> bool {
    match scramble_native(salt, password.as_bytes()) {
        None => response.is_empty(),
        // Constant-time comparison is not needed for a 20-byte hash of a per-connection salt
        // (a timing leak reveals nothing reusable), but it costs nothing.
        Some(expected) => {
            response.len() == expected.len()
                && response
                    .iter()
                    .zip(expected.iter())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting_reads_back() {
        let salt = new_salt().unwrap();
        let bytes = greeting(7, "10.11.99-SurgeDB-0.1.0", &salt);
        let p: HandshakePacket<'_> = ParseBuf(&bytes).parse(()).unwrap();
        assert_eq!(p.protocol_version(), 10);
        assert_eq!(p.connection_id(), 7);
        assert_eq!(p.server_version_str(), "10.11.99-SurgeDB-0.1.0");
        assert_eq!(p.nonce(), salt.to_vec());
        assert_eq!(p.default_collation(), 45);
        assert!(
            p.capabilities()
                .contains(CapabilityFlags::CLIENT_LONG_PASSWORD)
        );
        assert!(!p.capabilities().contains(CapabilityFlags::CLIENT_SSL));
        assert_eq!(p.auth_plugin_name_str().as_deref(), Some(NATIVE_PASSWORD));
    }

    #[test]
    fn salts_are_fresh_and_printable() {
        let a = new_salt().unwrap();
        let b = new_salt().unwrap();
        assert_ne!(a, b);
        assert!(a.iter().all(|&c| c != 0 && c != b'$' && c < 0x80));
    }

    #[test]
    fn response_round_trip_and_password_check() {
        let salt = new_salt().unwrap();
        let scramble = scramble_native(&salt, b"secret").unwrap();
        let caps = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_COMPRESS;
        let resp = HandshakeResponse::new(
            Some(&scramble[..]),
            (10, 11, 99),
            Some(&b"alice"[..]),
            Some(&b"sbtest"[..]),
            Some(AuthPlugin::MysqlNativePassword),
            caps,
            None,
            1 << 24,
        );
        let mut bytes = Vec::new();
        resp.serialize(&mut bytes);
        let hello = parse_response(&bytes).unwrap();
        assert_eq!(hello.user, "alice");
        assert_eq!(hello.database.as_deref(), Some("sbtest"));
        assert_eq!(hello.plugin.as_deref(), Some(NATIVE_PASSWORD));
        // Compression was asked for but is not offered.
        assert!(
            !hello
                .capabilities
                .contains(CapabilityFlags::CLIENT_COMPRESS)
        );
        assert!(check_native(&salt, "secret", &hello.auth_response));
        assert!(!check_native(&salt, "other", &hello.auth_response));
        assert!(check_native(&salt, "", &[]));
        assert!(!check_native(&salt, "", &hello.auth_response));
        assert!(!check_native(&salt, "secret", &[]));
    }

    #[test]
    fn bad_responses_are_named() {
        for (bytes, needle) in [
            (&[1u8, 2][..], "shorter"),
            (&[0, 0, 0, 0, 0, 0, 0, 0][..], "4.1"),
            (&[0x00, 0x02, 0, 0, 1][..], "handshake response"),
        ] {
            let e = parse_response(bytes).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
