//! [`Session`]: one connection's state, and the statement loop.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use sqlparser::ast::{
    Expr, ObjectName, Set, Statement, Use, Value as Lit, ValueWithSpan, VisitMut, VisitorMut,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use surge_txn::{Transaction, TxnMode};

use super::hints::Hints;
use super::{ddl, insert, modify, select, show, special, split, subquery, vars};
use crate::sql::catalog::TableDef;
use crate::sql::catalog::cache::Schema;
use crate::sql::column::ColumnMeta;
use crate::sql::engine::{Process, Shared};
use crate::sql::expr::{Env, SessionView, eval};
use crate::sql::output::{Output, SqlError};
use crate::sql::session::{
    ConnectionInfo, PreparedInfo, SqlSession, StatementResult, multi_statements_refused,
};
use crate::sql::txn_error::from_txn;
use crate::sql::value::Value;

/// Autocommit statements that fail with an abort a retry can cure run again this often.
const AUTOCOMMIT_RETRIES: usize = 8;

/// A prepared statement: parsed once, its `?` numbered in text order.
#[derive(Debug, Clone)]
struct Prepared {
    stmt: Option<Statement>,
    text: String,
    params: u16,
}

/// One connection's SQL session.
pub struct Session {
    pub(crate) shared: Arc<Shared>,
    conn: ConnectionInfo,
    pub(crate) db: Option<String>,
    txn: Option<Transaction>,
    autocommit: bool,
    pub(crate) mode: TxnMode,
    vars: BTreeMap<String, Value>,
    user_vars: HashMap<String, Value>,
    last_insert_id: u64,
    pub(crate) warnings: Vec<(String, u16, String)>,
    prepared: HashMap<u32, Prepared>,
    next_stmt: u32,
    /// Set by a statement once it buffered a write (a failure after it cannot be undone
    /// statement by statement: the transaction is rolled back).
    pub(crate) wrote: Cell<bool>,
    /// Statements parsed recently, by text.
    parsed: super::parse_cache::ParseCache,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("conn", &self.conn)
            .field("db", &self.db)
            .field("in_txn", &self.txn.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(t) = self.txn.take() {
            t.rollback();
        }
        self.shared.processes.lock().remove(&self.conn.id);
    }
}

impl SessionView for Session {
    fn variable(&self, name: &str) -> Option<Value> {
        if name == "autocommit" {
            return Some(Value::Int(i64::from(self.autocommit)));
        }
        if name == "last_insert_id" || name == "identity" {
            return Some(Value::UInt(self.last_insert_id));
        }
        self.vars
            .get(name)
            .cloned()
            .or_else(|| self.shared.globals.lock().get(name).cloned())
    }
    fn user_variable(&self, name: &str) -> Value {
        self.user_vars.get(name).cloned().unwrap_or(Value::Null)
    }
    fn current_database(&self) -> Option<String> {
        self.db.clone()
    }
    fn user(&self) -> String {
        let host = self
            .conn
            .peer
            .rsplit_once(':')
            .map_or(self.conn.peer.as_str(), |(h, _)| h);
        format!("{}@{}", self.conn.user, host)
    }
    fn connection_id(&self) -> u32 {
        self.conn.id
    }
    fn last_insert_id(&self) -> u64 {
        self.last_insert_id
    }
}

/// How many statements one session may hold prepared: MySQL's `max_prepared_stmt_count`
/// default (there for the whole server, here per session), so a client cannot grow the
/// server without bound.
const MAX_PREPARED_STMT_COUNT: usize = 16_382;

/// Numbers each `?` placeholder in visit (text) order: `?` becomes `?1`, `?2`, ...;
/// breaks at the 65,536th (the protocol counts parameters in 16 bits).
struct Numberer(u16);

impl VisitorMut for Numberer {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
        if let Expr::Value(ValueWithSpan {
            value: Lit::Placeholder(p),
            ..
        }) = e
            && p == "?"
        {
            let Some(n) = self.0.checked_add(1) else {
                return std::ops::ControlFlow::Break(());
            };
            self.0 = n;
            *p = format!("?{n}");
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Replaces `?n` by the n-th parameter as a literal.
struct Binder<'a>(&'a [Value]);

pub(crate) fn to_literal(v: &Value) -> Lit {
    match v {
        Value::Null => Lit::Null,
        Value::Int(i) => Lit::Number(i.to_string(), false),
        Value::UInt(u) => Lit::Number(u.to_string(), false),
        Value::Double(f) => Lit::Number(format!("{f:e}"), false),
        Value::Decimal(d) => Lit::Number(d.to_string(), false),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => Lit::SingleQuotedString(s.to_owned()),
            Err(_) => Lit::HexStringLiteral(b.iter().map(|x| format!("{x:02x}")).collect()),
        },
        other => Lit::SingleQuotedString(
            String::from_utf8_lossy(&other.to_text().unwrap_or_default()).into_owned(),
        ),
    }
}

