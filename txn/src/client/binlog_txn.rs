//! [`BinlogTxn`]: one transaction's side of the binlog while it runs: its [`TxnCache`] of
//! row events and what it knows about each key's existence.
//!
//! A transaction logs either the kv rows of the keys it writes (the default) or, once the
//! caller gives its own events ([`BinlogTxn::sql_rows`], [`BinlogTxn::query`]: a SQL
//! layer's row events of its tables, DDL), only those: the kv rows logged so far are
//! dropped from the cache, and later writes log nothing themselves.
//!
//! The binlog must replay in MariaDB's STRICT mode, so each statement has to match the
//! row's state: an insert only of an absent key, an update or delete only of a present one.
//! The transaction learns whether a key existed before it from its pessimistic lock (the
//! lock request asks for the value at `for_update_ts`, and the lock keeps it so until
//! commit) or, in an optimistic transaction, from a read at `start_ts` (the prewrite's
//! conflict check fails the commit if another transaction wrote the key since).

use std::cell::RefCell;
use std::collections::BTreeMap;

use surge_binlog::{BinlogTable, Savepoint, SqlRowChange, TxnCache};

use super::binlog_journal::{MemberRow, RowChange};
use super::error::TxnError;

/// The transaction's binlog cache and key states.
///
/// # Invariants
/// - `before[k]` is whether `k` had a value before this transaction, learned once.
/// - `now[k]`, for each key the cache has a statement on, is whether `k` has a value after
///   those statements; a statement on `k` is added only when `before[k]` is known.
#[derive(Debug)]
pub(crate) struct BinlogTxn {
    cache: TxnCache,
    before: BTreeMap<Vec<u8>, bool>,
    now: BTreeMap<Vec<u8>, bool>,
    /// The cache's start, to drop its kv rows when the caller's events take over.
    start: Savepoint,
    /// Whether the caller gives the events (SQL rows, DDL) instead of the kv rows.
    sql: bool,
}

fn cache_err(e: surge_binlog::Error) -> TxnError {
    match e {
        surge_binlog::Error::BadValue {
            table,
            column,
            reason,
        } => TxnError::BinlogValue {
            table,
            column,
            reason,
        },
        e => TxnError::Binlog {
            detail: format!("transaction cache: {e}"),
        },
    }
}

impl BinlogTxn {
    /// A transaction writing into `cache`.
    pub(crate) fn new(cache: TxnCache) -> BinlogTxn {
        let start = cache.savepoint();
        BinlogTxn {
            cache,
            before: BTreeMap::new(),
            now: BTreeMap::new(),
            start,
            sql: false,
        }
    }

    /// Whether the caller's events replace the kv rows.
    pub(crate) fn is_sql(&self) -> bool {
        self.sql
    }

    /// Switches to the caller's events: drops the kv rows logged so far.
    fn enter_sql(&mut self) -> Result<(), TxnError> {
        if !self.sql {
            self.cache.rollback_to(self.start).map_err(cache_err)?;
            self.now.clear();
            self.sql = true;
        }
        Ok(())
    }

    /// Adds one SQL statement's row changes of `table` (Table_map + rows events with full
    /// images).
    ///
    /// # Errors
    /// [`TxnError::BinlogValue`] for a value that does not fit its column (nothing of the
    /// statement is added); [`TxnError::Binlog`] if the cache fails.
    pub(crate) fn sql_rows(
        &mut self,
        table: &BinlogTable,
        changes: &[SqlRowChange],
    ) -> Result<(), TxnError> {
        self.enter_sql()?;
        self.cache.table_rows(table, changes).map_err(cache_err)
    }

    /// Adds an Annotate_rows event with the text of the statement whose rows follow.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the cache fails.
    pub(crate) fn annotate(&mut self, sql: &str) -> Result<(), TxnError> {
        self.enter_sql()?;
        self.cache.annotate(sql).map_err(cache_err)
    }

    /// Adds a statement logged as its text (DDL).
    ///
    /// # Errors
    /// [`TxnError::Binlog`] for a bad database name or statement, or if the cache fails.
    pub(crate) fn query(&mut self, database: &str, sql: &str) -> Result<(), TxnError> {
        self.enter_sql()?;
        self.cache.query(database, sql).map_err(cache_err)
    }

    /// Whether the caller gave events (so the transaction logs a group even if it writes no
    /// key).
    pub(crate) fn has_caller_events(&self) -> bool {
        self.sql && !self.cache.is_empty()
    }

    /// The caller's events, encoded (for the prepare journal); `None` for a transaction
    /// logging kv rows.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if a spilled cache cannot be read.
    pub(crate) fn caller_events(&mut self) -> Result<Option<Vec<u8>>, TxnError> {
        if !self.sql {
            return Ok(None);
        }
        self.cache.encoded_events().map(Some).map_err(cache_err)
    }

    /// Every event of the cache, encoded as the binlog will hold them (kv rows or the
    /// caller's events), for the stream record.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if a spilled cache cannot be read.
    pub(crate) fn encoded_events(&mut self) -> Result<Vec<u8>, TxnError> {
        self.cache.encoded_events().map_err(cache_err)
    }

    /// Whether the existence of `key` before the transaction is known.
    pub(crate) fn knows(&self, key: &[u8]) -> bool {
        self.before.contains_key(key)
    }

    /// Records whether `key` existed before the transaction (the first answer counts).
    pub(crate) fn learn(&mut self, key: &[u8], existed: bool) {
        self.before.entry(key.to_vec()).or_insert(existed);
    }

