//! One client connection: the connection phase, then the command loop, in the shape of
//! MariaDB's `dispatch_command` (<https://mariadb.com/kb/en/2-text-protocol/>). The loop owns
//! the connection's [`SqlSession`] and its prepared statements' protocol state; when the
//! loop ends (the client quits or disconnects, a packet is bad, the server shuts down) the
//! session is dropped, which rolls back its open transaction.
//!
//! A bad packet is answered with an error naming what was wrong, then the connection is
//! closed: after one, the client's and the server's ideas of the conversation no longer
//! agree. An unknown command is answered (1047) and the connection goes on.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use mysql_common::constants::CapabilityFlags;

use super::config::MysqlConfig;
use super::error::PacketError;
use super::handshake::{
    NATIVE_PASSWORD, auth_switch, check_native, greeting, new_salt, parse_response,
};
use super::ok_err_eof::{OkInfo, err_packet, ok_packet, status_flags};
use super::packet::PacketStream;
use super::params::ParamType;
use crate::sql::{ConnectionInfo, SessionFactory, SqlSession};

/// Command bytes (<https://mariadb.com/kb/en/2-text-protocol/>,
/// <https://mariadb.com/kb/en/3-binary-protocol-prepared-statements/>).
pub(crate) mod com {
    pub(crate) const QUIT: u8 = 0x01;
    pub(crate) const INIT_DB: u8 = 0x02;
    pub(crate) const QUERY: u8 = 0x03;
    pub(crate) const FIELD_LIST: u8 = 0x04;
    pub(crate) const STATISTICS: u8 = 0x09;
    pub(crate) const PING: u8 = 0x0E;
    pub(crate) const STMT_PREPARE: u8 = 0x16;
    pub(crate) const STMT_EXECUTE: u8 = 0x17;
    pub(crate) const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub(crate) const STMT_CLOSE: u8 = 0x19;
    pub(crate) const STMT_RESET: u8 = 0x1A;
    pub(crate) const SET_OPTION: u8 = 0x1B;
    pub(crate) const RESET_CONNECTION: u8 = 0x1F;
}

/// What the loop does after a command.
pub(crate) enum Next {
    Continue,
    Close,
}

/// A prepared statement's protocol state (its SQL state is the session's).
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// Its parameter count.
    pub(crate) params: u16,
    /// The types bound by the last execution that sent them (reused when
    /// new-params-bound = 0).
    pub(crate) bound: Option<Vec<ParamType>>,
    /// Values sent by COM_STMT_SEND_LONG_DATA since the last execution, per parameter.
    pub(crate) long_data: Vec<Option<Vec<u8>>>,
}

/// A connection past authentication.
pub(crate) struct Connection<S> {
    pub(crate) io: PacketStream<S>,
    pub(crate) session: Box<dyn SqlSession>,
    pub(crate) caps: CapabilityFlags,
    pub(crate) multi_statements: bool,
    pub(crate) stmts: HashMap<u32, Prepared>,
}

/// Runs one connection to its end. Errors writing to the client end it silently (the
/// client is gone).
pub(crate) fn serve<S: Read + Write>(
    stream: S,
    id: u32,
    peer: SocketAddr,
    config: &MysqlConfig,
    sessions: &Arc<dyn SessionFactory>,
    set_timeout: impl Fn(&S, Option<std::time::Duration>),
) {
    let io = PacketStream::new(stream, config.max_allowed_packet);
    set_timeout(io.get_ref(), Some(config.connect_timeout));
    let Some(mut conn) = connect(io, id, peer, config, sessions) else {
        return;
    };
    set_timeout(conn.io.get_ref(), None);
    conn.run();
}

impl<S> Connection<S> {
    /// The session's status flags, with MORE_RESULTS_EXISTS when `more`.
    pub(crate) fn status(&self, more: bool) -> u16 {
        status_flags(
            self.session.in_transaction(),
            self.session.autocommit(),
            more,
        )
    }

    /// Whether the client asked for OK packets instead of EOFs.
    pub(crate) fn deprecate_eof(&self) -> bool {
        self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    }
}

/// The connection phase. `None`: the connection is refused (the client was told why) or gone.
fn connect<S: Read + Write>(
    mut io: PacketStream<S>,
    id: u32,
    peer: SocketAddr,
    config: &MysqlConfig,
    sessions: &Arc<dyn SessionFactory>,
) -> Option<Connection<S>> {
    let salt = match new_salt() {
        Ok(s) => s,
        Err(e) => {
            let _ = io.send(&err_packet(1105, "HY000", &format!("no random salt: {e}")));
            return None;
        }
    };
    io.send(&greeting(id, &config.server_version, &salt)).ok()?;
    let hello = match io.read_packet() {
        Ok(Some(p)) => parse_response(&p),
        Ok(None) => return None,
        Err(e) => Err(e),
    };
    let hello = match hello {
        Ok(h) => h,
        Err(e) => {
            send_packet_error(&mut io, &e);
            return None;
        }
    };
    let mut response = hello.auth_response.clone();
    if hello
        .plugin
        .as_deref()
        .is_some_and(|p| p != NATIVE_PASSWORD)
    {
        io.send(&auth_switch(&salt)).ok()?;
        response = match io.read_packet() {
            Ok(Some(p)) => p,
            Ok(None) => return None,
            Err(e) => {
                send_packet_error(&mut io, &e);
                return None;
            }
        };
    }
    let allowed = config
        .users
        .get(&hello.user)
        .is_some_and(|pw| check_native(&salt, pw, &response));
    if !allowed {
        let msg = format!(
            "Access denied for user '{}'@'{}' (using password: {})",
            hello.user,
            peer.ip(),
            if response.is_empty() { "NO" } else { "YES" }
        );
        let _ = io.send(&err_packet(1045, "28000", &msg));
        return None;
    }
    let info = ConnectionInfo {
        id,
        user: hello.user.clone(),
        peer: peer.to_string(),
        database: hello.database.clone(),
    };
    let session = match sessions.open(&info) {
        Ok(s) => s,
        Err(e) => {
            let _ = io.send(&err_packet(e.code, &e.state, &e.message));
            return None;
        }
    };
    let status = status_flags(session.in_transaction(), session.autocommit(), false);
    io.send(&ok_packet(&OkInfo {
        status,
        ..OkInfo::default()
    }))
    .ok()?;
    Some(Connection {
        io,
        session,
        caps: hello.capabilities,
        multi_statements: hello
            .capabilities
            .contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
        stmts: HashMap::new(),
    })
}

/// Answers a bad packet with the error MariaDB gives for it.
pub(crate) fn send_packet_error<S: Read + Write>(io: &mut PacketStream<S>, e: &PacketError) {
    let packet = match e {
        PacketError::Io(_) | PacketError::Truncated { .. } => return,
        PacketError::TooLarge { .. } => err_packet(
            1153,
            "08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes",
        ),
        PacketError::OutOfSync => err_packet(1156, "08S01", "Got packets out of order"),
        PacketError::Malformed { .. } => err_packet(
            1835,
            "HY000",
            &format!("Malformed communication packet: {e}"),
        ),
    };
    let _ = io.send(&packet);
}
