//! DDL: CREATE/DROP DATABASE, CREATE TABLE, CREATE INDEX (with backfill), DROP TABLE and
//! TRUNCATE (rows deleted in batches). Each runs in a transaction of its own that locks the
//! schema version, so DDL statements are serialized across the cluster.

use sqlparser::ast::{
    ColumnOption, CreateIndex, CreateTable, CreateTableOptions, DataType, ExactNumberInfo, Expr,
    IndexColumn, ObjectName, SqlOption, TableConstraint,
};
use surge_txn::{TxnClient, TxnMode};

use super::rows::{index_entry, insert_index_entries};
use crate::sql::catalog::{CatalogTxn, ColumnDef, IndexDef, TableDef};
use crate::sql::codec::{decode_row, row_prefix, row_prefix_end, table_prefix};
use crate::sql::expr::literal;
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;
use crate::sql::types::{SqlType, to_bytes};
use crate::sql::value::Value;

/// Rows per transaction when a DDL rewrites or deletes a table's data.
const BATCH: usize = 512;

/// What a DDL statement logs: its text, run with `db` current.
#[derive(Debug, Clone)]
pub(crate) struct DdlLog {
    /// The current database.
    pub(crate) db: String,
    /// The statement.
    pub(crate) sql: String,
}

/// A catalog transaction that logs `log` as a Query event (in the same transaction as the
/// catalog change), or nothing.
fn begin(client: &TxnClient, log: Option<&DdlLog>) -> Result<CatalogTxn, SqlError> {
    let mut txn = client
        .begin(TxnMode::Pessimistic)
        .map_err(|e| from_txn(&e))?;
    match log {
        Some(l) => txn.binlog_query(&l.db, &l.sql).map_err(|e| from_txn(&e))?,
        None => super::binlog::silence(&mut txn)?,
    }
    CatalogTxn::begin(txn)
}

/// The unqualified last part of `name`, and its database part if given.
pub(crate) fn split_name(name: &ObjectName) -> (Option<String>, String) {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map_or_else(|| p.to_string(), |i| i.value.clone())
        })
        .collect();
    match parts.as_slice() {
        [db, t] => (Some(db.clone()), t.clone()),
        _ => (None, parts.last().cloned().unwrap_or_default()),
    }
}

/// CREATE DATABASE.
///
/// # Errors
/// 1007 when it exists (without IF NOT EXISTS).
pub(crate) fn create_database(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    if_not_exists: bool,
) -> Result<u64, SqlError> {
    let mut c = begin(client, Some(log))?;
    if c.db_exists(db)? {
        if if_not_exists {
            return Ok(0);
        }
        return Err(SqlError::new(
            1007,
            "HY000",
            format!("Can't create database '{db}'; database exists"),
        ));
    }
    c.put_db(db)?;
    c.commit()?;
    Ok(1)
}

/// DROP DATABASE: drops its tables, then it.
///
/// # Errors
/// 1008 when it does not exist (without IF EXISTS).
pub(crate) fn drop_database(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    if_exists: bool,
) -> Result<(u64, Vec<i64>), SqlError> {
    let mut c = begin(client, Some(log))?;
    if !c.db_exists(db)? {
        if if_exists {
            return Ok((0, Vec::new()));
        }
        return Err(SqlError::new(
            1008,
            "HY000",
            format!("Can't drop database '{db}'; database doesn't exist"),
        ));
    }
    let tables = c.tables_of(db)?;
    for t in &tables {
        c.delete_table(t)?;
    }
    c.delete_db(db)?;
    c.commit()?;
    let ids: Vec<i64> = tables.iter().map(|t| t.id).collect();
    for id in &ids {
        delete_range(client, &table_prefix(*id))?;
    }
    Ok((ids.len() as u64, ids))
}

