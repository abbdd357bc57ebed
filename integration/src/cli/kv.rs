//! `surgedb kv get|put|delete|scan`: one-shot operations against a running cluster.

use std::io::Write;

use surge_txn::{TxnClient, TxnError, TxnMode};

use super::txn_script::show;
use crate::{Client, ClientError};

/// Why a `kv` command failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    /// The key has no value (`kv get`).
    #[error("key {key:?} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The transaction failed.
    #[error(transparent)]
    Txn(#[from] TxnError),
    /// The node's coordinator could not run the write.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Writing the output failed.
    #[error("output: {0}")]
    Output(#[from] std::io::Error),
}

/// Prints the value of `key` at a fresh timestamp.
///
/// # Errors
/// [`KvError::NotFound`] (nothing printed) or the read's error.
pub fn get(client: &TxnClient, key: &str, out: &mut impl Write) -> Result<(), KvError> {
    match client.get(key.as_bytes())? {
        Some(v) => {
            out.write_all(&v)?;
            out.write_all(b"\n")?;
            Ok(())
        }
        None => Err(KvError::NotFound {
            key: key.to_string(),
        }),
    }
}

/// Writes `key = value` (or deletes `key` when `value` is `None`) in one optimistic
/// transaction on a node's coordinator (so the commit is in that node's binlog) and prints
/// its commit timestamp and the node.
///
/// # Errors
/// The transaction's error.
pub fn write(
    client: &Client,
    key: &str,
    value: Option<&str>,
    out: &mut impl Write,
) -> Result<(), KvError> {
    let mut txn = client.begin(TxnMode::Optimistic)?;
    match value {
        Some(v) => txn.put(key.as_bytes(), v.as_bytes())?,
        None => txn.delete(key.as_bytes())?,
    }
    let node = txn.node();
    let ts = txn.commit()?;
    writeln!(out, "OK (committed at {ts} by node {node})")?;
    Ok(())
}

/// Prints `key<TAB>value` for at most `limit` keys of `[start, end)` at a fresh timestamp.
///
/// # Errors
/// The scan's error.
pub fn scan(
    client: &TxnClient,
    start: &str,
    end: Option<&str>,
    limit: usize,
    out: &mut impl Write,
) -> Result<usize, KvError> {
    let pairs = client.scan(start.as_bytes(), end.map(str::as_bytes), limit)?;
    for (k, v) in &pairs {
        writeln!(out, "{}\t{}", show(Some(k)), show(Some(v)))?;
    }
    Ok(pairs.len())
}