impl VisitorMut for Binder<'_> {
    type Break = SqlError;
    fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<SqlError> {
        if let Expr::Value(ValueWithSpan { value, .. }) = e
            && let Lit::Placeholder(p) = value
        {
            let n: usize = p.trim_start_matches('?').parse().unwrap_or(0);
            match n.checked_sub(1).and_then(|i| self.0.get(i)) {
                Some(v) => *value = to_literal(v),
                None => {
                    return std::ops::ControlFlow::Break(SqlError::new(
                        1210,
                        "HY000",
                        format!("Incorrect arguments to EXECUTE: parameter {p} has no value"),
                    ));
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Parses one statement.
pub(crate) fn parse_one(sql: &str) -> Result<Statement, SqlError> {
    let mut stmts = Parser::parse_sql(&MySqlDialect {}, sql).map_err(|e| {
        SqlError::parse(format!(
            "You have an error in your SQL syntax: {e} (in `{}`)",
            sql.chars().take(200).collect::<String>()
        ))
    })?;
    match stmts.len() {
        1 => stmts
            .pop()
            .ok_or_else(|| SqlError::parse("empty statement")),
        0 => Err(SqlError::new(1065, "42000", "Query was empty")),
        _ => Err(SqlError::parse("one statement expected")),
    }
}

/// The transaction mode a new (or reset) session starts in: the global `tidb_txn_mode`,
/// pessimistic unless it says optimistic (TiDB's default).
fn global_mode(shared: &Shared) -> TxnMode {
    let global = shared
        .globals
        .lock()
        .get("tidb_txn_mode")
        .and_then(Value::to_text)
        .unwrap_or_default();
    if String::from_utf8_lossy(&global).eq_ignore_ascii_case("optimistic") {
        TxnMode::Optimistic
    } else {
        TxnMode::Pessimistic
    }
}

impl Session {
    /// Opens a session for `conn`.
    ///
    /// # Errors
    /// 1049 when `conn.database` does not exist.
    pub(crate) fn open(shared: Arc<Shared>, conn: &ConnectionInfo) -> Result<Session, SqlError> {
        let mode = global_mode(&shared);
        let mut s = Session {
            shared,
            conn: conn.clone(),
            db: None,
            txn: None,
            autocommit: true,
            mode,
            vars: BTreeMap::new(),
            user_vars: HashMap::new(),
            last_insert_id: 0,
            warnings: Vec::new(),
            prepared: HashMap::new(),
            next_stmt: 1,
            wrote: Cell::new(false),
            parsed: super::parse_cache::ParseCache::default(),
        };
        if let Some(db) = &conn.database {
            s.use_db(db)?;
        }
        // The session's own copy, taken at connect as MySQL's: a later SET GLOBAL changes
        // new sessions only.
        let timeout = if conn.interactive {
            "interactive_timeout"
        } else {
            "wait_timeout"
        };
        if let Some(secs) = s.shared.globals.lock().get(timeout).cloned() {
            s.vars.insert("wait_timeout".into(), secs);
        }
        s.shared.processes.lock().insert(
            conn.id,
            Process {
                user: conn.user.clone(),
                host: conn.peer.clone(),
                db: s.db.clone(),
                since: Instant::now(),
                info: None,
            },
        );
        Ok(s)
    }

    pub(crate) fn schema(&self) -> Result<Arc<Schema>, SqlError> {
        self.shared.catalog.schema()
    }

    /// The table `name` (qualified or in the current database).
    pub(crate) fn table(
        &self,
        schema: &Schema,
        name: &ObjectName,
    ) -> Result<Arc<TableDef>, SqlError> {
        let (db, t) = ddl::split_name(name);
        let db = match db.or_else(|| self.db.clone()) {
            Some(d) => d,
            None => return Err(SqlError::new(1046, "3D000", "No database selected")),
        };
        let key = (db, t);
        if let Some(found) = schema.tables.get(&key) {
            return Ok(found.clone());
        }
        // Another node may have just created it: look again past the lease.
        self.shared.catalog.invalidate();
        let fresh = self.schema()?;
        fresh.tables.get(&key).cloned().ok_or_else(|| {
            SqlError::new(
                1146,
                "42S02",
                format!("Table '{}.{}' doesn't exist", key.0, key.1),
            )
        })
    }

    pub(crate) fn current_db(&self) -> Result<String, SqlError> {
        self.db
            .clone()
            .ok_or_else(|| SqlError::new(1046, "3D000", "No database selected"))
    }

    fn use_db(&mut self, db: &str) -> Result<(), SqlError> {
        let mut schema = self.schema()?;
        if !schema.dbs.contains(db) {
            // Another node may have just created it: look again past the lease.
            self.shared.catalog.invalidate();
            schema = self.schema()?;
        }
        if !schema.dbs.contains(db) {
            return Err(SqlError::new(
                1049,
                "42000",
                format!("Unknown database '{db}'"),
            ));
        }
        self.db = Some(db.to_owned());
        if let Some(p) = self.shared.processes.lock().get_mut(&self.conn.id) {
            p.db = self.db.clone();
        }
        Ok(())
    }

    pub(crate) fn env(&self) -> Env<'_> {
        Env::bare(self)
    }

    /// How long a row lock waits: `innodb_lock_wait_timeout` (the session's, else the
    /// global one).
    pub(crate) fn lock_wait_timeout(&self) -> std::time::Duration {
        let secs = match self.variable("innodb_lock_wait_timeout") {
            Some(Value::Int(n)) => u64::try_from(n).unwrap_or(1),
            Some(Value::UInt(n)) => n,
            _ => vars::DEFAULT_LOCK_WAIT_SECS.unsigned_abs(),
        };
        std::time::Duration::from_secs(secs.max(1))
    }

    /// Commits the open transaction, if any.
    fn commit(&mut self) -> Result<(), SqlError> {
        if let Some(t) = self.txn.take() {
            t.commit().map_err(|e| from_txn(&e))?;
        }
        Ok(())
    }

    fn rollback(&mut self) {
        if let Some(t) = self.txn.take() {
            t.rollback();
        }
    }

    fn begin(&mut self) -> Result<(), SqlError> {
        // BEGIN inside a transaction commits it first, as MySQL.
        self.commit()?;
        let mut txn = self
            .shared
            .client
            .begin(self.mode)
            .map_err(|e| from_txn(&e))?;
        txn.set_lock_wait_timeout(Some(self.lock_wait_timeout()));
        self.txn = Some(txn);
        Ok(())
    }

    /// Runs `f` in the session's transaction, or in an autocommit one (retried on aborts a
    /// retry cures). A statement failing with 1213 or 1205, or failing after it wrote,
    /// rolls the whole transaction back.
    pub(crate) fn with_txn<R>(
        &mut self,
        f: impl FnMut(&mut Transaction, &Session) -> Result<R, SqlError>,
    ) -> Result<R, SqlError> {
        self.with_txn_mode(None, f)
    }

    /// As [`Session::with_txn`], an autocommit transaction in `mode` when given (an
    /// open transaction keeps its own).
    pub(crate) fn with_txn_mode<R>(
        &mut self,
        mode: Option<TxnMode>,
        mut f: impl FnMut(&mut Transaction, &Session) -> Result<R, SqlError>,
    ) -> Result<R, SqlError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.wrote.set(false);
            let explicit = self.txn.take();
            let is_explicit = explicit.is_some() || !self.autocommit;
            let mut txn = match explicit {
                Some(t) => t,
                None => {
                    let mut t = self
                        .shared
                        .client
                        .begin(mode.unwrap_or(self.mode))
                        .map_err(|e| from_txn(&e))?;
                    t.set_lock_wait_timeout(Some(self.lock_wait_timeout()));
                    t
                }
            };
            let result = f(&mut txn, self);
            let result = match result {
                Ok(r) if is_explicit => {
                    self.txn = Some(txn);
                    return Ok(r);
                }
                Ok(r) => txn.commit().map(|_| r).map_err(|e| from_txn(&e)),
                Err(e) => {
                    let aborts = matches!(e.code, 1213 | 1205);
                    if is_explicit && !aborts && !self.wrote.get() {
                        self.txn = Some(txn);
                        return Err(e);
                    }
                    txn.rollback();
                    if is_explicit && !aborts {
                        return Err(SqlError::new(
                            e.code,
                            &e.state,
                            format!(
                                "{} (the statement had written rows: the transaction was rolled back)",
                                e.message
                            ),
                        ));
                    }
                    Err(e)
                }
            };
            match result {
                Err(e)
                    if !is_explicit && matches!(e.code, 1213) && attempt < AUTOCOMMIT_RETRIES => {}
                other => return other,
            }
        }
    }

    /// Runs `f` after committing the open transaction (DDL commits implicitly, as MySQL).
    fn ddl<R>(&mut self, f: impl FnOnce(&Session) -> Result<R, SqlError>) -> Result<R, SqlError> {
        self.commit()?;
        let r = f(self);
        self.shared.catalog.invalidate();
        r
    }

    fn set(&mut self, set: &Set) -> Result<Output, SqlError> {
        match set {
            Set::SingleAssignment {
                scope,
                variable,
                values,
                ..
            } => {
                let parts: Vec<String> = variable
                    .0
                    .iter()
                    .map(|p| {
                        p.as_ident()
                            .map_or_else(|| p.to_string(), |i| i.value.clone())
                    })
                    .collect();
                let mut global = matches!(scope, Some(sqlparser::ast::ContextModifier::Global));
                let raw = parts.join(".").to_ascii_lowercase();
                let value_expr = values
                    .first()
                    .ok_or_else(|| SqlError::parse("SET without a value"))?;
                if let Some(user) = raw.strip_prefix('@').filter(|r| !r.starts_with('@')) {
                    let v = eval(value_expr, &self.env())?;
                    self.user_vars.insert(user.to_owned(), v);
                    return Ok(Output::done(0));
                }
                let mut name = raw.trim_start_matches("@@").to_owned();
                for (prefix, is_global) in
                    [("global.", true), ("session.", false), ("local.", false)]
                {
                    if let Some(n) = name.strip_prefix(prefix) {
                        global = is_global;
                        name = n.to_owned();
                    }
                }
                // ON/OFF and other bare words are values, not columns.
                let v = match value_expr {
                    Expr::Identifier(id) if !id.value.starts_with('@') => {
                        Value::Bytes(id.value.clone().into_bytes())
                    }
                    other => eval(other, &self.env())?,
                };
                let v = vars::normalize(&name, v);
                self.set_variable(&name, v, global)?;
                Ok(Output::done(0))
            }
            Set::SetNames { charset_name, .. } => {
                let cs = Value::Bytes(charset_name.value.clone().into_bytes());
                for k in [
                    "character_set_client",
                    "character_set_connection",
                    "character_set_results",
                ] {
                    self.vars.insert(k.into(), cs.clone());
                }
                Ok(Output::done(0))
            }
            Set::SetNamesDefault {} => Ok(Output::done(0)),
            Set::SetTransaction { .. } => Ok(Output::done(0)),
            Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let one = Set::SingleAssignment {
                        scope: a.scope,
                        hivevar: false,
                        variable: a.name.clone(),
                        values: vec![a.value.clone()],
                    };
                    self.set(&one)?;
                }
                Ok(Output::done(0))
            }
            other => Err(SqlError::unsupported(other)),
        }
    }

    fn set_variable(&mut self, name: &str, v: Value, global: bool) -> Result<(), SqlError> {
        match name {
            "autocommit" => {
                let on = v == Value::Int(1);
                if on && !self.autocommit {
                    self.commit()?;
                }
                self.autocommit = on;
                if global {
                    self.shared.globals.lock().insert(name.into(), v);
                }
                return Ok(());
            }
            "tidb_txn_mode" | "surgedb_txn_mode" => {
                let text =
                    String::from_utf8_lossy(&v.to_text().unwrap_or_default()).to_ascii_lowercase();
                self.mode = match text.as_str() {
                    "optimistic" => TxnMode::Optimistic,
                    "pessimistic" | "" => TxnMode::Pessimistic,
                    other => {
                        return Err(SqlError::new(
                            1231,
                            "42000",
                            format!("Variable '{name}' can't be set to the value of '{other}'"),
                        ));
                    }
                };
                let v = Value::Bytes(text.into_bytes());
                for k in ["tidb_txn_mode", "surgedb_txn_mode"] {
                    if global {
                        self.shared.globals.lock().insert(k.into(), v.clone());
                    }
                    self.vars.insert(k.into(), v.clone());
                }
                return Ok(());
            }
            "innodb_lock_wait_timeout" => {
                let secs = match &v {
                    Value::Int(n) if (1..=1_073_741_824).contains(n) => *n,
                    Value::UInt(n) if (1..=1_073_741_824).contains(n) => *n as i64,
                    other => {
                        return Err(SqlError::new(
                            1231,
                            "42000",
                            format!(
                                "Variable 'innodb_lock_wait_timeout' can't be set to the value of '{}' (whole seconds, 1 to 1073741824)",
                                String::from_utf8_lossy(&other.to_text().unwrap_or_default())
                            ),
                        ));
                    }
                };
                let v = Value::Int(secs);
                if global {
                    self.shared.globals.lock().insert(name.to_owned(), v);
                } else {
                    self.vars.insert(name.to_owned(), v);
                }
                return Ok(());
            }
            "hotspot" if global => {
                let on = vars::is_on(Some(&v));
                self.shared.client.set_hot_grouping(on);
            }
            _ => {}
        }
        if global {
            self.shared.globals.lock().insert(name.to_owned(), v);
        } else {
            self.vars.insert(name.to_owned(), v);
        }
        Ok(())
    }

    /// Runs one parsed statement (DDL logs itself to the binlog as its text, in the
    /// transaction that changes the catalog).
    pub(crate) fn run(&mut self, stmt: &Statement) -> Result<Output, SqlError> {
        if subquery::has_scalar_subquery(stmt) {
            let mut stmt = stmt.clone();
            select::keep_constants_out_of_positions(&mut stmt);
            let inlined = subquery::inline_scalar_subqueries(self, &stmt)?;
            return self.run_inner(&inlined);
        }
        self.run_inner(stmt)
    }

    fn run_inner(&mut self, stmt: &Statement) -> Result<Output, SqlError> {
        let is_ddl = matches!(
            stmt,
            Statement::CreateDatabase { .. }
                | Statement::CreateTable(_)
                | Statement::CreateIndex(_)
                | Statement::Drop { .. }
                | Statement::Truncate(_)
        );
        // Only DDL is logged as text: DML is not formatted back.
        let log = ddl::DdlLog {
            db: self.db.clone().unwrap_or_default(),
            sql: if is_ddl {
                stmt.to_string()
            } else {
                String::new()
            },
        };
        let log = &log;
        match stmt {
            Statement::StartTransaction { .. } => {
                self.begin()?;
                Ok(Output::done(0))
            }
            Statement::Commit { .. } => {
                self.commit()?;
                Ok(Output::done(0))
            }
            Statement::Rollback {
                savepoint: None, ..
            } => {
                self.rollback();
                Ok(Output::done(0))
            }
            Statement::Set(set) => self.set(set),
            Statement::Use(u) => {
                let name = match u {
                    Use::Object(n) | Use::Database(n) | Use::Schema(n) => ddl::split_name(n).1,
                    other => return Err(SqlError::unsupported(other)),
                };
                self.use_db(&name)?;
                Ok(Output::done(0))
            }
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => {
                let db = ddl::split_name(db_name).1;
                let n =
                    self.ddl(|s| ddl::create_database(&s.shared.client, log, &db, *if_not_exists))?;
                Ok(Output::done(n))
            }
            Statement::CreateTable(ct) => {
                let (qual, _) = ddl::split_name(&ct.name);
                let db = match qual {
                    Some(d) => d,
                    None => self.current_db()?,
                };
                self.ddl(|s| ddl::create_table(&s.shared.client, log, &db, ct))?;
                Ok(Output::done(0))
            }
            Statement::CreateIndex(ci) => {
                let (qual, _) = ddl::split_name(&ci.table_name);
                let db = match qual {
                    Some(d) => d,
                    None => self.current_db()?,
                };
                self.ddl(|s| ddl::create_index(&s.shared.client, log, &db, ci))?;
                Ok(Output::done(0))
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => {
                use sqlparser::ast::ObjectType;
                match object_type {
                    ObjectType::Database | ObjectType::Schema => {
                        let mut total = 0;
                        for n in names {
                            let db = ddl::split_name(n).1;
                            let (count, ids) = self.ddl(|s| {
                                ddl::drop_database(&s.shared.client, log, &db, *if_exists)
                            })?;
                            ids.iter().for_each(|id| self.shared.ids.forget(*id));
                            if self.db.as_deref() == Some(db.as_str()) {
                                self.db = None;
                            }
                            total += count;
                        }
                        Ok(Output::done(total))
                    }
                    ObjectType::Table => {
                        for n in names {
                            let (qual, t) = ddl::split_name(n);
                            let db = match qual {
                                Some(d) => d,
                                None => self.current_db()?,
                            };
                            if let Some(id) = self.ddl(|s| {
                                ddl::drop_table(&s.shared.client, log, &db, &t, *if_exists)
                            })? {
                                self.shared.ids.forget(id);
                            }
                        }
                        Ok(Output::done(0))
                    }
                    other => Err(SqlError::unsupported(format!("DROP {other}"))),
                }
            }
            Statement::Truncate(t) => {
                for target in &t.table_names {
                    let (qual, name) = ddl::split_name(&target.name);
                    let db = match qual {
                        Some(d) => d,
                        None => self.current_db()?,
                    };
                    let old = self.ddl(|s| ddl::truncate(&s.shared.client, log, &db, &name))?;
                    self.shared.ids.forget(old);
                }
                Ok(Output::done(0))
            }
            Statement::Insert(ins) => {
                let out = insert::insert(self, ins)?;
                if let Output::Done { last_insert_id, .. } = &out
                    && *last_insert_id != 0
                {
                    self.last_insert_id = *last_insert_id;
                }
                Ok(out)
            }
            Statement::Update(u) => {
                let (hints, warnings) = Hints::parse(&u.optimizer_hints);
                self.push_warnings(warnings);
                modify::update_with_hints(self, u, hints, None).map(|(out, _)| out)
            }
            Statement::Delete(d) => modify::delete(self, d),
            Statement::Query(q) => select::query(self, q),
            other => show::run(self, other),
        }
    }

    fn push_warnings(&mut self, warnings: Vec<String>) {
        for w in warnings {
            self.warnings.push(("Warning".into(), 1064, w));
        }
    }

    /// Ends the open transaction as a hint asked: commit (`commit_on_success`) or roll back.
    pub(crate) fn finish_txn(&mut self, commit: bool) -> Result<(), SqlError> {
        if commit {
            self.commit()
        } else {
            self.rollback();
            Ok(())
        }
    }

    /// 1146 (or 1046) when a DML statement names a table that does not exist (checked at
    /// prepare, as MySQL does).
    fn check_tables(&self, stmt: &Statement) -> Result<(), SqlError> {
        let name = match stmt {
            Statement::Insert(i) => match &i.table {
                sqlparser::ast::TableObject::TableName(n) => Some(n),
                _ => None,
            },
            Statement::Update(u) => match &u.table.relation {
                sqlparser::ast::TableFactor::Table { name, .. } => Some(name),
                _ => None,
            },
            Statement::Delete(d) => match &d.from {
                sqlparser::ast::FromTable::WithFromKeyword(f)
                | sqlparser::ast::FromTable::WithoutKeyword(f) => {
                    f.first().and_then(|t| match &t.relation {
                        sqlparser::ast::TableFactor::Table { name, .. } => Some(name),
                        _ => None,
                    })
                }
            },
            _ => None,
        };
        if let Some(n) = name {
            let schema = self.schema()?;
            self.table(&schema, n)?;
        }
        Ok(())
    }

    /// Whether a transaction is open.
    pub(crate) fn in_txn(&self) -> bool {
        self.txn.is_some()
    }

    /// Whether autocommit is on.
    pub(crate) fn autocommit_on(&self) -> bool {
        self.autocommit
    }

    /// The user variables, as `@name` pairs.
    pub(crate) fn user_vars_snapshot(&self) -> Vec<(String, Value)> {
        self.user_vars
            .iter()
            .map(|(k, v)| (format!("@{k}"), v.clone()))
            .collect()
    }

    fn run_text(&mut self, sql: &str) -> Result<Output, SqlError> {
        if let Some(out) = special::try_run(self, sql)? {
            return Ok(out);
        }
        let stmt = match self.parsed.get(sql) {
            Some(stmt) => stmt,
            None => {
                let stmt = Arc::new(parse_one(sql)?);
                self.parsed.put(sql, Arc::clone(&stmt));
                stmt
            }
        };
        self.run(&stmt)
    }

    fn note_statement(&mut self, sql: Option<&str>) {
        self.shared.count_question();
        if let Some(p) = self.shared.processes.lock().get_mut(&self.conn.id) {
            p.info = sql.map(|s| s.chars().take(100).collect());
            p.since = Instant::now();
        }
    }

    fn clear_warnings(&mut self, sql: &str) {
        let lower = sql
            .trim_start()
            .get(..13)
            .unwrap_or("")
            .to_ascii_lowercase();
        if !lower.starts_with("show warnings") && !lower.starts_with("show errors") {
            self.warnings.clear();
        }
    }

    fn with_warning_count(&self, out: Output) -> Output {
        match out {
            Output::Done {
                affected_rows,
                last_insert_id,
                info,
                ..
            } => Output::Done {
                affected_rows,
                last_insert_id,
                warnings: u16::try_from(self.warnings.len()).unwrap_or(u16::MAX),
                info,
            },
            rows => rows,
        }
    }
}

