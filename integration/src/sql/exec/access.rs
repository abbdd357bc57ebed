//! Access paths: which keys a WHERE clause needs read. Point gets and ranges by the integer
//! primary key, equality and ranges on an index, else a full scan. The WHERE clause is
//! always evaluated again on each row read, so a path only has to cover the matching rows.

use std::cmp::Ordering;

use sqlparser::ast::{BinaryOperator, Expr};
use surge_txn::Transaction;

use super::rows::{decode, handle_of_index_entry, handle_of_row_key, read_row, read_rows_locked};
use crate::sql::catalog::TableDef;
use crate::sql::codec::{encode_datum, index_prefix, row_key, row_prefix, row_prefix_end};
use crate::sql::expr::{Env, compare, eval, exact_integer};
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;
use crate::sql::types::{SqlType, is_clean_number, to_double, to_integer};
use crate::sql::value::Value;

/// Rows per scan request.
const SCAN_BATCH: usize = 256;

type Bound = Option<(Value, bool)>;

/// Called with each row found (transaction, handle, row); `false` stops the scan.
pub(crate) type RowVisitor<'a> =
    dyn FnMut(&mut Transaction, i64, Vec<Value>) -> Result<bool, SqlError> + 'a;

/// How to find a statement's rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Access {
    /// These handles (point gets).
    Handles(Vec<i64>),
    /// A handle range: low and high bounds, each with "inclusive".
    HandleRange(Option<(i64, bool)>, Option<(i64, bool)>),
    /// Index `index` (position in the table's indexes): equal on its first columns, then an
    /// optional range on the next one.
    Index {
        /// The index's position.
        index: usize,
        /// Values of its leading columns.
        eq: Vec<Value>,
        /// Bounds on the column after them.
        range: (Bound, Bound),
    },
    /// Every row.
    Full,
}

#[derive(Debug, Default, Clone)]
struct Cond {
    eq: Option<Value>,
    list: Option<Vec<Value>>,
    lo: Bound,
    hi: Bound,
}

fn is_const(e: &Expr) -> bool {
    match e {
        Expr::Value(_) => true,
        Expr::Identifier(id) => id.value.starts_with('@') && id.quote_style.is_none(),
        Expr::Nested(x) | Expr::UnaryOp { expr: x, .. } => is_const(x),
        Expr::BinaryOp { left, right, .. } => is_const(left) && is_const(right),
        _ => false,
    }
}

fn column_of(table: &TableDef, e: &Expr) -> Option<usize> {
    match e {
        Expr::Identifier(id) if !id.value.starts_with('@') => table.column(&id.value),
        Expr::CompoundIdentifier(p) => p.last().and_then(|id| table.column(&id.value)),
        Expr::Nested(x) => column_of(table, x),
        _ => None,
    }
}

fn tighter(a: Bound, b: Bound, lower: bool) -> Bound {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some((x, xi)), Some((y, yi))) => match compare(&x, &y) {
            Some(Ordering::Equal) => Some((x, xi && yi)),
            Some(Ordering::Greater) => Some(if lower { (x, xi) } else { (y, yi) }),
            _ => Some(if lower { (y, yi) } else { (x, xi) }),
        },
    }
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(x) => conjuncts(x, out),
        other => out.push(other),
    }
}

