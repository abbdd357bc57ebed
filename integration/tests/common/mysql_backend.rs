//! A small but honest SQL backend for the MySQL protocol tests: a [`SessionFactory`] whose
//! sessions answer a tiny fixed grammar over one shared table `t (id BIGINT PRIMARY KEY,
//! name VARCHAR(32))` kept in a `BTreeMap`, with transactions that see their own inserts,
//! commit them or roll them back, and count rollbacks when a session is dropped inside one.
//!
//! Grammar (case-insensitive; `/* */`, `-- ` and `#` comments ignored; `;` separates
//! statements):
//! - `select @@version_comment limit 1`, `select database()`, `select connection_id()`,
//!   `select database(), user() limit 1`, `select @@character_set_... limit 1` (what the
//!   `mariadb` client's `status` asks), `select <integer>`;
//! - `begin`, `start transaction`, `commit`, `rollback`, `set autocommit = 0|1`;
//! - `insert into t values (<id>, '<name>')` (1062 on a duplicate id);
//! - `select id, name from t` and `select id, name from t where id = <id>`;
//! - `select types`: one row with a value of every `ColumnKind` (and one NULL);
//! - `show databases`, `show tables` (what the interactive `mariadb` client asks first);
//! - `sleep <ms>`: waits, then answers OK (for the shutdown test);
//! - anything else: 1064; `select boom` gives 1054.
//!
//! Prepared (`?` parameters): `select ?[, ?...]` echoes its parameters (column types from the
//! values), `insert into t values (?, ?)`, `select id, name from t where id = ?`, `select
//! types`, `begin`, `commit`; anything else: 1295.
#![allow(dead_code)] // Each test file uses a different part.
#![allow(clippy::unwrap_used)] // Test code: a poisoned lock is the test failing.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use surgedb::sql::{
    ColumnKind, ColumnMeta, ConnectionInfo, Decimal, Output, PreparedInfo, SessionFactory,
    SqlError, SqlSession, StatementResult, Value, multi_statements_refused,
};

/// What every session of one [`Backend`] shares.
#[derive(Debug, Default)]
pub struct Shared {
    /// The committed rows of `t`.
    pub table: Mutex<BTreeMap<i64, String>>,
    /// Sessions opened.
    pub opened: AtomicUsize,
    /// Sessions dropped.
    pub dropped: AtomicUsize,
    /// Sessions dropped with a transaction open (rolled back).
    pub rollbacks_on_drop: AtomicUsize,
    /// The `ConnectionInfo`s seen, in order.
    pub connections: Mutex<Vec<ConnectionInfo>>,
    /// The COM_FIELD_LIST calls seen: (table, wildcard).
    pub field_lists: Mutex<Vec<(String, String)>>,
}

/// The factory.
#[derive(Debug, Clone, Default)]
pub struct Backend {
    pub shared: Arc<Shared>,
}

impl Backend {
    pub fn new() -> Backend {
        Backend::default()
    }

    pub fn factory(&self) -> Arc<dyn SessionFactory> {
        Arc::new(self.clone())
    }
}

const DATABASES: [&str; 2] = ["test", "sbtest"];

impl SessionFactory for Backend {
    fn open(&self, conn: &ConnectionInfo) -> Result<Box<dyn SqlSession>, SqlError> {
        if let Some(db) = &conn.database {
            check_db(db)?;
        }
        self.shared.connections.lock().unwrap().push(conn.clone());
        self.shared.opened.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(TestSession {
            shared: Arc::clone(&self.shared),
            conn_id: conn.id,
            user: format!(
                "{}@{}",
                conn.user,
                conn.peer
                    .rsplit_once(':')
                    .map_or(conn.peer.as_str(), |(h, _)| h)
            ),
            database: conn.database.clone(),
            txn: None,
            autocommit: true,
            prepared: HashMap::new(),
            next_stmt: 1,
            questions: 0,
        }))
    }
}

fn check_db(db: &str) -> Result<(), SqlError> {
    if DATABASES.contains(&db) {
        Ok(())
    } else {
        Err(SqlError::new(
            1049,
            "42000",
            format!("Unknown database '{db}'"),
        ))
    }
}

