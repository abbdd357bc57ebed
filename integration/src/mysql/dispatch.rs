//! The command loop and the text-protocol commands (COM_QUERY, COM_INIT_DB, COM_FIELD_LIST,
//! COM_STATISTICS, COM_PING, COM_SET_OPTION, COM_RESET_CONNECTION, COM_QUIT). The prepared
//! statement commands are in `stmt.rs`.

use std::io::{Read, Write};

use super::columns::field_list_definition;
use super::connection::{Connection, Next, ReadTimeout, com, send_packet_error};
use super::error::PacketError;
use super::ok_err_eof::{OkInfo, eof_packet, err_packet, ok_packet, status_flags};
use super::replication::{COM_BINLOG_DUMP, COM_REGISTER_SLAVE, DumpPeer};
use super::resultset::{Protocol, output_packets};
use crate::sql::SqlError;

// The loop needs a socket the binlog dump can watch (`DumpPeer`) and whose reads time out
// (`ReadTimeout`); the answers do not.
impl<S: Read + Write + DumpPeer + ReadTimeout> Connection<S> {
    /// Reads and answers commands until the client leaves, a packet is bad, or the client
    /// stays silent past its session's `wait_timeout` (then the connection closes without
    /// a word, as MariaDB's does, and the session's transaction is rolled back).
    pub(crate) fn run(&mut self) {
        // What the socket is set to, so that it is set again only on a change.
        let mut idle = None;
        loop {
            self.io.reset_seq();
            let wanted = self.session.idle_timeout();
            if wanted != idle {
                if self.io.get_ref().set_idle_timeout(wanted).is_err() {
                    return;
                }
                idle = wanted;
            }
            let packet = match self.io.read_packet() {
                Ok(Some(p)) => p,
                Ok(None) => return,
                Err(PacketError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return;
                }
                Err(e) => {
                    send_packet_error(&mut self.io, &e);
                    return;
                }
            };
            let next = match self.dispatch(&packet) {
                Ok(next) => next,
                Err(e) => {
                    send_packet_error(&mut self.io, &e);
                    return;
                }
            };
            if self.io.flush().is_err() {
                return;
            }
            if let Next::Close = next {
                return;
            }
        }
    }

    /// Answers one command (queued; the loop flushes).
    fn dispatch(&mut self, packet: &[u8]) -> Result<Next, PacketError> {
        let Some((&command, body)) = packet.split_first() else {
            return Err(PacketError::malformed("command", "an empty packet"));
        };
        match command {
            com::QUIT => return Ok(Next::Close),
            com::QUERY => {
                // A replica's statements, when a binlog is served; all others: the session.
                if !self.replica_query(body) {
                    self.query(body);
                }
            }
            COM_REGISTER_SLAVE => self.register_slave(body)?,
            // The dump owns the socket until the replica leaves; then the connection ends.
            COM_BINLOG_DUMP => return self.binlog_dump(body),
            com::INIT_DB => {
                let db = utf8("COM_INIT_DB", body)?;
                match self.session.use_database(db) {
                    Ok(()) => self.ok(),
                    Err(e) => self.error(&e),
                }
            }
            com::FIELD_LIST => self.field_list(body)?,
            com::STATISTICS => {
                let line = self.session.statistics();
                self.io.queue(line.as_bytes());
            }
            com::PING => self.ok(),
            com::SET_OPTION => self.set_option(body)?,
            com::RESET_CONNECTION => {
                self.session.reset();
                self.stmts.clear();
                self.replica.reset();
                self.multi_statements = self
                    .caps
                    .contains(mysql_common::constants::CapabilityFlags::CLIENT_MULTI_STATEMENTS);
                self.ok();
            }
            com::STMT_PREPARE => self.prepare(body),
            com::STMT_EXECUTE => self.execute(body)?,
            com::STMT_SEND_LONG_DATA => self.send_long_data(body)?,
            com::STMT_CLOSE => self.close_statement(body)?,
            com::STMT_RESET => self.reset_statement(body)?,
            other => self.io.queue(&err_packet(
                1047,
                "08S01",
                &format!("Unknown command {other:#04x}"),
            )),
        }
        Ok(Next::Continue)
    }
}