fn conditions(table: &TableDef, selection: &Expr, env: &Env<'_>) -> Vec<Cond> {
    let mut conds = vec![Cond::default(); table.columns.len()];
    let mut parts = Vec::new();
    conjuncts(selection, &mut parts);
    let val = |e: &Expr| if is_const(e) { eval(e, env).ok() } else { None };
    for p in parts {
        match p {
            Expr::BinaryOp { left, op, right } => {
                let (col, v, op) = match (column_of(table, left), column_of(table, right)) {
                    (Some(c), None) => (c, val(right), op.clone()),
                    (None, Some(c)) => (
                        c,
                        val(left),
                        match op {
                            BinaryOperator::Lt => BinaryOperator::Gt,
                            BinaryOperator::LtEq => BinaryOperator::GtEq,
                            BinaryOperator::Gt => BinaryOperator::Lt,
                            BinaryOperator::GtEq => BinaryOperator::LtEq,
                            other => other.clone(),
                        },
                    ),
                    _ => continue,
                };
                let Some(v) = v.filter(|v| *v != Value::Null) else {
                    continue;
                };
                let c = &mut conds[col];
                match op {
                    BinaryOperator::Eq => c.eq = Some(v),
                    BinaryOperator::Gt => c.lo = tighter(c.lo.take(), Some((v, false)), true),
                    BinaryOperator::GtEq => c.lo = tighter(c.lo.take(), Some((v, true)), true),
                    BinaryOperator::Lt => c.hi = tighter(c.hi.take(), Some((v, false)), false),
                    BinaryOperator::LtEq => c.hi = tighter(c.hi.take(), Some((v, true)), false),
                    _ => {}
                }
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => {
                if let (Some(col), Some(lo), Some(hi)) =
                    (column_of(table, expr), val(low), val(high))
                    && lo != Value::Null
                    && hi != Value::Null
                {
                    let c = &mut conds[col];
                    c.lo = tighter(c.lo.take(), Some((lo, true)), true);
                    c.hi = tighter(c.hi.take(), Some((hi, true)), false);
                }
            }
            Expr::In {
                expr,
                target: sqlparser::ast::InTarget::List(list),
                negated: false,
                ..
            } => {
                if let Some(col) = column_of(table, expr) {
                    let vals: Option<Vec<Value>> = list.iter().map(val).collect();
                    if let Some(vals) = vals {
                        conds[col].list =
                            Some(vals.into_iter().filter(|v| *v != Value::Null).collect());
                    }
                }
            }
            _ => {}
        }
    }
    conds
}

/// Doubles hold every integer below this exactly (2^53).
const EXACT_DOUBLE_INTS: f64 = 9_007_199_254_740_992.0;

/// Whether an integer column compares with `v` in the key order of integers: a double or a
/// string that is exactly an integer compares as that integer ([`exact_integer`]); any
/// other is compared as a double, and past 2^53 several integers are equal to the same
/// double.
fn compares_exactly_with_ints(v: &Value) -> bool {
    match v {
        Value::Bytes(b) if !is_clean_number(b) => false,
        Value::Double(_) | Value::Bytes(_) => {
            exact_integer(v).is_some() || to_double(v).is_some_and(|f| f.abs() < EXACT_DOUBLE_INTS)
        }
        _ => true,
    }
}

/// `v` as an exact i64, if it is one and no other integer compares equal to it.
pub(crate) fn exact_int(v: &Value) -> Option<i64> {
    if !compares_exactly_with_ints(v) {
        return None;
    }
    // `to_integer` reads no exponent ('1e3'); the comparison decides either way.
    let n = match to_integer(v) {
        Some(n) => i64::try_from(n).ok()?,
        None => {
            let f = to_double(v)?;
            if f.fract() != 0.0 || f.abs() >= EXACT_DOUBLE_INTS {
                return None;
            }
            #[allow(clippy::cast_possible_truncation)] // integral and below 2^53
            let n = f as i64;
            n
        }
    };
    (compare(v, &Value::Int(n)) == Some(Ordering::Equal)).then_some(n)
}

/// `v` as a key of a column of type `ty`, and whether that key equals `v`; `None` when
/// the column's key order is not how WHERE compares its values with `v` (a string column
/// against a number compares numbers; a DECIMAL against a double or a string, doubles), or
/// `v` does not convert.
fn key_of(ty: SqlType, v: &Value) -> Option<(Value, bool)> {
    let comparable = match ty {
        SqlType::Int { .. } => compares_exactly_with_ints(v),
        SqlType::Decimal { .. } => matches!(v, Value::Int(_) | Value::UInt(_) | Value::Decimal(_)),
        SqlType::Float | SqlType::Double => match v {
            Value::Bytes(b) => is_clean_number(b),
            Value::Double(f) => f.is_finite(),
            other => matches!(other, Value::Int(_) | Value::UInt(_) | Value::Decimal(_)),
        },
        SqlType::Date | SqlType::DateTime | SqlType::Timestamp => {
            matches!(
                v,
                Value::Date { .. } | Value::DateTime { .. } | Value::Bytes(_)
            )
        }
        SqlType::Char(_)
        | SqlType::VarChar(_)
        | SqlType::Text
        | SqlType::Binary(_)
        | SqlType::VarBinary(_)
        | SqlType::Blob => matches!(v, Value::Bytes(_)),
    };
    if !comparable {
        return None;
    }
    let key = ty.coerce(v.clone(), "").ok()?;
    let exact = compare(v, &key) == Some(Ordering::Equal);
    Some((key, exact))
}

/// A range bound on a column of type `ty` as an index bound that keeps every row the
/// bound admits (the WHERE clause filters the rest); `None`: that side stays open.
///
/// A bound the column cannot hold exactly becomes inclusive at its conversion when no value
/// of the type lies strictly between the two: integers and decimals round to the nearest
/// value of their scale, FLOAT to the nearest f32, DATE drops the time (rounding down). A
/// CHAR bound loses its trailing spaces, with values such as `'ab\t'` in between: open.
fn index_bound(ty: SqlType, b: &Bound) -> Bound {
    let (v, inclusive) = b.as_ref()?;
    match key_of(ty, v)? {
        (key, true) => Some((key, *inclusive)),
        (key, false)
            if matches!(
                ty,
                SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Float | SqlType::Date
            ) =>
        {
            Some((key, true))
        }
        _ => None,
    }
}

/// The access path for `selection` on `table`.
pub(crate) fn plan(table: &TableDef, selection: Option<&Expr>, env: &Env<'_>) -> Access {
    let Some(selection) = selection else {
        return Access::Full;
    };
    let conds = conditions(table, selection, env);
    if let Some(h) = table.handle_column {
        let c = &conds[h];
        if let Some(v) = c.eq.as_ref().filter(|v| compares_exactly_with_ints(v)) {
            return match exact_int(v) {
                Some(n) => Access::Handles(vec![n]),
                // No integer equals it: no row matches, but let the filter say so.
                None => Access::Handles(Vec::new()),
            };
        }
        if let Some(list) = c
            .list
            .as_ref()
            .filter(|l| l.iter().all(compares_exactly_with_ints))
        {
            return Access::Handles(list.iter().filter_map(exact_int).collect());
        }
        if c.lo.is_some() || c.hi.is_some() {
            let lo =
                c.lo.as_ref()
                    .and_then(|(v, inc)| exact_int(v).map(|n| (n, *inc)));
            let hi =
                c.hi.as_ref()
                    .and_then(|(v, inc)| exact_int(v).map(|n| (n, *inc)));
            if lo.is_some() == c.lo.is_some() && hi.is_some() == c.hi.is_some() {
                return Access::HandleRange(lo, hi);
            }
        }
    }
    let mut best: Option<(usize, Access)> = None;
    for (pos, index) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        for &col in &index.columns {
            // A key that is not exactly the value still finds every row equal to it: none.
            match conds[col]
                .eq
                .as_ref()
                .and_then(|v| key_of(table.columns[col].ty, v))
            {
                Some((key, _)) => eq.push(key),
                None => break,
            }
        }
        let mut range = (None, None);
        if let Some(&next) = index.columns.get(eq.len()) {
            let ty = table.columns[next].ty;
            let c = &conds[next];
            range = (index_bound(ty, &c.lo), index_bound(ty, &c.hi));
        }
        let has_range = range.0.is_some() || range.1.is_some();
        if eq.is_empty() && !has_range {
            continue;
        }
        let full_unique = index.unique && eq.len() == index.columns.len();
        let score = if full_unique {
            1000
        } else {
            eq.len() * 10 + usize::from(has_range)
        };
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((
                score,
                Access::Index {
                    index: pos,
                    eq,
                    range,
                },
            ));
        }
    }
    best.map_or(Access::Full, |(_, a)| a)
}