/// Deletes every key under `prefix`, in batches (each its own transaction).
pub(crate) fn delete_range(client: &TxnClient, prefix: &[u8]) -> Result<u64, SqlError> {
    let mut end = prefix.to_vec();
    end.push(0xFF);
    let mut deleted = 0;
    loop {
        let mut txn = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| from_txn(&e))?;
        super::binlog::silence(&mut txn)?;
        let pairs = txn
            .scan(prefix, Some(&end), BATCH)
            .map_err(|e| from_txn(&e))?;
        if pairs.is_empty() {
            return Ok(deleted);
        }
        for (k, _) in &pairs {
            txn.delete(k).map_err(|e| from_txn(&e))?;
        }
        txn.commit().map_err(|e| from_txn(&e))?;
        deleted += pairs.len() as u64;
    }
}

fn sql_type(t: &DataType, column: &str) -> Result<SqlType, SqlError> {
    let len = |n: Option<u64>, default: u32| {
        u32::try_from(n.unwrap_or(u64::from(default))).unwrap_or(u32::MAX)
    };
    let char_len = |c: &Option<sqlparser::ast::CharacterLength>, default: u32| match c {
        Some(sqlparser::ast::CharacterLength::IntegerLength { length, .. }) => {
            u32::try_from(*length).unwrap_or(u32::MAX)
        }
        _ => default,
    };
    let decimal = |info: &ExactNumberInfo| match info {
        ExactNumberInfo::None => (10, 0),
        ExactNumberInfo::Precision(p) => (u8::try_from(*p).unwrap_or(65), 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (
            u8::try_from(*p).unwrap_or(65),
            u8::try_from(*s).unwrap_or(30),
        ),
    };
    let int = |bytes, unsigned| SqlType::Int { bytes, unsigned };
    Ok(match t {
        DataType::TinyInt(_) | DataType::Bool | DataType::Boolean => int(1, false),
        DataType::TinyIntUnsigned(_) | DataType::UTinyInt => int(1, true),
        DataType::SmallInt(_) => int(2, false),
        DataType::SmallIntUnsigned(_) | DataType::USmallInt => int(2, true),
        DataType::MediumInt(_) => int(3, false),
        DataType::MediumIntUnsigned(_) => int(3, true),
        DataType::Int(_) | DataType::Integer(_) => int(4, false),
        DataType::IntUnsigned(_) | DataType::IntegerUnsigned(_) => int(4, true),
        DataType::BigInt(_) => int(8, false),
        DataType::BigIntUnsigned(_) | DataType::UBigInt => int(8, true),
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (precision, scale) = decimal(info);
            if precision > 38 || scale > precision {
                return Err(SqlError::unsupported(format!(
                    "DECIMAL({precision},{scale}) for column '{column}' (precision up to 38)"
                )));
            }
            SqlType::Decimal { precision, scale }
        }
        DataType::Float(_) => SqlType::Float,
        DataType::Double(_) | DataType::DoublePrecision | DataType::Real => SqlType::Double,
        DataType::Char(c) | DataType::Character(c) => SqlType::Char(char_len(c, 1)),
        DataType::Varchar(c)
        | DataType::CharacterVarying(c)
        | DataType::CharVarying(c)
        | DataType::Nvarchar(c) => SqlType::VarChar(char_len(c, 255)),
        DataType::Text | DataType::TinyText | DataType::MediumText | DataType::LongText => {
            SqlType::Text
        }
        DataType::Binary(n) => SqlType::Binary(len(*n, 1)),
        DataType::Varbinary(n) => SqlType::VarBinary(match n {
            Some(sqlparser::ast::BinaryLength::IntegerLength { length }) => {
                u32::try_from(*length).unwrap_or(u32::MAX)
            }
            _ => 255,
        }),
        DataType::Blob(_) | DataType::TinyBlob | DataType::MediumBlob | DataType::LongBlob => {
            SqlType::Blob
        }
        DataType::Date => SqlType::Date,
        DataType::Datetime(_) => SqlType::DateTime,
        DataType::Timestamp(..) => SqlType::Timestamp,
        other => {
            return Err(SqlError::unsupported(format!(
                "column type {other} (column '{column}')"
            )));
        }
    })
}

