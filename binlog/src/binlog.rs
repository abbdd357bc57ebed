//! `Binlog`: opening (with recovery), the commit entry point, rotation, purge and close.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::cache::{CACHE_DIR_NAME, CacheContext, TxnCache, now_secs};
pub use crate::commit_info::{CommitInfo, CommitMethod, Position};
use crate::config::{BinlogConfig, SyncPolicy};
use crate::dir_lock::DirLock;
use crate::error::{Error, Result};
use crate::event::{Event, EventBody};
use crate::group::{Pending, commit_queued, commit_queued_many};
use crate::gtid_state::GtidState;
use crate::header::ChecksumAlg;
use crate::index::{Index, file_name, sync_dir};
use crate::log_file::{LogFile, build_header, reservation_for};
use crate::query::Rotate;
use crate::reader::LogReader;
use crate::recovery::{RecoveryReport, recover};
use crate::rename::commit_by_rename;
use crate::stats::{BinlogStats, Counters};

/// State under the log lock (MariaDB's `LOCK_log`).
#[derive(Debug)]
pub(crate) struct LogState {
    pub(crate) cur: LogFile,
    pub(crate) gtid: GtidState,
    pub(crate) index: Index,
    pub(crate) sync: SyncPolicy,
    pub(crate) groups_since_sync: u32,
    pub(crate) poisoned: Option<String>,
    pub(crate) closed: bool,
}

impl LogState {
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(reason) = &self.poisoned {
            return Err(Error::Poisoned {
                reason: reason.clone(),
            });
        }
        if self.closed {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Stops the log after a failed write: later commits fail until reopened.
    pub(crate) fn poison(&mut self, e: &Error) -> String {
        let reason = e.to_string();
        tracing::error!("binlog stopped: {reason}");
        self.poisoned.get_or_insert(reason).clone()
    }

    /// Counts a group; true if the policy says this one must be fsynced.
    pub(crate) fn sync_due(&mut self) -> bool {
        self.groups_since_sync += 1;
        let due = match self.sync {
            SyncPolicy::EveryGroup => true,
            SyncPolicy::EveryNGroups(n) => self.groups_since_sync >= n.get(),
            SyncPolicy::Never => false,
        };
        if due {
            self.groups_since_sync = 0;
        }
        due
    }

    /// Counts a group and fsyncs the file if the policy says so.
    pub(crate) fn sync_after_group(&mut self, stats: &Counters) -> Result<()> {
        if self.sync_due() {
            self.cur.sync()?;
            Counters::add(&stats.syncs, 1);
        }
        Ok(())
    }
}

/// Everything the binlog's threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) cfg: BinlogConfig,
    pub(crate) cache_ctx: Arc<CacheContext>,
    pub(crate) log: Mutex<LogState>,
    pub(crate) queue: Mutex<Vec<Arc<Pending>>>,
    pub(crate) stats: Counters,
    report: RecoveryReport,
    /// Test hook: the leader of the next group of two or more transactions panics.
    pub(crate) panic_next_group: std::sync::atomic::AtomicBool,
    /// Released (explicitly) when the last handle goes, after the close.
    _lock: DirLock,
}

impl Shared {
    /// Encodes the Rotate event naming `next` and appends it to the current file.
    pub(crate) fn write_rotate(&self, log: &mut LogState, next: &str) -> Result<()> {
        let mut ev = Event::new(
            EventBody::Rotate(Rotate {
                position: 4,
                next_file: next.to_string(),
            }),
            now_secs(),
            self.cfg.server_id,
        );
        let mut buf = Vec::new();
        ev.encode_at(log.cur.pos, ChecksumAlg::Crc32, &mut buf);
        log.cur.append(&buf)
    }

