//! [`IdAllocator`]: AUTO_INCREMENT values and hidden row ids, taken from the table's counter
//! in the store in batches per engine, so concurrent inserts on one node never conflict on
//! the counter's key and ids rise within a node.

use std::collections::HashMap;

use parking_lot::Mutex;
use surge_txn::{TxnClient, TxnMode};

use super::store::{autoinc_key, parse_counter};
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;

/// How many ids one trip to the store takes.
const BATCH: i64 = 1000;

#[derive(Debug, Default, Clone, Copy)]
struct Range {
    next: i64,
    end: i64,
    /// The counter as last seen in the store: explicit values below it need no trip.
    seen: i64,
}

/// Per-engine id batches by table id.
#[derive(Debug)]
pub(crate) struct IdAllocator {
    client: TxnClient,
    ranges: Mutex<HashMap<i64, Range>>,
    /// Held while a batch is fetched, so that two threads finding the batch empty fetch
    /// one after the other (the second then uses the first's): ids keep rising.
    refill: Mutex<()>,
}

impl IdAllocator {
    /// An allocator over `client`.
    pub(crate) fn new(client: TxnClient) -> IdAllocator {
        IdAllocator {
            client,
            ranges: Mutex::new(HashMap::new()),
            refill: Mutex::new(()),
        }
    }

    /// The next id of table `table` (from 1).
    ///
    /// # Errors
    /// The counter could not be advanced.
    pub(crate) fn next(&self, table: i64) -> Result<i64, SqlError> {
        {
            let mut r = self.ranges.lock();
            let range = r.entry(table).or_default();
            if range.next < range.end {
                range.next += 1;
                return Ok(range.next - 1);
            }
        }
        let _refill = self.refill.lock();
        {
            // Another thread may have refilled while this one waited.
            let mut r = self.ranges.lock();
            let range = r.entry(table).or_default();
            if range.next < range.end {
                range.next += 1;
                return Ok(range.next - 1);
            }
        }
        let (start, end) = self.advance(table, |cur| cur.max(1).saturating_add(BATCH))?;
        if start >= end {
            // The counter is at i64::MAX: no id is left (MySQL's 1467).
            return Err(SqlError::new(
                1467,
                "HY000",
                "Failed to read auto-increment value from storage engine",
            ));
        }
        let mut r = self.ranges.lock();
        let range = r.entry(table).or_default();
        *range = Range {
            next: start + 1,
            end,
            seen: range.seen.max(end),
        };
        Ok(start)
    }

    /// Records that `value` was inserted explicitly: later ids are above it.
    ///
    /// # Errors
    /// The counter could not be advanced.
    pub(crate) fn observe(&self, table: i64, value: i64) -> Result<(), SqlError> {
        {
            let mut r = self.ranges.lock();
            let range = r.entry(table).or_default();
            if value < range.seen {
                // The store's counter is past it; only the local batch may need to skip it.
                if value >= range.next && value < range.end {
                    range.next = value.saturating_add(1);
                }
                return Ok(());
            }
        }
        let (_, new) = self.advance(table, |cur| cur.max(value.saturating_add(1)))?;
        let mut r = self.ranges.lock();
        let range = r.entry(table).or_default();
        range.seen = range.seen.max(new);
        if value >= range.next {
            // The local batch is overtaken: the next id comes from a fresh batch.
            range.next = range.end;
        }
        Ok(())
    }

    /// Drops the cached batch of a dropped or truncated table.
    pub(crate) fn forget(&self, table: i64) {
        self.ranges.lock().remove(&table);
    }

    /// Moves the counter from `cur` to `to(cur)` in a transaction of its own; returns
    /// `(cur, new)` with `cur` at least 1.
    fn advance(&self, table: i64, to: impl Fn(i64) -> i64) -> Result<(i64, i64), SqlError> {
        let key = autoinc_key(table);
        let mut last = None;
        for _ in 0..20 {
            let mut txn = self
                .client
                .begin(TxnMode::Pessimistic)
                .map_err(|e| from_txn(&e))?;
            crate::sql::exec::silence(&mut txn)?;
            let result = txn.get_for_update(&key).map(|v| {
                let cur = parse_counter(&key, v);
                cur.map(|cur| (cur.max(1), to(cur.max(1)).max(cur.max(1))))
            });
            let result = match result {
                Ok(Ok((cur, new))) => {
                    if new == cur {
                        Ok((cur, new))
                    } else {
                        txn.put(&key, new.to_string().as_bytes())
                            .map(|()| (cur, new))
                    }
                }
                Ok(Err(e)) => return Err(e),
                Err(e) => Err(e),
            };
            match result {
                Ok(r) => match txn.commit() {
                    Ok(_) => return Ok(r),
                    Err(e) if e.is_retryable() => last = Some(e),
                    Err(e) => return Err(from_txn(&e)),
                },
                Err(e) if e.is_retryable() => {
                    txn.rollback();
                    last = Some(e);
                }
                Err(e) => return Err(from_txn(&e)),
            }
        }
        Err(last.map_or_else(
            || SqlError::internal("auto-increment counter: no attempt made"),
            |e| from_txn(&e),
        ))
    }
}
