//! Hot-row updates as AliSQL groups them: with `SET GLOBAL hotspot=ON`, a single-row UPDATE
//! by primary key carrying `commit_on_success` (or any autocommit one with
//! `hotspot_for_autocommit=ON`) runs through the transaction client's grouped hot update
//! ([`surge_txn::TxnClient::hot_update_row`]): concurrent updates of one row queue, and a
//! leader applies them all under one lock and one commit. The statement's SET clause is
//! the [`RowUpdate`] applied to the row's bytes. A hint-less UPDATE of the same row takes
//! the ordinary locked path.
//!
//! Only statements whose effect stays within the row's key qualify: no index column and no
//! primary key assigned, WHERE exactly `pk = constant` with a constant an integer equals,
//! no ORDER BY, no LIMIT below 1, no open transaction. The others run the ordinary way
//! with the hints' meaning kept.

use std::sync::Arc;

use sqlparser::ast::{BinaryOperator, Expr, TableFactor, Update};
use surge_txn::{BinlogRow, BinlogTable, HotHints, HotReject, RowUpdate, SqlRowChange, TxnError};

use super::access::exact_int;
use super::binlog::binlog_value;
use super::hints::Hints;
use super::modify::limit_of;
use super::rows::decode;
use super::session::Session;
use super::vars::is_on;
use crate::sql::catalog::TableDef;
use crate::sql::codec::{encode_row, row_key};
use crate::sql::expr::{Env, SessionView, eval};
use crate::sql::output::{Output, SqlError};
use crate::sql::txn_error::from_txn;
use crate::sql::value::Value;

/// What the SET clause may ask of its session, copied (the update may run on the group
/// leader's thread).
#[derive(Debug, Clone)]
struct Snapshot {
    db: Option<String>,
    user: String,
    conn: u32,
    last_insert_id: u64,
    vars: Vec<(String, Value)>,
}

impl SessionView for Snapshot {
    fn variable(&self, name: &str) -> Option<Value> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn user_variable(&self, name: &str) -> Value {
        self.variable(&format!("@{name}")).unwrap_or(Value::Null)
    }
    fn current_database(&self) -> Option<String> {
        self.db.clone()
    }
    fn user(&self) -> String {
        self.user.clone()
    }
    fn connection_id(&self) -> u32 {
        self.conn
    }
    fn last_insert_id(&self) -> u64 {
        self.last_insert_id
    }
}

/// One UPDATE's SET clause over a row's bytes.
#[derive(Debug)]
struct SqlRowUpdate {
    table: Arc<TableDef>,
    assigns: Vec<(usize, Expr)>,
    view: Snapshot,
    binlog: Option<Arc<BinlogTable>>,
}

fn refused(e: SqlError) -> HotReject {
    HotReject::Refused {
        code: e.code,
        message: e.message,
    }
}

impl SqlRowUpdate {
    fn new_row(&self, old: &[Value]) -> Result<Vec<Value>, SqlError> {
        let t = &self.table;
        let mut new = old.to_vec();
        for (pos, e) in &self.assigns {
            let env = Env {
                table: Some(t),
                row: &new,
                ..Env::bare(&self.view)
            };
            let v = t.columns[*pos]
                .ty
                .coerce(eval(e, &env)?, &t.columns[*pos].name)?;
            if v == Value::Null && !t.columns[*pos].nullable {
                return Err(SqlError::new(
                    1048,
                    "23000",
                    format!("Column '{}' cannot be null", t.columns[*pos].name),
                ));
            }
            new[*pos] = v;
        }
        Ok(new)
    }
}

impl RowUpdate for SqlRowUpdate {
    fn apply(&self, current: &[u8]) -> Result<Vec<u8>, HotReject> {
        let old = decode(&self.table, current).map_err(refused)?;
        let new = self.new_row(&old).map_err(refused)?;
        Ok(encode_row(self.table.column_ids(), &new))
    }

    fn binlog(&self, before: &[u8], after: &[u8]) -> Option<BinlogRow> {
        let table = self.binlog.clone()?;
        let image = |b: &[u8]| -> Option<Vec<surge_txn::BinlogValue>> {
            let row = decode(&self.table, b).ok()?;
            Some(
                self.table
                    .columns
                    .iter()
                    .zip(&row)
                    .map(|(c, v)| binlog_value(c.ty, v))
                    .collect(),
            )
        };
        Some(BinlogRow {
            table,
            change: SqlRowChange::Update {
                before: image(before)?,
                after: image(after)?,
            },
        })
    }
}

fn state_of(code: u16) -> &'static str {
    match code {
        1264 | 1690 => "22003",
        1048 => "23000",
        1406 => "22001",
        _ => "HY000",
    }
}

