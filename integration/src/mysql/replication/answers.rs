//! The connection's side of replication: the replica's queries answered from its
//! [`ReplicaVars`] and the source, COM_REGISTER_SLAVE, and COM_BINLOG_DUMP handing the
//! socket to the dump.

use std::io::{Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use super::super::connection::{Connection, Next};
use super::super::error::PacketError;
use super::super::ok_err_eof::err_packet;
use super::super::resultset::{Protocol, output_packets};
use super::commands::{BinlogDump, RegisterSlave};
use super::dump::{DumpEnd, DumpPeer, run_dump};
use super::dump_start::binlog_state;
use super::error::ReplicationError;
use super::queries::ReplicaQuery;
use super::replica_vars::BINLOG_CHECKSUM;
use super::source::{PurgeTarget, ReplicationSource};
use crate::sql::{ColumnKind, ColumnMeta, Output, Value};

impl<S: Read + Write + DumpPeer> Connection<S> {
    /// Answers `body` (a COM_QUERY's text) when this connection serves a source and it is
    /// one of a replica's statements; `false` leaves it to the SQL session.
    pub(crate) fn replica_query(&mut self, body: &[u8]) -> bool {
        let Some(source) = self.replica.source.clone() else {
            return false;
        };
        let Ok(sql) = std::str::from_utf8(body) else {
            return false;
        };
        let Some(q) = ReplicaQuery::parse(sql) else {
            return false;
        };
        let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        match q {
            ReplicaQuery::UnixTimestamp => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                self.rows(
                    &[("UNIX_TIMESTAMP()", ColumnKind::LongLong)],
                    vec![vec![Value::UInt(now)]],
                );
            }
            ReplicaQuery::ShowVariablesLike(pattern) => {
                let rows = if pattern == "server_id" {
                    vec![vec![
                        text("server_id"),
                        text(&source.server_id().to_string()),
                    ]]
                } else {
                    // Semi-synchronous replication is not offered: no such variable.
                    Vec::new()
                };
                self.rows(
                    &[
                        ("Variable_name", ColumnKind::VarString),
                        ("Value", ColumnKind::VarString),
                    ],
                    rows,
                );
            }
            ReplicaQuery::SetUserVariable { name, value } => {
                self.replica.set(&name, value);
                self.ok();
            }
            ReplicaQuery::SelectUserVariable(name) => {
                let v = self.replica.get(&name).map_or(Value::Null, |s| text(&s));
                self.rows(
                    &[(&format!("@{name}"), ColumnKind::VarString)],
                    vec![vec![v]],
                );
            }
            ReplicaQuery::SelectGlobal(name) => match global(&*source, &name) {
                Ok(v) => self.rows(
                    &[(&format!("@@GLOBAL.{name}"), ColumnKind::VarString)],
                    vec![vec![v]],
                ),
                Err(msg) => self.io.queue(&err_packet(1105, "HY000", &msg)),
            },
            ReplicaQuery::SetNames => {
                // The session records the character set if it keeps one; a replica needs
                // the OK whatever the session makes of the name (its reconnect sends
                // `SET NAMES` first and stops on an error).
                let _ = self.session.query(sql);
                self.ok();
            }
            ReplicaQuery::SetSkipReplication => self.ok(),
            ReplicaQuery::ShowMasterStatus => {
                let (file, pos) = source.end();
                let rows = if file.is_empty() {
                    Vec::new()
                } else {
                    vec![vec![text(&file), Value::UInt(pos), text(""), text("")]]
                };
                self.rows(
                    &[
                        ("File", ColumnKind::VarString),
                        ("Position", ColumnKind::LongLong),
                        ("Binlog_Do_DB", ColumnKind::VarString),
                        ("Binlog_Ignore_DB", ColumnKind::VarString),
                    ],
                    rows,
                );
            }
            ReplicaQuery::ShowBinaryLogs => {
                let (end_file, end_pos) = source.end();
                let rows = source
                    .files()
                    .into_iter()
                    .map(|(name, path)| {
                        let size = if name == end_file {
                            end_pos
                        } else {
                            std::fs::metadata(&path).map_or(0, |m| m.len())
                        };
                        vec![text(&name), Value::UInt(size)]
                    })
                    .collect();
                self.rows(
                    &[
                        ("Log_name", ColumnKind::VarString),
                        ("File_size", ColumnKind::LongLong),
                    ],
                    rows,
                );
            }
            ReplicaQuery::PurgeTo(name) => self.purge(&*source, PurgeTarget::To(name)),
            ReplicaQuery::PurgeBefore(when) => {
                let at = Value::Bytes(when.as_bytes().to_vec())
                    .unix_seconds()
                    .and_then(|s| u64::try_from(s).ok())
                    .map(|s| UNIX_EPOCH + std::time::Duration::from_secs(s));
                match at {
                    Some(at) => self.purge(&*source, PurgeTarget::Before(at)),
                    None => self.io.queue(&err_packet(
                        1064,
                        "42000",
                        &format!("PURGE BINARY LOGS BEFORE: '{when}' is not a datetime"),
                    )),
                }
            }
        }
        true
    }

    /// `PURGE BINARY LOGS`: OK once the source removed what it could (a pinned file and
    /// those after it stay, as MariaDB keeps a log in use), ERR 1373 for a target it does
    /// not list, ERR 1105 naming why otherwise.
    fn purge(&mut self, source: &dyn ReplicationSource, target: PurgeTarget) {
        match source.purge(target) {
            Ok(_) => self.ok(),
            Err(e @ ReplicationError::PurgeTargetNotFound { .. }) => {
                self.io.queue(&err_packet(1373, "HY000", &e.to_string()));
            }
            Err(e) => self.io.queue(&err_packet(1105, "HY000", &e.to_string())),
        }
    }

    /// COM_REGISTER_SLAVE: checked and acknowledged (the replica list is not kept).
    pub(crate) fn register_slave(&mut self, body: &[u8]) -> Result<(), PacketError> {
        RegisterSlave::decode(body)?;
        self.ok();
        Ok(())
    }

    /// COM_BINLOG_DUMP: streams the source to the replica until it leaves; the connection
    /// then closes, as MariaDB's does.
    pub(crate) fn binlog_dump(&mut self, body: &[u8]) -> Result<Next, PacketError> {
        let req = BinlogDump::decode(body)?;
        let Some(source) = self.replica.source.clone() else {
            self.io
                .queue(&err_packet(1236, "HY000", "Binary log is not open"));
            return Ok(Next::Close);
        };
        let opts = match self.replica.dump_options(&req) {
            Ok(o) => o,
            Err(e) => {
                self.io.queue(&err_packet(1236, "HY000", &e.to_string()));
                return Ok(Next::Close);
            }
        };
        if self.io.flush().is_err() {
            return Ok(Next::Close);
        }
        match run_dump(&*source, &opts, self.io.get_mut()) {
            DumpEnd::Gone | DumpEnd::EndOfLog | DumpEnd::Fatal(_) => Ok(Next::Close),
        }
    }

    /// Queues a text result set with `columns` and `rows`.
    fn rows(&mut self, columns: &[(&str, ColumnKind)], rows: Vec<Vec<Value>>) {
        let columns = columns
            .iter()
            .map(|(n, k)| ColumnMeta::expr(*n, *k))
            .collect();
        let out = Output::Rows { columns, rows };
        let status = self.status(false);
        match output_packets(&out, Protocol::Text, self.deprecate_eof(), status) {
            Ok(packets) => packets.iter().for_each(|p| self.io.queue(p)),
            Err(e) => self.io.queue(&err_packet(1105, "HY000", &e.to_string())),
        }
    }
}

/// The value of a global variable answered from the source.
fn global(source: &dyn ReplicationSource, name: &str) -> Result<Value, String> {
    let text = |s: String| Value::Bytes(s.into_bytes());
    Ok(match name {
        "server_id" => Value::UInt(u64::from(source.server_id())),
        "binlog_checksum" => text(BINLOG_CHECKSUM.to_string()),
        "log_bin" => Value::UInt(1),
        _ => {
            let end = source.end();
            let state = binlog_state(&source.files(), &end).map_err(|e| e.to_string())?;
            let pos = state.position();
            match name {
                // The domain of the stream (it has one); 0 before its first group.
                "gtid_domain_id" => {
                    Value::UInt(u64::from(pos.iter().next().map_or(0, |g| g.domain_id)))
                }
                "gtid_binlog_state" => text(state.full_state()),
                _ => text(pos.to_string()),
            }
        }
    })
}