    fn exists_now(&self, key: &[u8]) -> Result<bool, TxnError> {
        let known = self.now.get(key).or_else(|| self.before.get(key));
        known.copied().ok_or_else(|| TxnError::Binlog {
            detail: format!(
                "existence of key {:?} unknown when writing its row event",
                String::from_utf8_lossy(key)
            ),
        })
    }

    /// Adds the statement that sets `key` to `value`: an Update_rows if the key has a value
    /// now, else a Write_rows.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the key's existence was not learned or the cache fails.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxnError> {
        if self.sql {
            return Ok(());
        }
        if self.exists_now(key)? {
            self.cache.update(key, value).map_err(cache_err)?;
        } else {
            self.cache.put(key, value).map_err(cache_err)?;
        }
        self.now.insert(key.to_vec(), true);
        Ok(())
    }

    /// Adds a Delete_rows of `key` if it has a value now (deleting an absent key changes no
    /// row, so it writes no event).
    ///
    /// # Errors
    /// As [`BinlogTxn::put`].
    pub(crate) fn delete(&mut self, key: &[u8]) -> Result<(), TxnError> {
        if self.sql {
            return Ok(());
        }
        if self.exists_now(key)? {
            self.cache.delete(key).map_err(cache_err)?;
        }
        self.now.insert(key.to_vec(), false);
        Ok(())
    }

    /// The net change of every key whose kv row the transaction logs, in key order (none
    /// once the caller's events replaced the kv rows).
    pub(crate) fn changes(&self) -> Vec<(Vec<u8>, RowChange)> {
        self.now
            .iter()
            .filter_map(|(k, &after)| {
                let before = self.before.get(k).copied().unwrap_or(after);
                let change = match (before, after) {
                    (false, true) => RowChange::Insert,
                    (true, true) => RowChange::Update,
                    (true, false) => RowChange::Delete,
                    (false, false) => return None,
                };
                Some((k.clone(), change))
            })
            .collect()
    }

    /// The cache, to commit.
    pub(crate) fn into_cache(self) -> TxnCache {
        self.cache
    }
}

thread_local! {
    /// The members of the hot-row group this thread is committing, by the group's
    /// `start_ts` (see [`with_hot_members`]).
    static HOT_MEMBERS: RefCell<Option<(u64, Vec<MemberRow>)>> = const { RefCell::new(None) };
}

/// Runs `commit` (the commit of the hot-row group transaction `start_ts`, on this thread)
/// with `members` handed to its binlog step, which then logs one binlog transaction per
/// member instead of the transaction's cache. The hand-off is cleared afterwards whatever
/// happened, and only a prepare of `start_ts` takes it, so no other commit can see it.
pub(crate) fn with_hot_members<R>(
    start_ts: u64,
    members: Vec<MemberRow>,
    commit: impl FnOnce() -> R,
) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            HOT_MEMBERS.with(|m| m.borrow_mut().take());
        }
    }
    HOT_MEMBERS.with(|m| *m.borrow_mut() = Some((start_ts, members)));
    let _clear = Clear;
    commit()
}

/// The members [`with_hot_members`] handed over for transaction `start_ts` (empty for any
/// other transaction).
pub(crate) fn take_hot_members(start_ts: u64) -> Vec<MemberRow> {
    HOT_MEMBERS.with(|m| {
        let mut m = m.borrow_mut();
        match m.take() {
            Some((ts, rows)) if ts == start_ts => rows,
            other => {
                *m = other;
                Vec::new()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_binlog::{Binlog, BinlogColumn, BinlogConfig, BinlogType, BinlogValue};

    fn table() -> BinlogTable {
        BinlogTable::new("d", "t", 5, vec![BinlogColumn::new("a", BinlogType::Int)]).expect("valid")
    }

    #[test]
    fn the_callers_events_replace_the_kv_rows() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let log = Binlog::open(BinlogConfig::new(dir.path()))?;
        let mut b = BinlogTxn::new(log.new_cache());
        b.learn(b"k", false);
        b.put(b"k", b"v")?;
        assert_eq!(b.changes(), vec![(b"k".to_vec(), RowChange::Insert)]);
        assert_eq!(b.caller_events()?, None);
        assert!(!b.has_caller_events());
        let kv_len = b.cache.len();
        assert!(kv_len > 0);

        let row = vec![BinlogValue::Int(1)];
        b.sql_rows(&table(), &[SqlRowChange::Insert { after: row }])?;
        assert!(b.is_sql() && b.has_caller_events());
        // The kv row is gone; later writes add nothing.
        assert!(b.changes().is_empty());
        let events = b.caller_events()?.ok_or("caller events")?;
        assert_eq!(events.len() as u64, b.cache.len());
        b.put(b"k2", b"w")?;
        b.delete(b"k")?;
        assert_eq!(b.cache.len(), events.len() as u64);
        // A bad value adds nothing and names its column.
        let bad = vec![BinlogValue::text("x")];
        let e = b.sql_rows(&table(), &[SqlRowChange::Insert { after: bad }]);
        assert!(matches!(e, Err(TxnError::BinlogValue { ref column, .. }) if column == "a"));
        assert_eq!(b.cache.len(), events.len() as u64);
        b.query("d", "DROP TABLE t")?;
        assert!(b.cache.len() > events.len() as u64);
        assert!(b.query("d", "").is_err());
        Ok(())
    }
}
