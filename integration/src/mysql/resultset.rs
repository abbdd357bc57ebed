//! A statement's answer as packets: an OK for [`Output::Done`], a result set for
//! [`Output::Rows`] (<https://mariadb.com/kb/en/result-set-packets/>):
//! column count (lenenc), one column definition per column, an EOF unless
//! `CLIENT_DEPRECATE_EOF` was agreed, the rows (text or binary), then an EOF (or its OK
//! form) carrying the status flags.

use super::columns::column_definition;
use super::ok_err_eof::{OkInfo, eof_packet, ok_packet, put_lenenc_int};
use super::rows::{RowError, binary_row, text_row};
use crate::sql::{ColumnMeta, Output, Value};

/// Which row encoding a result set uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// COM_QUERY: text rows.
    Text,
    /// COM_STMT_EXECUTE: binary rows.
    Binary,
}

/// The packets of one statement's answer, `status` in its final packet.
///
/// # Errors
/// A row value its column cannot carry (binary protocol only).
pub(crate) fn output_packets(
    out: &Output,
    protocol: Protocol,
    deprecate_eof: bool,
    status: u16,
) -> Result<Vec<Vec<u8>>, RowError> {
    match out {
        Output::Done {
            affected_rows,
            last_insert_id,
            warnings,
            info,
        } => Ok(vec![ok_packet(&OkInfo {
            affected_rows: *affected_rows,
            last_insert_id: *last_insert_id,
            status,
            warnings: *warnings,
            info,
        })]),
        Output::Rows { columns, rows } => {
            result_set(columns, rows, protocol, deprecate_eof, status)
        }
    }
}

fn result_set(
    columns: &[ColumnMeta],
    rows: &[Vec<Value>],
    protocol: Protocol,
    deprecate_eof: bool,
    status: u16,
) -> Result<Vec<Vec<u8>>, RowError> {
    let mut packets = Vec::with_capacity(columns.len() + rows.len() + 3);
    let mut count = Vec::new();
    put_lenenc_int(&mut count, columns.len() as u64);
    packets.push(count);
    packets.extend(columns.iter().map(column_definition));
    if !deprecate_eof {
        packets.push(eof_packet(false, status, 0));
    }
    for row in rows {
        packets.push(match protocol {
            Protocol::Text => text_row(row),
            Protocol::Binary => binary_row(columns, row)?,
        });
    }
    packets.push(eof_packet(deprecate_eof, status, 0));
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ColumnKind;

    #[test]
    fn shapes() {
        let out = Output::Rows {
            columns: vec![ColumnMeta::expr("a", ColumnKind::Long)],
            rows: vec![vec![Value::Int(1)], vec![Value::Null]],
        };
        let classic = output_packets(&out, Protocol::Text, false, 2).unwrap();
        // count, 1 definition, EOF, 2 rows, EOF
        assert_eq!(classic.len(), 6);
        assert_eq!(classic[0], [1]);
        assert_eq!(classic[2], [0xFE, 0, 0, 2, 0]);
        assert_eq!(classic[5], [0xFE, 0, 0, 2, 0]);
        let modern = output_packets(&out, Protocol::Binary, true, 2).unwrap();
        assert_eq!(modern.len(), 5);
        assert_eq!(modern[4], [0xFE, 0, 0, 2, 0, 0, 0]);
        assert_eq!(modern[2], [0x00, 0x00, 1, 0, 0, 0]);
        assert_eq!(modern[3], [0x00, 0b100]);
        let done = output_packets(&Output::done(3), Protocol::Text, false, 2).unwrap();
        assert_eq!(done, vec![vec![0, 3, 0, 2, 0, 0, 0]]);
    }
}
