//! [`Output`] and [`SqlError`]: what one statement answers.

use super::column::ColumnMeta;
use super::value::Value;

/// What a statement that succeeded answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A statement without a result set (the MySQL OK packet).
    Done {
        /// Rows inserted, changed or deleted (MySQL's "affected rows").
        affected_rows: u64,
        /// The AUTO_INCREMENT value the statement generated first, else 0.
        last_insert_id: u64,
        /// Warnings raised.
        warnings: u16,
        /// The info text (`Rows matched: 1  Changed: 1  Warnings: 0`), or empty.
        info: String,
    },
    /// A result set.
    Rows {
        /// Its columns.
        columns: Vec<ColumnMeta>,
        /// Its rows, each with one value per column.
        rows: Vec<Vec<Value>>,
    },
}

impl Output {
    /// A `Done` with `affected_rows` and nothing else.
    pub fn done(affected_rows: u64) -> Output {
        Output::Done {
            affected_rows,
            last_insert_id: 0,
            warnings: 0,
            info: String::new(),
        }
    }
}

/// A statement's failure as a MySQL client sees it: error code, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({state}): {message}")]
pub struct SqlError {
    /// The MySQL error number (1062 duplicate key, 1213 deadlock, ...).
    pub code: u16,
    /// The five-character SQLSTATE.
    pub state: String,
    /// What went wrong and where.
    pub message: String,
}

impl SqlError {
    /// An error with `code`, `state` and `message`.
    pub fn new(code: u16, state: &str, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            state: state.to_owned(),
            message: message.into(),
        }
    }

    /// 1064 ER_PARSE_ERROR.
    pub fn parse(message: impl Into<String>) -> SqlError {
        SqlError::new(1064, "42000", message)
    }

    /// 1235 ER_NOT_SUPPORTED_YET, naming the construct.
    pub fn unsupported(what: impl std::fmt::Display) -> SqlError {
        SqlError::new(
            1235,
            "42000",
            format!("This version of SurgeDB doesn't yet support '{what}'"),
        )
    }

    /// 1105 ER_UNKNOWN_ERROR.
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(1105, "HY000", message)
    }
}