fn after(mut k: Vec<u8>) -> Vec<u8> {
    k.push(0xFF);
    k
}

/// Calls `f(handle, row)` for each row `access` finds, in key order, until it returns
/// `false`. `locks`: snapshot reads, or locking current reads one by one or in batches
/// ([`RowLocks`]). `collect_first`: find every handle before the first call (the caller
/// changes what the path reads).
///
/// # Errors
/// Read and lock failures, and `f`'s.
pub(crate) fn for_each_row(
    txn: &mut Transaction,
    table: &TableDef,
    access: &Access,
    locks: RowLocks,
    collect_first: bool,
    f: &mut RowVisitor<'_>,
) -> Result<(), SqlError> {
    let lock = locks != RowLocks::None;
    match access {
        Access::Handles(hs) => {
            let mut hs = hs.clone();
            hs.sort_unstable();
            hs.dedup();
            if !lock && hs.len() > 1 {
                let keys: Vec<Vec<u8>> = hs.iter().map(|h| row_key(table.id, *h)).collect();
                let pairs = txn.batch_get(&keys).map_err(|e| from_txn(&e))?;
                for (k, v) in pairs {
                    if !f(txn, handle_of_row_key(&k)?, decode(table, &v)?)? {
                        break;
                    }
                }
                return Ok(());
            }
            visit_handles(txn, table, hs, locks, f)
        }
        Access::HandleRange(..) | Access::Full => {
            let prefix = row_prefix(table.id);
            let (mut from, end) = match access {
                Access::HandleRange(lo, hi) => {
                    let from = match lo {
                        Some((n, true)) => row_key(table.id, *n),
                        Some((n, false)) => after(row_key(table.id, *n)),
                        None => prefix.clone(),
                    };
                    let end = match hi {
                        Some((n, true)) => after(row_key(table.id, *n)),
                        Some((n, false)) => row_key(table.id, *n),
                        None => row_prefix_end(table.id),
                    };
                    (from, end)
                }
                _ => (prefix.clone(), row_prefix_end(table.id)),
            };
            if collect_first {
                let mut handles = Vec::new();
                loop {
                    let pairs = txn
                        .scan(&from, Some(&end), SCAN_BATCH)
                        .map_err(|e| from_txn(&e))?;
                    let Some((last, _)) = pairs.last() else { break };
                    from = last.clone();
                    from.push(0);
                    for (k, _) in &pairs {
                        handles.push(handle_of_row_key(k)?);
                    }
                }
                return for_each_row(txn, table, &Access::Handles(handles), locks, false, f);
            }
            loop {
                let pairs = txn
                    .scan(&from, Some(&end), SCAN_BATCH)
                    .map_err(|e| from_txn(&e))?;
                let Some((last, _)) = pairs.last() else {
                    return Ok(());
                };
                from = last.clone();
                from.push(0);
                if locks == RowLocks::Batched {
                    // The batch's rows locked and read again at once (current versions).
                    let hs = pairs
                        .iter()
                        .map(|(k, _)| handle_of_row_key(k))
                        .collect::<Result<Vec<_>, _>>()?;
                    let rows = read_rows_locked(txn, table, &hs)?;
                    for (h, row) in hs.into_iter().zip(rows) {
                        if let Some(row) = row
                            && !f(txn, h, row)?
                        {
                            return Ok(());
                        }
                    }
                    continue;
                }
                for (k, v) in pairs {
                    let h = handle_of_row_key(&k)?;
                    let row = if lock {
                        match read_row(txn, table, h, true)? {
                            Some(r) => r,
                            None => continue,
                        }
                    } else {
                        decode(table, &v)?
                    };
                    if !f(txn, h, row)? {
                        return Ok(());
                    }
                }
            }
        }
        Access::Index { index, eq, range } => {
            let ix = &table.indexes[*index];
            let mut prefix = index_prefix(table.id, ix.id);
            for v in eq {
                encode_datum(&mut prefix, v);
            }
            let bound = |b: &(Value, bool)| {
                let mut k = prefix.clone();
                encode_datum(&mut k, &b.0);
                k
            };
            let mut from = match &range.0 {
                Some(b @ (_, true)) => bound(b),
                Some(b) => after(bound(b)),
                None => prefix.clone(),
            };
            let end = match &range.1 {
                Some(b @ (_, true)) => after(bound(b)),
                Some(b) => bound(b),
                None => after(prefix.clone()),
            };
            // Entries first: the caller may change this index while it visits the rows.
            let mut handles = Vec::new();
            loop {
                let pairs = txn
                    .scan(&from, Some(&end), SCAN_BATCH)
                    .map_err(|e| from_txn(&e))?;
                let Some((last, _)) = pairs.last() else { break };
                from = last.clone();
                from.push(0);
                for (k, v) in &pairs {
                    handles.push(handle_of_index_entry(k, v)?);
                }
            }
            // Index order is kept (ORDER BY on the index relies on it only through sorting).
            visit_handles(txn, table, handles, locks, f)
        }
    }
}

