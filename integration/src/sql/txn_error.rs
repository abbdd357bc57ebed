//! How a [`TxnError`] reaches a MySQL client: every abort a retry can cure is 1213 (SQLSTATE
//! 40001, which sysbench and most drivers retry), a lock wait timeout 1205, the rest 1105.

use surge_txn::TxnError;

use super::output::SqlError;

/// The client-facing error for `e`. Callers roll the transaction back before reporting a
/// 1213 or 1205.
pub(crate) fn from_txn(e: &TxnError) -> SqlError {
    match e {
        TxnError::LockWaitTimeout { .. } | TxnError::KeyIsLocked { .. } => SqlError::new(
            1205,
            "HY000",
            format!(
                "Lock wait timeout exceeded; try restarting transaction ({e}); the transaction was rolled back"
            ),
        ),
        TxnError::Deadlock { .. } => SqlError::new(
            1213,
            "40001",
            format!("Deadlock found when trying to get lock; try restarting transaction ({e})"),
        ),
        TxnError::PessimisticLockNotFound { .. } => SqlError::new(
            1213,
            "40001",
            format!(
                "PessimisticLockNotFound: {e}; the transaction was rolled back, try restarting transaction"
            ),
        ),
        e if e.is_retryable() => SqlError::new(
            1213,
            "40001",
            format!(
                "Write conflict or lost lock, try restarting transaction: {e}; the transaction was rolled back"
            ),
        ),
        TxnError::AlreadyExist { key } => SqlError::new(
            1062,
            "23000",
            format!("Duplicate entry for key {}", String::from_utf8_lossy(key)),
        ),
        TxnError::Undetermined { .. } => SqlError::internal(format!(
            "{e}: the transaction may or may not have committed"
        )),
        other => SqlError::internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        let lost = TxnError::PessimisticLockNotFound {
            start_ts: 1,
            key: b"k".to_vec(),
        };
        let e = from_txn(&lost);
        assert_eq!((e.code, e.state.as_str()), (1213, "40001"));
        assert!(e.message.contains("PessimisticLockNotFound"));
        let t = TxnError::LockWaitTimeout {
            key: b"k".to_vec(),
            lock_ts: 1,
        };
        assert_eq!(from_txn(&t).code, 1205);
        let w = TxnError::WriteConflict {
            start_ts: 1,
            conflict_start_ts: 2,
            conflict_commit_ts: 3,
            key: b"k".to_vec(),
        };
        assert_eq!(from_txn(&w).code, 1213);
        assert_eq!(from_txn(&TxnError::TxnFinished).code, 1105);
    }
}