    /// Size rotation: Rotate to the old file and fsync it, new file with header (fsynced),
    /// directory fsync, index (fsynced), then the old file's in-use flag cleared.
    pub(crate) fn rotate(&self, log: &mut LogState) -> Result<()> {
        let no = log.cur.no + 1;
        let name = file_name(&self.cfg.base_name, no);
        self.write_rotate(log, &name)?;
        // The old file is complete (Rotate included) on disk before anything says it is
        // closed: its in-use flag is cleared last, and that flag need not be durable (if
        // lost, recovery just scans the file).
        log.cur.sync()?;
        let header = build_header(&name, &log.gtid, self.cfg.server_id, 0);
        let new = LogFile::create(&self.cfg.dir, name.clone(), no, &header)?;
        sync_dir(&self.cfg.dir)?;
        log.index.append(&name)?;
        let old = std::mem::replace(&mut log.cur, new);
        old.clear_in_use()?;
        self.cache_ctx
            .reserved
            .store(reservation_for(log.cur.header_len), Ordering::Release);
        Counters::add(&self.stats.rotations, 1);
        Ok(())
    }

    pub(crate) fn rotate_if_full(&self, log: &mut LogState) {
        if log.poisoned.is_none()
            && log.cur.pos >= self.cfg.max_binlog_size
            && let Err(e) = self.rotate(log)
        {
            log.poison(&e);
        }
    }
}

/// A MariaDB-compatible binary log with group commit and commit by rename.
///
/// Share it between threads with `Arc<Binlog>`; every method takes `&self`.
///
/// # Invariants
/// * Transactions appear in the log in the order they were queued for commit; each
///   commit returns only after its group was written (and fsynced, per
///   [`SyncPolicy`]).
/// * The transactions of one [`Binlog::commit_many`] batch are contiguous in the log, in
///   the order given, and in one group.
/// * The log lock is held for the write of a group, or for the fixed steps of a rename
///   (never for copying or syncing a renamed cache's data).
/// * The current file's Format_description carries the in-use flag until the file is
///   rotated away or the log is closed.
#[derive(Debug)]
pub struct Binlog {
    shared: Arc<Shared>,
}

impl Binlog {
    /// Opens (or creates) the log in `cfg.dir`: takes the directory lock, runs recovery and
    /// starts a new file.
    ///
    /// # Errors
    /// [`Error::Config`] for bad settings, [`Error::Locked`] if another writer still has
    /// the directory after 1 s, [`Error::Corrupt`] for damage recovery must not repair (anything but a
    /// torn last event of a file left in use), [`Error::Io`].
    pub fn open(cfg: BinlogConfig) -> Result<Binlog> {
        cfg.validate()?;
        std::fs::create_dir_all(&cfg.dir).map_err(|e| Error::io("create", &cfg.dir, e))?;
        let lock = DirLock::acquire(&cfg.dir, &cfg.base_name)?;
        let cache_dir = cfg.dir.join(CACHE_DIR_NAME);
        let rec = recover(&cfg.dir, &cfg.base_name, &cache_dir)?;
        let no = rec.last_no + 1;
        let name = file_name(&cfg.base_name, no);
        let header = build_header(&name, &rec.gtid, cfg.server_id, now_secs());
        let cur = LogFile::create(&cfg.dir, name.clone(), no, &header)?;
        sync_dir(&cfg.dir)?;
        let mut index = rec.index;
        index.append(&name)?;
        let cache_ctx = Arc::new(CacheContext {
            dir: cache_dir,
            server_id: cfg.server_id,
            domain_id: cfg.domain_id,
            buffer_size: cfg.cache_buffer_size,
            reserved: AtomicU64::new(reservation_for(cur.header_len)),
            counter: AtomicU64::new(0),
            sync_interval: cfg.cache_sync_interval,
        });
        let log = LogState {
            cur,
            gtid: rec.gtid,
            index,
            sync: cfg.sync,
            groups_since_sync: 0,
            poisoned: None,
            closed: false,
        };
        Ok(Binlog {
            shared: Arc::new(Shared {
                cfg,
                cache_ctx,
                log: Mutex::new(log),
                queue: Mutex::new(Vec::new()),
                stats: Counters::default(),
                panic_next_group: Default::default(),
                report: rec.report,
                _lock: lock,
            }),
        })
    }

