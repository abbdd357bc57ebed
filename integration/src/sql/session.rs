//! [`SqlSession`] and [`SessionFactory`]: the seam between a protocol connection and the SQL
//! layer. A MySQL connection owns one session; the session owns the connection's
//! transaction, current database, variables and prepared statements.

use super::column::ColumnMeta;
use super::output::{Output, SqlError};
use super::value::Value;

/// Who opened a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The server's connection id (CONNECTION_ID(), SHOW PROCESSLIST).
    pub id: u32,
    /// The authenticated user.
    pub user: String,
    /// The client's address, `host:port`.
    pub peer: String,
    /// The database named at connect, if any.
    pub database: Option<String>,
    /// Whether the client said it is interactive (CLIENT_INTERACTIVE): its session's
    /// `wait_timeout` starts at the global `interactive_timeout`, as MySQL's.
    pub interactive: bool,
}

/// A statement prepared by [`SqlSession::prepare`].
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedInfo {
    /// The session's id for it (COM_STMT_PREPARE's statement id).
    pub id: u32,
    /// The number of `?` parameters.
    pub params: u16,
    /// The result set's columns, empty when it returns none.
    pub columns: Vec<ColumnMeta>,
}

/// One statement's result with the session's state right after it ran (what the status
/// flags of its OK, EOF or ERR packet say).
#[derive(Debug, Clone, PartialEq)]
pub struct StatementResult {
    /// The statement's result.
    pub result: Result<Output, SqlError>,
    /// Whether a transaction was open after it (SERVER_STATUS_IN_TRANS).
    pub in_transaction: bool,
    /// Whether autocommit was on after it (SERVER_STATUS_AUTOCOMMIT).
    pub autocommit: bool,
}

/// MariaDB's error for a query of several statements from a client that did not ask for
/// them: its parse error 1064, quoting (up to 80 characters of) the query from the second
/// statement on, and the line that statement starts on.
pub fn multi_statements_refused(rest: &str, line: usize) -> SqlError {
    let near: String = rest.chars().take(80).collect();
    SqlError::new(
        1064,
        "42000",
        format!(
            "You have an error in your SQL syntax; check the manual that corresponds to your \
             MariaDB server version for the right syntax to use near '{near}' at line {line}"
        ),
    )
}

/// One connection's SQL session. Dropping it rolls back its open transaction.
pub trait SqlSession: Send {
    /// Runs `sql`, which may hold several statements separated by `;`. Returns one result
    /// per statement run; the first error ends the list (later statements are not run).
    fn query(&mut self, sql: &str) -> Vec<Result<Output, SqlError>>;

    /// As [`SqlSession::query`], each result with the session's state right after its
    /// statement (a multi-statement answer's packets carry each statement's own flags). With
    /// `multi` false (the client did not ask for multi-statements, or turned them off with
    /// COM_SET_OPTION) a query of several statements (comments after the last `;` aside)
    /// runs none of them and answers [`multi_statements_refused`].
    ///
    /// The default runs [`SqlSession::query`], gives every result the session's flags after
    /// the last statement and ignores `multi`; this crate's `Session` overrides it, and so
    /// should any implementation that can.
    fn query_statements(&mut self, sql: &str, multi: bool) -> Vec<StatementResult> {
        let _ = multi;
        let results = self.query(sql);
        let (in_transaction, autocommit) = (self.in_transaction(), self.autocommit());
        results
            .into_iter()
            .map(|result| StatementResult {
                result,
                in_transaction,
                autocommit,
            })
            .collect()
    }

    /// COM_INIT_DB: makes `db` the current database.
    ///
    /// # Errors
    /// 1049 when it does not exist.
    fn use_database(&mut self, db: &str) -> Result<(), SqlError>;

    /// The current database, if any.
    fn database(&self) -> Option<String>;

    /// COM_FIELD_LIST: the columns of `table` in the current database whose names match the
    /// LIKE pattern `wildcard` (empty: all).
    ///
    /// # Errors
    /// 1046 without a current database, 1146 when the table does not exist.
    fn field_list(&mut self, table: &str, wildcard: &str) -> Result<Vec<ColumnMeta>, SqlError>;

    /// COM_STATISTICS' one line (`Uptime: .. Threads: .. Questions: ..`).
    fn statistics(&mut self) -> String;

    /// COM_STMT_PREPARE.
    ///
    /// # Errors
    /// A parse error, an unknown table, or 1295 for a statement that cannot be prepared.
    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError>;

    /// COM_STMT_EXECUTE of statement `id` with one value per parameter.
    ///
    /// # Errors
    /// 1243 for an unknown id; otherwise as [`SqlSession::query`] for one statement.
    fn execute(&mut self, id: u32, params: &[Value]) -> Result<Output, SqlError>;

    /// COM_STMT_CLOSE. An unknown id is ignored (the command has no answer).
    fn close_statement(&mut self, id: u32);

    /// COM_RESET_CONNECTION: rolls back, drops prepared statements, resets variables.
    fn reset(&mut self);

    /// Whether a transaction is open (SERVER_STATUS_IN_TRANS).
    fn in_transaction(&self) -> bool;

    /// Whether autocommit is on (SERVER_STATUS_AUTOCOMMIT).
    fn autocommit(&self) -> bool;

    /// How long the connection waits for the client's next command before it closes,
    /// rolling back the open transaction (MySQL's `wait_timeout`). `None`: for ever, the
    /// default.
    fn idle_timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Opens sessions, one per accepted connection.
pub trait SessionFactory: Send + Sync + 'static {
    /// A new session for `conn`.
    ///
    /// # Errors
    /// 1049 when `conn.database` does not exist.
    fn open(&self, conn: &ConnectionInfo) -> Result<Box<dyn SqlSession>, SqlError>;
}
