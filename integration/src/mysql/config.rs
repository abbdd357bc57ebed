//! [`MysqlConfig`]: who may log in, how big a packet may be, what the server calls itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::replication::ReplicationSource;

/// The default `max_allowed_packet`: 64 MiB, as in MariaDB 10.11.
pub const DEFAULT_MAX_ALLOWED_PACKET: usize = 64 << 20;

/// The default limit on open connections (MariaDB's `max_connections` default is 151).
pub const DEFAULT_MAX_CONNECTIONS: usize = 151;

/// The default time a new connection has to finish its handshake (MariaDB's
/// `connect_timeout` default is 10 s).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a [`MysqlServer`](super::MysqlServer) behaves.
///
/// The defaults: user `root` with an empty password, `max_allowed_packet` 64 MiB, server
/// version `10.11.99-SurgeDB-<crate version>`, 151 connections, a 10 s handshake timeout, no
/// replication source.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MysqlConfig {
    /// `user -> password` (plain text; checked with `mysql_native_password`).
    pub users: BTreeMap<String, String>,
    /// The largest packet (payload, after joining 16 MiB chunks) a client may send.
    pub max_allowed_packet: usize,
    /// The version string in the handshake (`SELECT VERSION()` is the SQL layer's).
    pub server_version: String,
    /// Connections beyond this many are answered with error 1040 and closed.
    pub max_connections: usize,
    /// How long a client may take to send its handshake response.
    pub connect_timeout: Duration,
    /// The binlog served to replicas (COM_BINLOG_DUMP); `None`: no replication.
    pub replication: Option<Arc<dyn ReplicationSource>>,
}

impl Default for MysqlConfig {
    fn default() -> Self {
        MysqlConfig {
            users: BTreeMap::from([("root".to_owned(), String::new())]),
            max_allowed_packet: DEFAULT_MAX_ALLOWED_PACKET,
            server_version: format!("10.11.99-SurgeDB-{}", env!("CARGO_PKG_VERSION")),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            replication: None,
        }
    }
}

impl MysqlConfig {
    /// Replaces the users with `users` (`user -> password`).
    pub fn with_users<I, U, P>(mut self, users: I) -> Self
    where
        I: IntoIterator<Item = (U, P)>,
        U: Into<String>,
        P: Into<String>,
    {
        self.users = users
            .into_iter()
            .map(|(u, p)| (u.into(), p.into()))
            .collect();
        self
    }

    /// Adds (or replaces) one user.
    pub fn with_user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.users.insert(user.into(), password.into());
        self
    }

    /// Sets `max_allowed_packet` in bytes.
    pub fn with_max_allowed_packet(mut self, bytes: usize) -> Self {
        self.max_allowed_packet = bytes;
        self
    }

    /// Sets the version string the handshake announces.
    pub fn with_server_version(mut self, version: impl Into<String>) -> Self {
        self.server_version = version.into();
        self
    }

    /// Sets the limit on open connections.
    pub fn with_max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Serves `source` to MariaDB replicas: the connections answer a replica's connect
    /// statements and COM_REGISTER_SLAVE / COM_BINLOG_DUMP from it.
    pub fn with_replication_source(mut self, source: Arc<dyn ReplicationSource>) -> Self {
        self.replication = Some(source);
        self
    }

    /// Sets how long a client may take to answer the handshake.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_setters() {
        let c = MysqlConfig::default();
        assert_eq!(c.users.get("root").map(String::as_str), Some(""));
        assert_eq!(c.max_allowed_packet, 64 << 20);
        assert!(c.server_version.starts_with("10.11.99-SurgeDB-"));
        let c = c
            .with_users([("a", "b")])
            .with_user("c", "d")
            .with_max_allowed_packet(1024)
            .with_server_version("x")
            .with_max_connections(2);
        assert_eq!(c.users.len(), 2);
        assert_eq!(c.max_allowed_packet, 1024);
        assert_eq!(c.server_version, "x");
        assert_eq!(c.max_connections, 2);
    }
}
