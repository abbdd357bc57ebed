//! Scalar subqueries: `(SELECT ...)` used as a value. Each one that does not name a column
//! of the outer statement is run once, before the statement, and replaced by its value (a
//! literal), as MySQL evaluates an uncorrelated subquery once. A correlated one (a column
//! qualified with a table outside the subquery) is refused with 1235.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Query, SetExpr, Statement, TableFactor, ValueWithSpan, Visit, VisitMut, Visitor,
    VisitorMut,
};

use super::select;
use super::session::{Session, to_literal};
use crate::sql::output::{Output, SqlError};
use crate::sql::value::Value;

/// Whether `stmt` holds a scalar subquery.
pub(crate) fn has_scalar_subquery(stmt: &Statement) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Subquery(_)) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    stmt.visit(&mut Finder).is_break()
}

/// `stmt` with every scalar subquery replaced by its value, innermost first.
///
/// # Errors
/// The subquery's own error; 1241 when it returns more than one column, 1242 more than one
/// row.
pub(crate) fn inline_scalar_subqueries(
    s: &mut Session,
    stmt: &Statement,
) -> Result<Statement, SqlError> {
    struct Inliner<'a> {
        session: &'a mut Session,
    }
    impl VisitorMut for Inliner<'_> {
        type Break = SqlError;
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<SqlError> {
            let Expr::Subquery(q) = e else {
                return ControlFlow::Continue(());
            };
            match scalar_value(self.session, q) {
                Ok(v) => {
                    *e = Expr::Value(ValueWithSpan::from(to_literal(&v)));
                    ControlFlow::Continue(())
                }
                Err(err) => ControlFlow::Break(err),
            }
        }
    }
    let mut out = stmt.clone();
    match VisitMut::visit(&mut out, &mut Inliner { session: s }) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(out),
    }
}

/// The names a column of `q`'s own FROM may be qualified with, lower case: each table's
/// alias, or its name (last part) when it has none. An aliased table is known only by its
/// alias (as in MySQL), so its real name qualifies an outer table's column.
fn own_qualifiers(q: &Query) -> Vec<String> {
    let mut names = Vec::new();
    if let SetExpr::Select(sel) = q.body.as_ref() {
        for twj in &sel.from {
            if let TableFactor::Table { name, alias, .. } = &twj.relation {
                match alias {
                    Some(a) => names.push(a.name.value.to_lowercase()),
                    None => {
                        if let Some(last) = name.0.last() {
                            names.push(last.to_string().trim_matches('`').to_lowercase());
                        }
                    }
                }
            }
        }
    }
    names
}

/// A column qualifier in `q` that is not one of its own tables: a correlated subquery,
/// whose outer column this layer cannot see (it would read its own table's column of that
/// name instead: a wrong answer).
fn outer_reference(q: &Query) -> Option<String> {
    struct Finder {
        own: Vec<String>,
    }
    impl Visitor for Finder {
        type Break = String;
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<String> {
            if let Expr::CompoundIdentifier(parts) = e
                && parts.len() >= 2
                && !parts[0].value.starts_with('@')
            {
                let qualifier = parts[parts.len() - 2].value.to_lowercase();
                if !self.own.contains(&qualifier) {
                    let text: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                    return ControlFlow::Break(text.join("."));
                }
            }
            ControlFlow::Continue(())
        }
    }
    match q.visit(&mut Finder {
        own: own_qualifiers(q),
    }) {
        ControlFlow::Break(name) => Some(name),
        ControlFlow::Continue(()) => None,
    }
}

/// The one value `q` returns (NULL for no row).
fn scalar_value(s: &mut Session, q: &Query) -> Result<Value, SqlError> {
    if let Some(outer) = outer_reference(q) {
        return Err(SqlError::unsupported(format!(
            "correlated subquery (`{outer}` names a table outside the subquery `{q}`)"
        )));
    }
    match select::query(s, q)? {
        Output::Rows { columns, mut rows } => {
            if columns.len() != 1 {
                return Err(SqlError::new(
                    1241,
                    "21000",
                    format!(
                        "Operand should contain 1 column(s), the subquery `{q}` has {}",
                        columns.len()
                    ),
                ));
            }
            if rows.len() > 1 {
                return Err(SqlError::new(
                    1242,
                    "21000",
                    format!("Subquery returns more than 1 row: `{q}`"),
                ));
            }
            Ok(rows.pop().and_then(|mut r| r.pop()).unwrap_or(Value::Null))
        }
        Output::Done { .. } => Err(SqlError::internal(format!(
            "the subquery `{q}` returned no result set"
        ))),
    }
}
