//! SELECT: one table (or none), WHERE, aggregates with GROUP BY and HAVING, DISTINCT,
//! ORDER BY, LIMIT/OFFSET, FOR UPDATE. Rows are filtered and folded as the scan streams
//! them; only the result is kept.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, LimitClause, NonBlock, Query, Select, SelectItem, SetExpr,
    TableFactor, Value as Lit,
};

use super::access::{RowLocks, for_each_row, plan};
use super::session::Session;
use crate::sql::catalog::TableDef;
use crate::sql::codec::encode_datum;
use crate::sql::column::{ColumnKind, ColumnMeta};
use crate::sql::expr::{
    Accumulator, Env, check_columns, collect_aggregates, compare, eval, truthy, window_functions,
};
use crate::sql::output::{Output, SqlError};
use crate::sql::value::Value;

/// One output column: its expression and name.
struct Item {
    expr: Expr,
    name: String,
    /// The table column it is, if a bare column.
    column: Option<usize>,
}

fn items(select: &Select, table: Option<&TableDef>) -> Result<Vec<Item>, SqlError> {
    let mut out = Vec::new();
    let col = |e: &Expr| match (e, table) {
        (Expr::Identifier(id), Some(t)) if !id.value.starts_with('@') => t.column(&id.value),
        (Expr::CompoundIdentifier(p), Some(t)) => p.last().and_then(|i| t.column(&i.value)),
        _ => None,
    };
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let column = col(e);
                let name = match (column, table) {
                    (Some(c), Some(t)) => t.columns[c].name.clone(),
                    _ => e.to_string(),
                };
                out.push(Item {
                    expr: e.clone(),
                    name,
                    column,
                });
            }
            SelectItem::ExprWithAlias { expr, alias } => out.push(Item {
                expr: expr.clone(),
                name: alias.value.clone(),
                column: col(expr),
            }),
            SelectItem::ExprWithAliases { .. } => {
                return Err(SqlError::unsupported("a select item with several aliases"));
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                let t = table.ok_or_else(|| SqlError::new(1096, "HY000", "No tables used"))?;
                for (i, c) in t.columns.iter().enumerate() {
                    out.push(Item {
                        expr: Expr::Identifier(sqlparser::ast::Ident::new(c.name.clone())),
                        name: c.name.clone(),
                        column: Some(i),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn meta_of_value(name: &str, v: Option<&Value>) -> ColumnMeta {
    let (kind, decimals, unsigned) = match v {
        Some(Value::Int(_)) => (ColumnKind::LongLong, 0, false),
        Some(Value::UInt(_)) => (ColumnKind::LongLong, 0, true),
        Some(Value::Double(_)) => (ColumnKind::Double, 31, false),
        Some(Value::Decimal(d)) => (ColumnKind::NewDecimal, d.scale, false),
        Some(Value::Date { .. }) => (ColumnKind::Date, 0, false),
        Some(Value::DateTime { .. }) => (ColumnKind::DateTime, 0, false),
        Some(Value::Null) => (ColumnKind::Null, 0, false),
        Some(Value::Bytes(_)) | None => (ColumnKind::VarString, 0, false),
    };
    let mut m = ColumnMeta::expr(name, kind);
    m.decimals = decimals;
    m.unsigned = unsigned;
    m.length = match kind {
        ColumnKind::LongLong => 21,
        ColumnKind::Double => 22,
        ColumnKind::NewDecimal => 65,
        _ => 255,
    };
    m
}

/// The table a SELECT reads and its alias.
type FromTable = (std::sync::Arc<TableDef>, Option<String>);

fn table_of(s: &Session, select: &Select) -> Result<Option<FromTable>, SqlError> {
    match select.from.as_slice() {
        [] => Ok(None),
        [twj] if twj.joins.is_empty() => match &twj.relation {
            TableFactor::Table { name, alias, .. } => {
                if name.to_string().eq_ignore_ascii_case("dual") {
                    return Ok(None);
                }
                let schema = s.schema()?;
                let t = s.table(&schema, name)?;
                Ok(Some((t, alias.as_ref().map(|a| a.name.value.clone()))))
            }
            other => Err(SqlError::unsupported(format!("FROM {other}"))),
        },
        _ => Err(SqlError::unsupported("joins")),
    }
}

/// The result columns of `q` without running it (COM_STMT_PREPARE's answer); expression
/// columns are described as strings when their type is only known from a row.
///
/// # Errors
/// Unknown tables and unsupported forms.
pub(crate) fn columns_of(s: &Session, q: &Query) -> Result<Vec<ColumnMeta>, SqlError> {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return Ok(Vec::new());
    };
    let table = table_of(s, select)?;
    let t = table.as_ref().map(|(t, _)| t.as_ref());
    let list = items(select, t)?;
    for it in &list {
        check_columns(&it.expr, t, &[], "field list")?;
    }
    if let Some(w) = &select.selection {
        check_columns(w, t, &[], "where clause")?;
    }
    Ok(list
        .iter()
        .map(|it| match (it.column, &table) {
            (Some(c), Some((t, alias))) => {
                let mut m = t.meta(c, alias.as_deref());
                m.name = it.name.clone();
                m
            }
            _ => {
                let name = it.expr.to_string().to_ascii_lowercase();
                let v = if name.starts_with("count(") {
                    Some(Value::Int(0))
                } else if name.starts_with("sum(") || name.starts_with("avg(") {
                    Some(Value::Decimal(crate::sql::value::Decimal {
                        digits: 0,
                        scale: 0,
                    }))
                } else {
                    None
                };
                meta_of_value(&it.name, v.as_ref())
            }
        })
        .collect())
}

fn limit_of(s: &Session, q: &Query) -> Result<(Option<u64>, u64), SqlError> {
    let num = |e: &Expr| -> Result<u64, SqlError> {
        match eval(e, &s.env())? {
            Value::Int(i) if i >= 0 => Ok(i.unsigned_abs()),
            Value::UInt(u) => Ok(u),
            other => Err(SqlError::parse(format!(
                "LIMIT needs a non-negative integer, not {other:?}"
            ))),
        }
    };
    match &q.limit_clause {
        None => Ok((None, 0)),
        Some(LimitClause::LimitOffset { limit, offset, .. }) => Ok((
            limit.as_ref().map(num).transpose()?,
            offset
                .as_ref()
                .map(|o| num(&o.value))
                .transpose()?
                .unwrap_or(0),
        )),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            Ok((Some(num(limit)?), num(offset)?))
        }
    }
}

/// Sorts `rows` (projected values followed by sort keys) by their keys; NULL first
/// ascending, as MySQL.
fn sort_rows(rows: &mut [(Vec<Value>, Vec<Value>)], desc: &[bool]) {
    rows.sort_by(|a, b| {
        for (i, d) in desc.iter().enumerate() {
            let o = match (&a.1[i], &b.1[i]) {
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Less,
                (_, Value::Null) => Ordering::Greater,
                (x, y) => compare(x, y).unwrap_or(Ordering::Equal),
            };
            let o = if *d { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
}

/// `(inner) ORDER BY ... LIMIT ...` as one query. An inner LIMIT applies before an outer
/// ORDER BY or LIMIT, and an outer ORDER BY replaces an inner one: those are refused rather
/// than merged into a different query.
fn with_outer_clauses(outer: &Query, inner: &Query) -> Result<Query, SqlError> {
    if (inner.order_by.is_some() && outer.order_by.is_some())
        || (inner.limit_clause.is_some()
            && (outer.order_by.is_some() || outer.limit_clause.is_some()))
    {
        return Err(SqlError::unsupported(
            "ORDER BY or LIMIT both inside and outside a parenthesised query",
        ));
    }
    let mut q = inner.clone();
    if outer.order_by.is_some() {
        q.order_by.clone_from(&outer.order_by);
    }
    if outer.limit_clause.is_some() {
        q.limit_clause.clone_from(&outer.limit_clause);
    }
    q.locks.extend(outer.locks.iter().cloned());
    Ok(q)
}

/// 1235 for the clauses of a query that sqlparser accepts (from other dialects, or MySQL
/// features not implemented) and this layer would otherwise skip: each changes the answer.
fn refuse_clauses(q: &Query) -> Result<(), SqlError> {
    let clause = if q.with.is_some() {
        Some("WITH")
    } else if q.fetch.is_some() {
        Some("FETCH")
    } else if q.for_clause.is_some() {
        Some("FOR XML / JSON / BROWSE")
    } else if q.settings.is_some() {
        Some("SETTINGS")
    } else if q.format_clause.is_some() {
        Some("FORMAT")
    } else if !q.pipe_operators.is_empty() {
        Some("pipe operators")
    } else if q
        .locks
        .iter()
        .any(|l| matches!(l.nonblock, Some(NonBlock::SkipLocked)))
    {
        // Skipping locked rows changes which rows come back; waiting for them would not.
        Some("SKIP LOCKED")
    } else {
        None
    };
    if let Some(c) = clause {
        return Err(SqlError::unsupported(c));
    }
    let mut window = false;
    let _ = sqlparser::ast::visit_expressions(q, |e| {
        window = matches!(e, Expr::Function(f) if f.over.is_some());
        if window {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    if window {
        return Err(window_functions());
    }
    Ok(())
}

/// As [`refuse_clauses`], for one SELECT's own clauses.
fn refuse_select_clauses(select: &Select) -> Result<(), SqlError> {
    if !select.named_window.is_empty() {
        return Err(window_functions());
    }
    let clause = if select.into.is_some() {
        Some("SELECT ... INTO")
    } else if select.top.is_some() {
        Some("TOP")
    } else if select.exclude.is_some() {
        Some("SELECT * EXCLUDE")
    } else if !select.lateral_views.is_empty() {
        Some("LATERAL VIEW")
    } else if select.prewhere.is_some() {
        Some("PREWHERE")
    } else if !select.connect_by.is_empty() {
        Some("CONNECT BY")
    } else if !select.cluster_by.is_empty() {
        Some("CLUSTER BY")
    } else if !select.distribute_by.is_empty() {
        Some("DISTRIBUTE BY")
    } else if !select.sort_by.is_empty() {
        Some("SORT BY")
    } else if select.qualify.is_some() {
        Some("QUALIFY")
    } else if select.value_table_mode.is_some() {
        Some("SELECT AS VALUE / STRUCT")
    } else {
        None
    };
    match clause {
        Some(c) => Err(SqlError::unsupported(c)),
        None => Ok(()),
    }
}

/// Wraps every ORDER BY and GROUP BY item of `stmt` that is a `?` placeholder or a scalar
/// subquery in parentheses, so that the number bound or inlined into it later stays a
/// constant (as in MySQL) instead of reading as a select-list position ([`position`] takes
/// only a bare number). `(5)` evaluates as `5` everywhere else.
pub(crate) fn keep_constants_out_of_positions(stmt: &mut sqlparser::ast::Statement) {
    struct Wrap;
    fn wrap(e: &mut Expr) {
        let constant = matches!(e, Expr::Subquery(_))
            || matches!(e, Expr::Value(v) if matches!(v.value, Lit::Placeholder(_)));
        if constant {
            let inner = std::mem::replace(e, Expr::Value(Lit::Null.into()));
            *e = Expr::Nested(Box::new(inner));
        }
    }
    impl sqlparser::ast::VisitorMut for Wrap {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> std::ops::ControlFlow<()> {
            if let Some(o) = &mut q.order_by
                && let sqlparser::ast::OrderByKind::Expressions(list) = &mut o.kind
            {
                list.iter_mut().for_each(|item| wrap(&mut item.expr));
            }
            if let SetExpr::Select(sel) = q.body.as_mut()
                && let GroupByExpr::Expressions(list, _) = &mut sel.group_by
            {
                list.iter_mut().for_each(wrap);
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = sqlparser::ast::VisitMut::visit(stmt, &mut Wrap);
}

/// The select-list position (from 1) an ORDER BY or GROUP BY number names; `None` for any
/// other expression (a decimal number is a constant).
fn position(e: &Expr) -> Option<usize> {
    match e {
        Expr::Value(v) => match &v.value {
            Lit::Number(n, _) => n.parse::<usize>().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn unknown_position(n: usize, clause: &str) -> SqlError {
    SqlError::new(1054, "42S22", format!("Unknown column '{n}' in '{clause}'"))
}

/// A GROUP BY expression as what it groups by. A position names that select-list
/// expression; a name that is no column of the table but the alias of one names it too
/// (MySQL looks a GROUP BY name up in the FROM tables first, then in the select list).
fn group_key(g: &Expr, items: &[Item], table: Option<&TableDef>) -> Result<Expr, SqlError> {
    if let Some(n) = position(g) {
        return n
            .checked_sub(1)
            .and_then(|i| items.get(i))
            .map(|it| it.expr.clone())
            .ok_or_else(|| unknown_position(n, "group statement"));
    }
    if let Expr::Identifier(id) = g
        && !id.value.starts_with('@')
        && table.is_none_or(|t| t.column(&id.value).is_none())
        && let Some(it) = items
            .iter()
            .find(|it| it.name.eq_ignore_ascii_case(&id.value))
    {
        return Ok(it.expr.clone());
    }
    Ok(g.clone())
}

/// Runs a query.
///
/// # Errors
/// Unknown tables or columns, unsupported forms, read failures.
pub(crate) fn query(s: &mut Session, q: &Query) -> Result<Output, SqlError> {
    refuse_clauses(q)?;
    let select = match q.body.as_ref() {
        SetExpr::Select(sel) => sel.as_ref().clone(),
        SetExpr::Query(inner) => return query(s, &with_outer_clauses(q, inner)?),
        other => return Err(SqlError::unsupported(format!("query {other}"))),
    };
    refuse_select_clauses(&select)?;
    let table = table_of(s, &select)?;
    let tdef = table.as_ref().map(|(t, _)| t.clone());
    let items = items(&select, tdef.as_deref())?;
    let group_by: Vec<Expr> = match &select.group_by {
        GroupByExpr::Expressions(_, modifiers) if !modifiers.is_empty() => {
            let m: Vec<String> = modifiers.iter().map(ToString::to_string).collect();
            return Err(SqlError::unsupported(format!(
                "GROUP BY ... {}",
                m.join(" ")
            )));
        }
        GroupByExpr::Expressions(e, _) => e
            .iter()
            .map(|g| group_key(g, &items, tdef.as_deref()))
            .collect::<Result<_, _>>()?,
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    let order: Vec<(Expr, bool)> = q
        .order_by
        .as_ref()
        .map(|o| match &o.kind {
            sqlparser::ast::OrderByKind::Expressions(list) => Ok(list
                .iter()
                .map(|e| {
                    (
                        e.expr.clone(),
                        matches!(e.options.sort, Some(sqlparser::ast::OrderBySort::Desc)),
                    )
                })
                .collect()),
            sqlparser::ast::OrderByKind::All(_) => Err(SqlError::unsupported("ORDER BY ALL")),
        })
        .transpose()?
        .unwrap_or_default();
    let mut agg_exprs: Vec<&Expr> = items.iter().map(|i| &i.expr).collect();
    agg_exprs.extend(select.having.iter());
    agg_exprs.extend(order.iter().map(|(e, _)| e));
    let aggs = collect_aggregates(agg_exprs)?;
    let alias_names: Vec<String> = items.iter().map(|i| i.name.clone()).collect();
    for it in &items {
        check_columns(&it.expr, tdef.as_deref(), &[], "field list")?;
    }
    if let Some(w) = &select.selection {
        check_columns(w, tdef.as_deref(), &[], "where clause")?;
    }
    for g in &group_by {
        check_columns(g, tdef.as_deref(), &alias_names, "group statement")?;
    }
    if let Some(h) = &select.having {
        check_columns(h, tdef.as_deref(), &alias_names, "having clause")?;
    }
    for (o, _) in &order {
        check_columns(o, tdef.as_deref(), &alias_names, "order clause")?;
    }
    let grouped = !aggs.is_empty() || !group_by.is_empty();
    let (limit, offset) = limit_of(s, q)?;
    // FOR SHARE (and LOCK IN SHARE MODE) take FOR UPDATE's exclusive lock: stricter than a
    // shared lock (two sharers wait for each other), never looser, so no write slips in
    // under either. SKIP LOCKED was refused above; NOWAIT waits as a plain lock does (up to
    // `innodb_lock_wait_timeout`, then 1205): later than MySQL's error 3572, never a
    // different answer, and frameworks that send it (Django's `nowait=True`) keep working.
    let for_update = !q.locks.is_empty();
    let distinct = matches!(select.distinct, Some(Distinct::Distinct));
    if matches!(select.distinct, Some(Distinct::On(_))) {
        return Err(SqlError::unsupported("DISTINCT ON"));
    }

    // Sort keys: an ORDER BY position or alias names an output column.
    let key_source = |e: &Expr| -> Option<usize> {
        match e {
            // Checked below to be within 1..=items.len() before any row is projected.
            Expr::Value(_) => position(e).map(|n| n - 1),
            Expr::Identifier(id) => items
                .iter()
                .position(|it| it.name.eq_ignore_ascii_case(&id.value) && it.column.is_none()),
            _ => None,
        }
    };
    for (o, _) in &order {
        if let Some(n) = position(o)
            && !(1..=items.len()).contains(&n)
        {
            return Err(unknown_position(n, "order clause"));
        }
    }
    let project = |env: &Env<'_>| -> Result<(Vec<Value>, Vec<Value>), SqlError> {
        let vals = items
            .iter()
            .map(|it| eval(&it.expr, env))
            .collect::<Result<Vec<_>, _>>()?;
        let keys = order
            .iter()
            .map(|(e, _)| match key_source(e) {
                Some(i) => Ok(vals[i].clone()),
                None => eval(e, env),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((vals, keys))
    };
    // HAVING sees the output columns by name; with GROUP BY it filters groups, without,
    // rows.
    let having = |env: &Env<'_>, vals: &[Value]| -> Result<bool, SqlError> {
        let Some(h) = &select.having else {
            return Ok(true);
        };
        let named: Vec<(String, Value)> = items
            .iter()
            .map(|i| i.name.clone())
            .zip(vals.iter().cloned())
            .collect();
        let env = Env {
            aliases: Some(&named),
            ..*env
        };
        Ok(truthy(&eval(h, &env)?) == Some(true))
    };

    let mut out: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    // Without ORDER BY, DISTINCT or grouping, the scan stops once LIMIT rows are in.
    let stop_at = if order.is_empty() && !distinct && !grouped {
        limit.map(|l| l.saturating_add(offset))
    } else {
        None
    };
    let mut groups: Vec<(Vec<Value>, Vec<Accumulator>)> = Vec::new();
    let mut group_index: HashMap<Vec<u8>, usize> = HashMap::new();
    match &tdef {
        None => {
            let env = s.env();
            if let Some(w) = &select.selection
                && truthy(&eval(w, &env)?) != Some(true)
            {
                return finish(
                    s,
                    &items,
                    tdef.as_deref(),
                    table.as_ref().and_then(|t| t.1.clone()),
                    Vec::new(),
                );
            }
            if grouped {
                let mut accs = aggs.clone();
                for a in &mut accs {
                    a.add(&env)?;
                }
                groups.push((Vec::new(), accs));
            } else {
                let projected = project(&env)?;
                if having(&env, &projected.0)? {
                    out.push(projected);
                }
            }
        }
        Some(t) => {
            let access = plan(t, select.selection.as_ref(), &s.env());
            let lock = for_update && s.mode == surge_txn::TxnMode::Pessimistic;
            let selection = select.selection.clone();
            let (o, g) = s.with_txn(|txn, s| {
                let mut out = Vec::new();
                let mut groups: Vec<(Vec<Value>, Vec<Accumulator>)> = Vec::new();
                let mut group_index: HashMap<Vec<u8>, usize> = HashMap::new();
                let locks = if lock {
                    RowLocks::OneByOne
                } else {
                    RowLocks::None
                };
                for_each_row(txn, t, &access, locks, false, &mut |_txn, _h, row| {
                    let env = Env {
                        table: Some(t),
                        row: &row,
                        ..s.env()
                    };
                    if let Some(w) = &selection
                        && truthy(&eval(w, &env)?) != Some(true)
                    {
                        return Ok(true);
                    }
                    if grouped {
                        let mut key = Vec::new();
                        for g in &group_by {
                            encode_datum(&mut key, &eval(g, &env)?);
                        }
                        let i = match group_index.get(&key) {
                            Some(i) => *i,
                            None => {
                                groups.push((row.clone(), aggs.clone()));
                                group_index.insert(key, groups.len() - 1);
                                groups.len() - 1
                            }
                        };
                        for a in &mut groups[i].1 {
                            a.add(&env)?;
                        }
                        return Ok(true);
                    }
                    let projected = project(&env)?;
                    if having(&env, &projected.0)? {
                        out.push(projected);
                    }
                    Ok(stop_at.is_none_or(|n| (out.len() as u64) < n))
                })?;
                Ok((out, groups))
            })?;
            out = o;
            groups = g;
            group_index.clear();
        }
    }
    if grouped {
        if groups.is_empty() && group_by.is_empty() {
            // Aggregates over no rows: one row (COUNT 0, the rest NULL).
            groups.push((
                vec![Value::Null; tdef.as_ref().map_or(0, |t| t.columns.len())],
                aggs.clone(),
            ));
        }
        for (row, accs) in &groups {
            let results: HashMap<String, Value> =
                accs.iter().map(|a| (a.key.clone(), a.finish())).collect();
            let env = Env {
                table: tdef.as_deref(),
                row,
                aggs: Some(&results),
                ..s.env()
            };
            let projected = project(&env)?;
            if having(&env, &projected.0)? {
                out.push(projected);
            }
        }
    }
    if distinct {
        let mut seen = HashSet::new();
        out.retain(|(vals, _)| {
            let mut k = Vec::new();
            for v in vals {
                encode_datum(&mut k, v);
            }
            seen.insert(k)
        });
    }
    if !order.is_empty() {
        let desc: Vec<bool> = order.iter().map(|(_, d)| *d).collect();
        sort_rows(&mut out, &desc);
    }
    let rows: Vec<Vec<Value>> = out
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX)))
        .map(|(v, _)| v)
        .collect();
    finish(
        s,
        &items,
        tdef.as_deref(),
        table.as_ref().and_then(|t| t.1.clone()),
        rows,
    )
}

fn finish(
    _s: &Session,
    items: &[Item],
    table: Option<&TableDef>,
    alias: Option<String>,
    rows: Vec<Vec<Value>>,
) -> Result<Output, SqlError> {
    let columns = items
        .iter()
        .enumerate()
        .map(|(i, it)| match (it.column, table) {
            (Some(c), Some(t)) => {
                let mut m = t.meta(c, alias.as_deref());
                m.name = it.name.clone();
                m
            }
            _ => {
                let first = rows.iter().map(|r| &r[i]).find(|v| **v != Value::Null);
                meta_of_value(&it.name, first.or(rows.first().map(|r| &r[i])))
            }
        })
        .collect();
    Ok(Output::Rows { columns, rows })
}

/// Evaluates `items` text against one row of `table` (SELECT ... FROM UPDATE's answer).
///
/// # Errors
/// Unknown columns.
pub(crate) fn project_row(
    s: &Session,
    select: &Select,
    table: &TableDef,
    rows: &[Vec<Value>],
) -> Result<Output, SqlError> {
    let items = items(select, Some(table))?;
    let mut out = Vec::new();
    for row in rows {
        let env = Env {
            table: Some(table),
            row,
            ..s.env()
        };
        out.push(
            items
                .iter()
                .map(|it| eval(&it.expr, &env))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    finish(s, &items, Some(table), None, out)
}