impl<S: Read + Write> Connection<S> {
    /// Queues an OK with the session's status.
    pub(crate) fn ok(&mut self) {
        let status = self.status(false);
        self.io.queue(&ok_packet(&OkInfo {
            status,
            ..OkInfo::default()
        }));
    }

    /// Queues an ERR for a statement's error.
    pub(crate) fn error(&mut self, e: &SqlError) {
        self.io.queue(&err_packet(e.code, &e.state, &e.message));
    }

    /// COM_QUERY: one result per statement, SERVER_MORE_RESULTS_EXISTS on all but the last,
    /// each with the session's IN_TRANS and AUTOCOMMIT as they were right after its
    /// statement. Several statements from a client without multi-statements: 1064.
    fn query(&mut self, body: &[u8]) {
        let Ok(sql) = std::str::from_utf8(body) else {
            // Not a protocol error: the client sent text in another character set.
            self.io.queue(&err_packet(
                1300,
                "HY000",
                "Invalid utf8mb4 character string in the query",
            ));
            return;
        };
        let results = self.session.query_statements(sql, self.multi_statements);
        if results.is_empty() {
            self.io.queue(&err_packet(1065, "42000", "Query was empty"));
            return;
        }
        let deprecate_eof = self.deprecate_eof();
        let last = results.len() - 1;
        for (i, r) in results.iter().enumerate() {
            let status = status_flags(r.in_transaction, r.autocommit, i < last);
            let packets = match &r.result {
                Ok(out) => output_packets(out, Protocol::Text, deprecate_eof, status),
                Err(e) => {
                    self.error(e);
                    return;
                }
            };
            match packets {
                Ok(packets) => packets.iter().for_each(|p| self.io.queue(p)),
                Err(e) => {
                    self.io.queue(&err_packet(1105, "HY000", &e.to_string()));
                    return;
                }
            }
        }
    }

    /// COM_FIELD_LIST: `table\0wildcard`; the table's column definitions, then an EOF.
    fn field_list(&mut self, body: &[u8]) -> Result<(), PacketError> {
        let (table, wildcard) = match body.iter().position(|&b| b == 0) {
            Some(p) => (&body[..p], &body[p + 1..]),
            None => (body, &[][..]),
        };
        let table = utf8("COM_FIELD_LIST", table)?;
        let wildcard = utf8("COM_FIELD_LIST", wildcard)?;
        match self.session.field_list(table, wildcard) {
            Ok(columns) => {
                for c in &columns {
                    self.io.queue(&field_list_definition(c));
                }
                let status = self.status(false);
                self.io.queue(&eof_packet(self.deprecate_eof(), status, 0));
            }
            Err(e) => self.error(&e),
        }
        Ok(())
    }

    /// COM_SET_OPTION: u16 0 turns multi-statements on, 1 off; answered with an EOF.
    fn set_option(&mut self, body: &[u8]) -> Result<(), PacketError> {
        let option = match body {
            [a, b, ..] => u16::from_le_bytes([*a, *b]),
            _ => {
                return Err(PacketError::malformed(
                    "COM_SET_OPTION",
                    format!("{} bytes, its option needs 2", body.len()),
                ));
            }
        };
        match option {
            0 | 1 => {
                self.multi_statements = option == 0;
                let status = self.status(false);
                self.io.queue(&eof_packet(self.deprecate_eof(), status, 0));
            }
            other => self.io.queue(&err_packet(
                1047,
                "08S01",
                &format!("Unknown COM_SET_OPTION option {other}"),
            )),
        }
        Ok(())
    }
}

/// `bytes` as UTF-8, or a malformed-packet error naming the command.
pub(crate) fn utf8<'a>(what: &'static str, bytes: &'a [u8]) -> Result<&'a str, PacketError> {
    std::str::from_utf8(bytes)
        .map_err(|e| PacketError::malformed(what, format!("not UTF-8 at byte {}", e.valid_up_to())))
}
