//! `surgedb txn FILE`: a small script of transactional operations, one per line.
//!
//! ```text
//! # comments and blank lines are skipped
//! begin pessimistic        # or: begin optimistic
//! get_for_update acct/1
//! put acct/1 90
//! delete tmp/7
//! get acct/2
//! sleep 500                # milliseconds, inside or outside a transaction
//! commit                   # or: rollback
//! ```
//!
//! `sleep` lets two scripts run side by side stage a conflict on purpose: one reads a key
//! and sleeps, the other writes the key and commits during the sleep, and the first one's
//! commit then fails with a write conflict.

use std::io::Write;
use std::time::Duration;

use surge_txn::TxnMode;

use super::script_target::{ScriptTarget, ScriptTxn};
use crate::ClientError;

/// One operation of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptOp {
    /// `begin optimistic|pessimistic`.
    Begin(TxnMode),
    /// `get KEY`.
    Get(String),
    /// `get_for_update KEY`.
    GetForUpdate(String),
    /// `put KEY VALUE` (the value is the rest of the line).
    Put(String, String),
    /// `delete KEY`.
    Delete(String),
    /// `commit`.
    Commit,
    /// `rollback`.
    Rollback,
    /// `sleep MS`: waits that many milliseconds (at most [`MAX_SLEEP_MS`]), inside or
    /// outside a transaction.
    Sleep(Duration),
}

/// The longest `sleep` a script may ask for, in milliseconds (one hour).
pub const MAX_SLEEP_MS: u64 = 3_600_000;

