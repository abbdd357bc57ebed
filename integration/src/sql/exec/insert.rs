//! INSERT (multi-row, column lists, DEFAULT, AUTO_INCREMENT, IGNORE, ON DUPLICATE KEY
//! UPDATE) and REPLACE.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    Insert, InsertAliases, ObjectName, OnInsert, SetExpr, TableObject, visit_expressions_mut,
};
use surge_txn::Transaction;

use super::binlog::RowLog;
use super::rows::{
    delete_row, duplicate, handle_of_index_entry, index_entry, insert_row, read_row, update_row,
};
use super::session::Session;
use crate::sql::catalog::TableDef;
use crate::sql::expr::{Env, eval};
use crate::sql::output::{Output, SqlError};
use crate::sql::txn_error::from_txn;
use crate::sql::types::to_integer;
use crate::sql::value::Value;

fn is_default(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// The handle `row` goes to (the integer primary key, else a new hidden row id).
pub(crate) fn handle_for(s: &Session, t: &TableDef, row: &[Value]) -> Result<i64, SqlError> {
    match t.handle_column {
        Some(c) => match &row[c] {
            Value::Int(i) => Ok(*i),
            Value::UInt(u) => i64::try_from(*u).map_err(|_| {
                SqlError::unsupported(format!(
                    "primary key value {u} above 2^63-1 in table {}",
                    t.name
                ))
            }),
            other => Err(SqlError::internal(format!(
                "primary key of {} is not an integer: {other:?}",
                t.name
            ))),
        },
        None => s.shared.ids.next(t.id),
    }
}

/// Fills in one row from the given column values: defaults, AUTO_INCREMENT, type checks.
/// Returns the row and the id generated for it, if any.
fn build_row(
    s: &Session,
    t: &TableDef,
    given: &[(usize, Option<Value>)],
) -> Result<(Vec<Value>, Option<i64>), SqlError> {
    let mut row = vec![None; t.columns.len()];
    for (pos, v) in given {
        row[*pos] = Some(v.clone());
    }
    let mut out = Vec::with_capacity(t.columns.len());
    let mut generated = None;
    for (i, c) in t.columns.iter().enumerate() {
        // None: not given or DEFAULT.
        let v = match row[i].take().flatten() {
            Some(v) => c.ty.coerce(v, &c.name)?,
            None => match &c.default {
                Some(d) => c.ty.coerce(Value::Bytes(d.clone().into_bytes()), &c.name)?,
                None if c.auto_increment || c.nullable => Value::Null,
                None => {
                    return Err(SqlError::new(
                        1364,
                        "HY000",
                        format!("Field '{}' doesn't have a default value", c.name),
                    ));
                }
            },
        };
        let v = if c.auto_increment {
            let explicit = to_integer(&v).filter(|n| *n != 0);
            match explicit {
                Some(n) => {
                    s.shared
                        .ids
                        .observe(t.id, i64::try_from(n).unwrap_or(i64::MAX))?;
                    v
                }
                None => {
                    let id = s.shared.ids.next(t.id)?;
                    generated = Some(id);
                    c.ty.coerce(Value::Int(id), &c.name)?
                }
            }
        } else {
            v
        };
        if v == Value::Null && !c.nullable {
            return Err(SqlError::new(
                1048,
                "23000",
                format!("Column '{}' cannot be null", c.name),
            ));
        }
        out.push(v);
    }
    Ok((out, generated))
}

/// The handles of rows that `row` (at `handle`) collides with: on the primary key or on a
/// unique index. Locks what it reads (pessimistic), absent keys included.
fn conflicts(
    txn: &mut Transaction,
    t: &TableDef,
    handle: i64,
    row: &[Value],
) -> Result<Vec<i64>, SqlError> {
    let mut out = Vec::new();
    if t.handle_column.is_some() && read_row(txn, t, handle, true)?.is_some() {
        out.push(handle);
    }
    for index in &t.indexes {
        let (key, _, unique) = index_entry(t, index, handle, row);
        if !unique {
            continue;
        }
        if let Some(v) = txn.get_for_update(&key).map_err(|e| from_txn(&e))? {
            let h = handle_of_index_entry(&key, &v)?;
            if !out.contains(&h) {
                out.push(h);
            }
        }
    }
    Ok(out)
}

/// Runs an INSERT or REPLACE.
///
/// # Errors
/// 1062 duplicates, 1054 unknown columns, 1136 column count mismatch, type errors.
pub(crate) fn insert(s: &mut Session, ins: &Insert) -> Result<Output, SqlError> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO a table function"));
    };
    if ins.returning.is_some() {
        return Err(SqlError::unsupported("INSERT ... RETURNING"));
    }
    let schema = s.schema()?;
    let t = s.table(&schema, name)?;
    let columns: Vec<usize> = if ins.columns.is_empty() && ins.assignments.is_empty() {
        (0..t.columns.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| {
                let n = c.to_string();
                let n = n
                    .rsplit('.')
                    .next()
                    .unwrap_or(&n)
                    .trim_matches('`')
                    .to_owned();
                t.column(&n).ok_or_else(|| {
                    SqlError::new(
                        1054,
                        "42S22",
                        format!("Unknown column '{n}' in 'field list'"),
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    let exprs: Vec<Vec<Expr>> = if !ins.assignments.is_empty() {
        vec![ins.assignments.iter().map(|a| a.value.clone()).collect()]
    } else {
        match ins.source.as_ref().map(|q| q.body.as_ref()) {
            Some(SetExpr::Values(v)) => v.rows.iter().map(|r| r.content.clone()).collect(),
            Some(_) => {
                // INSERT ... SELECT: the query runs first (in the session's transaction, or
                // a snapshot of its own in autocommit), its rows become the VALUES.
                let Some(q) = ins.source.as_ref() else {
                    return Err(SqlError::parse("INSERT without VALUES"));
                };
                match super::select::query(s, q)? {
                    Output::Rows { rows, .. } => rows
                        .iter()
                        .map(|r| {
                            r.iter()
                                .map(|v| {
                                    Expr::Value(sqlparser::ast::ValueWithSpan {
                                        value: super::session::to_literal(v),
                                        span: sqlparser::tokenizer::Span::empty(),
                                    })
                                })
                                .collect()
                        })
                        .collect(),
                    Output::Done { .. } => {
                        return Err(SqlError::internal(
                            "INSERT ... SELECT: the query returned no rows",
                        ));
                    }
                }
            }
            None => return Err(SqlError::parse("INSERT without VALUES")),
        }
    };
    let columns: Vec<usize> = if ins.assignments.is_empty() {
        columns
    } else {
        ins.assignments
            .iter()
            .map(|a| {
                let n = a.target.to_string();
                let n = n
                    .rsplit('.')
                    .next()
                    .unwrap_or(&n)
                    .trim_matches('`')
                    .to_owned();
                t.column(&n).ok_or_else(|| {
                    SqlError::new(
                        1054,
                        "42S22",
                        format!("Unknown column '{n}' in 'field list'"),
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    let on_dup = match &ins.on {
        Some(OnInsert::DuplicateKeyUpdate(a)) => Some(
            a.iter()
                .map(|a| {
                    let mut a = a.clone();
                    if let Some(alias) = &ins.insert_alias {
                        inserted_row_refs(&mut a.value, alias, &columns, &t)?;
                    }
                    Ok(a)
                })
                .collect::<Result<Vec<_>, SqlError>>()?,
        ),
        Some(other) => return Err(SqlError::unsupported(format!("INSERT ... {other}"))),
        None => None,
    };
    let replace = ins.replace_into;
    let ignore = ins.ignore;
    let mut warnings: Vec<String> = Vec::new();
    let t2 = t.clone();
    // A multi-row INSERT in autocommit is its own transaction: it runs optimistically,
    // checking every key it adds with one batched read instead of one lock per row; a
    // conflict at commit is retried as any autocommit statement (sysbench's bulk load).
    let bulk = !(replace || ignore || on_dup.is_some())
        && exprs.len() > 1
        && !s.in_txn()
        && s.autocommit_on();
    let mode = bulk.then_some(surge_txn::TxnMode::Optimistic);
    let (affected, first_id, dups) = s.with_txn_mode(mode, |txn, s| {
        warnings.clear();
        let t = &t2;
        let mut log = RowLog::new(s, t)?;
        let (mut affected, mut first_id, mut dups) = (0u64, 0u64, 0u64);
        let mut pending: Vec<(i64, Vec<Value>)> = Vec::new();
        for (n, r) in exprs.iter().enumerate() {
            if r.len() != columns.len() {
                return Err(SqlError::new(
                    1136,
                    "21S01",
                    format!("Column count doesn't match value count at row {}", n + 1),
                ));
            }
            let env = s.env();
            let given = columns
                .iter()
                .zip(r)
                .map(|(c, e)| {
                    Ok((
                        *c,
                        if is_default(e) {
                            None
                        } else {
                            Some(eval(e, &env)?)
                        },
                    ))
                })
                .collect::<Result<Vec<_>, SqlError>>()?;
            let (row, generated) = build_row(s, t, &given)?;
            if let (Some(g), 0) = (generated, first_id) {
                first_id = u64::try_from(g).unwrap_or(0);
            }
            let handle = handle_for(s, t, &row)?;
            if bulk {
                pending.push((handle, row));
                affected += 1;
                continue;
            }
            if !(replace || ignore || on_dup.is_some()) {
                if n > 0 || t.indexes.iter().any(|i| i.unique) {
                    s.wrote.set(true);
                }
                insert_row(txn, t, handle, &row)?;
                s.wrote.set(true);
                log.insert(txn, &row)?;
                affected += 1;
                continue;
            }
            let found = conflicts(txn, t, handle, &row)?;
            if found.is_empty() {
                s.wrote.set(true);
                insert_row(txn, t, handle, &row)?;
                log.insert(txn, &row)?;
                affected += 1;
                continue;
            }
            dups += 1;
            if replace {
                for h in &found {
                    if let Some(old) = read_row(txn, t, *h, true)? {
                        s.wrote.set(true);
                        delete_row(txn, t, *h, &old)?;
                        log.delete(txn, &old)?;
                        affected += 1;
                    }
                }
                insert_row(txn, t, handle, &row)?;
                log.insert(txn, &row)?;
                affected += 1;
            } else if let Some(assignments) = &on_dup {
                let h = found[0];
                let Some(old) = read_row(txn, t, h, true)? else {
                    return Err(SqlError::internal(format!(
                        "row {h} of {} vanished under its lock",
                        t.name
                    )));
                };
                let mut new = old.clone();
                for a in assignments {
                    let col = a.target.to_string();
                    let col = col
                        .rsplit('.')
                        .next()
                        .unwrap_or(&col)
                        .trim_matches('`')
                        .to_owned();
                    let pos = t.column(&col).ok_or_else(|| {
                        SqlError::new(
                            1054,
                            "42S22",
                            format!("Unknown column '{col}' in 'field list'"),
                        )
                    })?;
                    // Later assignments see earlier ones, as in MySQL's UPDATE.
                    let env = Env {
                        table: Some(t),
                        row: &new,
                        inserted: Some(&row),
                        ..s.env()
                    };
                    let v = t.columns[pos].ty.coerce(eval(&a.value, &env)?, &col)?;
                    if v == Value::Null && !t.columns[pos].nullable {
                        return Err(SqlError::new(
                            1048,
                            "23000",
                            format!("Column '{}' cannot be null", t.columns[pos].name),
                        ));
                    }
                    new[pos] = v;
                }
                if new != old {
                    let new_handle = handle_for_update(t, h, &new)?;
                    s.wrote.set(true);
                    update_row(txn, t, h, new_handle, &old, &new)?;
                    log.update(txn, &old, &new)?;
                    affected += 2;
                }
            } else {
                let index = t
                    .indexes
                    .iter()
                    .find(|i| i.unique)
                    .map_or("PRIMARY", |i| i.name.as_str());
                let e = duplicate(
                    t,
                    if found.contains(&handle) && t.handle_column.is_some() {
                        "PRIMARY"
                    } else {
                        index
                    },
                    &[],
                );
                warnings.push(e.message);
            }
        }
        if bulk {
            s.wrote.set(true);
            insert_unlocked(txn, t, &pending)?;
            for (_, row) in &pending {
                log.insert(txn, row)?;
            }
        }
        log.flush(txn)?;
        Ok((affected, first_id, dups))
    })?;
    for w in warnings {
        s.warnings.push(("Warning".into(), 1062, w));
    }
    let info = if exprs.len() > 1 {
        format!(
            "Records: {}  Duplicates: {dups}  Warnings: {}",
            exprs.len(),
            s.warnings.len()
        )
    } else {
        String::new()
    };
    Ok(Output::Done {
        affected_rows: affected,
        last_insert_id: first_id,
        warnings: 0,
        info,
    })
}

/// Rewrites the references to MySQL 8's row alias in an ON DUPLICATE KEY UPDATE value
/// (`INSERT ... VALUES (...) AS new [(c1, ...)]`) as `VALUES(col)`, the row the INSERT
/// tried: `new.col`, and with column aliases `new.c1` or a bare `c1` for the column
/// given in that place. Anything else still names the existing row.
///
/// # Errors
/// 1054 for an alias column that is not there; 1136 when the column aliases do not match
/// the inserted columns; 1235 for a bare column alias that is also the table's column.
fn inserted_row_refs(
    e: &mut Expr,
    alias: &InsertAliases,
    columns: &[usize],
    t: &TableDef,
) -> Result<(), SqlError> {
    let row = alias
        .row_alias
        .0
        .last()
        .map(|p| p.to_string().trim_matches('`').to_owned())
        .unwrap_or_default();
    // sqlparser gives `AS new` an empty column list.
    let col_aliases = alias.col_aliases.as_ref().filter(|c| !c.is_empty());
    if let Some(cols) = col_aliases
        && cols.len() != columns.len()
    {
        return Err(SqlError::new(
            1136,
            "21S01",
            "Column count doesn't match value count at row 1",
        ));
    }
    // The table column a name of the inserted row stands for.
    let column_of = |name: &str| -> Option<usize> {
        match col_aliases {
            Some(cols) => cols
                .iter()
                .position(|c| c.value.eq_ignore_ascii_case(name))
                .map(|i| columns[i]),
            None => t.column(name),
        }
    };
    let unknown = |name: String| {
        SqlError::new(
            1054,
            "42S22",
            format!("Unknown column '{name}' in 'field list'"),
        )
    };
    let flow = visit_expressions_mut(e, |x| {
        let target = match x {
            Expr::CompoundIdentifier(p)
                if p.len() == 2 && p[0].value.eq_ignore_ascii_case(&row) =>
            {
                match column_of(&p[1].value) {
                    Some(c) => c,
                    None => return ControlFlow::Break(unknown(format!("{}.{}", p[0], p[1]))),
                }
            }
            Expr::Identifier(id) if col_aliases.is_some() && !id.value.starts_with('@') => {
                match column_of(&id.value) {
                    // A name both of the table and of the inserted row: refused, not guessed.
                    Some(_) if t.column(&id.value).is_some() => {
                        return ControlFlow::Break(SqlError::unsupported(format!(
                            "a column alias `{}` that also names a column of {}",
                            id.value, t.name
                        )));
                    }
                    Some(c) => c,
                    None => return ControlFlow::Continue(()),
                }
            }
            _ => return ControlFlow::Continue(()),
        };
        *x = values_of(&t.columns[target].name);
        ControlFlow::Continue(())
    });
    match flow {
        ControlFlow::Break(err) => Err(err),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// `VALUES(col)`.
fn values_of(column: &str) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("VALUES")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(
                Expr::Identifier(Ident::new(column)),
            ))],
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// Inserts `rows` (handle, row) in an optimistic transaction: every row key and unique
/// index key is checked absent with one batched read (and against the others of the
/// statement), then all are buffered; a concurrent writer of any of them makes the commit
/// conflict.
///
/// # Errors
/// 1062 naming the first taken key and its index.
fn insert_unlocked(
    txn: &mut Transaction,
    t: &TableDef,
    rows: &[(i64, Vec<Value>)],
) -> Result<(), SqlError> {
    // Each checked key with who wants it: (row, index name).
    let mut owners: std::collections::HashMap<Vec<u8>, (usize, String)> =
        std::collections::HashMap::new();
    let mut writes: Vec<(Vec<u8>, Vec<u8>)> =
        Vec::with_capacity(rows.len() * (1 + t.indexes.len()));
    for (i, (handle, row)) in rows.iter().enumerate() {
        let key = crate::sql::codec::row_key(t.id, *handle);
        if owners.insert(key.clone(), (i, "PRIMARY".into())).is_some() {
            return Err(duplicate(t, "PRIMARY", &[Value::Int(*handle)]));
        }
        writes.push((key, crate::sql::codec::encode_row(t.column_ids(), row)));
        for index in &t.indexes {
            let (k, v, unique) = index_entry(t, index, *handle, row);
            if unique && owners.insert(k.clone(), (i, index.name.clone())).is_some() {
                return Err(duplicate(t, &index.name, &t.index_values(index, row)));
            }
            writes.push((k, v));
        }
    }
    let keys: Vec<Vec<u8>> = owners.keys().cloned().collect();
    let found = txn.batch_get(&keys).map_err(|e| from_txn(&e))?;
    if let Some((k, _)) = found.first() {
        let (i, index) = owners.get(k).cloned().unwrap_or((0, "PRIMARY".into()));
        let (handle, row) = &rows[i];
        let values = match t.indexes.iter().find(|x| x.name == index) {
            Some(ix) => t.index_values(ix, row),
            None => vec![Value::Int(*handle)],
        };
        return Err(duplicate(t, &index, &values));
    }
    for (k, v) in writes {
        txn.put(&k, &v).map_err(|e| from_txn(&e))?;
    }
    Ok(())
}

/// The handle an updated row moves to (its new integer primary key, else where it is).
pub(crate) fn handle_for_update(t: &TableDef, old: i64, row: &[Value]) -> Result<i64, SqlError> {
    match t.handle_column {
        Some(c) => match &row[c] {
            Value::Int(i) => Ok(*i),
            Value::UInt(u) => i64::try_from(*u)
                .map_err(|_| SqlError::unsupported(format!("primary key value {u} above 2^63-1"))),
            _ => Ok(old),
        },
        None => Ok(old),
    }
}
