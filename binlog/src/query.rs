//! Query (type 2): a statement, used for DDL and for `BEGIN`/`COMMIT` around non-XA groups.

use crate::error::DecodeError;
use crate::wire::{Cursor, put_u16, put_u32};

/// Body of a Query event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryEvent {
    /// Session (connection) id.
    pub thread_id: u32,
    /// Seconds the statement ran.
    pub exec_time: u32,
    /// Error code of the statement (0).
    pub error_code: u16,
    /// Raw status variables (flags2, sql_mode, charset, ...), kept as written.
    pub status_vars: Vec<u8>,
    /// Current database (at most 255 bytes, no NUL).
    pub database: Vec<u8>,
    /// The statement text (not NUL-terminated).
    pub query: Vec<u8>,
}

/// Status variable code of the session charsets (client, connection, server).
const Q_CHARSET_CODE: u8 = 4;

impl QueryEvent {
    /// A statement with no status variables.
    pub fn new(database: &str, query: &str) -> Self {
        QueryEvent {
            thread_id: 0,
            exec_time: 0,
            error_code: 0,
            status_vars: Vec::new(),
            database: database.as_bytes().to_vec(),
            query: query.as_bytes().to_vec(),
        }
    }

    /// Adds the `Q_CHARSET_CODE` status variable: `collation` (a collation number, e.g. 45
    /// for `utf8mb4_general_ci`) as the client charset, the connection collation and the
    /// server collation of the statement. A replica runs the statement with them, so a
    /// `CREATE DATABASE` or `CREATE TABLE` without an explicit charset gets this one, not
    /// the replica's default (<https://mariadb.com/kb/en/query_event/>).
    #[must_use]
    pub fn with_charset(mut self, collation: u16) -> Self {
        self.status_vars.push(Q_CHARSET_CODE);
        for _ in 0..3 {
            self.status_vars.extend_from_slice(&collation.to_le_bytes());
        }
        self
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.thread_id);
        put_u32(out, self.exec_time);
        out.push(self.database.len().min(255) as u8);
        put_u16(out, self.error_code);
        put_u16(out, self.status_vars.len().min(0xffff) as u16);
        out.extend_from_slice(&self.status_vars[..self.status_vars.len().min(0xffff)]);
        out.extend_from_slice(&self.database[..self.database.len().min(255)]);
        out.push(0);
        out.extend_from_slice(&self.query);
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Query");
        let thread_id = c.u32("thread_id")?;
        let exec_time = c.u32("exec_time")?;
        let db_len = usize::from(c.u8("db_len")?);
        let error_code = c.u16("error_code")?;
        let vars_len = usize::from(c.u16("status_vars_len")?);
        let status_vars = c.take(vars_len, "status vars past the end")?.to_vec();
        let database = c.take(db_len, "database name past the end")?.to_vec();
        if c.u8("database terminator")? != 0 {
            return Err(c.malformed("database name not NUL-terminated"));
        }
        Ok(QueryEvent {
            thread_id,
            exec_time,
            error_code,
            status_vars,
            database,
            query: c.rest().to_vec(),
        })
    }
}

/// Body of a Rotate event: where the log continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotate {
    /// Position in the next file (4).
    pub position: u64,
    /// Name of the next file (no directory, no NUL).
    pub next_file: String,
}

impl Rotate {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.position.to_le_bytes());
        out.extend_from_slice(self.next_file.as_bytes());
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Rotate");
        let position = c.u64("position")?;
        let n = c.remaining();
        Ok(Rotate {
            position,
            next_file: c.string(n, "next file name is not UTF-8")?,
        })
    }
}

/// Body of a Binlog_checkpoint event: the oldest file crash recovery must scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinlogCheckpoint {
    /// File name (no directory).
    pub file: String,
}

impl BinlogCheckpoint {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.file.len() as u32);
        out.extend_from_slice(self.file.as_bytes());
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Binlog_checkpoint");
        let n = c.u32("name length")? as usize;
        if n != c.remaining() {
            return Err(c.malformed("name length does not match the body"));
        }
        Ok(BinlogCheckpoint {
            file: c.string(n, "file name is not UTF-8")?,
        })
    }
}