/// Why a script failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// A line does not parse.
    #[error("line {line}: {detail}")]
    Parse {
        /// The line number (from 1).
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// An operation needs a transaction and none is open, or `begin` found one open.
    #[error("line {line}: {detail}")]
    Order {
        /// The line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// An operation failed.
    #[error("line {line}: {op}: {source}")]
    Txn {
        /// The line number.
        line: usize,
        /// The operation.
        op: String,
        /// The transaction's error.
        source: ClientError,
    },
    /// Writing the output failed.
    #[error("output: {0}")]
    Output(#[from] std::io::Error),
}

/// Parses a script into `(line number, op)` pairs.
///
/// # Errors
/// [`ScriptError::Parse`] for the first bad line.
pub fn parse_script(text: &str) -> Result<Vec<(usize, ScriptOp)>, ScriptError> {
    let mut ops = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split_once('#').map_or(raw, |(b, _)| b).trim();
        if body.is_empty() {
            continue;
        }
        let bad = |detail: &str| ScriptError::Parse {
            line,
            detail: format!("{detail}: {body:?}"),
        };
        let (word, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let rest = rest.trim();
        let one_key = |name: &str| -> Result<String, ScriptError> {
            match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
                [k] => Ok((*k).to_string()),
                _ => Err(bad(&format!("{name} takes one key"))),
            }
        };
        let op = match word {
            "begin" => match rest {
                "optimistic" => ScriptOp::Begin(TxnMode::Optimistic),
                "pessimistic" => ScriptOp::Begin(TxnMode::Pessimistic),
                _ => return Err(bad("begin takes optimistic or pessimistic")),
            },
            "get" => ScriptOp::Get(one_key("get")?),
            "get_for_update" => ScriptOp::GetForUpdate(one_key("get_for_update")?),
            "delete" => ScriptOp::Delete(one_key("delete")?),
            "put" => match rest.split_once(char::is_whitespace) {
                Some((k, v)) if !v.trim().is_empty() => {
                    ScriptOp::Put(k.to_string(), v.trim().to_string())
                }
                _ => return Err(bad("put takes a key and a value")),
            },
            "sleep" => match rest.parse::<u64>() {
                Ok(ms) if ms <= MAX_SLEEP_MS => ScriptOp::Sleep(Duration::from_millis(ms)),
                _ => {
                    return Err(bad(&format!(
                        "sleep takes a whole number of milliseconds, 0 to {MAX_SLEEP_MS}"
                    )));
                }
            },
            "commit" if rest.is_empty() => ScriptOp::Commit,
            "rollback" if rest.is_empty() => ScriptOp::Rollback,
            _ => return Err(bad("unknown operation")),
        };
        ops.push((line, op));
    }
    Ok(ops)
}

/// Runs `ops` against `client` (a node's coordinator through [`crate::Client`], or a
/// `TxnClient` in this process), printing one line per operation to `out`. A transaction
/// left open at the end is rolled back (and said so). Stops at the first failure.
///
/// # Errors
/// [`ScriptError`] naming the line.
pub fn run_script(
    client: &dyn ScriptTarget,
    ops: &[(usize, ScriptOp)],
    out: &mut impl Write,
) -> Result<(), ScriptError> {
    let mut txn: Option<Box<dyn ScriptTxn>> = None;
    for (line, op) in ops {
        let line = *line;
        let fail = |op: &str| {
            let op = op.to_string();
            move |source| ScriptError::Txn { line, op, source }
        };
        if let ScriptOp::Sleep(d) = op {
            std::thread::sleep(*d);
            writeln!(out, "sleep {} ms: done", d.as_millis())?;
            continue;
        }
        if let ScriptOp::Begin(mode) = op {
            if txn.is_some() {
                return Err(ScriptError::Order {
                    line,
                    detail: "begin inside an open transaction".into(),
                });
            }
            let t = client.begin_txn(*mode).map_err(fail("begin"))?;
            writeln!(out, "begin {mode}: start_ts {}", t.start_ts())?;
            txn = Some(t);
            continue;
        }
        let Some(mut t) = txn.take() else {
            return Err(ScriptError::Order {
                line,
                detail: "no open transaction (begin first)".into(),
            });
        };
        // Commit and rollback take the transaction; every other step puts it back.
        match op {
            ScriptOp::Begin(_) | ScriptOp::Sleep(_) => {}
            ScriptOp::Get(k) => {
                let v = t.get(k.as_bytes()).map_err(fail("get"))?;
                writeln!(out, "get {k}: {}", show(v.as_deref()))?;
            }
            ScriptOp::GetForUpdate(k) => {
                let v = t
                    .get_for_update(k.as_bytes())
                    .map_err(fail("get_for_update"))?;
                writeln!(out, "get_for_update {k}: {}", show(v.as_deref()))?;
            }
            ScriptOp::Put(k, v) => {
                t.put(k.as_bytes(), v.as_bytes()).map_err(fail("put"))?;
                writeln!(out, "put {k}: ok")?;
            }
            ScriptOp::Delete(k) => {
                t.delete(k.as_bytes()).map_err(fail("delete"))?;
                writeln!(out, "delete {k}: ok")?;
            }
            ScriptOp::Commit => {
                let ts = t.commit().map_err(fail("commit"))?;
                writeln!(out, "commit: committed at {ts}")?;
                continue;
            }
            ScriptOp::Rollback => {
                t.rollback().map_err(fail("rollback"))?;
                writeln!(out, "rollback: ok")?;
                continue;
            }
        }
        txn = Some(t);
    }
    if let Some(t) = txn {
        t.rollback().map_err(|source| ScriptError::Txn {
            line: ops.last().map_or(0, |(l, _)| *l),
            op: "rollback at end of script".into(),
            source,
        })?;
        writeln!(out, "end of script: open transaction rolled back")?;
    }
    Ok(())
}

/// A value for printing: the text, or `(not found)`.
pub fn show(v: Option<&[u8]>) -> String {
    match v {
        Some(v) => String::from_utf8_lossy(v).into_owned(),
        None => "(not found)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_txn::{TxnClient, TxnError};

    #[test]
    fn scripts_parse_with_comments_and_values_with_spaces() {
        let ops = parse_script(
            "# transfer\nbegin pessimistic\nget_for_update a\nput a hello world  \n\ndelete b # gone\ncommit\n",
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![
                (2, ScriptOp::Begin(TxnMode::Pessimistic)),
                (3, ScriptOp::GetForUpdate("a".into())),
                (4, ScriptOp::Put("a".into(), "hello world".into())),
                (6, ScriptOp::Delete("b".into())),
                (7, ScriptOp::Commit),
            ]
        );
    }

    #[test]
    fn sleep_takes_milliseconds_anywhere_in_a_script() {
        let ops = parse_script("sleep 250\nbegin optimistic\nsleep 0 # no wait\ncommit\n").unwrap();
        assert_eq!(
            ops,
            vec![
                (1, ScriptOp::Sleep(Duration::from_millis(250))),
                (2, ScriptOp::Begin(TxnMode::Optimistic)),
                (3, ScriptOp::Sleep(Duration::ZERO)),
                (4, ScriptOp::Commit),
            ]
        );
        for bad in [
            "sleep",
            "sleep x",
            "sleep 1 2",
            "sleep -5",
            "sleep 1.5",
            "sleep 3600001",
        ] {
            match parse_script(bad) {
                Err(ScriptError::Parse { line: 1, detail }) => {
                    assert!(detail.contains("sleep takes"), "{bad:?}: {detail}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_sleep_stages_a_write_conflict_between_two_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = surge_txn::LocalCluster::start(
            surge_txn::ClusterConfig::new(dir.path()).with_regions(2),
        )
        .unwrap();
        let client = TxnClient::new(cluster.router(), surge_txn::ClientConfig::default());
        // A reads the key, sleeps, then writes it; B writes it during A's sleep and commits
        // first (1.3 s of margin), so A's commit must fail with a write conflict.
        let a = parse_script("begin optimistic\nget k\nsleep 1500\nput k a\ncommit\n").unwrap();
        let b = parse_script("sleep 200\nbegin optimistic\nput k b\ncommit\n").unwrap();
        let started = std::time::Instant::now();
        let (a_result, a_out, b_result) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                let mut out = Vec::new();
                let r = run_script(&client, &a, &mut out);
                (r, String::from_utf8(out).unwrap())
            });
            let b_result = run_script(&client, &b, &mut Vec::new());
            let (a_result, a_out) = a.join().unwrap();
            (a_result, a_out, b_result)
        });
        assert!(started.elapsed() >= Duration::from_millis(1500));
        b_result.unwrap();
        assert!(a_out.contains("sleep 1500 ms: done"), "{a_out}");
        match a_result {
            Err(ScriptError::Txn {
                line: 5,
                source: ClientError::Txn(TxnError::WriteConflict { .. }),
                ..
            }) => {}
            other => panic!("A's commit should conflict: {other:?}\n{a_out}"),
        }
        assert_eq!(client.get(b"k").unwrap(), Some(b"b".to_vec()));
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, line) in [
            ("begin maybe", 1),
            ("begin optimistic\nput a", 2),
            ("get a b", 1),
            ("\nfrobnicate x", 2),
            ("commit now", 1),
        ] {
            match parse_script(text) {
                Err(ScriptError::Parse { line: got, .. }) => assert_eq!(got, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_script_runs_through_a_local_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = surge_txn::LocalCluster::start(
            surge_txn::ClusterConfig::new(dir.path()).with_regions(2),
        )
        .unwrap();
        let client = TxnClient::new(cluster.router(), surge_txn::ClientConfig::default());
        let ops = parse_script(
            "begin pessimistic\nput a 1\nget a\ncommit\nbegin optimistic\nget a\nget b\nput b 2\n",
        )
        .unwrap();
        let mut out = Vec::new();
        run_script(&client, &ops, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("get a: 1\ncommit: committed at"), "{text}");
        assert!(text.contains("get b: (not found)"), "{text}");
        assert!(
            text.ends_with("end of script: open transaction rolled back\n"),
            "{text}"
        );
        assert_eq!(client.get(b"b").unwrap(), None);
        let no_begin = parse_script("get a").unwrap();
        assert!(matches!(
            run_script(&client, &no_begin, &mut Vec::new()),
            Err(ScriptError::Order { line: 1, .. })
        ));
    }
}
