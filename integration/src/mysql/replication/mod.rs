//! Serving a binlog to MariaDB replicas on the MySQL port: a stock MariaDB 10.11 replica
//! (`CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos; START SLAVE`) connects, registers and
//! follows a [`ReplicationSource`] as it would follow a MariaDB master.
//!
//! A connection of a server configured with a source
//! ([`MysqlConfig::with_replication_source`](super::MysqlConfig::with_replication_source))
//! answers the replica's connect statements itself (`SELECT UNIX_TIMESTAMP()`,
//! `SHOW VARIABLES LIKE 'SERVER_ID'`, `SET @master_heartbeat_period`,
//! `SET @master_binlog_checksum`, `SELECT @master_binlog_checksum`, `SET
//! @mariadb_slave_capability`, `SELECT @@GLOBAL.gtid_domain_id`, `SET
//! @slave_connect_state`, `SET @slave_gtid_strict_mode`, `SET
//! @slave_gtid_ignore_duplicates`, `SET @slave_until_gtid`, `SET NAMES`, the semi-sync
//! probe), and the operator's `SHOW MASTER STATUS`, `SHOW BINARY LOGS`,
//! `SELECT @@GLOBAL.gtid_binlog_pos` / `gtid_current_pos`; everything else goes to its SQL
//! session as before. COM_REGISTER_SLAVE is acknowledged; COM_BINLOG_DUMP streams the binlog
//! from the replica's GTID position (see `dump.rs`) until the replica leaves.
//! A start GTID the binlog does not hold gets ERR 1236, as from MariaDB
//! (<https://mariadb.com/kb/en/gtid/>).
//!
//! Limits: one checksum (CRC-32); semi-synchronous replication is not offered;
//! `START SLAVE UNTIL` is the replica's business (the master streams on, as MariaDB's
//! does); `gtid_strict_mode` holes are not refused (the first later GTID is sent);
//! COM_BINLOG_DUMP_GTID (MySQL's) is not served.

mod answers;
mod commands;
mod dir_source;
mod dump;
mod dump_start;
mod error;
mod events;
mod framing;
mod gtid_pos;
mod queries;
mod replica_vars;
mod scan;
mod source;
mod start_position;

pub(crate) use dump::DumpPeer;
pub(crate) use replica_vars::ReplicaVars;

pub use commands::{
    BINLOG_DUMP_NON_BLOCK, BinlogDump, COM_BINLOG_DUMP, COM_REGISTER_SLAVE, RegisterSlave,
};
pub use dir_source::{DEFAULT_POLL, DirSource};
pub use error::ReplicationError;
pub use framing::{MAX_CHUNK, PacketWriter};
pub use gtid_pos::{GtidPos, GtidPosError};
pub use queries::{REPLICA_USER_VARIABLES, ReplicaQuery, SOURCE_GLOBALS, SetValue};
pub use source::{FilePin, PurgeTarget, ReplicationSource};
