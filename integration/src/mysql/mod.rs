//! A MySQL-protocol front end: the stock `mariadb` client, PyMySQL, sysbench and other
//! MySQL/MariaDB clients talk to SurgeDB through it.
//!
//! The protocol only: every statement goes to a [`SqlSession`](crate::sql::SqlSession), one
//! per connection, opened by a [`SessionFactory`](crate::sql::SessionFactory). The server
//! speaks protocol 4.1 as MariaDB 10.11 does towards a client that sees `CLIENT_MYSQL`
//! (MariaDB's extensions stay off): `mysql_native_password` only, no TLS, no compression,
//! text and binary (prepared statement) result sets, multi-statements, classic EOF packets
//! unless the client asks for `CLIENT_DEPRECATE_EOF`.
//! Reference: <https://mariadb.com/kb/en/clientserver-protocol/>.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use surgedb::mysql::{MysqlConfig, MysqlServer};
//! # fn factory() -> Arc<dyn surgedb::sql::SessionFactory> { unimplemented!() }
//! let listener = std::net::TcpListener::bind("127.0.0.1:3306")?;
//! let config = MysqlConfig::default().with_user("app", "secret");
//! let server = MysqlServer::start(listener, config, factory())?;
//! println!("listening on {}", server.local_addr());
//! server.shutdown();
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! Threads: one accepts, one serves each connection (its session's statements run on it).
//! A statement's [`SqlError`](crate::sql::SqlError) reaches the client as an ERR packet with
//! its code, SQLSTATE and message; the connection goes on. A bad packet is answered with an
//! error naming what was wrong (1153 for one over `max_allowed_packet`, 1835 for a malformed
//! one, 1156 out of sequence) and the connection is closed; a dropped connection, a closed
//! one and server shutdown all drop the session, which rolls its transaction back.
//!
//! With a [`ReplicationSource`] ([`MysqlConfig::with_replication_source`]) the server also
//! serves that binlog to MariaDB replicas (`CHANGE MASTER TO ...; START SLAVE`): see
//! [`DirSource`] and the `replication` module's notes on [`ReplicationSource`].
//!
//! A multi-statement answer gives each result the session's IN_TRANS and AUTOCOMMIT flags
//! as they were right after its own statement
//! ([`SqlSession::query_statements`](crate::sql::SqlSession::query_statements)); a client
//! without multi-statements (not asked for at connect, or turned off by COM_SET_OPTION) gets
//! 1064 for a query of several statements, none of them run.
//!
//! Limits: no cursors (a COM_STMT_EXECUTE asking for one gets the whole result set), no
//! COM_CHANGE_USER, no LOCAL INFILE.

// The decoder checks the fuzz targets and `tests/mysql_codec_props.rs` share. Not an API.
#[doc(hidden)]
pub mod checks;
mod columns;
mod config;
mod connection;
mod dispatch;
mod error;
mod execute_encoder;
mod handshake;
mod ok_err_eof;
mod packet;
mod param_values;
mod params;
mod replication;
mod resultset;
mod rows;
mod server;
mod stmt;

pub use config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_ALLOWED_PACKET, DEFAULT_MAX_CONNECTIONS, MysqlConfig,
};
pub use error::{MysqlError, PacketError};
pub use execute_encoder::encode_execute;
pub use packet::{decode_packets, encode_packets};
pub use params::{ExecuteHead, ParamType, decode_execute_head, decode_execute_params};
pub use replication::{
    BINLOG_DUMP_NON_BLOCK, BinlogDump, COM_BINLOG_DUMP, COM_REGISTER_SLAVE, DEFAULT_POLL,
    DirSource, FilePin, GtidPos, GtidPosError, MAX_CHUNK, PacketWriter, PurgeTarget,
    REPLICA_USER_VARIABLES, RegisterSlave, ReplicaQuery, ReplicationError, ReplicationSource,
    SOURCE_GLOBALS, SetValue,
};
pub use rows::{RowError, binary_row};
pub use server::MysqlServer;