/// How [`for_each_row`] reads the rows it visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowLocks {
    /// Snapshot reads.
    None,
    /// A locking current read of each row just before it is visited: a statement that
    /// stops early (`LIMIT`) locks nothing past the row where it stopped.
    OneByOne,
    /// Locking current reads of [`SCAN_BATCH`] rows at once, one request per region
    /// ([`read_rows_locked`]): for a statement that visits every row it reads (no `LIMIT`),
    /// which then locks the same rows as `OneByOne`, with far fewer round trips.
    Batched,
}

/// Calls `f` with the row of each handle that has one, in order, until it returns false;
/// locking as `locks` says.
fn visit_handles(
    txn: &mut Transaction,
    table: &TableDef,
    handles: Vec<i64>,
    locks: RowLocks,
    f: &mut RowVisitor<'_>,
) -> Result<(), SqlError> {
    let lock = locks != RowLocks::None;
    if locks != RowLocks::Batched || handles.len() <= 1 {
        for h in handles {
            if let Some(row) = read_row(txn, table, h, lock)?
                && !f(txn, h, row)?
            {
                break;
            }
        }
        return Ok(());
    }
    for chunk in handles.chunks(SCAN_BATCH) {
        let rows = read_rows_locked(txn, table, chunk)?;
        for (h, row) in chunk.iter().zip(rows) {
            if let Some(row) = row
                && !f(txn, *h, row)?
            {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::catalog::{ColumnDef, IndexDef};
    use crate::sql::types::SqlType;
    use sqlparser::dialect::MySqlDialect;
    use sqlparser::parser::Parser;

    struct S;
    impl crate::sql::expr::SessionView for S {
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

    fn table() -> TableDef {
        let col = |id, name: &str| ColumnDef {
            id,
            name: name.into(),
            ty: SqlType::Int {
                bytes: 4,
                unsigned: false,
            },
            nullable: false,
            default: None,
            auto_increment: false,
        };
        TableDef {
            id: 100,
            db: "d".into(),
            name: "t".into(),
            columns: vec![col(1, "id"), col(2, "k")],
            handle_column: Some(0),
            indexes: vec![IndexDef {
                id: 1,
                name: "k_1".into(),
                columns: vec![1],
                unique: false,
                primary: false,
            }],
            next_index_id: 2,
        }
    }

    fn plan_of(w: &str) -> Access {
        let e = Parser::new(&MySqlDialect {})
            .try_with_sql(w)
            .unwrap()
            .parse_expr()
            .unwrap();
        plan(&table(), Some(&e), &Env::bare(&S))
    }

    #[test]
    fn paths() {
        assert_eq!(plan_of("id = 5"), Access::Handles(vec![5]));
        assert_eq!(plan_of("5 = id and k > 1"), Access::Handles(vec![5]));
        assert_eq!(plan_of("id in (1, 3)"), Access::Handles(vec![1, 3]));
        assert_eq!(
            plan_of("id between 2 and 9"),
            Access::HandleRange(Some((2, true)), Some((9, true)))
        );
        assert_eq!(
            plan_of("id > 2 and id < 9"),
            Access::HandleRange(Some((2, false)), Some((9, false)))
        );
        assert!(matches!(plan_of("k = 3"), Access::Index { index: 0, .. }));
        assert_eq!(plan_of("k + 1 = 3"), Access::Full);
        assert_eq!(plan_of("id = 5 or id = 6"), Access::Full);
        // A bound the column cannot hold becomes inclusive at the value it converts to.
        let k_range = |lo: Bound, hi: Bound| Access::Index {
            index: 0,
            eq: Vec::new(),
            range: (lo, hi),
        };
        assert_eq!(
            plan_of("k > 2.5 and k < 4.4"),
            k_range(Some((Value::Int(3), true)), Some((Value::Int(4), true)))
        );
        assert_eq!(
            plan_of("k > 2 and k <= 4.0"),
            k_range(Some((Value::Int(2), false)), Some((Value::Int(4), true)))
        );
        assert_eq!(plan_of("id = 2.5"), Access::Handles(Vec::new()));
        // A double or string that is exactly an integer compares as that integer, also
        // past 2^53: its key stands for it.
        assert_eq!(
            plan_of("id = 9007199254740996e0"),
            Access::Handles(vec![9_007_199_254_740_996])
        );
        assert_eq!(
            plan_of("id = '9007199254740997'"),
            Access::Handles(vec![9_007_199_254_740_997])
        );
        // One that is not compares as a double, where several integers equal it: no key.
        assert_eq!(plan_of("id = '9007199254740996.5'"), Access::Full);
        assert_eq!(plan_of("id >= '9007199254740996.5'"), Access::Full);
    }
}
