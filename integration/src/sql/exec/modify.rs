//! UPDATE and DELETE: by key, by index or by scan, with ORDER BY and LIMIT; each row is
//! read with a locking current read (pessimistic) and the WHERE clause checked again on
//! it. A scan streams: only the transaction's write set grows.

use std::cmp::Ordering;

use sqlparser::ast::{
    Delete, Expr, FromTable, OrderByExpr, Select, TableFactor, TableWithJoins, Update,
};
use surge_txn::{Transaction, TxnMode};

use super::access::{Access, RowLocks, for_each_row, plan};
use super::binlog::RowLog;
use super::hints::Hints;
use super::insert::handle_for_update;
use super::rows::{delete_row, index_entry, read_row, update_row};
use super::session::Session;
use crate::sql::catalog::TableDef;
use crate::sql::expr::{Env, check_columns, compare, eval, truthy};
use crate::sql::output::{Output, SqlError};
use crate::sql::txn_error::from_txn;
use crate::sql::value::Value;

/// Called with each row to change (transaction, handle, locked current row).
type RowAction<'a> = dyn FnMut(&mut Transaction, i64, Vec<Value>) -> Result<(), SqlError> + 'a;

fn single_table(s: &Session, twj: &TableWithJoins) -> Result<std::sync::Arc<TableDef>, SqlError> {
    if !twj.joins.is_empty() {
        return Err(SqlError::unsupported("multi-table UPDATE/DELETE"));
    }
    match &twj.relation {
        TableFactor::Table { name, .. } => {
            let schema = s.schema()?;
            s.table(&schema, name)
        }
        other => Err(SqlError::unsupported(format!("UPDATE/DELETE of {other}"))),
    }
}

fn single_table_in(
    s: &Session,
    schema: &crate::sql::catalog::cache::Schema,
    twj: &TableWithJoins,
) -> Result<std::sync::Arc<TableDef>, SqlError> {
    match &twj.relation {
        TableFactor::Table { name, .. } => s.table(schema, name),
        other => Err(SqlError::unsupported(format!("UPDATE of {other}"))),
    }
}

pub(super) fn limit_of(s: &Session, limit: Option<&Expr>) -> Result<Option<u64>, SqlError> {
    limit
        .map(|e| match eval(e, &s.env())? {
            Value::Int(i) if i >= 0 => Ok(i.unsigned_abs()),
            Value::UInt(u) => Ok(u),
            other => Err(SqlError::parse(format!(
                "LIMIT needs a non-negative integer, not {other:?}"
            ))),
        })
        .transpose()
}

/// Visits the rows a WHERE selects, at most `limit`, in ORDER BY order when given; each
/// row is the locked current version, already filtered.
#[allow(clippy::too_many_arguments)] // the parts of one UPDATE/DELETE
fn visit(
    txn: &mut Transaction,
    s: &Session,
    t: &TableDef,
    access: &Access,
    selection: Option<&Expr>,
    order_by: &[OrderByExpr],
    limit: Option<u64>,
    collect_first: bool,
    f: &mut RowAction<'_>,
) -> Result<u64, SqlError> {
    let lock = s.mode == TxnMode::Pessimistic;
    let matches = |row: &[Value]| -> Result<bool, SqlError> {
        match selection {
            None => Ok(true),
            Some(w) => Ok(truthy(&eval(
                w,
                &Env {
                    table: Some(t),
                    row,
                    ..s.env()
                },
            )?) == Some(true)),
        }
    };
    let mut matched = 0u64;
    if order_by.is_empty() {
        // Rows are locked in batches only when the statement visits every row it reads.
        let locks = match (lock, limit) {
            (false, _) => RowLocks::None,
            (true, Some(_)) => RowLocks::OneByOne,
            (true, None) => RowLocks::Batched,
        };
        for_each_row(txn, t, access, locks, collect_first, &mut |txn, h, row| {
            if limit.is_some_and(|l| matched >= l) {
                return Ok(false);
            }
            if !matches(&row)? {
                return Ok(true);
            }
            matched += 1;
            f(txn, h, row)?;
            Ok(limit.is_none_or(|l| matched < l))
        })?;
        return Ok(matched);
    }
    // ORDER BY: find and sort the candidates first (a snapshot read), then lock each.
    let mut found: Vec<(Vec<Value>, i64)> = Vec::new();
    for_each_row(txn, t, access, RowLocks::None, false, &mut |_, h, row| {
        if matches(&row)? {
            let env = Env {
                table: Some(t),
                row: &row,
                ..s.env()
            };
            let keys = order_by
                .iter()
                .map(|o| eval(&o.expr, &env))
                .collect::<Result<Vec<_>, _>>()?;
            found.push((keys, h));
        }
        Ok(true)
    })?;
    found.sort_by(|a, b| {
        for (i, o) in order_by.iter().enumerate() {
            let ord = match (&a.0[i], &b.0[i]) {
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Less,
                (_, Value::Null) => Ordering::Greater,
                (x, y) => compare(x, y).unwrap_or(Ordering::Equal),
            };
            let ord = if matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc)) {
                ord.reverse()
            } else {
                ord
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    });
    for (_, h) in found {
        if limit.is_some_and(|l| matched >= l) {
            break;
        }
        if let Some(row) = read_row(txn, t, h, lock)?
            && matches(&row)?
        {
            matched += 1;
            f(txn, h, row)?;
        }
    }
    Ok(matched)
}

