//! [`SysbenchError`]: why `bench sysbench` stopped.

use std::path::PathBuf;

/// Why `bench sysbench` stopped.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SysbenchError {
    /// A program the benchmark runs (sysbench, mariadb, mariadbd, ...) could not be started.
    #[error("cannot run {program}: {detail} (is it installed and on PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// The operating system's error.
        detail: String,
    },
    /// A program ran and failed.
    #[error("{what} failed ({status}): {stderr}")]
    Failed {
        /// What was run (program and the part of its arguments that tells which run).
        what: String,
        /// Its exit status.
        status: String,
        /// The end of its standard error (or output).
        stderr: String,
    },
    /// Sysbench's report lacked a figure.
    #[error("sysbench output has no {field}: {excerpt}")]
    Parse {
        /// The figure looked for.
        field: &'static str,
        /// The start of the output.
        excerpt: String,
    },
    /// A statement sent through the MySQL protocol failed.
    #[error("{endpoint}: `{statement}`: {detail}")]
    Sql {
        /// The server (`surgedb` or `mariadb`).
        endpoint: String,
        /// The statement.
        statement: String,
        /// The client's error.
        detail: String,
    },
    /// The data after a run does not match what sysbench acknowledged.
    #[error("{endpoint}: {what}: expected {expected}, found {found}")]
    Inconsistent {
        /// The server.
        endpoint: String,
        /// What was compared.
        what: String,
        /// What sysbench's acknowledged transactions imply.
        expected: String,
        /// What the server holds.
        found: String,
    },
    /// A file or directory of the benchmark could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The SurgeDB cluster or the private MariaDB could not be set up or stopped.
    #[error("setting up {what}: {detail}")]
    Setup {
        /// The cluster or the server.
        what: String,
        /// What failed.
        detail: String,
    },
    /// A binlog file did not verify.
    #[error("binlog {path}: {detail}")]
    Binlog {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The options ask for nothing or for something impossible.
    #[error("option {option}: {detail}")]
    BadOption {
        /// The option.
        option: &'static str,
        /// Why.
        detail: String,
    },
}

/// The last `n` characters of `text` (on a character boundary), for error messages.
pub(crate) fn tail(text: &str, n: usize) -> String {
    let t = text.trim();
    let start = t.len().saturating_sub(n);
    let start = (start..=t.len())
        .find(|i| t.is_char_boundary(*i))
        .unwrap_or(t.len());
    t[start..].to_string()
}