    /// What recovery found when this log was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.shared.report
    }

    /// The settings.
    pub fn config(&self) -> &BinlogConfig {
        &self.shared.cfg
    }

    /// A new, empty transaction cache for this log.
    pub fn new_cache(&self) -> TxnCache {
        TxnCache::new(Arc::clone(&self.shared.cache_ctx))
    }

    /// Commits a transaction: its GTID, its events and an Xid carrying `xid`.
    ///
    /// `xid` is the caller's identifier of the transaction, written as is in its Xid event
    /// (in MariaDB, the storage engine's transaction id, which crash recovery matches
    /// against the engine's prepared transactions). The log does not interpret it: the same
    /// xid may be committed twice (each commit gets its own GTID, and both are in the log
    /// and in [`RecoveryReport::complete`]). An empty cache may be committed: it writes a
    /// GTID and an Xid with nothing between (an empty transaction, which replicas accept).
    ///
    /// A spilled cache larger than [`BinlogConfig::large_commit_threshold`] is committed by
    /// renaming its file (when its reserved header space suffices); anything else joins the
    /// group-commit queue.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a cache made by another `Binlog`;
    /// [`Error::Poisoned`] if this or an earlier write failed (the log is then stopped);
    /// [`Error::Closed`] after [`Binlog::shutdown`];
    /// [`Error::Io`] if syncing a large cache before its rename fails (the log stays up).
    pub fn commit(&self, mut cache: TxnCache, xid: u64) -> Result<CommitInfo> {
        let sh = &self.shared;
        self.check_owned(&cache, None)?;
        if sh.cfg.commit_by_rename
            && cache.is_spilled()
            && cache.len() > sh.cfg.large_commit_threshold
        {
            cache = match commit_by_rename(sh, cache, xid)? {
                Ok(info) => return Ok(info),
                Err(back) => back,
            };
        }
        commit_queued(sh, cache, xid)
    }

    /// Commits several transactions as one batch: written contiguously, in the order given,
    /// in one group commit (one leader, one write burst, one fsync per [`SyncPolicy`]), each
    /// with its own GTID and an Xid carrying its `xid`. Returns one [`CommitInfo`] per
    /// transaction, in the same order. An empty `txns` commits nothing and returns an empty
    /// list.
    ///
    /// Other commits queued at the same time may be written in the same group, before or
    /// after the batch, never between two of its transactions. This is how a hot-row group
    /// (AliSQL hot-row group commit) logs one binlog transaction per member at the cost of
    /// one group commit, not one per member. Each transaction is as [`Binlog::commit`]
    /// writes it (the same xid rules, empty caches allowed).
    ///
    /// No transaction of a batch is committed by rename, however large: a rename makes one
    /// transaction the start of a new file of its own, which would split the batch over two
    /// files and two fsyncs. A spilled cache above
    /// [`BinlogConfig::large_commit_threshold`] is copied into the current file under the
    /// log lock, as [`Binlog::commit`] copies one when renaming is off (other commits wait
    /// for the copy); commit a large transaction alone with [`Binlog::commit`] to have it
    /// renamed.
    ///
    /// If the group's write or fsync fails, no transaction of the batch is reported
    /// committed and the log stops (fail-stop, as for [`Binlog::commit`]): whatever part of
    /// the batch reached the file is found by recovery at the next open
    /// ([`RecoveryReport::complete`]), whole transactions only.
    ///
    /// # Errors
    /// [`Error::Invalid`] if any cache was made by another `Binlog` (then nothing of the
    /// batch is committed); [`Error::Poisoned`] if this or an earlier write failed (the log
    /// is then stopped); [`Error::Closed`] after [`Binlog::shutdown`].
    pub fn commit_many(&self, txns: Vec<(TxnCache, u64)>) -> Result<Vec<CommitInfo>> {
        if txns.is_empty() {
            return Ok(Vec::new());
        }
        for (i, (cache, _)) in txns.iter().enumerate() {
            self.check_owned(cache, Some(i))?;
        }
        commit_queued_many(&self.shared, txns)
    }

    /// Refuses a cache made by another log (`at`: its place in a batch).
    fn check_owned(&self, cache: &TxnCache, at: Option<usize>) -> Result<()> {
        if cache.belongs_to(&self.shared.cache_ctx) {
            return Ok(());
        }
        let which = at.map_or(String::new(), |i| format!("transaction {i} of the batch: "));
        Err(Error::Invalid {
            what: "cache",
            detail: format!(
                "{which}made by another Binlog (its spill file lives in that log's directory)"
            ),
        })
    }

    /// Counters since open.
    pub fn stats(&self) -> BinlogStats {
        self.shared.stats.snapshot()
    }

    /// Where the next event will be written.
    pub fn current_position(&self) -> Position {
        let log = self.shared.log.lock();
        Position {
            file: log.cur.name.clone(),
            offset: log.cur.pos,
        }
    }

    /// The names of the log's files, oldest first (as in the index): bare file names such as
    /// `surge-bin.000001`, relative to [`Binlog::dir`]. See [`Binlog::file_paths`] for paths.
    pub fn files(&self) -> Vec<String> {
        self.shared.log.lock().index.files.clone()
    }

    /// The paths of the log's files (its directory joined with each name of
    /// [`Binlog::files`]), oldest first.
    pub fn file_paths(&self) -> Vec<PathBuf> {
        let dir = &self.shared.cfg.dir;
        self.files().iter().map(|f| dir.join(f)).collect()
    }

    /// A reader over this log's files, from the first event of the oldest file to the
    /// current end of the log (the position when the reader was made: groups committed
    /// later are not seen, nor is a group being written meanwhile).
    ///
    /// # Errors
    /// As [`LogReader::open`].
    pub fn reader(&self) -> Result<LogReader> {
        self.reader_from(None)
    }

    /// As [`Binlog::reader`], starting at `from` (`None`: the first event of the oldest
    /// file); `from.offset` must be where an event starts, such as a
    /// [`CommitInfo::end_position`].
    ///
    /// # Errors
    /// As [`LogReader::open`], e.g. [`Error::NotEventBoundary`].
    pub fn reader_from(&self, from: Option<Position>) -> Result<LogReader> {
        let end = self.current_position();
        let cfg = &self.shared.cfg;
        Ok(LogReader::open(&cfg.dir, &cfg.base_name, from)?.until(end))
    }

    /// Directory of the log.
    pub fn dir(&self) -> &Path {
        &self.shared.cfg.dir
    }

    /// Starts a new file now (like `FLUSH BINARY LOGS`).
    ///
    /// # Errors
    /// [`Error::Poisoned`] if the log is stopped; the log stops if the rotation fails.
    pub fn rotate(&self) -> Result<()> {
        let mut log = self.shared.log.lock();
        log.check()?;
        if let Err(e) = self.shared.rotate(&mut log) {
            let reason = log.poison(&e);
            return Err(Error::Poisoned { reason });
        }
        Ok(())
    }

    /// Deletes every file before `file` (which stays) and removes them from the index.
    /// Returns the names deleted.
    ///
    /// # Errors
    /// [`Error::Invalid`] if `file` is not in the index; [`Error::Io`].
    pub fn purge_to(&self, file: &str) -> Result<Vec<String>> {
        let mut log = self.shared.log.lock();
        let Some(i) = log.index.files.iter().position(|f| f == file) else {
            return Err(Error::Invalid {
                what: "file",
                detail: format!("{file} is not in the index"),
            });
        };
        let gone: Vec<String> = log.index.files[..i].to_vec();
        let keep = log.index.files[i..].to_vec();
        // Index first: a crash in between leaves unlisted files, never listed missing ones.
        log.index.rewrite(keep)?;
        for f in &gone {
            let p = self.shared.cfg.dir.join(f);
            std::fs::remove_file(&p).map_err(|e| Error::io("remove", &p, e))?;
        }
        sync_dir(&self.shared.cfg.dir)?;
        Ok(gone)
    }

    /// Deletes the files last modified before `before`, oldest first, as MariaDB's
    /// `binlog_expire_logs_seconds` and `PURGE BINARY LOGS BEFORE` do: the deletion stops at
    /// the first file modified at or after `before`, and the current file always stays.
    /// Returns the names deleted.
    ///
    /// A file's modification time is when its last event was written: for every file but
    /// the current one, the Rotate to the next (a file renamed in by a large commit gets
    /// its header, Xid and Rotate at that commit).
    ///
    /// # Errors
    /// [`Error::Io`] when a file's metadata cannot be read or a file cannot be removed.
    pub fn purge_before(&self, before: std::time::SystemTime) -> Result<Vec<String>> {
        let files = self.files();
        let Some((_, older)) = files.split_last() else {
            return Ok(Vec::new());
        };
        if older.is_empty() {
            return Ok(Vec::new());
        }
        let mut keep_from = None;
        for f in older {
            let p = self.shared.cfg.dir.join(f);
            let modified = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .map_err(|e| Error::io("stat", &p, e))?;
            if modified >= before {
                keep_from = Some(f);
                break;
            }
        }
        match keep_from {
            Some(f) if f == &files[0] => Ok(Vec::new()),
            Some(f) => self.purge_to(f),
            None => self.purge_to(&files[files.len() - 1]),
        }
    }

    /// Fsyncs the current file and clears its in-use flag. Dropping the log does the same,
    /// ignoring errors. For a log shared as `Arc<Binlog>`, use [`Binlog::shutdown`].
    ///
    /// # Errors
    /// [`Error::Poisoned`] if the log was stopped by an earlier failure; [`Error::Io`].
    pub fn close(self) -> Result<()> {
        self.close_inner()
    }

    /// Closes the log through a shared reference (e.g. an `Arc<Binlog>`), as
    /// [`Binlog::close`] does: fsyncs the current file and clears its in-use flag. Later
    /// commits fail with [`Error::Closed`]; reading the files still works. The directory
    /// lock is released when the last handle is dropped.
    ///
    /// Idempotent: after a successful shutdown, later calls return `Ok(())`. If the shutdown
    /// fails, the log is stopped and this and every later call return the failure (as
    /// [`Error::Poisoned`] after the first).
    ///
    /// # Errors
    /// [`Error::Poisoned`] if the log was stopped by an earlier failure; [`Error::Io`].
    pub fn shutdown(&self) -> Result<()> {
        self.close_inner()
    }

    /// Test hook: the next fsync of the current file fails (as a writeback error would),
    /// without reaching the kernel.
    #[doc(hidden)]
    pub fn __fail_next_fsync_for_tests(&self) {
        self.shared.log.lock().cur.gate.fail_next();
    }

    /// Test hook: the leader of the next group of two or more transactions (a batch counts
    /// its transactions) panics while writing it.
    #[doc(hidden)]
    pub fn __panic_in_next_group_for_tests(&self) {
        self.shared.panic_next_group.store(true, Ordering::SeqCst);
    }

    /// Test hook: stops the log as a crash would (no fsync, the in-use flag stays set) but
    /// releases the directory lock, so recovery can be tested in one process.
    #[doc(hidden)]
    pub fn __crash_for_tests(self) {
        self.shared.log.lock().closed = true;
    }

    fn close_inner(&self) -> Result<()> {
        let mut log = self.shared.log.lock();
        // A failed close poisons the log, so it is reported again on every later call.
        if let Some(reason) = &log.poisoned {
            return Err(Error::Poisoned {
                reason: reason.clone(),
            });
        }
        if log.closed {
            return Ok(());
        }
        log.closed = true;
        let r = log
            .cur
            .sync()
            .and_then(|()| log.cur.clear_in_use())
            .and_then(|()| log.cur.sync());
        if let Err(e) = &r {
            log.poison(e);
        }
        r
    }
}

impl Drop for Binlog {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            tracing::warn!("binlog close on drop: {e}");
        }
    }
}
