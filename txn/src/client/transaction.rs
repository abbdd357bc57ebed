//! [`Transaction`]: snapshot reads, buffered writes, pessimistic locks and commit.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::backoff::Backoff;
use super::buffer::{BufferedRead, WriteBuffer, select_primary};
use super::core::ClientCore;
use super::counters::bump;
use super::error::TxnError;
use super::mode::TxnMode;
use super::pessimistic::LockRequest;
use super::snapshot::KvPair;
use super::stream_commit::check_user_key;
use super::two_pc::{CommitPlan, StopAt};

/// How many fresh `for_update_ts` one lock tries when writes keep committing to the key
/// between taking the timestamp and locking (TiDB retries the statement likewise).
const MAX_FOR_UPDATE_TS_RETRIES: usize = 64;

/// A transaction: reads see the snapshot at [`Transaction::start_ts`] plus the
/// transaction's own buffered writes; writes are buffered until [`Transaction::commit`].
///
/// In a [`TxnMode::Pessimistic`] transaction every write and `get_for_update` first locks its
/// key at a fresh `for_update_ts`, waiting for other holders. Dropping a transaction without
/// commit or rollback releases its locks (best effort, bounded by
/// [`crate::ClientConfig::drop_cleanup_budget`]).
///
/// [`Transaction::commit`] and [`Transaction::rollback`] take the transaction, so a finished
/// one cannot be used by mistake:
///
/// ```compile_fail,E0382
/// # fn run(client: &surge_txn::TxnClient) -> Result<(), surge_txn::TxnError> {
/// let mut t = client.begin(surge_txn::TxnMode::Optimistic)?;
/// t.put(b"k", b"v")?;
/// t.commit()?;
/// t.put(b"k", b"w")?; // use of moved value: `t`
/// # Ok(())
/// # }
/// ```
///
/// # Invariants
/// - Every key in `locked` is in the buffer (a lock is taken only for a write or a
///   `get_for_update`, both of which buffer the key), so each pessimistic lock is either
///   prewritten at commit or released at rollback.
/// - `primary` is the first key this transaction locked, and every lock request names it.
#[derive(Debug)]
pub struct Transaction {
    core: Arc<ClientCore>,
    mode: TxnMode,
    start_ts: u64,
    buffer: WriteBuffer,
    /// Keys whose pessimistic lock was granted.
    locked: BTreeSet<Vec<u8>>,
    /// Keys whose lock request failed without a clear answer: a lock may exist, so they are
    /// released at the end like granted ones.
    maybe_locked: BTreeSet<Vec<u8>>,
    primary: Option<Vec<u8>>,
    max_for_update_ts: u64,
    /// Set when commit, rollback or an abandon hook took over the locks, so that `Drop`
    /// leaves them alone. The methods that set it take the transaction, so no other method
    /// ever sees it set.
    finished: bool,
    /// The transaction's binlog cache and key states (`None` without a binlog): every
    /// write adds its row event as it runs (`binlog_txn.rs`).
    binlog: Option<super::binlog_txn::BinlogTxn>,
    /// How long a lock request waits on the node for a conflicting lock (`None`: the
    /// client backs off instead).
    lock_wait_timeout: Option<std::time::Duration>,
}

impl Transaction {
    pub(crate) fn new(core: Arc<ClientCore>, mode: TxnMode, start_ts: u64) -> Transaction {
        let binlog = core.binlog.new_txn();
        // Closed in `Drop`: a transaction holds the client's GC hold back while it exists.
        core.open_txn(start_ts);
        let lock_wait_timeout = core.config.wait_for_lock_timeout;
        Transaction {
            lock_wait_timeout,
            core,
            mode,
            start_ts,
            buffer: WriteBuffer::default(),
            locked: BTreeSet::new(),
            maybe_locked: BTreeSet::new(),
            primary: None,
            max_for_update_ts: 0,
            finished: false,
            binlog,
        }
    }