impl Session {
    /// Runs `stmts` in order, each result with the session's state after it; the first
    /// error ends the list.
    fn run_statements(&mut self, stmts: &[&str]) -> Vec<StatementResult> {
        let mut out = Vec::new();
        for stmt in stmts {
            self.note_statement(Some(stmt));
            self.clear_warnings(stmt);
            let r = self.run_text(stmt).map(|o| self.with_warning_count(o));
            let failed = r.is_err();
            if let Err(e) = &r {
                self.warnings
                    .push(("Error".into(), e.code, e.message.clone()));
            }
            out.push(self.statement_result(r));
            self.note_statement(None);
            if failed {
                break;
            }
        }
        if out.is_empty() {
            let empty = Err(SqlError::new(1065, "42000", "Query was empty"));
            out.push(self.statement_result(empty));
        }
        out
    }

    fn statement_result(&self, result: Result<Output, SqlError>) -> StatementResult {
        StatementResult {
            result,
            in_transaction: self.in_transaction(),
            autocommit: self.autocommit(),
        }
    }
}

/// The statements of `sql` to run: comment-only pieces (after a last `;`) are none, as in
/// MariaDB's grammar; a query of comments alone is then "Query was empty".
fn statements_of(sql: &str) -> Vec<&str> {
    let mut stmts = split::split_statements(sql);
    stmts.retain(|s| !split::is_comment_only(s));
    stmts
}

