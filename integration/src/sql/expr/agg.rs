//! Aggregates: COUNT, SUM, MIN, MAX, AVG, folded row by row (a scan never keeps its rows).

use std::cmp::Ordering;
use std::collections::HashSet;

use sqlparser::ast::{DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::eval::{Env, eval};
use super::ops::{arith, compare};
use crate::sql::output::SqlError;
use crate::sql::types::{rescale, string_as_double, to_decimal};
use crate::sql::value::{Decimal, Value};

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggKind {
    /// COUNT.
    Count,
    /// SUM.
    Sum,
    /// MIN.
    Min,
    /// MAX.
    Max,
    /// AVG.
    Avg,
}

impl AggKind {
    /// The aggregate named `name` (lower case).
    pub(crate) fn of(name: &str) -> Option<AggKind> {
        Some(match name {
            "count" => AggKind::Count,
            "sum" => AggKind::Sum,
            "min" => AggKind::Min,
            "max" => AggKind::Max,
            "avg" => AggKind::Avg,
            _ => return None,
        })
    }
}

/// One aggregate call's running state.
#[derive(Debug, Clone)]
pub(crate) struct Accumulator {
    /// The call's text (its key in [`Env::aggs`]).
    pub(crate) key: String,
    kind: AggKind,
    /// The argument (`None`: `COUNT(*)`).
    arg: Option<Expr>,
    distinct: Option<HashSet<Vec<u8>>>,
    count: i64,
    acc: Value,
}

impl Accumulator {
    fn new(key: String, kind: AggKind, arg: Option<Expr>, distinct: bool) -> Accumulator {
        Accumulator {
            key,
            kind,
            arg,
            distinct: distinct.then(HashSet::new),
            count: 0,
            acc: Value::Null,
        }
    }

    /// Folds in one row.
    ///
    /// # Errors
    /// The argument's evaluation failed, or SUM overflowed.
    pub(crate) fn add(&mut self, env: &Env<'_>) -> Result<(), SqlError> {
        let v = match &self.arg {
            None => Value::Int(1),
            Some(e) => eval(e, env)?,
        };
        if v == Value::Null {
            return Ok(());
        }
        if let Some(seen) = &mut self.distinct {
            let mut key = Vec::new();
            crate::sql::codec::encode_datum(&mut key, &v);
            if !seen.insert(key) {
                return Ok(());
            }
        }
        self.count += 1;
        match self.kind {
            AggKind::Count => {}
            AggKind::Sum | AggKind::Avg => {
                // SUM of integers is DECIMAL (as MySQL), of doubles DOUBLE.
                let v = match v {
                    Value::Double(_) => v,
                    // As MySQL: its numeric prefix ('12abc' adds 12).
                    Value::Bytes(b) => Value::Double(string_as_double(&b)),
                    other => Value::Decimal(to_decimal(&other).unwrap_or(Decimal {
                        digits: 0,
                        scale: 0,
                    })),
                };
                self.acc = if self.acc == Value::Null {
                    v
                } else {
                    arith(&sqlparser::ast::BinaryOperator::Plus, &self.acc, &v)?
                };
            }
            AggKind::Min | AggKind::Max => {
                let replace = self.acc == Value::Null || {
                    let o = compare(&v, &self.acc);
                    (self.kind == AggKind::Min && o == Some(Ordering::Less))
                        || (self.kind == AggKind::Max && o == Some(Ordering::Greater))
                };
                if replace {
                    self.acc = v;
                }
            }
        }
        Ok(())
    }

    /// The result.
    pub(crate) fn finish(&self) -> Value {
        match self.kind {
            AggKind::Count => Value::Int(self.count),
            AggKind::Sum | AggKind::Min | AggKind::Max => self.acc.clone(),
            AggKind::Avg => match &self.acc {
                Value::Null => Value::Null,
                #[allow(clippy::cast_precision_loss)] // AVG of doubles is a double
                Value::Double(f) => Value::Double(f / self.count as f64),
                Value::Decimal(d) => {
                    let scale = (d.scale + 4).min(30);
                    match rescale(*d, scale + 1) {
                        Some(w) => rescale(
                            Decimal {
                                digits: w.digits / i128::from(self.count),
                                scale: scale + 1,
                            },
                            scale,
                        )
                        .map_or(Value::Null, Value::Decimal),
                        None => Value::Null,
                    }
                }
                other => other.clone(),
            },
        }
    }
}

/// The aggregate calls in `exprs` (each once, by text), as fresh accumulators.
///
/// # Errors
/// 1235 for an aggregate form not supported (several arguments, nested aggregates).
pub(crate) fn collect_aggregates<'a>(
    exprs: impl IntoIterator<Item = &'a Expr>,
) -> Result<Vec<Accumulator>, SqlError> {
    let mut out: Vec<Accumulator> = Vec::new();
    for e in exprs {
        walk(e, &mut out)?;
    }
    Ok(out)
}

fn walk(e: &Expr, out: &mut Vec<Accumulator>) -> Result<(), SqlError> {
    match e {
        Expr::Function(f) => {
            // (A window function never gets here: `refuse_clauses` refuses it first.)
            let name = f.name.to_string().to_ascii_lowercase();
            let FunctionArguments::List(list) = &f.args else {
                return Ok(());
            };
            if let Some(kind) = AggKind::of(&name) {
                let key = e.to_string();
                if out.iter().any(|a| a.key == key) {
                    return Ok(());
                }
                let distinct =
                    matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                let arg = match list.args.as_slice() {
                    [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if kind == AggKind::Count => {
                        None
                    }
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))] => Some(x.clone()),
                    _ => return Err(SqlError::unsupported(format!("aggregate {e}"))),
                };
                out.push(Accumulator::new(key, kind, arg, distinct));
                return Ok(());
            }
            for a in &list.args {
                if let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = a {
                    walk(x, out)?;
                }
            }
            Ok(())
        }
        Expr::BinaryOp { left, right, .. } => {
            walk(left, out)?;
            walk(right, out)
        }
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr) => walk(expr, out),
        _ => Ok(()),
    }
}
