//! The binlog of SQL writes: each statement's row changes are logged as row events of its
//! own table (a Table_map with the table's real column types, full row images), so a
//! MariaDB replica with the same schema applies them; DDL is logged as a Query event.

use std::sync::Arc;

use surge_txn::{
    BinlogCharset, BinlogColumn, BinlogDate, BinlogDateTime, BinlogTable, BinlogType, BinlogValue,
    SqlRowChange, Transaction,
};

use super::session::Session;
use crate::sql::catalog::TableDef;
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;
use crate::sql::types::SqlType;
use crate::sql::value::Value;

/// Row changes per call into the transaction's binlog: a statement over many rows is
/// logged in pieces, so its pending events stay small.
const FLUSH_EVERY: usize = 256;

fn binlog_type(ty: SqlType) -> BinlogType {
    let len16 = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
    match ty {
        SqlType::Int { bytes: 1, .. } => BinlogType::TinyInt,
        SqlType::Int { bytes: 2, .. } => BinlogType::SmallInt,
        SqlType::Int { bytes: 3, .. } => BinlogType::MediumInt,
        SqlType::Int { bytes: 4, .. } => BinlogType::Int,
        SqlType::Int { .. } => BinlogType::BigInt,
        SqlType::Decimal { precision, scale } => BinlogType::Decimal { precision, scale },
        SqlType::Float => BinlogType::Float,
        SqlType::Double => BinlogType::Double,
        SqlType::Char(n) => BinlogType::Char {
            len: len16(n),
            charset: BinlogCharset::Utf8mb4,
        },
        SqlType::VarChar(n) => BinlogType::VarChar {
            len: len16(n),
            charset: BinlogCharset::Utf8mb4,
        },
        SqlType::Text => BinlogType::Text {
            length_bytes: 2,
            charset: BinlogCharset::Utf8mb4,
        },
        SqlType::Blob => BinlogType::Blob { length_bytes: 2 },
        SqlType::Binary(n) => BinlogType::Binary { len: len16(n) },
        SqlType::VarBinary(n) => BinlogType::VarBinary { len: len16(n) },
        SqlType::Date => BinlogType::Date,
        SqlType::DateTime => BinlogType::DateTime { fsp: 0 },
        SqlType::Timestamp => BinlogType::Timestamp { fsp: 0 },
    }
}

/// `t` as the binlog describes it.
///
/// # Errors
/// A table the binlog cannot describe (1105 naming it).
pub(crate) fn binlog_table(t: &TableDef) -> Result<BinlogTable, SqlError> {
    let columns = t
        .columns
        .iter()
        .map(|c| BinlogColumn {
            name: c.name.clone(),
            kind: binlog_type(c.ty),
            nullable: c.nullable,
            unsigned: matches!(c.ty, SqlType::Int { unsigned: true, .. }),
        })
        .collect();
    let table = BinlogTable::new(&t.db, &t.name, t.id.unsigned_abs(), columns)
        .map_err(|e| SqlError::internal(format!("binlog table {}.{}: {e}", t.db, t.name)))?;
    let pk: Vec<usize> = match t.handle_column {
        Some(h) => vec![h],
        None => t
            .indexes
            .iter()
            .find(|i| i.primary)
            .map(|i| i.columns.clone())
            .unwrap_or_default(),
    };
    table
        .with_primary_key(pk)
        .map_err(|e| SqlError::internal(format!("binlog table {}.{}: {e}", t.db, t.name)))
}

/// A table no statement writes: the argument that switches a transaction's binlog group to
/// the caller's events without adding any.
fn no_table() -> Option<&'static BinlogTable> {
    static TABLE: std::sync::OnceLock<Option<BinlogTable>> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(|| {
            BinlogTable::new(
                "surgedb",
                "catalog",
                1,
                vec![BinlogColumn::new("k", BinlogType::BigInt)],
            )
            .ok()
        })
        .as_ref()
}

/// Keeps `txn`'s own keys (catalog records, counters, a DDL's row batches) out of the
/// binlog: the replica learns of them through the DDL's Query event, not as rows.
///
/// # Errors
/// A binlog failure.
pub(crate) fn silence(txn: &mut Transaction) -> Result<(), SqlError> {
    match no_table() {
        Some(t) => txn.binlog_rows(t, &[]).map_err(|e| from_txn(&e)),
        None => Err(SqlError::internal(
            "binlog: the silent table could not be described",
        )),
    }
}

