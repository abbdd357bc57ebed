//! [`eval`]: an expression's value for one row.

use std::cmp::Ordering;
use std::collections::HashMap;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
    Value as Lit,
};

use super::ops::{arith, compare, like};
use crate::sql::catalog::TableDef;
use crate::sql::output::SqlError;
use crate::sql::types::{parse_decimal, string_as_double, to_bytes};
use crate::sql::value::Value;

/// What an expression may ask of its session.
pub(crate) trait SessionView {
    /// System variable `name` (lower case, no `@@` or scope).
    fn variable(&self, name: &str) -> Option<Value>;
    /// User variable `name` (lower case, no `@`); NULL when unset.
    fn user_variable(&self, name: &str) -> Value;
    /// The current database.
    fn current_database(&self) -> Option<String>;
    /// `user@host`.
    fn user(&self) -> String;
    /// CONNECTION_ID().
    fn connection_id(&self) -> u32;
    /// LAST_INSERT_ID().
    fn last_insert_id(&self) -> u64;
}

/// Where an expression is evaluated.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    /// The session.
    pub(crate) session: &'a dyn SessionView,
    /// The table whose row this is, if any.
    pub(crate) table: Option<&'a TableDef>,
    /// The row (one value per table column).
    pub(crate) row: &'a [Value],
    /// Aggregate results by the aggregate call's text (after GROUP BY).
    pub(crate) aggs: Option<&'a HashMap<String, Value>>,
    /// The row an INSERT tried to insert (`VALUES(col)` in ON DUPLICATE KEY UPDATE).
    pub(crate) inserted: Option<&'a [Value]>,
    /// Output columns by alias (HAVING may name them).
    pub(crate) aliases: Option<&'a [(String, Value)]>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("row", &self.row)
            .finish_non_exhaustive()
    }
}

impl<'a> Env<'a> {
    /// An environment without a row.
    pub(crate) fn bare(session: &'a dyn SessionView) -> Env<'a> {
        Env {
            session,
            table: None,
            row: &[],
            aggs: None,
            inserted: None,
            aliases: None,
        }
    }

    fn column(&self, name: &str) -> Result<Value, SqlError> {
        let pos = self.table.and_then(|t| t.column(name));
        let alias = || {
            self.aliases
                .and_then(|a| a.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v.clone())
        };
        match pos {
            Some(p) => Ok(self.row.get(p).cloned().unwrap_or(Value::Null)),
            None if alias().is_some() => Ok(alias().unwrap_or(Value::Null)),
            None => Err(SqlError::new(
                1054,
                "42S22",
                format!("Unknown column '{name}' in 'field list'"),
            )),
        }
    }
}

/// Checks that every column `e` names is one of `table`'s (or one of `aliases`).
///
/// # Errors
/// 1054 naming the column and the clause.
pub(crate) fn check_columns(
    e: &Expr,
    table: Option<&TableDef>,
    aliases: &[String],
    clause: &str,
) -> Result<(), SqlError> {
    let known = |name: &str| {
        name.starts_with('@')
            || table.is_some_and(|t| t.column(name).is_some())
            || aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    };
    let r = sqlparser::ast::visit_expressions(e, |x| {
        let name = match x {
            Expr::Identifier(id) if id.quote_style.is_some() || !id.value.starts_with('@') => {
                Some(&id.value)
            }
            Expr::CompoundIdentifier(p)
                if !p.first().is_some_and(|f| f.value.starts_with("@@")) =>
            {
                p.last().map(|i| &i.value)
            }
            _ => None,
        };
        match name {
            Some(n) if !known(n) => std::ops::ControlFlow::Break(SqlError::new(
                1054,
                "42S22",
                format!("Unknown column '{n}' in '{clause}'"),
            )),
            _ => std::ops::ControlFlow::Continue(()),
        }
    });
    match r {
        std::ops::ControlFlow::Break(e) => Err(e),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// A literal's value.
///
/// # Errors
/// An unbound `?` or a literal kind MySQL does not have.
pub(crate) fn literal(v: &Lit) -> Result<Value, SqlError> {
    Ok(match v {
        Lit::Number(s, _) => number(s)?,
        Lit::SingleQuotedString(s) | Lit::DoubleQuotedString(s) => {
            Value::Bytes(s.clone().into_bytes())
        }
        Lit::HexStringLiteral(h) => Value::Bytes(hex(h)?),
        Lit::Boolean(b) => Value::Int(i64::from(*b)),
        Lit::Null => Value::Null,
        Lit::Placeholder(p) => {
            return Err(SqlError::new(
                1210,
                "HY000",
                format!("Incorrect arguments: parameter {p} is not bound"),
            ));
        }
        other => return Err(SqlError::unsupported(format!("literal {other}"))),
    })
}

fn number(s: &str) -> Result<Value, SqlError> {
    if s.contains(['e', 'E']) {
        return s
            .parse()
            .map(Value::Double)
            .map_err(|_| SqlError::parse(format!("bad number {s}")));
    }
    if s.contains('.') {
        return parse_decimal(s)
            .map(Value::Decimal)
            .ok_or_else(|| SqlError::parse(format!("bad number {s}")));
    }
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Ok(Value::UInt(u));
    }
    parse_decimal(s)
        .map(Value::Decimal)
        .ok_or_else(|| SqlError::parse(format!("bad number {s}")))
}

fn hex(h: &str) -> Result<Vec<u8>, SqlError> {
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_owned()
    };
    (0..h.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&h[i..i + 2], 16)
                .map_err(|_| SqlError::parse(format!("bad hex literal X'{h}'")))
        })
        .collect()
}