fn index_columns(table: &TableDef, cols: &[IndexColumn]) -> Result<Vec<usize>, SqlError> {
    cols.iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(id) => table.column(&id.value).ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{}' doesn't exist in table", id.value),
                )
            }),
            other => Err(SqlError::unsupported(format!(
                "index on expression {other}"
            ))),
        })
        .collect()
}

fn default_text(e: &Expr, column: &str, ty: SqlType) -> Result<Option<String>, SqlError> {
    let v = match e {
        Expr::Value(v) => literal(&v.value)?,
        Expr::UnaryOp { .. } => {
            crate::sql::expr::eval(e, &crate::sql::expr::Env::bare(&NoSession))?
        }
        Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("current_timestamp") => {
            return Err(SqlError::unsupported(format!(
                "DEFAULT CURRENT_TIMESTAMP (column '{column}')"
            )));
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "DEFAULT {other} (column '{column}')"
            )));
        }
    };
    if v == Value::Null {
        return Ok(None);
    }
    // The default must fit its column, checked once here (MySQL: 1067 Invalid default value).
    ty.coerce(v.clone(), column).map_err(|_| {
        SqlError::new(
            1067,
            "42000",
            format!("Invalid default value for '{column}'"),
        )
    })?;
    Ok(Some(String::from_utf8_lossy(&to_bytes(&v)).into_owned()))
}

/// A session that answers nothing (constant expressions in DDL).
struct NoSession;

impl crate::sql::expr::SessionView for NoSession {
    fn variable(&self, _: &str) -> Option<Value> {
        None
    }
    fn user_variable(&self, _: &str) -> Value {
        Value::Null
    }
    fn current_database(&self) -> Option<String> {
        None
    }
    fn user(&self) -> String {
        String::new()
    }
    fn connection_id(&self) -> u32 {
        0
    }
    fn last_insert_id(&self) -> u64 {
        0
    }
}

