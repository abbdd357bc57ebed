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
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_common::constants::CapabilityFlags;

use super::config::MysqlConfig;
use super::error::PacketError;
use super::handshake::{
    NATIVE_PASSWORD, auth_switch, check_native, greeting, new_salt, parse_response,
};
use super::ok_err_eof::{OkInfo, err_packet, ok_packet, status_flags};
use super::packet::PacketStream;
use super::params::ParamType;
use super::replication::ReplicaVars;
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

/// The largest packet a client may send before it is authenticated (a handshake response
/// with connection attributes is well under 1 KiB): an unauthenticated peer cannot make the
/// server buffer `max_allowed_packet` bytes.
const HANDSHAKE_MAX_PACKET: usize = 16 * 1024;

/// What the loop does after a command.
pub(crate) enum Next {
    Continue,
    Close,
}

/// A socket whose reads can time out: the wait for a client's next command is bounded by
/// its session's `wait_timeout`.
pub(crate) trait ReadTimeout {
    /// Sets the read timeout (`None`: reads block for ever).
    ///
    /// # Errors
    /// The socket's.
    fn set_idle_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()>;
}

impl ReadTimeout for TcpStream {
    fn set_idle_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(timeout)
    }
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
    /// A parameter whose long data passed `max_allowed_packet` since the last execution:
    /// its data was dropped, and the next execution fails (as MariaDB's
    /// `Item_param::set_longdata`), so a client cannot grow the server without bound.
    pub(crate) long_data_too_long: bool,
}

/// A connection past authentication.
pub(crate) struct Connection<S> {
    pub(crate) io: PacketStream<S>,
    pub(crate) session: Box<dyn SqlSession>,
    pub(crate) caps: CapabilityFlags,
    pub(crate) multi_statements: bool,
    pub(crate) stmts: HashMap<u32, Prepared>,
    /// The replication variables a replica set, and the source it may be served.
    pub(crate) replica: ReplicaVars,
}

/// Runs one connection to its end, then closes it gently: the write side first, then what
/// the client still sends is read and dropped for a moment, so that an error sent just
/// before the close is not lost to a TCP reset (which unread input would cause).
pub(crate) fn serve(
    stream: TcpStream,
    id: u32,
    peer: SocketAddr,
    config: &MysqlConfig,
    sessions: &Arc<dyn SessionFactory>,
) {
    let io = PacketStream::new(stream, HANDSHAKE_MAX_PACKET.min(config.max_allowed_packet));
    let _ = io.get_ref().set_read_timeout(Some(config.connect_timeout));
    let stream = match connect(io, id, peer, config, sessions) {
        Ok(mut conn) => {
            let _ = conn.io.get_ref().set_read_timeout(None);
            conn.io.set_max_packet(config.max_allowed_packet);
            conn.run();
            let Connection { io, session, .. } = conn;
            // The session (and its transaction) goes first: the client may be waiting on
            // the close to see the rollback.
            drop(session);
            io.into_inner()
        }
        Err(io) => io.into_inner(),
    };
    linger_close(&stream);
}

/// How long, and how much, a closing connection keeps reading a client's leftover input.
const LINGER_TIME: Duration = Duration::from_millis(200);
const LINGER_BYTES: usize = 1 << 20;

/// Shuts the write side, then drains input until end of file, [`LINGER_TIME`] or
/// [`LINGER_BYTES`].
pub(crate) fn linger_close(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER_TIME;
    let mut buf = [0u8; 8192];
    let mut drained = 0;
    let mut reader = stream;
    while drained < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
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

/// The connection phase: the authenticated connection, or, when it is refused (the client
/// was told why) or gone, the stream back for closing.
fn connect(
    mut io: PacketStream<TcpStream>,
    id: u32,
    peer: SocketAddr,
    config: &MysqlConfig,
    sessions: &Arc<dyn SessionFactory>,
) -> Result<Connection<TcpStream>, Box<PacketStream<TcpStream>>> {
    match authenticate(&mut io, id, peer, config) {
        Some(auth) => match sessions.open(&auth.info) {
            Ok(session) => {
                let status = status_flags(session.in_transaction(), session.autocommit(), false);
                let ok = ok_packet(&OkInfo {
                    status,
                    ..OkInfo::default()
                });
                if io.send(&ok).is_err() {
                    return Err(Box::new(io));
                }
                Ok(Connection {
                    io,
                    session,
                    caps: auth.capabilities,
                    multi_statements: auth
                        .capabilities
                        .contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
                    stmts: HashMap::new(),
                    replica: ReplicaVars::new(config.replication.clone()),
                })
            }
            Err(e) => {
                let _ = io.send(&err_packet(e.code, &e.state, &e.message));
                Err(Box::new(io))
            }
        },
        None => Err(Box::new(io)),
    }
}

/// Who authenticated, with what.
struct Authenticated {
    info: ConnectionInfo,
    capabilities: CapabilityFlags,
}

/// Greets, reads the response (and the answer to an AuthSwitchRequest), checks the
/// password. `None`: refused (the client was told why) or gone.
fn authenticate(
    io: &mut PacketStream<TcpStream>,
    id: u32,
    peer: SocketAddr,
    config: &MysqlConfig,
) -> Option<Authenticated> {
    let salt = match new_salt() {
        Ok(s) => s,
        Err(e) => {
            let _ = io.send(&err_packet(1105, "HY000", &format!("no random salt: {e}")));
            return None;
        }
    };
    io.send(&greeting(id, &config.server_version, &salt)).ok()?;
    let hello = read_or_refuse(io)?;
    let hello = match parse_response(&hello) {
        Ok(h) => h,
        Err(e) => {
            send_packet_error(io, &e);
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
        response = read_or_refuse(io)?;
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
    Some(Authenticated {
        info: ConnectionInfo {
            id,
            user: hello.user,
            peer: peer.to_string(),
            database: hello.database,
            interactive: hello
                .capabilities
                .contains(CapabilityFlags::CLIENT_INTERACTIVE),
        },
        capabilities: hello.capabilities,
    })
}

/// Reads one packet of the connection phase; a bad one is answered. `None`: refused or gone.
fn read_or_refuse(io: &mut PacketStream<TcpStream>) -> Option<Vec<u8>> {
    match io.read_packet() {
        Ok(p) => p,
        Err(e) => {
            send_packet_error(io, &e);
            None
        }
    }
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