    /// The transaction's start timestamp: its snapshot.
    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }

    /// The transaction's mode.
    pub fn mode(&self) -> TxnMode {
        self.mode
    }

    /// How long this transaction's lock requests wait on the node for a conflicting lock
    /// before failing with [`TxnError::LockWaitTimeout`] (`None`: the node does not park
    /// them; the client retries with backoff within its budget). Starts as the client's
    /// [`crate::ClientConfig::wait_for_lock_timeout`]; a SQL session sets it from its
    /// `innodb_lock_wait_timeout`.
    pub fn lock_wait_timeout(&self) -> Option<std::time::Duration> {
        self.lock_wait_timeout
    }

    /// Sets [`Transaction::lock_wait_timeout`] for the lock requests that follow.
    pub fn set_lock_wait_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.lock_wait_timeout = timeout;
    }

    /// The value of `key`: the transaction's own buffered write, else the committed value at
    /// `start_ts`.
    ///
    /// # Errors
    /// [`TxnError::KeyIsLocked`] when a live lock blocks the read for the whole budget;
    /// region errors after retries.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxnError> {
        match self.buffer.read(key) {
            BufferedRead::Value(v) => Ok(Some(v.to_vec())),
            BufferedRead::Deleted => Ok(None),
            BufferedRead::NotWritten => self.core.snapshot_get(key, self.start_ts),
        }
    }

    /// The values of `keys` (as [`Transaction::get`]), in key order, absent keys omitted.
    ///
    /// # Errors
    /// As [`Transaction::get`].
    pub fn batch_get(&mut self, keys: &[Vec<u8>]) -> Result<Vec<KvPair>, TxnError> {
        let mut out = Vec::new();
        let mut to_read = Vec::new();
        for key in keys {
            match self.buffer.read(key) {
                BufferedRead::Value(v) => out.push((key.clone(), v.to_vec())),
                BufferedRead::Deleted => {}
                BufferedRead::NotWritten => to_read.push(key.clone()),
            }
        }
        if !to_read.is_empty() {
            out.extend(self.core.snapshot_batch_get(to_read, self.start_ts)?);
        }
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        Ok(out)
    }

    /// At most `limit` pairs of `[start, end)` (`end` `None`: to the end of the key space)
    /// in key order across regions: the snapshot at `start_ts` merged with the transaction's
    /// own buffered writes.
    ///
    /// # Errors
    /// As [`Transaction::get`].
    pub fn scan(
        &mut self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, TxnError> {
        let fetch = limit.saturating_add(self.buffer.deletes_in(start, end));
        let pairs = self.core.snapshot_scan(start, end, fetch, self.start_ts)?;
        Ok(self.buffer.merge_scan(pairs, start, end, limit))
    }

    /// Reads `key` for update. Pessimistic: locks it at a fresh `for_update_ts` (waiting for
    /// other holders) and returns its latest committed value (a "current read"), or the
    /// transaction's own buffered write. Optimistic: reads it at `start_ts` and records a
    /// lock mutation, so the commit fails if another transaction wrote it meanwhile.
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxnError> {
        check_user_key(key)?;
        let value = match self.mode {
            TxnMode::Pessimistic => {
                let current = self.lock_key(key, true, false)?;
                match self.buffer.read(key) {
                    BufferedRead::Value(v) => Some(v.to_vec()),
                    BufferedRead::Deleted => None,
                    BufferedRead::NotWritten => current,
                }
            }
            TxnMode::Optimistic => self.get(key)?,
        };
        self.buffer.lock(key.to_vec());
        Ok(value)
    }

    /// [`Transaction::get_for_update`] of many keys, in key order of `keys`: the values,
    /// `None` for a key without one.
    ///
    /// A pessimistic transaction locks the keys it does not hold yet with one request per
    /// region (TiDB locks a statement's keys the same way), not one round trip per key: a
    /// 100 000-row `UPDATE` otherwise paid 100 000 lock round trips. A region whose batch
    /// meets anything but a clean success (a conflicting lock, a write conflict, a region
    /// error) has its keys locked one by one, with all of
    /// [`Transaction::get_for_update`]'s waiting and retries; the same for keys this
    /// transaction holds or wrote already, and for the transaction's first lock (which
    /// makes its primary).
    ///
    /// # Errors
    /// As [`Transaction::get_for_update`].
    pub fn batch_get_for_update(
        &mut self,
        keys: &[Vec<u8>],
    ) -> Result<Vec<Option<Vec<u8>>>, TxnError> {
        for key in keys {
            check_user_key(key)?;
        }
        let mut values: Vec<Option<Option<Vec<u8>>>> = vec![None; keys.len()];
        let batchable = self.mode == TxnMode::Pessimistic
            && self.primary.is_some()
            && self.binlog.as_ref().is_none_or(|b| b.is_sql());
        if batchable {
            let fresh: Vec<(usize, Vec<u8>)> = keys
                .iter()
                .enumerate()
                .filter(|(_, k)| {
                    !self.locked.contains(k.as_slice())
                        && matches!(self.buffer.read(k), BufferedRead::NotWritten)
                })
                .map(|(i, k)| (i, k.clone()))
                .collect();
            let primary = self.primary.clone().unwrap_or_default();
            let for_update_ts = self.start_ts.max(self.max_for_update_ts);
            let mut bo = Backoff::new(&self.core.config);
            let groups = self
                .core
                .group_by_region(fresh, |(_, k)| k.as_slice(), &mut bo)?;
            for (region, group) in groups {
                let batch: Vec<Vec<u8>> = group.iter().map(|(_, k)| k.clone()).collect();
                self.maybe_locked.extend(batch.iter().cloned());
                let outcomes = self.core.try_lock_batch(
                    &region,
                    &batch,
                    &primary,
                    self.start_ts,
                    for_update_ts,
                    &mut bo,
                )?;
                let Some(outcomes) = outcomes else { continue };
                for ((i, key), outcome) in group.into_iter().zip(outcomes) {
                    if let Some(b) = &mut self.binlog {
                        b.learn(&key, outcome.exists);
                    }
                    self.maybe_locked.remove(&key);
                    self.locked.insert(key.clone());
                    self.buffer.lock(key);
                    values[i] = Some(outcome.value);
                }
            }
        }
        // Everything not locked above, one by one.
        keys.iter()
            .zip(values)
            .map(|(key, done)| match done {
                Some(value) => Ok(value),
                None => self.get_for_update(key),
            })
            .collect()
    }

    /// Locks for writing the keys of `keys` this transaction does not hold yet, as
    /// [`Transaction::batch_get_for_update`] does (one request per region), and does nothing
    /// in an optimistic transaction. A later [`Transaction::put`] or
    /// [`Transaction::delete`] of them then costs no round trip.
    ///
    /// # Errors
    /// As [`Transaction::batch_get_for_update`].
    pub fn lock_keys_for_write(&mut self, keys: &[Vec<u8>]) -> Result<(), TxnError> {
        if self.mode != TxnMode::Pessimistic {
            return Ok(());
        }
        let fresh: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| !self.locked.contains(k.as_slice()))
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        self.batch_get_for_update(&fresh).map(|_| ())
    }

    /// Buffers `key = value` (locking the key first in a pessimistic transaction).
    ///
    /// # Errors
    /// [`TxnError::ReservedKey`] for a key reserved for stream records (under
    /// [`crate::STREAM_PREFIX`], alone or after a table's `t{id}`; the same for every write and `get_for_update`). Pessimistic: [`TxnError::LockWaitTimeout`],
    /// [`TxnError::Deadlock`], [`TxnError::PessimisticLockRolledBack`], region errors after
    /// retries. A failed lock leaves the transaction usable (as a failed statement in TiDB).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxnError> {
        check_user_key(key)?;
        self.lock_for_write(key)?;
        self.binlog_row(key, Some(value))?;
        self.buffer.put(key.to_vec(), value.to_vec());
        Ok(())
    }

    /// Buffers `key = value` if the key has no value (SQL `INSERT`): a pessimistic
    /// transaction checks it when locking the key (at a fresh `for_update_ts`), an optimistic
    /// one reads it at `start_ts` (a value committed later makes the commit conflict).
    ///
    /// # Errors
    /// [`TxnError::AlreadyExist`] when the key has a value (the buffer counts: a key this
    /// transaction wrote exists, one it deleted does not); otherwise as [`Transaction::put`].
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxnError> {
        check_user_key(key)?;
        let exists = match self.buffer.read(key) {
            BufferedRead::Value(_) => true,
            BufferedRead::Deleted => false,
            BufferedRead::NotWritten => match self.mode {
                TxnMode::Pessimistic => {
                    self.lock_key(key, false, true)?;
                    false
                }
                TxnMode::Optimistic => self.core.snapshot_get(key, self.start_ts)?.is_some(),
            },
        };
        if exists {
            return Err(TxnError::AlreadyExist { key: key.to_vec() });
        }
        if let Some(b) = &mut self.binlog {
            b.learn(key, false);
        }
        self.lock_for_write(key)?;
        self.binlog_row(key, Some(value))?;
        self.buffer.put(key.to_vec(), value.to_vec());
        Ok(())
    }

    /// Buffers a delete of `key` (locking the key first in a pessimistic transaction).
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn delete(&mut self, key: &[u8]) -> Result<(), TxnError> {
        check_user_key(key)?;
        self.lock_for_write(key)?;
        self.binlog_row(key, None)?;
        self.buffer.delete(key.to_vec());
        Ok(())
    }

    /// Logs one SQL statement's row changes of `table` in the transaction's binlog: a
    /// Table_map of the table, then Write/Update/Delete_rows events with full row images
    /// (as MariaDB writes them with `binlog_row_image=FULL`), which a MariaDB replica with
    /// the same table applies in STRICT mode.
    ///
    /// From the first call of this or [`Transaction::binlog_query`] on, the transaction's
    /// binlog group holds only what the caller logs: the kv rows (`surgedb`.`kv`) of the
    /// keys it writes, before or after, are not logged. A transaction that never calls them
    /// logs its kv rows as before. The group is written at commit like any other (only if
    /// the transaction commits; a large one spills and commits by rename), and its events
    /// are kept in the prepare journal so that a coordinator crash after the commit point
    /// still logs them.
    ///
    /// Events are not taken back when a later write of the same statement fails: log a
    /// statement's rows once its writes succeeded (a failed statement then logs nothing).
    ///
    /// A no-op without a binlog ([`crate::ClientConfig::binlog`] unset): nothing is
    /// checked then.
    ///
    /// # Errors
    /// [`TxnError::BinlogValue`] naming the column of a value that does not fit (nothing of
    /// the statement is logged; the transaction stays usable); [`TxnError::Binlog`] if the
    /// cache fails.
    pub fn binlog_rows(
        &mut self,
        table: &surge_binlog::BinlogTable,
        changes: &[surge_binlog::SqlRowChange],
    ) -> Result<(), TxnError> {
        match &mut self.binlog {
            Some(b) => b.sql_rows(table, changes),
            None => Ok(()),
        }
    }

    /// Logs a statement as its text (a Query event with `database` current), for DDL, in
    /// the transaction's binlog; like [`Transaction::binlog_rows`] it makes the group hold
    /// only what the caller logs. A transaction that writes no key still logs its group at
    /// commit (see also [`crate::TxnClient::binlog_query`]). A no-op without a binlog.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] for a database name over 255 bytes, an empty statement, or a
    /// cache failure.
    pub fn binlog_query(&mut self, database: &str, sql: &str) -> Result<(), TxnError> {
        match &mut self.binlog {
            Some(b) => b.query(database, sql),
            None => Ok(()),
        }
    }

    /// Logs the text of the SQL statement whose row events follow as an Annotate_rows event
    /// (what MariaDB writes with `binlog_annotate_row_events=ON`, its default: `mariadb-binlog`
    /// prints it above the statement's rows, and replicas ignore it when applying). Like
    /// [`Transaction::binlog_rows`] it makes the group hold only what the caller logs. A
    /// no-op without a binlog.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the cache fails.
    pub fn binlog_annotate(&mut self, sql: &str) -> Result<(), TxnError> {
        match &mut self.binlog {
            Some(b) => b.annotate(sql),
            None => Ok(()),
        }
    }

    /// Whether the transaction's binlog group holds only the caller's events
    /// ([`Transaction::binlog_rows`], [`Transaction::binlog_query`] were called). `false`
    /// without a binlog.
    pub fn binlog_is_caller_logged(&self) -> bool {
        self.binlog.as_ref().is_some_and(|b| b.is_sql())
    }

    /// Commits and returns the commit timestamp (the `start_ts` for a transaction with
    /// nothing to write; for one that wrote no key but logged binlog events with a
    /// streaming binlog, the commit timestamp of its stream record). Two-phase commit, or one-phase when every key is in one region.
    ///
    /// Takes the transaction: it is over whatever the outcome, so nothing can be read or
    /// written through it afterwards. A failed commit has nothing left to inspect: the error
    /// names the key and timestamps it concerns, and [`Transaction::start_ts`] can be read
    /// before committing.
    ///
    /// # Errors
    /// [`TxnError::WriteConflict`] (optimistic), [`TxnError::PessimisticLockNotFound`],
    /// [`TxnError::AlreadyExist`], [`TxnError::TxnLockNotFound`] (rolled back by others after
    /// its locks expired), region errors after retries: the transaction did not commit and
    /// its locks were released. [`TxnError::Undetermined`]: it may have committed.
    pub fn commit(mut self) -> Result<u64, TxnError> {
        self.commit_until(StopAt::Never)
    }

    /// Rolls back: releases the transaction's pessimistic locks (nothing was written) and
    /// takes the transaction. Unreachable locks are not an error: they expire and are rolled
    /// back by others. Dropping a transaction does the same within a smaller time budget
    /// ([`crate::ClientConfig::drop_cleanup_budget`]).
    pub fn rollback(mut self) {
        self.finished = true;
        self.release_locks(
            self.core
                .config
                .max_backoff
                .min(std::time::Duration::from_secs(2)),
        );
        bump(&self.core.counters.rollbacks);
    }

    /// Test hook: prewrites every key (two-phase, never one-phase), then forgets the
    /// transaction without committing, rolling back or heartbeating — as if its coordinator
    /// crashed between prewrite and commit. Its locks stay until their TTL runs out and a
    /// reader or writer resolves them.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    #[doc(hidden)]
    pub fn __abandon_after_prewrite(mut self) -> Result<(), TxnError> {
        self.commit_until(StopAt::AfterPrewrite).map(|_| ())
    }

    /// Test hook: commits only the primary key (the transaction is committed), then forgets
    /// the transaction: its secondaries stay locked until a reader resolves them from the
    /// primary's commit record. Returns the commit timestamp.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    #[doc(hidden)]
    pub fn __abandon_after_primary_commit(mut self) -> Result<u64, TxnError> {
        self.commit_until(StopAt::AfterPrimaryCommit)
    }

    /// Benchmark hook: commits as [`Transaction::commit`], running `pause` on this thread
    /// once every key is prewritten (two-phase only), before the commit step (commit
    /// timestamp, primary, binlog). Lets a benchmark measure a large transaction's commit
    /// step apart from its prewrite.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    #[doc(hidden)]
    pub fn __commit_pausing_after_prewrite(
        self,
        pause: impl FnOnce() + 'static,
    ) -> Result<u64, TxnError> {
        super::binlog_crash::pause_after_prewrite(Some(Box::new(pause)));
        let result = self.commit();
        super::binlog_crash::pause_after_prewrite(None);
        result
    }

    /// Test hook: forgets the transaction as if its coordinator crashed: no rollback, no
    /// more heartbeats. Its pessimistic locks stay until their TTL runs out and another
    /// transaction resolves them.
    #[doc(hidden)]
    pub fn __abandon(mut self) {
        self.finished = true;
        self.core.heartbeats.unregister(self.start_ts);
    }

    fn commit_until(&mut self, stop: StopAt) -> Result<u64, TxnError> {
        self.finished = true;
        // The keys locked with an unclear answer that the commit does not cover, taken
        // while the buffer is here (`release_maybe_locked` releases them after the commit).
        let buffer = &self.buffer;
        self.maybe_locked.retain(|k| !buffer.contains(k));
        let primary = match self.mode {
            TxnMode::Pessimistic => select_primary(&self.buffer, self.primary.as_deref()),
            TxnMode::Optimistic => select_primary(&self.buffer, None),
        };
        // The buffer moves into the plan: nothing reads it once commit started.
        let mutations = std::mem::take(&mut self.buffer).into_mutations(&self.locked);
        let Some(primary) = primary.filter(|_| !mutations.is_empty()) else {
            self.release_maybe_locked();
            // Nothing to write in the store, but the caller's events (DDL, say) still go
            // to the binlog, as a group of their own.
            // With streaming, they also go to the stream, in a transaction holding only
            // the stream record.
            let mut commit_ts = self.start_ts;
            if let Some(b) = self.binlog.take()
                && b.has_caller_events()
                && stop == StopAt::Never
            {
                commit_ts = self
                    .core
                    .commit_caller_group(b.into_cache(), self.start_ts)?;
            }
            bump(&self.core.counters.commits);
            return Ok(commit_ts);
        };
        let plan = CommitPlan {
            start_ts: self.start_ts,
            primary,
            mutations,
            for_update_ts: self.max_for_update_ts,
        };
        let result = self.core.commit_plan(plan, stop, self.binlog.take());
        if stop != StopAt::Never {
            // A simulated crash: leave every lock behind and stop heartbeating.
            self.core.heartbeats.unregister(self.start_ts);
            self.locked.clear();
            self.maybe_locked.clear();
            return result;
        }
        self.release_maybe_locked();
        self.core.heartbeats.unregister(self.start_ts);
        match &result {
            Ok(commit_ts) => {
                bump(&self.core.counters.commits);
                tracing::debug!(start_ts = self.start_ts, commit_ts, "committed");
            }
            Err(e) => {
                self.core.counters.count_abort(e);
                tracing::debug!(start_ts = self.start_ts, error = %e, "commit failed");
                if !matches!(e, TxnError::Undetermined { .. }) {
                    // A commit that failed before its prewrites were sent (no region map, no
                    // timestamp) rolled nothing back: release the pessimistic locks here.
                    // Prewritten locks are untouched by this (the commit path rolled those
                    // back), so it is harmless when they were.
                    self.release_locks(self.core.config.drop_cleanup_budget);
                }
            }
        }
        result
    }

    fn lock_for_write(&mut self, key: &[u8]) -> Result<(), TxnError> {
        if self.mode == TxnMode::Pessimistic && !self.locked.contains(key) {
            self.lock_key(key, false, false)?;
        }
        Ok(())
    }

    /// Locks `key` pessimistically at a fresh `for_update_ts`, retrying with a newer one
    /// while writes keep committing to the key in between. Returns the key's latest value
    /// when `need_value`; fails with `AlreadyExist` if it has one and `should_not_exist`.
    fn lock_key(
        &mut self,
        key: &[u8],
        need_value: bool,
        should_not_exist: bool,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        let primary = self.primary.clone().unwrap_or_else(|| key.to_vec());
        let mut bo = Backoff::new(&self.core.config);
        let mut attempt = 0;
        loop {
            attempt += 1;
            // The first attempt locks at the newest timestamp the transaction has (no oracle
            // round trip); a write committed after it makes the lock fail with a write
            // conflict, and the retry takes a fresh timestamp, so the lock is still taken at
            // or after the key's latest commit.
            let for_update_ts = if attempt == 1 {
                self.start_ts.max(self.max_for_update_ts)
            } else {
                self.core.get_ts()?
            };
            if !self.locked.contains(key) {
                self.maybe_locked.insert(key.to_vec());
            }
            let req = LockRequest {
                key,
                primary: &primary,
                start_ts: self.start_ts,
                for_update_ts,
                // With a binlog the value tells whether the key exists (insert or update).
                need_value: need_value || self.binlog.as_ref().is_some_and(|b| !b.is_sql()),
                should_not_exist,
                wait_timeout: self.lock_wait_timeout,
            };
            match self.core.acquire_pessimistic_lock(req, &mut bo) {
                Ok(outcome) => {
                    if let Some(b) = &mut self.binlog {
                        b.learn(key, outcome.exists);
                    }
                    self.maybe_locked.remove(key);
                    self.locked.insert(key.to_vec());
                    self.max_for_update_ts = self.max_for_update_ts.max(for_update_ts);
                    if self.primary.is_none() {
                        self.primary = Some(key.to_vec());
                        self.core.heartbeats.register(self.start_ts, key);
                    }
                    return Ok(outcome.value);
                }
                Err(TxnError::WriteConflict { .. }) if attempt < MAX_FOR_UPDATE_TS_RETRIES => {
                    bo.retry_now()?;
                }
                Err(e) => {
                    if is_key_refusal(&e) {
                        // The node answered for this key: no lock of ours was left.
                        self.maybe_locked.remove(key);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Adds the row event of writing `key` (`None`: deleting it) to the binlog cache, first
    /// learning whether the key existed before the transaction if this is its first write:
    /// a pessimistic transaction learned it with the lock (refreshed here if not), an
    /// optimistic one reads it at `start_ts` (a write committed since fails its prewrite).
    /// No-op without a binlog, or once the caller logs its own events.
    fn binlog_row(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), TxnError> {
        // The caller logs its own events: the kv row is not logged, so nothing to learn.
        if self.binlog.as_ref().is_some_and(|b| b.is_sql()) {
            return Ok(());
        }
        if self.binlog.as_ref().is_some_and(|b| !b.knows(key)) {
            match self.mode {
                TxnMode::Pessimistic => {
                    self.lock_key(key, true, false)?;
                }
                TxnMode::Optimistic => {
                    let existed = self.core.snapshot_get(key, self.start_ts)?.is_some();
                    if let Some(b) = &mut self.binlog {
                        b.learn(key, existed);
                    }
                }
            }
        }
        match (&mut self.binlog, value) {
            (None, _) => Ok(()),
            (Some(b), Some(v)) => b.put(key, v),
            (Some(b), None) => b.delete(key),
        }
    }

    /// Releases the pessimistic locks of keys whose lock request had no clear answer and
    /// that commit does not cover.
    fn release_maybe_locked(&mut self) {
        let keys: Vec<Vec<u8>> = std::mem::take(&mut self.maybe_locked)
            .into_iter()
            .filter(|k| !self.buffer.contains(k))
            .collect();
        self.core.pessimistic_rollback_keys(
            self.start_ts,
            u64::MAX,
            keys,
            self.core.config.drop_cleanup_budget,
        );
    }

    /// Releases every pessimistic lock this transaction holds or may hold.
    fn release_locks(&mut self, budget: std::time::Duration) {
        let mut keys: BTreeSet<Vec<u8>> = std::mem::take(&mut self.locked);
        keys.extend(std::mem::take(&mut self.maybe_locked));
        self.core.heartbeats.unregister(self.start_ts);
        self.core.pessimistic_rollback_keys(
            self.start_ts,
            u64::MAX,
            keys.into_iter().collect(),
            budget,
        );
    }
}

/// Whether `e` is a node's answer refusing the lock (so no lock was written).
fn is_key_refusal(e: &TxnError) -> bool {
    matches!(
        e,
        TxnError::WriteConflict { .. }
            | TxnError::LockWaitTimeout { .. }
            | TxnError::Deadlock { .. }
            | TxnError::AlreadyExist { .. }
            | TxnError::PessimisticLockRolledBack { .. }
            | TxnError::KeyIsLocked { .. }
    )
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.core.close_txn(self.start_ts);
        if self.finished {
            return;
        }
        self.finished = true;
        if !self.locked.is_empty() || !self.maybe_locked.is_empty() {
            bump(&self.core.counters.rollbacks);
            self.release_locks(self.core.config.drop_cleanup_budget);
        }
    }
}