/// CREATE TABLE.
///
/// # Errors
/// 1050 when it exists, 1049 unknown database, 1235 unsupported definitions.
pub(crate) fn create_table(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    ct: &CreateTable,
) -> Result<u64, SqlError> {
    let (_, name) = split_name(&ct.name);
    if ct.query.is_some() || ct.like.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE ... SELECT / LIKE"));
    }
    let mut table = TableDef {
        id: 0,
        db: db.to_owned(),
        name: name.clone(),
        columns: Vec::new(),
        handle_column: None,
        indexes: Vec::new(),
        next_index_id: 1,
    };
    let mut primary: Option<Vec<usize>> = None;
    let mut uniques: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    let mut keys: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let ty = sql_type(&c.data_type, &c.name.value)?;
        if table.column(&c.name.value).is_some() {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{}'", c.name.value),
            ));
        }
        let mut col = ColumnDef {
            id: u32::try_from(i + 1).unwrap_or(u32::MAX),
            name: c.name.value.clone(),
            ty,
            nullable: true,
            default: None,
            auto_increment: false,
        };
        for o in &c.options {
            match &o.option {
                ColumnOption::Null => col.nullable = true,
                ColumnOption::NotNull => col.nullable = false,
                ColumnOption::Default(e) => col.default = default_text(e, &col.name, ty)?,
                ColumnOption::PrimaryKey(_) => {
                    col.nullable = false;
                    primary = Some(vec![i]);
                }
                ColumnOption::Unique(_) => uniques.push((Some(col.name.clone()), vec![i])),
                ColumnOption::DialectSpecific(tokens)
                    if tokens
                        .iter()
                        .any(|t| t.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
                {
                    col.auto_increment = true;
                }
                ColumnOption::CharacterSet(_)
                | ColumnOption::Collation(_)
                | ColumnOption::Comment(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        table.columns.push(col);
    }
    for con in &ct.constraints {
        match con {
            TableConstraint::PrimaryKey(pk) => primary = Some(index_columns(&table, &pk.columns)?),
            TableConstraint::Unique(u) => uniques.push((
                u.index_name.as_ref().map(|n| n.value.clone()),
                index_columns(&table, &u.columns)?,
            )),
            TableConstraint::Index(ix) => keys.push((
                ix.name.as_ref().map(|n| n.value.clone()),
                index_columns(&table, &ix.columns)?,
            )),
            other => return Err(SqlError::unsupported(format!("table constraint {other}"))),
        }
    }
    if table.columns.iter().filter(|c| c.auto_increment).count() > 1 {
        return Err(SqlError::new(
            1075,
            "42000",
            "Incorrect table definition; there can be only one auto column and it must be defined as a key",
        ));
    }
    if let Some(pk) = primary {
        for &c in &pk {
            table.columns[c].nullable = false;
        }
        match pk.as_slice() {
            [c] if table.columns[*c].ty.is_int() => table.handle_column = Some(*c),
            _ => {
                table.indexes.push(IndexDef {
                    id: table.next_index_id,
                    name: "PRIMARY".into(),
                    columns: pk,
                    unique: true,
                    primary: true,
                });
                table.next_index_id += 1;
            }
        }
    }
    for (unique, list) in [(true, uniques), (false, keys)] {
        for (name, cols) in list {
            let name = name.unwrap_or_else(|| table.columns[cols[0]].name.clone());
            if table
                .indexes
                .iter()
                .any(|i| i.name.eq_ignore_ascii_case(&name))
            {
                return Err(SqlError::new(
                    1061,
                    "42000",
                    format!("Duplicate key name '{name}'"),
                ));
            }
            table.indexes.push(IndexDef {
                id: table.next_index_id,
                name,
                columns: cols,
                unique,
                primary: false,
            });
            table.next_index_id += 1;
        }
    }
    if let Some(a) = table.auto_increment() {
        let keyed = table.handle_column == Some(a)
            || table.indexes.iter().any(|i| i.columns.first() == Some(&a));
        if !keyed || !table.columns[a].ty.is_int() {
            return Err(SqlError::new(
                1075,
                "42000",
                "Incorrect table definition; there can be only one auto column and it must be defined as a key",
            ));
        }
    }
    let mut c = begin(client, Some(log))?;
    if !c.db_exists(db)? {
        return Err(SqlError::new(
            1049,
            "42000",
            format!("Unknown database '{db}'"),
        ));
    }
    if c.table(db, &name)?.is_some() {
        if ct.if_not_exists {
            return Ok(0);
        }
        return Err(SqlError::new(
            1050,
            "42S01",
            format!("Table '{name}' already exists"),
        ));
    }
    let first_id = auto_increment_option(ct)?;
    table.id = c.next_table_id()?;
    c.put_table(&table)?;
    if let Some(n) = first_id.filter(|n| *n > 1) {
        c.put_autoinc(table.id, n)?;
    }
    c.commit()?;
    Ok(0)
}

/// The table option `AUTO_INCREMENT [=] n` of `ct`: the first id the table hands out (0 and
/// 1 both mean 1, as in MySQL). Other table options (ENGINE, CHARSET, ...) change nothing
/// here and are ignored.
///
/// # Errors
/// 1235 for a value that is not a non-negative integer.
fn auto_increment_option(ct: &CreateTable) -> Result<Option<i64>, SqlError> {
    let options = match &ct.table_options {
        CreateTableOptions::Plain(o)
        | CreateTableOptions::With(o)
        | CreateTableOptions::Options(o) => o.as_slice(),
        _ => &[],
    };
    for o in options {
        if let SqlOption::KeyValue { key, value } = o
            && key.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")
        {
            let n = match value {
                Expr::Value(v) => literal(&v.value).ok(),
                _ => None,
            };
            return match n.as_ref().and_then(crate::sql::types::to_integer) {
                Some(n) if n >= 0 => Ok(Some(i64::try_from(n).unwrap_or(i64::MAX))),
                _ => Err(SqlError::unsupported(format!("AUTO_INCREMENT = {value}"))),
            };
        }
    }
    Ok(None)
}

fn lookup(c: &mut CatalogTxn, db: &str, name: &str) -> Result<TableDef, SqlError> {
    c.table(db, name)?
        .ok_or_else(|| SqlError::new(1146, "42S02", format!("Table '{db}.{name}' doesn't exist")))
}

/// CREATE [UNIQUE] INDEX: adds the index, then backfills it from the rows in batches. A
/// duplicate found by the backfill of a unique index removes the index again (1062).
///
/// # Errors
/// 1146 unknown table, 1061 duplicate index name, 1062 duplicates under a unique index.
pub(crate) fn create_index(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    ci: &CreateIndex,
) -> Result<TableDef, SqlError> {
    let (_, table_name) = split_name(&ci.table_name);
    let mut c = begin(client, Some(log))?;
    let mut table = lookup(&mut c, db, &table_name)?;
    let name = match &ci.name {
        Some(n) => split_name(n).1,
        None => return Err(SqlError::parse("CREATE INDEX needs an index name")),
    };
    if table
        .indexes
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(&name))
    {
        if ci.if_not_exists {
            return Ok(table);
        }
        return Err(SqlError::new(
            1061,
            "42000",
            format!("Duplicate key name '{name}'"),
        ));
    }
    let index = IndexDef {
        id: table.next_index_id,
        name,
        columns: index_columns(&table, &ci.columns)?,
        unique: ci.unique,
        primary: false,
    };
    table.next_index_id += 1;
    table.indexes.push(index.clone());
    c.put_table(&table)?;
    c.commit()?;
    if let Err(e) = backfill(client, &table, &index) {
        // Take the index out again, and what the backfill wrote of it.
        let mut c = begin(client, None)?;
        if let Some(mut t) = c.table(db, &table_name)? {
            t.indexes.retain(|i| i.id != index.id);
            c.put_table(&t)?;
            c.commit()?;
        }
        delete_range(client, &crate::sql::codec::index_prefix(table.id, index.id))?;
        return Err(e);
    }
    Ok(table)
}

fn backfill(client: &TxnClient, table: &TableDef, index: &IndexDef) -> Result<(), SqlError> {
    let start = row_prefix(table.id);
    let end = row_prefix_end(table.id);
    let mut from = start;
    loop {
        let mut txn = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| from_txn(&e))?;
        super::binlog::silence(&mut txn)?;
        let pairs = txn
            .scan(&from, Some(&end), BATCH)
            .map_err(|e| from_txn(&e))?;
        let Some((last, _)) = pairs.last() else {
            return Ok(());
        };
        from = last.clone();
        from.push(0);
        for (k, v) in &pairs {
            let handle = super::rows::handle_of_row_key(k)?;
            let row = decode_row(table, v).map_err(|e| SqlError::internal(e.to_string()))?;
            let (key, value, unique) = index_entry(table, index, handle, &row);
            insert_index_entries(&mut txn, table, index, key, value, unique, &row)?;
        }
        txn.commit().map_err(|e| from_txn(&e))?;
    }
}