struct TestSession {
    shared: Arc<Shared>,
    conn_id: u32,
    /// `user@host`, as USER() says.
    user: String,
    database: Option<String>,
    /// Rows inserted by the open transaction, if one is open.
    txn: Option<BTreeMap<i64, String>>,
    autocommit: bool,
    prepared: HashMap<u32, String>,
    next_stmt: u32,
    questions: u64,
}

impl Drop for TestSession {
    fn drop(&mut self) {
        if self.txn.is_some() {
            self.shared.rollbacks_on_drop.fetch_add(1, Ordering::SeqCst);
        }
        self.shared.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// `sql` without comments, each statement trimmed, empty ones dropped.
fn statements(sql: &str) -> Vec<String> {
    let mut out = String::new();
    let mut rest = sql;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
            out.push(' ');
        } else if rest.starts_with("-- ") || rest.starts_with('#') {
            rest = rest.find('\n').map_or("", |e| &rest[e..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

fn col(name: &str, kind: ColumnKind) -> ColumnMeta {
    ColumnMeta::expr(name, kind)
}

fn t_columns(db: &str) -> Vec<ColumnMeta> {
    let mut id = col("id", ColumnKind::LongLong);
    id.schema = db.into();
    id.table = "t".into();
    id.org_name = "id".into();
    id.length = 20;
    id.not_null = true;
    id.primary_key = true;
    id.auto_increment = true;
    let mut name = col("name", ColumnKind::VarString);
    name.schema = db.into();
    name.table = "t".into();
    name.org_name = "name".into();
    name.length = 32;
    vec![id, name]
}

/// The `select types` result: one value of every kind.
pub fn types_output() -> Output {
    let kinds = [
        ("tiny", ColumnKind::Tiny, false, Value::Int(-5)),
        ("short_u", ColumnKind::Short, true, Value::UInt(65_535)),
        ("int24", ColumnKind::Int24, false, Value::Int(-70_000)),
        ("long", ColumnKind::Long, false, Value::Int(123_456)),
        (
            "longlong_u",
            ColumnKind::LongLong,
            true,
            Value::UInt(u64::MAX),
        ),
        ("float", ColumnKind::Float, false, Value::Double(1.5)),
        ("double", ColumnKind::Double, false, Value::Double(2.25)),
        (
            "decimal",
            ColumnKind::NewDecimal,
            false,
            Value::Decimal(Decimal {
                digits: -12_345,
                scale: 2,
            }),
        ),
        (
            "char",
            ColumnKind::String,
            false,
            Value::Bytes(b"char".to_vec()),
        ),
        (
            "varchar",
            ColumnKind::VarString,
            false,
            Value::Bytes("h\u{e9}llo".as_bytes().to_vec()),
        ),
        (
            "blob",
            ColumnKind::Blob,
            false,
            Value::Bytes(b"blob\x01".to_vec()),
        ),
        (
            "date",
            ColumnKind::Date,
            false,
            Value::Date {
                year: 2026,
                month: 12,
                day: 2,
            },
        ),
        (
            "datetime",
            ColumnKind::DateTime,
            false,
            Value::DateTime {
                year: 2026,
                month: 12,
                day: 2,
                hour: 1,
                minute: 2,
                second: 3,
                micro: 456,
            },
        ),
        (
            "timestamp",
            ColumnKind::Timestamp,
            false,
            Value::DateTime {
                year: 2026,
                month: 12,
                day: 2,
                hour: 23,
                minute: 59,
                second: 58,
                micro: 0,
            },
        ),
        ("nothing", ColumnKind::Null, false, Value::Null),
    ];
    let mut columns = Vec::new();
    let mut row = Vec::new();
    for (name, kind, unsigned, value) in kinds {
        let mut c = col(name, kind);
        c.unsigned = unsigned;
        match kind {
            ColumnKind::NewDecimal => {
                c.length = 10;
                c.decimals = 2;
            }
            ColumnKind::DateTime => c.decimals = 6,
            ColumnKind::Blob => c.binary = true,
            _ => {}
        }
        columns.push(c);
        row.push(value);
    }
    Output::Rows {
        columns,
        rows: vec![row],
    }
}

/// A column for an echoed parameter, typed by its value.
fn echo_column(i: usize, v: &Value) -> ColumnMeta {
    let (kind, unsigned) = match v {
        Value::Null => (ColumnKind::Null, false),
        Value::Int(_) => (ColumnKind::LongLong, false),
        Value::UInt(_) => (ColumnKind::LongLong, true),
        Value::Double(_) => (ColumnKind::Double, false),
        Value::Decimal(_) => (ColumnKind::NewDecimal, false),
        Value::Bytes(_) => (ColumnKind::VarString, false),
        Value::Date { .. } => (ColumnKind::Date, false),
        Value::DateTime { .. } => (ColumnKind::DateTime, false),
    };
    let mut c = col(&format!("p{i}"), kind);
    c.unsigned = unsigned;
    if let Value::Decimal(d) = v {
        c.decimals = d.scale;
    }
    if let Value::DateTime { .. } = v {
        c.decimals = 6;
    }
    c
}

fn parse_err(stmt: &str) -> SqlError {
    SqlError::parse(format!(
        "You have an error in your SQL syntax; check the manual for the right syntax to use near '{stmt}' at line 1"
    ))
}

fn int_value(v: &Value) -> Option<i64> {
    match *v {
        Value::Int(i) => Some(i),
        Value::UInt(u) => i64::try_from(u).ok(),
        Value::Bytes(ref b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

impl TestSession {
    fn db(&self) -> String {
        self.database.clone().unwrap_or_default()
    }

    fn visible(&self) -> BTreeMap<i64, String> {
        let mut rows = self.shared.table.lock().unwrap().clone();
        if let Some(txn) = &self.txn {
            rows.extend(txn.iter().map(|(k, v)| (*k, v.clone())));
        }
        rows
    }

    fn select_rows(&self, id: Option<i64>) -> Output {
        let rows = self
            .visible()
            .into_iter()
            .filter(|(k, _)| id.is_none_or(|id| id == *k))
            .map(|(k, v)| vec![Value::Int(k), Value::Bytes(v.into_bytes())])
            .collect();
        Output::Rows {
            columns: t_columns(&self.db()),
            rows,
        }
    }

    fn insert(&mut self, id: i64, name: String) -> Result<Output, SqlError> {
        if self.visible().contains_key(&id) {
            return Err(SqlError::new(
                1062,
                "23000",
                format!("Duplicate entry '{id}' for key 'PRIMARY'"),
            ));
        }
        match &mut self.txn {
            Some(txn) => {
                txn.insert(id, name);
            }
            None if !self.autocommit => {
                self.txn = Some(BTreeMap::from([(id, name)]));
            }
            None => {
                self.shared.table.lock().unwrap().insert(id, name);
            }
        }
        Ok(Output::Done {
            affected_rows: 1,
            last_insert_id: u64::try_from(id).unwrap_or(0),
            warnings: 0,
            info: String::new(),
        })
    }

    fn commit(&mut self) -> Output {
        if let Some(txn) = self.txn.take() {
            self.shared.table.lock().unwrap().extend(txn);
        }
        Output::done(0)
    }

    fn one(&mut self, stmt: &str) -> Result<Output, SqlError> {
        self.questions += 1;
        let lower = stmt.to_ascii_lowercase();
        let one_value = |name: &str, kind, v: Value| Output::Rows {
            columns: vec![col(name, kind)],
            rows: vec![vec![v]],
        };
        match lower.as_str() {
            // A bug in a session, as the server must survive it.
            "select test_panic()" => panic!("the test backend panics as asked"),
            "select @@version_comment limit 1" => {
                return Ok(one_value(
                    "@@version_comment",
                    ColumnKind::VarString,
                    Value::Bytes(b"SurgeDB test backend".to_vec()),
                ));
            }
            // What `mariadb-binlog --read-from-remote-server` asks first.
            "select version()" => {
                return Ok(one_value(
                    "VERSION()",
                    ColumnKind::VarString,
                    Value::Bytes(b"10.11.0-SurgeDB-test".to_vec()),
                ));
            }
            "select database()" => {
                let v = self
                    .database
                    .clone()
                    .map_or(Value::Null, |d| Value::Bytes(d.into_bytes()));
                return Ok(one_value("DATABASE()", ColumnKind::VarString, v));
            }
            "select database(), user() limit 1" => {
                let db = self
                    .database
                    .clone()
                    .map_or(Value::Null, |d| Value::Bytes(d.into_bytes()));
                return Ok(Output::Rows {
                    columns: vec![
                        col("DATABASE()", ColumnKind::VarString),
                        col("USER()", ColumnKind::VarString),
                    ],
                    rows: vec![vec![db, Value::Bytes(self.user.clone().into_bytes())]],
                });
            }
            "select connection_id()" => {
                return Ok(one_value(
                    "CONNECTION_ID()",
                    ColumnKind::LongLong,
                    Value::UInt(u64::from(self.conn_id)),
                ));
            }
            "begin" | "start transaction" => {
                self.commit();
                self.txn = Some(BTreeMap::new());
                return Ok(Output::done(0));
            }
            "commit" => return Ok(self.commit()),
            "rollback" => {
                self.txn = None;
                return Ok(Output::done(0));
            }
            "set autocommit = 0" | "set autocommit=0" => {
                self.autocommit = false;
                return Ok(Output::done(0));
            }
            "set autocommit = 1" | "set autocommit=1" => {
                self.autocommit = true;
                self.commit();
                return Ok(Output::done(0));
            }
            "select id, name from t" => return Ok(self.select_rows(None)),
            "select types" => return Ok(types_output()),
            "show databases" => {
                return Ok(Output::Rows {
                    columns: vec![col("Database", ColumnKind::VarString)],
                    rows: DATABASES
                        .iter()
                        .map(|d| vec![Value::Bytes(d.as_bytes().to_vec())])
                        .collect(),
                });
            }
            "show tables" => {
                let Some(db) = &self.database else {
                    return Err(SqlError::new(1046, "3D000", "No database selected"));
                };
                return Ok(Output::Rows {
                    columns: vec![col(&format!("Tables_in_{db}"), ColumnKind::VarString)],
                    rows: vec![vec![Value::Bytes(b"t".to_vec())]],
                });
            }
            "select boom" => {
                return Err(SqlError::new(
                    1054,
                    "42S22",
                    "Unknown column 'boom' in 'field list'",
                ));
            }
            _ => {}
        }
        if let Some(n) = lower
            .strip_prefix("select ")
            .and_then(|n| n.parse::<i64>().ok())
        {
            return Ok(one_value(
                &n.to_string(),
                ColumnKind::LongLong,
                Value::Int(n),
            ));
        }
        if let Some(ms) = lower
            .strip_prefix("sleep ")
            .and_then(|n| n.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
            return Ok(Output::done(0));
        }
        if let Some(id) = lower
            .strip_prefix("select id, name from t where id = ")
            .and_then(|n| n.parse::<i64>().ok())
        {
            return Ok(self.select_rows(Some(id)));
        }
        if let Some(rest) = stmt
            .strip_prefix("insert into t values (")
            .or_else(|| stmt.strip_prefix("INSERT INTO t VALUES ("))
            && let Some((id, name)) = rest.strip_suffix(')').and_then(|r| r.split_once(','))
            && let Ok(id) = id.trim().parse::<i64>()
            && let Some(name) = name
                .trim()
                .strip_prefix('\'')
                .and_then(|n| n.strip_suffix('\''))
        {
            return self.insert(id, name.to_owned());
        }
        Err(parse_err(stmt))
    }
}

impl SqlSession for TestSession {
    fn query(&mut self, sql: &str) -> Vec<Result<Output, SqlError>> {
        self.query_statements(sql, true)
            .into_iter()
            .map(|r| r.result)
            .collect()
    }

    fn query_statements(&mut self, sql: &str, multi: bool) -> Vec<StatementResult> {
        let stmts = statements(sql);
        let mut out = Vec::new();
        if !multi && stmts.len() > 1 {
            out.push(StatementResult {
                result: Err(multi_statements_refused(&stmts[1], 1)),
                in_transaction: self.in_transaction(),
                autocommit: self.autocommit(),
            });
            return out;
        }
        for stmt in stmts {
            let result = self.one(&stmt);
            let failed = result.is_err();
            out.push(StatementResult {
                result,
                in_transaction: self.in_transaction(),
                autocommit: self.autocommit(),
            });
            if failed {
                break;
            }
        }
        out
    }

    fn use_database(&mut self, db: &str) -> Result<(), SqlError> {
        check_db(db)?;
        self.database = Some(db.to_owned());
        Ok(())
    }

    fn database(&self) -> Option<String> {
        self.database.clone()
    }

    fn field_list(&mut self, table: &str, wildcard: &str) -> Result<Vec<ColumnMeta>, SqlError> {
        self.shared
            .field_lists
            .lock()
            .unwrap()
            .push((table.to_owned(), wildcard.to_owned()));
        let Some(db) = &self.database else {
            return Err(SqlError::new(1046, "3D000", "No database selected"));
        };
        if table != "t" {
            return Err(SqlError::new(
                1146,
                "42S02",
                format!("Table '{db}.{table}' doesn't exist"),
            ));
        }
        let prefix = wildcard.trim_end_matches('%');
        Ok(t_columns(db)
            .into_iter()
            .filter(|c| c.name.starts_with(prefix))
            .collect())
    }

    fn statistics(&mut self) -> String {
        format!(
            "Uptime: 1  Threads: 1  Questions: {}  Slow queries: 0  Opens: 0  Open tables: 1  Queries per second avg: 0.000",
            self.questions
        )
    }

    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let stmt = statements(sql).join(";");
        let lower = stmt.to_ascii_lowercase();
        let params = u16::try_from(lower.matches('?').count()).unwrap();
        let columns = if lower == "select types" {
            match types_output() {
                Output::Rows { columns, .. } => columns,
                Output::Done { .. } => unreachable!(),
            }
        } else if lower == "select id, name from t where id = ?" {
            t_columns(&self.db())
        } else if lower.starts_with("select ?") {
            (0..usize::from(params))
                .map(|i| echo_column(i, &Value::Bytes(Vec::new())))
                .collect()
        } else if lower == "insert into t values (?, ?)" || lower == "begin" || lower == "commit" {
            Vec::new()
        } else {
            return Err(SqlError::new(
                1295,
                "HY000",
                "This command is not supported in the prepared statement protocol yet",
            ));
        };
        let id = self.next_stmt;
        self.next_stmt += 1;
        self.prepared.insert(id, lower);
        Ok(PreparedInfo {
            id,
            params,
            columns,
        })
    }

    fn execute(&mut self, id: u32, params: &[Value]) -> Result<Output, SqlError> {
        let Some(stmt) = self.prepared.get(&id).cloned() else {
            return Err(SqlError::new(
                1243,
                "HY000",
                format!("Unknown prepared statement handler ({id}) given to EXECUTE"),
            ));
        };
        self.questions += 1;
        if stmt.starts_with("select ?") {
            return Ok(Output::Rows {
                columns: params
                    .iter()
                    .enumerate()
                    .map(|(i, v)| echo_column(i, v))
                    .collect(),
                rows: vec![params.to_vec()],
            });
        }
        match stmt.as_str() {
            "select types" => Ok(types_output()),
            "begin" | "commit" => self.one(&stmt),
            "select id, name from t where id = ?" => {
                let id = int_value(&params[0])
                    .ok_or_else(|| SqlError::new(1210, "HY000", "id must be an integer"))?;
                Ok(self.select_rows(Some(id)))
            }
            "insert into t values (?, ?)" => {
                let id = int_value(&params[0])
                    .ok_or_else(|| SqlError::new(1210, "HY000", "id must be an integer"))?;
                let name = match &params[1] {
                    Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    other => format!("{other:?}"),
                };
                self.insert(id, name)
            }
            other => Err(parse_err(other)),
        }
    }

    fn close_statement(&mut self, id: u32) {
        self.prepared.remove(&id);
    }

    fn reset(&mut self) {
        self.txn = None;
        self.prepared.clear();
        self.autocommit = true;
    }

    fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    fn autocommit(&self) -> bool {
        self.autocommit
    }
}

/// A server on 127.0.0.1 with `config` over a fresh backend.
pub fn start(config: surgedb::mysql::MysqlConfig) -> (surgedb::mysql::MysqlServer, Backend) {
    let backend = Backend::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = surgedb::mysql::MysqlServer::start(listener, config, backend.factory()).unwrap();
    (server, backend)
}

/// Waits up to 5 s for `cond`.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a required-tool variable is set (then a missing tool fails the test).
pub fn required(vars: &[&str]) -> bool {
    vars.iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}