impl SqlSession for Session {
    fn query(&mut self, sql: &str) -> Vec<Result<Output, SqlError>> {
        self.query_statements(sql, true)
            .into_iter()
            .map(|r| r.result)
            .collect()
    }

    fn query_statements(&mut self, sql: &str, multi: bool) -> Vec<StatementResult> {
        let stmts = statements_of(sql);
        if !multi && let Some(second) = stmts.get(1) {
            // Every piece is a slice of `sql`: its offset there is where MariaDB's parser
            // would stop.
            let at = (second.as_ptr() as usize).saturating_sub(sql.as_ptr() as usize);
            let at = at.min(sql.len());
            let line = 1 + sql[..at].matches('\n').count();
            let refused = Err(multi_statements_refused(&sql[at..], line));
            return vec![self.statement_result(refused)];
        }
        self.run_statements(&stmts)
    }

    fn use_database(&mut self, db: &str) -> Result<(), SqlError> {
        self.use_db(db)
    }

    fn database(&self) -> Option<String> {
        self.db.clone()
    }

    fn field_list(&mut self, table: &str, wildcard: &str) -> Result<Vec<ColumnMeta>, SqlError> {
        let schema = self.schema()?;
        let db = self.current_db()?;
        let t = schema
            .tables
            .get(&(db.clone(), table.to_owned()))
            .ok_or_else(|| {
                SqlError::new(1146, "42S02", format!("Table '{db}.{table}' doesn't exist"))
            })?;
        Ok((0..t.columns.len())
            .filter(|&i| {
                wildcard.is_empty()
                    || crate::sql::expr::like(t.columns[i].name.as_bytes(), wildcard.as_bytes())
            })
            .map(|i| t.meta(i, None))
            .collect())
    }

