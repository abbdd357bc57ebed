//! The prepared-statement commands (<https://mariadb.com/kb/en/3-binary-protocol-prepared-statements/>):
//! COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE and
//! COM_STMT_RESET.
//!
//! PREPARE_OK: `00`, statement id u32, column count u16, parameter count u16, `00`, warning
//! count u16; then one definition per parameter and an EOF (when there are parameters),
//! then one definition per column and an EOF (when there are columns). The EOFs are left
//! out when `CLIENT_DEPRECATE_EOF` was agreed.

use std::io::{Read, Write};

use super::columns::{column_definition, param_definition};
use super::connection::{Connection, Prepared};
use super::error::PacketError;
use super::ok_err_eof::{eof_packet, err_packet};
use super::params::{decode_execute_head, decode_execute_params};
use super::resultset::{Protocol, output_packets};

/// MariaDB's message for an execution after too much long data (error 1105).
const LONG_DATA_TOO_LONG: &str = "Parameter of prepared statement which is set through \
                                  mysql_send_long_data() is longer than 'max_allowed_packet' bytes";

impl<S: Read + Write> Connection<S> {
    /// COM_STMT_PREPARE.
    pub(crate) fn prepare(&mut self, body: &[u8]) {
        let Ok(sql) = std::str::from_utf8(body) else {
            self.io.queue(&err_packet(
                1300,
                "HY000",
                "Invalid utf8mb4 character string in the statement",
            ));
            return;
        };
        let info = match self.session.prepare(sql) {
            Ok(info) => info,
            Err(e) => return self.error(&e),
        };
        let Ok(ncols) = u16::try_from(info.columns.len()) else {
            self.session.close_statement(info.id);
            self.io.queue(&err_packet(
                1105,
                "HY000",
                "a prepared statement may return at most 65535 columns",
            ));
            return;
        };
        let mut ok = vec![0x00];
        ok.extend_from_slice(&info.id.to_le_bytes());
        ok.extend_from_slice(&ncols.to_le_bytes());
        ok.extend_from_slice(&info.params.to_le_bytes());
        ok.push(0);
        ok.extend_from_slice(&0u16.to_le_bytes());
        self.io.queue(&ok);
        let classic = !self.deprecate_eof();
        let status = self.status(false);
        if info.params > 0 {
            for _ in 0..info.params {
                self.io.queue(&param_definition());
            }
            if classic {
                self.io.queue(&eof_packet(false, status, 0));
            }
        }
        if ncols > 0 {
            for c in &info.columns {
                self.io.queue(&column_definition(c));
            }
            if classic {
                self.io.queue(&eof_packet(false, status, 0));
            }
        }
        self.stmts.insert(
            info.id,
            Prepared {
                params: info.params,
                bound: None,
                long_data: vec![None; usize::from(info.params)],
                long_data_too_long: false,
            },
        );
    }

    /// COM_STMT_EXECUTE: an OK or a binary result set.
    pub(crate) fn execute(&mut self, body: &[u8]) -> Result<(), PacketError> {
        let head = decode_execute_head(body)?;
        let Some(stmt) = self.stmts.get_mut(&head.stmt_id) else {
            self.io
                .queue(&unknown_statement(head.stmt_id, "mysqld_stmt_execute"));
            return Ok(());
        };
        if std::mem::take(&mut stmt.long_data_too_long) {
            stmt.long_data.iter_mut().for_each(|d| *d = None);
            self.io
                .queue(&err_packet(1105, "HY000", LONG_DATA_TOO_LONG));
            return Ok(());
        }
        let params = decode_execute_params(body, stmt.params, &mut stmt.bound, &stmt.long_data)?;
        stmt.long_data.iter_mut().for_each(|d| *d = None);
        match self.session.execute(head.stmt_id, &params) {
            Ok(out) => {
                let status = self.status(false);
                match output_packets(&out, Protocol::Binary, self.deprecate_eof(), status) {
                    Ok(packets) => packets.iter().for_each(|p| self.io.queue(p)),
                    Err(e) => self.io.queue(&err_packet(1105, "HY000", &e.to_string())),
                }
            }
            Err(e) => self.error(&e),
        }
        Ok(())
    }

    /// COM_STMT_SEND_LONG_DATA: statement id u32, parameter u16, data. No answer; data for
    /// an unknown statement or parameter is dropped (as MySQL does, the execution reports).
    /// A parameter's data is bounded by `max_allowed_packet` in all: past it the data is
    /// dropped and the next execution fails with 1105.
    pub(crate) fn send_long_data(&mut self, body: &[u8]) -> Result<(), PacketError> {
        if body.len() < 6 {
            return Err(PacketError::malformed(
                "COM_STMT_SEND_LONG_DATA",
                format!("{} bytes, shorter than its 6-byte head", body.len()),
            ));
        }
        let id = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
        let param = usize::from(u16::from_le_bytes([body[4], body[5]]));
        let max = self.io.max_packet();
        let Some(stmt) = self.stmts.get_mut(&id) else {
            return Ok(());
        };
        // Past the limit the next execution fails whatever comes: keep nothing more.
        if stmt.long_data_too_long {
            return Ok(());
        }
        if let Some(slot) = stmt.long_data.get_mut(param) {
            let data = slot.get_or_insert_with(Vec::new);
            if data.len().saturating_add(body.len() - 6) > max {
                *slot = None;
                stmt.long_data_too_long = true;
            } else {
                data.extend_from_slice(&body[6..]);
            }
        }
        Ok(())
    }

    /// COM_STMT_CLOSE: no answer.
    pub(crate) fn close_statement(&mut self, body: &[u8]) -> Result<(), PacketError> {
        let id = stmt_id("COM_STMT_CLOSE", body)?;
        self.stmts.remove(&id);
        self.session.close_statement(id);
        Ok(())
    }

    /// COM_STMT_RESET: forgets long data; OK, or 1243 for an unknown statement.
    pub(crate) fn reset_statement(&mut self, body: &[u8]) -> Result<(), PacketError> {
        let id = stmt_id("COM_STMT_RESET", body)?;
        match self.stmts.get_mut(&id) {
            Some(s) => {
                s.long_data.iter_mut().for_each(|d| *d = None);
                s.long_data_too_long = false;
                self.ok();
            }
            None => self.io.queue(&unknown_statement(id, "mysqld_stmt_reset")),
        }
        Ok(())
    }
}

/// 1243 ER_UNKNOWN_STMT_HANDLER.
fn unknown_statement(id: u32, command: &str) -> Vec<u8> {
    err_packet(
        1243,
        "HY000",
        &format!("Unknown prepared statement handler ({id}) given to {command}"),
    )
}

/// The leading statement id of a statement command.
fn stmt_id(what: &'static str, body: &[u8]) -> Result<u32, PacketError> {
    match body {
        [a, b, c, d, ..] => Ok(u32::from_le_bytes([*a, *b, *c, *d])),
        _ => Err(PacketError::malformed(
            what,
            format!("{} bytes, its statement id needs 4", body.len()),
        )),
    }
}