/// A value as a condition: `None` for NULL.
pub(crate) fn truthy(v: &Value) -> Option<bool> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(*i != 0),
        Value::UInt(u) => Some(*u != 0),
        Value::Decimal(d) => Some(d.digits != 0),
        Value::Double(f) => Some(*f != 0.0),
        // As MySQL: its numeric prefix ('12abc' is true, 'abc' false).
        Value::Bytes(b) => Some(string_as_double(b) != 0.0),
        Value::Date { .. } | Value::DateTime { .. } => Some(true),
    }
}

fn bool_value(b: Option<bool>) -> Value {
    b.map_or(Value::Null, |b| Value::Int(i64::from(b)))
}

fn variable(env: &Env<'_>, raw: &str) -> Result<Value, SqlError> {
    if let Some(name) = raw.strip_prefix("@@") {
        let name = name.to_ascii_lowercase();
        let name = name
            .strip_prefix("session.")
            .or_else(|| name.strip_prefix("global."))
            .or_else(|| name.strip_prefix("local."))
            .unwrap_or(&name);
        return env.session.variable(name).ok_or_else(|| {
            SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
        });
    }
    let name = raw.trim_start_matches('@').to_ascii_lowercase();
    Ok(env.session.user_variable(&name))
}

/// The value of `e` in `env`.
///
/// # Errors
/// 1054 unknown column, 1690 overflow, 1235 an unsupported construct.
pub(crate) fn eval(e: &Expr, env: &Env<'_>) -> Result<Value, SqlError> {
    match e {
        Expr::Identifier(id) => {
            if id.quote_style.is_none() && id.value.starts_with('@') {
                variable(env, &id.value)
            } else {
                env.column(&id.value)
            }
        }
        Expr::CompoundIdentifier(parts) => {
            let first = parts.first().map(|p| p.value.as_str()).unwrap_or("");
            if first.starts_with("@@") {
                let name: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                return variable(env, &name.join("."));
            }
            let last = parts.last().map(|p| p.value.as_str()).unwrap_or("");
            env.column(last)
        }
        Expr::Value(v) => literal(&v.value),
        Expr::Nested(inner) => eval(inner, env),
        Expr::IsNull(x) => Ok(bool_value(Some(eval(x, env)? == Value::Null))),
        Expr::IsNotNull(x) => Ok(bool_value(Some(eval(x, env)? != Value::Null))),
        Expr::IsTrue(x) => Ok(bool_value(Some(truthy(&eval(x, env)?) == Some(true)))),
        Expr::IsFalse(x) => Ok(bool_value(Some(truthy(&eval(x, env)?) == Some(false)))),
        Expr::UnaryOp { op, expr } => {
            let v = eval(expr, env)?;
            match op {
                UnaryOperator::Not => Ok(bool_value(truthy(&v).map(|b| !b))),
                UnaryOperator::Plus => Ok(v),
                UnaryOperator::Minus => match v {
                    Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(|| {
                        SqlError::new(1690, "22003", "BIGINT value is out of range in negation")
                    }),
                    Value::UInt(u) => i64::try_from(u).map(|i| Value::Int(-i)).or_else(|_| {
                        if u == 1 << 63 {
                            Ok(Value::Int(i64::MIN))
                        } else {
                            Err(SqlError::new(
                                1690,
                                "22003",
                                "BIGINT value is out of range in negation",
                            ))
                        }
                    }),
                    other => arith(&BinaryOperator::Minus, &Value::Int(0), &other),
                },
                other => Err(SqlError::unsupported(format!("operator {other}"))),
            }
        }
        Expr::BinaryOp { left, op, right } => binary(left, op, right, env),
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let v = eval(expr, env)?;
            let lo = compare(&v, &eval(low, env)?).map(|o| o != Ordering::Less);
            let hi = compare(&v, &eval(high, env)?).map(|o| o != Ordering::Greater);
            let r = match (lo, hi) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            Ok(bool_value(r.map(|b| b != *negated)))
        }
        Expr::In {
            expr,
            target: sqlparser::ast::InTarget::List(list),
            negated,
            ..
        } => {
            let v = eval(expr, env)?;
            if v == Value::Null {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in list {
                match compare(&v, &eval(item, env)?) {
                    Some(Ordering::Equal) => return Ok(bool_value(Some(!*negated))),
                    None => saw_null = true,
                    _ => {}
                }
            }
            Ok(if saw_null {
                Value::Null
            } else {
                bool_value(Some(*negated))
            })
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            any: false,
        } => {
            let v = eval(expr, env)?;
            let p = eval(pattern, env)?;
            if v == Value::Null || p == Value::Null {
                return Ok(Value::Null);
            }
            Ok(bool_value(Some(
                like(&to_bytes(&v), &to_bytes(&p)) != *negated,
            )))
        }
        Expr::Function(f) => {
            if f.over.is_some() {
                return Err(window_functions());
            }
            let name = f.name.to_string().to_ascii_lowercase();
            if let Some(aggs) = env.aggs
                && super::agg::AggKind::of(&name).is_some()
            {
                return aggs
                    .get(&e.to_string())
                    .cloned()
                    .ok_or_else(|| SqlError::internal(format!("aggregate {e} was not computed")));
            }
            if super::agg::AggKind::of(&name).is_some() {
                return Err(SqlError::new(
                    1111,
                    "HY000",
                    format!("Invalid use of group function {e}"),
                ));
            }
            let args = match &f.args {
                FunctionArguments::None => Vec::new(),
                FunctionArguments::List(list) => list
                    .args
                    .iter()
                    .map(|a| match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Ok(x),
                        other => Err(SqlError::unsupported(format!("argument {other} of {name}"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                FunctionArguments::Subquery(_) => {
                    return Err(SqlError::unsupported(format!(
                        "subquery argument of {name}"
                    )));
                }
            };
            function(&name, &args, env)
        }
        Expr::Cast {
            expr, data_type, ..
        } => cast(eval(expr, env)?, data_type),
        Expr::Convert {
            expr,
            data_type: Some(data_type),
            charset: None,
            ..
        } => cast(eval(expr, env)?, data_type),
        other => Err(SqlError::unsupported(format!("expression {other}"))),
    }
}

/// 1235 for `f(...) OVER (...)`: evaluated as a plain function or aggregate it would be a
/// wrong answer (one value for the whole result instead of one per row's window).
pub(crate) fn window_functions() -> SqlError {
    SqlError::unsupported("window functions")
}

/// `CAST(v AS ty)` for the target types MySQL's CAST takes.
fn cast(v: Value, ty: &sqlparser::ast::DataType) -> Result<Value, SqlError> {
    use crate::sql::types::SqlType;
    use sqlparser::ast::{DataType, ExactNumberInfo};
    let target = match ty {
        DataType::Signed
        | DataType::SignedInteger
        | DataType::Int(_)
        | DataType::Integer(_)
        | DataType::BigInt(_) => SqlType::Int {
            bytes: 8,
            unsigned: false,
        },
        DataType::Unsigned | DataType::UnsignedInteger => SqlType::Int {
            bytes: 8,
            unsigned: true,
        },
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text | DataType::Nvarchar(_) => {
            SqlType::Text
        }
        DataType::Binary(_) | DataType::Varbinary(_) | DataType::Blob(_) => SqlType::Blob,
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (10, 0),
                ExactNumberInfo::Precision(p) => (u8::try_from(*p).unwrap_or(65), 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (
                    u8::try_from(*p).unwrap_or(65),
                    u8::try_from(*s).unwrap_or(30),
                ),
            };
            if precision > 38 || scale > precision {
                return Err(SqlError::unsupported(format!(
                    "CAST AS {ty} (precision up to 38)"
                )));
            }
            SqlType::Decimal { precision, scale }
        }
        DataType::Double(_) | DataType::DoublePrecision | DataType::Float(_) | DataType::Real => {
            SqlType::Double
        }
        DataType::Date => SqlType::Date,
        DataType::Datetime(_) | DataType::Timestamp(..) => SqlType::DateTime,
        other => return Err(SqlError::unsupported(format!("CAST AS {other}"))),
    };
    target.coerce(v, "CAST")
}

fn binary(
    left: &Expr,
    op: &BinaryOperator,
    right: &Expr,
    env: &Env<'_>,
) -> Result<Value, SqlError> {
    match op {
        BinaryOperator::And => {
            let l = truthy(&eval(left, env)?);
            if l == Some(false) {
                return Ok(bool_value(Some(false)));
            }
            let r = truthy(&eval(right, env)?);
            Ok(bool_value(match (l, r) {
                (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }))
        }
        BinaryOperator::Or => {
            let l = truthy(&eval(left, env)?);
            if l == Some(true) {
                return Ok(bool_value(Some(true)));
            }
            let r = truthy(&eval(right, env)?);
            Ok(bool_value(match (l, r) {
                (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }))
        }
        BinaryOperator::Xor => {
            let (l, r) = (truthy(&eval(left, env)?), truthy(&eval(right, env)?));
            Ok(bool_value(l.zip(r).map(|(a, b)| a != b)))
        }
        BinaryOperator::Eq
        | BinaryOperator::NotEq
        | BinaryOperator::Lt
        | BinaryOperator::LtEq
        | BinaryOperator::Gt
        | BinaryOperator::GtEq
        | BinaryOperator::Spaceship => {
            let (l, r) = (eval(left, env)?, eval(right, env)?);
            if matches!(op, BinaryOperator::Spaceship) {
                return Ok(bool_value(Some(match (&l, &r) {
                    (Value::Null, Value::Null) => true,
                    (Value::Null, _) | (_, Value::Null) => false,
                    _ => compare(&l, &r) == Some(Ordering::Equal),
                })));
            }
            let ord = compare(&l, &r);
            Ok(bool_value(ord.map(|o| match op {
                BinaryOperator::Eq => o == Ordering::Equal,
                BinaryOperator::NotEq => o != Ordering::Equal,
                BinaryOperator::Lt => o == Ordering::Less,
                BinaryOperator::LtEq => o != Ordering::Greater,
                BinaryOperator::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })))
        }
        BinaryOperator::Plus
        | BinaryOperator::Minus
        | BinaryOperator::Multiply
        | BinaryOperator::Divide
        | BinaryOperator::Modulo
        | BinaryOperator::MyIntegerDivide => arith(op, &eval(left, env)?, &eval(right, env)?),
        other => Err(SqlError::unsupported(format!("operator {other}"))),
    }
}

fn function(name: &str, args: &[&Expr], env: &Env<'_>) -> Result<Value, SqlError> {
    let arg = |i: usize| -> Result<Value, SqlError> {
        match args.get(i) {
            Some(a) => eval(a, env),
            None => Err(SqlError::new(
                1582,
                "42000",
                format!("Incorrect parameter count in the call to native function '{name}'"),
            )),
        }
    };
    let text = |s: String| Ok(Value::Bytes(s.into_bytes()));
    match name {
        "database" | "schema" => Ok(env
            .session
            .current_database()
            .map_or(Value::Null, |d| Value::Bytes(d.into_bytes()))),
        "user" | "current_user" | "session_user" | "system_user" => text(env.session.user()),
        "connection_id" => Ok(Value::UInt(u64::from(env.session.connection_id()))),
        "last_insert_id" => Ok(Value::UInt(env.session.last_insert_id())),
        "version" => Ok(env.session.variable("version").unwrap_or(Value::Null)),
        "now" | "current_timestamp" | "sysdate" | "localtime" | "localtimestamp" => Ok(now()),
        "ifnull" => {
            let v = arg(0)?;
            if v == Value::Null { arg(1) } else { Ok(v) }
        }
        "coalesce" => {
            for i in 0..args.len() {
                let v = arg(i)?;
                if v != Value::Null {
                    return Ok(v);
                }
            }
            Ok(Value::Null)
        }
        "if" => {
            if truthy(&arg(0)?) == Some(true) {
                arg(1)
            } else {
                arg(2)
            }
        }
        "concat" => {
            let mut out = Vec::new();
            for i in 0..args.len() {
                let v = arg(i)?;
                if v == Value::Null {
                    return Ok(Value::Null);
                }
                out.extend(to_bytes(&v));
            }
            Ok(Value::Bytes(out))
        }
        "length" | "octet_length" => Ok(match arg(0)? {
            Value::Null => Value::Null,
            v => Value::Int(i64::try_from(to_bytes(&v).len()).unwrap_or(i64::MAX)),
        }),
        "char_length" | "character_length" => Ok(match arg(0)? {
            Value::Null => Value::Null,
            v => Value::Int(
                i64::try_from(String::from_utf8_lossy(&to_bytes(&v)).chars().count())
                    .unwrap_or(i64::MAX),
            ),
        }),
        "upper" | "ucase" | "lower" | "lcase" => Ok(match arg(0)? {
            Value::Null => Value::Null,
            v => {
                let s = String::from_utf8_lossy(&to_bytes(&v)).into_owned();
                Value::Bytes(
                    if name.starts_with('u') {
                        s.to_uppercase()
                    } else {
                        s.to_lowercase()
                    }
                    .into_bytes(),
                )
            }
        }),
        "abs" => match arg(0)? {
            Value::Int(i) => i
                .checked_abs()
                .map(Value::Int)
                .ok_or_else(|| SqlError::new(1690, "22003", "BIGINT value is out of range in abs")),
            Value::Double(f) => Ok(Value::Double(f.abs())),
            Value::Decimal(mut d) => {
                d.digits = d.digits.abs();
                Ok(Value::Decimal(d))
            }
            other => Ok(other),
        },
        "values" => {
            let (Some(row), Some(table)) = (env.inserted, env.table) else {
                return Ok(Value::Null);
            };
            let Some(Expr::Identifier(col)) = args.first() else {
                return Err(SqlError::unsupported("VALUES() of an expression"));
            };
            let pos = table.column(&col.value).ok_or_else(|| {
                SqlError::new(
                    1054,
                    "42S22",
                    format!("Unknown column '{}' in 'field list'", col.value),
                )
            })?;
            Ok(row[pos].clone())
        }
        other => Err(SqlError::new(
            1305,
            "42000",
            format!("FUNCTION {other} does not exist"),
        )),
    }
}

/// The current UTC time as a DATETIME.
fn now() -> Value {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    Value::DateTime {
        year: u16::try_from(year).unwrap_or(0),
        month: u8::try_from(month).unwrap_or(1),
        day: u8::try_from(day).unwrap_or(1),
        hour: u8::try_from(rem / 3600).unwrap_or(0),
        minute: u8::try_from(rem / 60 % 60).unwrap_or(0),
        second: u8::try_from(rem % 60).unwrap_or(0),
        micro: 0,
    }
}