    fn statistics(&mut self) -> String {
        format!(
            "Uptime: {}  Threads: {}  Questions: {}  Slow queries: 0  Opens: 0  Open tables: {}  Queries per second avg: {:.3}",
            self.shared.started.elapsed().as_secs(),
            self.shared.processes.lock().len(),
            self.shared
                .questions
                .load(std::sync::atomic::Ordering::Relaxed),
            self.schema().map_or(0, |s| s.tables.len()),
            {
                let secs = self.shared.started.elapsed().as_secs_f64().max(1.0);
                #[allow(clippy::cast_precision_loss)] // a rate for display
                let q = self
                    .shared
                    .questions
                    .load(std::sync::atomic::Ordering::Relaxed) as f64;
                q / secs
            }
        )
    }

    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let text = split::split_statements(sql)
            .first()
            .map(|s| (*s).to_owned())
            .unwrap_or_default();
        if text.is_empty() {
            return Err(SqlError::new(1065, "42000", "Query was empty"));
        }
        let text = special::lock_in_share_mode_as_for_share(&text).unwrap_or(text);
        let (stmt, params) = if special::is_special(&text) {
            (None, 0)
        } else {
            let mut stmt = parse_one(&text)?;
            select::keep_constants_out_of_positions(&mut stmt);
            let mut n = Numberer(0);
            if stmt.visit(&mut n).is_break() {
                return Err(SqlError::new(
                    1390,
                    "HY000",
                    "Prepared statement contains too many placeholders",
                ));
            }
            (Some(stmt), n.0)
        };
        let columns = match &stmt {
            Some(Statement::Query(q)) => select::columns_of(self, q)?,
            Some(other) => {
                self.check_tables(other)?;
                Vec::new()
            }
            None => Vec::new(),
        };
        if self.prepared.len() >= MAX_PREPARED_STMT_COUNT {
            return Err(SqlError::new(
                1461,
                "42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: {MAX_PREPARED_STMT_COUNT})"
                ),
            ));
        }
        // Ids only go up; past u32::MAX they wrap, skipping 0 and any still open.
        let mut id = self.next_stmt;
        while self.prepared.contains_key(&id) {
            id = id.wrapping_add(1).max(1);
        }
        self.next_stmt = id.wrapping_add(1).max(1);
        self.prepared.insert(id, Prepared { stmt, text, params });
        Ok(PreparedInfo {
            id,
            params,
            columns,
        })
    }

    fn execute(&mut self, id: u32, params: &[Value]) -> Result<Output, SqlError> {
        let p = self.prepared.get(&id).cloned().ok_or_else(|| {
            SqlError::new(
                1243,
                "HY000",
                format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
            )
        })?;
        self.note_statement(Some(&p.text));
        self.clear_warnings(&p.text);
        if params.len() != usize::from(p.params) {
            return Err(SqlError::new(
                1210,
                "HY000",
                format!(
                    "Incorrect arguments to mysqld_stmt_execute: {} parameters for {}",
                    params.len(),
                    p.params
                ),
            ));
        }
        let r = match p.stmt {
            None => self.run_text(&p.text),
            Some(mut stmt) => {
                if let std::ops::ControlFlow::Break(e) = stmt.visit(&mut Binder(params)) {
                    return Err(e);
                }
                self.run(&stmt)
            }
        };
        self.note_statement(None);
        r.map(|o| self.with_warning_count(o))
    }

    fn close_statement(&mut self, id: u32) {
        self.prepared.remove(&id);
    }

    fn reset(&mut self) {
        self.rollback();
        self.prepared.clear();
        self.vars.clear();
        self.user_vars.clear();
        // A session variable's effect goes with it (`SET tidb_txn_mode` sets the mode).
        self.mode = global_mode(&self.shared);
        self.autocommit = true;
        self.last_insert_id = 0;
        self.warnings.clear();
    }

    fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    fn autocommit(&self) -> bool {
        self.autocommit
    }

    /// `wait_timeout` (the session's, else the global one), in whole seconds, at least 1
    /// (MySQL's floor).
    fn idle_timeout(&self) -> Option<std::time::Duration> {
        let secs = match self.variable("wait_timeout")? {
            Value::Int(n) => u64::try_from(n).unwrap_or(1),
            Value::UInt(n) => n,
            _ => return None,
        };
        Some(std::time::Duration::from_secs(secs.max(1)))
    }
}