/// Runs an UPDATE with its inventory hints; also returns the updated rows when `returning`
/// (SELECT ... FROM UPDATE) asks for them.
///
/// # Errors
/// As the statement fails; 7532 when `target_affect_row` is not met.
pub(crate) fn update_with_hints(
    s: &mut Session,
    u: &Update,
    hints: Hints,
    returning: Option<&Select>,
) -> Result<(Output, Vec<Vec<Value>>), SqlError> {
    if u.from.is_some() || u.returning.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM / RETURNING"));
    }
    if let Some((out, rows)) = super::hot::try_hot_update(s, u, hints)? {
        return match returning {
            Some(sel) => {
                let schema = s.schema()?;
                let t = single_table_in(s, &schema, &u.table)?;
                Ok((super::select::project_row(s, sel, &t, &rows)?, rows))
            }
            None => Ok((out, rows)),
        };
    }
    let t = single_table(s, &u.table)?;
    let mut assigns = Vec::new();
    for a in &u.assignments {
        let name = a.target.to_string();
        let name = name
            .rsplit('.')
            .next()
            .unwrap_or(&name)
            .trim_matches('`')
            .to_owned();
        let pos = t.column(&name).ok_or_else(|| {
            SqlError::new(
                1054,
                "42S22",
                format!("Unknown column '{name}' in 'field list'"),
            )
        })?;
        assigns.push((pos, a.value.clone()));
    }
    let limit = limit_of(s, u.limit.as_ref())?;
    for (_, e) in &assigns {
        check_columns(e, Some(&t), &[], "field list")?;
    }
    if let Some(w) = &u.selection {
        check_columns(w, Some(&t), &[], "where clause")?;
    }
    let access = plan(&t, u.selection.as_ref(), &s.env());
    let moves_handle = t
        .handle_column
        .is_some_and(|h| assigns.iter().any(|(p, _)| *p == h));
    let want_rows = returning.is_some();
    let result = s.with_txn(|txn, s| {
        let mut log = RowLog::new(s, &t)?;
        let mut changed = 0u64;
        let mut rows = Vec::new();
        let mut pending: Vec<(i64, Vec<Value>, Vec<Value>)> = Vec::new();
        let matched = visit(
            txn,
            s,
            &t,
            &access,
            u.selection.as_ref(),
            &u.order_by,
            limit,
            moves_handle,
            &mut |txn, h, old| {
                let mut new = old.clone();
                for (pos, e) in &assigns {
                    // Later assignments see earlier ones, as MySQL's single-table UPDATE.
                    let v = eval(
                        e,
                        &Env {
                            table: Some(&t),
                            row: &new,
                            ..s.env()
                        },
                    )?;
                    new[*pos] = t.columns[*pos].ty.coerce(v, &t.columns[*pos].name)?;
                    if new[*pos] == Value::Null && !t.columns[*pos].nullable {
                        return Err(SqlError::new(
                            1048,
                            "23000",
                            format!("Column '{}' cannot be null", t.columns[*pos].name),
                        ));
                    }
                }
                if new != old {
                    let nh = handle_for_update(&t, h, &new)?;
                    s.wrote.set(true);
                    changed += 1;
                    if nh == h {
                        if want_rows {
                            rows.push(new.clone());
                        }
                        pending.push((h, old, new));
                        if pending.len() >= UPDATE_BATCH {
                            apply_updates(txn, &t, &mut pending, &mut log)?;
                        }
                        return Ok(());
                    }
                    apply_updates(txn, &t, &mut pending, &mut log)?;
                    update_row(txn, &t, h, nh, &old, &new)?;
                    log.update(txn, &old, &new)?;
                }
                if want_rows {
                    rows.push(new);
                }
                Ok(())
            },
        )?;
        apply_updates(txn, &t, &mut pending, &mut log)?;
        log.flush(txn)?;
        hints.check(changed)?;
        Ok((matched, changed, rows))
    });
    let (matched, changed, rows) = match result {
        Ok(r) => r,
        Err(e) => {
            if hints.rollback_on_fail {
                s.finish_txn(false)?;
            }
            return Err(e);
        }
    };
    if hints.commit_on_success {
        s.finish_txn(true)?;
    }
    let out = Output::Done {
        affected_rows: changed,
        last_insert_id: 0,
        warnings: 0,
        info: format!("Rows matched: {matched}  Changed: {changed}  Warnings: 0"),
    };
    match returning {
        Some(sel) => Ok((super::select::project_row(s, sel, &t, &rows)?, rows)),
        None => Ok((out, rows)),
    }
}

