//! [`MysqlError`] (the server's own failures) and [`PacketError`] (a client's bad bytes).

use std::io;

/// A failure of the MySQL server itself (not of a client or a statement).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MysqlError {
    /// The listener could not be set up or read.
    #[error("mysql: listener {what}: {source}")]
    Listener {
        /// What was being done (`"local_addr"`, `"set_nonblocking"`, ...).
        what: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A thread could not be started.
    #[error("mysql: cannot start the {what} thread: {source}")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// What was wrong with the bytes a client sent. The connection answers with an error packet
/// naming it and closes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// The socket failed (or timed out).
    #[error("mysql packet: i/o: {0}")]
    Io(#[from] io::Error),
    /// The peer closed the connection in the middle of a packet.
    #[error("mysql packet: connection closed inside a packet ({buffered} bytes buffered)")]
    Truncated {
        /// Bytes read of the unfinished packet.
        buffered: usize,
    },
    /// A packet longer than `max_allowed_packet` (MySQL error 1153).
    #[error("mysql packet: bigger than max_allowed_packet ({max} bytes)")]
    TooLarge {
        /// The limit.
        max: usize,
    },
    /// A packet's sequence id was not the next one.
    #[error("mysql packet: sequence id out of order")]
    OutOfSync,
    /// A packet whose contents do not parse.
    #[error("malformed {what} packet: {detail}")]
    Malformed {
        /// Which packet (`"COM_STMT_EXECUTE"`, `"handshake response"`, ...).
        what: &'static str,
        /// What was wrong and where.
        detail: String,
    },
}

impl PacketError {
    /// A [`PacketError::Malformed`].
    pub fn malformed(what: &'static str, detail: impl Into<String>) -> PacketError {
        PacketError::Malformed {
            what,
            detail: detail.into(),
        }
    }
}