/// DROP TABLE: removes the definition, then the rows in batches.
///
/// # Errors
/// 1051 unknown table (without IF EXISTS).
pub(crate) fn drop_table(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    name: &str,
    if_exists: bool,
) -> Result<Option<i64>, SqlError> {
    let mut c = begin(client, Some(log))?;
    let Some(table) = c.table(db, name)? else {
        if if_exists {
            return Ok(None);
        }
        return Err(SqlError::new(
            1051,
            "42S02",
            format!("Unknown table '{db}.{name}'"),
        ));
    };
    c.delete_table(&table)?;
    c.commit()?;
    delete_range(client, &table_prefix(table.id))?;
    Ok(Some(table.id))
}

/// TRUNCATE: the table gets a new id (so its old keys are unreachable at once), then the
/// old rows are deleted in batches.
///
/// # Errors
/// 1146 unknown table.
pub(crate) fn truncate(
    client: &TxnClient,
    log: &DdlLog,
    db: &str,
    name: &str,
) -> Result<i64, SqlError> {
    let mut c = begin(client, Some(log))?;
    let mut table = lookup(&mut c, db, name)?;
    let old = table.id;
    c.delete_table(&table)?;
    table.id = c.next_table_id()?;
    c.put_table(&table)?;
    c.commit()?;
    delete_range(client, &table_prefix(old))?;
    Ok(old)
}