/// The handle of a WHERE that is exactly `pk = constant`.
fn point(t: &TableDef, selection: Option<&Expr>, s: &Session) -> Option<i64> {
    let h = t.handle_column?;
    let Some(Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    }) = selection
    else {
        return None;
    };
    let is_pk = |e: &Expr| matches!(e, Expr::Identifier(id) if t.column(&id.value) == Some(h));
    let value = if is_pk(left) {
        right
    } else if is_pk(right) {
        left
    } else {
        return None;
    };
    if !matches!(value.as_ref(), Expr::Value(_)) {
        return None;
    }
    let v = eval(value, &s.env()).ok()?;
    // Only the one integer equal to the value: `id = 2.5` matches no row (the ordinary path
    // says so), not the row 3 it rounds to.
    exact_int(&v)
}

/// A hot update's answer and the row it wrote (for SELECT ... FROM UPDATE).
pub(crate) type HotResult = (Output, Vec<Vec<Value>>);

/// Runs `u` as a grouped hot-row update when it qualifies (see the module docs); `None`
/// when it does not, and the caller runs it the ordinary way.
///
/// # Errors
/// The statement's failure: 7532 for `target_affect_row`, the SET clause's own errors,
/// lock and commit failures.
pub(crate) fn try_hot_update(
    s: &mut Session,
    u: &Update,
    hints: Hints,
) -> Result<Option<HotResult>, SqlError> {
    let (hotspot, for_autocommit) = {
        let g = s.shared.globals.lock();
        (
            is_on(g.get("hotspot")),
            is_on(g.get("hotspot_for_autocommit")),
        )
    };
    if !hotspot || !(hints.commit_on_success || for_autocommit) {
        return Ok(None);
    }
    if s.in_txn()
        || !s.autocommit_on()
        || !u.order_by.is_empty()
        || u.from.is_some()
        || u.returning.is_some()
    {
        return Ok(None);
    }
    // The group update changes its one row: a LIMIT is that only when it is at least 1
    // (a bad one goes the ordinary way, which reports it).
    if !matches!(limit_of(s, u.limit.as_ref()), Ok(None | Some(1..))) {
        return Ok(None);
    }
    if !u.table.joins.is_empty() {
        return Ok(None);
    }
    let TableFactor::Table { name, .. } = &u.table.relation else {
        return Ok(None);
    };
    let schema = s.schema()?;
    let t = s.table(&schema, name)?;
    let mut assigns = Vec::new();
    for a in &u.assignments {
        let col = a.target.to_string();
        let col = col
            .rsplit('.')
            .next()
            .unwrap_or(&col)
            .trim_matches('`')
            .to_owned();
        let Some(pos) = t.column(&col) else {
            return Ok(None); // the ordinary path reports 1054
        };
        if t.handle_column == Some(pos) || t.indexes.iter().any(|i| i.columns.contains(&pos)) {
            return Ok(None);
        }
        crate::sql::expr::check_columns(&a.value, Some(&t), &[], "field list")?;
        assigns.push((pos, a.value.clone()));
    }
    let Some(handle) = point(&t, u.selection.as_ref(), s) else {
        return Ok(None);
    };
    let vars = if assigns.iter().any(|(_, e)| e.to_string().contains('@')) {
        let globals = s.shared.globals.lock().clone();
        let mut v: Vec<(String, Value)> = globals.into_iter().collect();
        v.extend(s.user_vars_snapshot());
        v
    } else {
        Vec::new()
    };
    let binlog = match s.shared.client.binlog() {
        Some(_) => Some(s.shared.binlog_table(&t)?),
        None => None,
    };
    let update = SqlRowUpdate {
        table: t.clone(),
        assigns,
        view: Snapshot {
            db: s.current_database(),
            user: s.user(),
            conn: s.connection_id(),
            last_insert_id: s.last_insert_id(),
            vars,
        },
        binlog,
    };
    let mut hot = HotHints::new();
    if hints.commit_on_success || for_autocommit {
        hot = hot.commit_on_success();
    }
    if hints.rollback_on_fail {
        hot = hot.rollback_on_fail();
    }
    if let Some(n) = hints.target_affect_row {
        hot = hot.target_affect_row(n);
    }
    let outcome = s
        .shared
        .client
        .hot_update_row(&row_key(t.id, handle), Arc::new(update), hot)
        .map_err(|e| match e {
            TxnError::TargetAffectRow {
                expected, actual, ..
            } => SqlError::new(
                7532,
                "HY000",
                format!("Inventory conditional hints didn't match with result: target_affect_row({expected}), {actual} rows affected"),
            ),
            TxnError::HotUpdateRejected {
                reason: HotReject::Refused { code, message },
                ..
            } if code != 0 => SqlError::new(code, state_of(code), message),
            other => from_txn(&other),
        })?;
    let rows = match &outcome.after {
        Some(b) => vec![decode(&t, b)?],
        None => Vec::new(),
    };
    let n = outcome.affected_rows;
    Ok(Some((
        Output::Done {
            affected_rows: n,
            last_insert_id: 0,
            warnings: 0,
            info: format!("Rows matched: {n}  Changed: {n}  Warnings: 0"),
        },
        rows,
    )))
}