/// `v` of a column of type `ty` as the binlog carries it.
pub(crate) fn binlog_value(ty: SqlType, v: &Value) -> BinlogValue {
    match (v, ty) {
        (Value::Null, _) => BinlogValue::Null,
        (Value::Int(i), _) => BinlogValue::Int(*i),
        (Value::UInt(u), _) => BinlogValue::UInt(*u),
        #[allow(clippy::cast_possible_truncation)] // a FLOAT column holds an f32
        (Value::Double(f), SqlType::Float) => BinlogValue::Float(*f as f32),
        (Value::Double(f), _) => BinlogValue::Double(*f),
        (Value::Decimal(d), _) => BinlogValue::Decimal(d.to_string()),
        (Value::Bytes(b), _) => BinlogValue::Bytes(b.clone()),
        (Value::Date { year, month, day }, _) => {
            BinlogValue::Date(BinlogDate::new(*year, *month, *day))
        }
        (Value::DateTime { micro, .. }, SqlType::Timestamp) => BinlogValue::Timestamp {
            seconds: v
                .unix_seconds()
                .and_then(|s| u32::try_from(s).ok())
                .unwrap_or(0),
            micros: *micro,
        },
        (
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micro,
            },
            _,
        ) => BinlogValue::DateTime(BinlogDateTime::new(
            BinlogDate::new(*year, *month, *day),
            *hour,
            *minute,
            *second,
            *micro,
        )),
    }
}

/// One statement's row changes of one table, on their way to the transaction's binlog.
pub(crate) struct RowLog {
    def: Arc<TableDef>,
    table: Option<Arc<BinlogTable>>,
    pending: Vec<SqlRowChange>,
}

impl RowLog {
    /// A log for statements on `t` (inert when the client keeps no binlog).
    ///
    /// # Errors
    /// A table the binlog cannot describe.
    pub(crate) fn new(s: &Session, t: &Arc<TableDef>) -> Result<RowLog, SqlError> {
        let table = if s.shared.client.binlog().is_some() {
            Some(s.shared.binlog_table(t)?)
        } else {
            None
        };
        Ok(RowLog {
            def: t.clone(),
            table,
            pending: Vec::new(),
        })
    }

    fn image(&self, row: &[Value]) -> Vec<BinlogValue> {
        self.def
            .columns
            .iter()
            .zip(row)
            .map(|(c, v)| binlog_value(c.ty, v))
            .collect()
    }

    fn push(&mut self, txn: &mut Transaction, change: SqlRowChange) -> Result<(), SqlError> {
        self.pending.push(change);
        if self.pending.len() >= FLUSH_EVERY {
            self.flush(txn)?;
        }
        Ok(())
    }

    /// Logs an inserted row.
    ///
    /// # Errors
    /// As [`RowLog::flush`].
    pub(crate) fn insert(&mut self, txn: &mut Transaction, row: &[Value]) -> Result<(), SqlError> {
        if self.table.is_none() {
            return Ok(());
        }
        let after = self.image(row);
        self.push(txn, SqlRowChange::Insert { after })
    }

    /// Logs a changed row.
    ///
    /// # Errors
    /// As [`RowLog::flush`].
    pub(crate) fn update(
        &mut self,
        txn: &mut Transaction,
        before: &[Value],
        after: &[Value],
    ) -> Result<(), SqlError> {
        if self.table.is_none() {
            return Ok(());
        }
        let (before, after) = (self.image(before), self.image(after));
        self.push(txn, SqlRowChange::Update { before, after })
    }

    /// Logs a deleted row.
    ///
    /// # Errors
    /// As [`RowLog::flush`].
    pub(crate) fn delete(&mut self, txn: &mut Transaction, row: &[Value]) -> Result<(), SqlError> {
        if self.table.is_none() {
            return Ok(());
        }
        let before = self.image(row);
        self.push(txn, SqlRowChange::Delete { before })
    }

    /// Hands the pending changes to the transaction's binlog.
    ///
    /// # Errors
    /// A value the binlog refuses (named), or a binlog failure.
    pub(crate) fn flush(&mut self, txn: &mut Transaction) -> Result<(), SqlError> {
        if let Some(t) = &self.table
            && !self.pending.is_empty()
        {
            txn.binlog_rows(t, &self.pending)
                .map_err(|e| from_txn(&e))?;
            self.pending.clear();
        }
        Ok(())
    }
}