/// Rows an UPDATE changes in place, applied together ([`apply_updates`]).
const UPDATE_BATCH: usize = 256;

/// Applies `pending` in-place row updates (handle unchanged) in their order, after locking
/// the index entries they delete or write in one request per region
/// ([`Transaction::batch_get_for_update`]) rather than one round trip per entry. Unique
/// entries are written with their own existence check ([`insert_index_entries`]), as
/// before.
///
/// # Errors
/// As the writes fail.
fn apply_updates(
    txn: &mut Transaction,
    t: &TableDef,
    pending: &mut Vec<(i64, Vec<Value>, Vec<Value>)>,
    log: &mut RowLog,
) -> Result<(), SqlError> {
    if pending.is_empty() {
        return Ok(());
    }
    let mut keys = Vec::new();
    for (h, old, new) in pending.iter() {
        for index in &t.indexes {
            if t.index_values(index, old) == t.index_values(index, new) {
                continue;
            }
            keys.push(index_entry(t, index, *h, old).0);
            let (key, _, unique) = index_entry(t, index, *h, new);
            if !unique {
                keys.push(key);
            }
        }
    }
    if keys.len() > 1 {
        txn.lock_keys_for_write(&keys).map_err(|e| from_txn(&e))?;
    }
    for (h, old, new) in pending.drain(..) {
        update_row(txn, t, h, h, &old, &new)?;
        log.update(txn, &old, &new)?;
    }
    Ok(())
}

/// Runs a DELETE.
///
/// # Errors
/// As the statement fails.
pub(crate) fn delete(s: &mut Session, d: &Delete) -> Result<Output, SqlError> {
    if !d.tables.is_empty() || d.using.is_some() || d.returning.is_some() {
        return Err(SqlError::unsupported(
            "multi-table DELETE / USING / RETURNING",
        ));
    }
    let from = match &d.from {
        FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
    };
    let [twj] = from.as_slice() else {
        return Err(SqlError::unsupported("multi-table DELETE"));
    };
    let t = single_table(s, twj)?;
    let limit = limit_of(s, d.limit.as_ref())?;
    if let Some(w) = &d.selection {
        check_columns(w, Some(&t), &[], "where clause")?;
    }
    let access = plan(&t, d.selection.as_ref(), &s.env());
    let (hints, _) = Hints::parse(&d.optimizer_hints);
    let result = s.with_txn(|txn, s| {
        let mut log = RowLog::new(s, &t)?;
        let n = visit(
            txn,
            s,
            &t,
            &access,
            d.selection.as_ref(),
            &d.order_by,
            limit,
            false,
            &mut |txn, h, row| {
                s.wrote.set(true);
                delete_row(txn, &t, h, &row)?;
                log.delete(txn, &row)
            },
        )?;
        log.flush(txn)?;
        hints.check(n)?;
        Ok(n)
    });
    let n = match result {
        Ok(n) => n,
        Err(e) => {
            if hints.rollback_on_fail {
                s.finish_txn(false)?;
            }
            return Err(e);
        }
    };
    if hints.commit_on_success {
        s.finish_txn(true)?;
    }
    Ok(Output::done(n))
}
