//! Group commit: committers queue; the first in an empty queue becomes the leader, takes
//! the log lock, grabs the whole queue, writes every transaction and fsyncs once.
//!
//! Order: an entry joins the queue either before the pending leader grabs it (and is
//! written in that group) or after (and then it finds the queue empty, becomes the next
//! leader and waits for the log lock, which the current leader holds until its group is
//! written). So groups, and transactions within them, reach the log in queue order.
//!
//! A queue entry holds one transaction ([`crate::Binlog::commit`]) or a batch of them
//! ([`crate::Binlog::commit_many`]). A batch is one entry, grabbed and written by one
//! leader as a whole, so its transactions are contiguous in the log, in the order given,
//! and share the group's single fsync: nothing another committer queued can land between
//! two of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::binlog::{CommitInfo, CommitMethod, LogState, Shared};
use crate::cache::{TxnCache, now_secs};
use crate::crash::{crash_point, crash_point_selected, crash_points};
use crate::error::{Error, Result};
use crate::event::{Event, EventBody};
use crate::gtid::GtidEvent;
use crate::header::ChecksumAlg;
use crate::stats::Counters;

/// Bytes a leader gathers before writing them out.
const WRITE_CHUNK: usize = 1 << 20;

/// One queue entry: a transaction, or a batch written contiguously in one group.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The entry's transactions (cache, xid) in log order; taken by the leader.
    txns: Mutex<Option<Vec<(TxnCache, u64)>>>,
    /// How many transactions the entry holds (known before the leader takes them).
    len: usize,
    /// One result per transaction, in the entry's order, or the group's error.
    result: Mutex<Option<Result<Vec<CommitInfo>>>>,
    /// Set once `finish` ran (the result may since have been taken by the waiter).
    answered: AtomicBool,
    done: Condvar,
}

impl Pending {
    fn finish(&self, r: Result<Vec<CommitInfo>>) {
        *self.result.lock() = Some(r);
        self.answered.store(true, Ordering::Release);
        self.done.notify_one();
    }
}

/// Answers a leader's group if the leader unwinds (a panic while writing it): the log is
/// stopped and every transaction not yet answered gets an error, instead of its thread
/// waiting forever. Declared before the log guard, so it runs after the lock is released.
struct LeaderGuard<'a> {
    sh: &'a Shared,
    group: Vec<Arc<Pending>>,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let reason = "the group-commit leader panicked while writing its group".to_string();
        let reason = self.sh.log.lock().poisoned.get_or_insert(reason).clone();
        for p in &self.group {
            if !p.answered.load(Ordering::Acquire) {
                p.finish(Err(Error::Poisoned {
                    reason: reason.clone(),
                }));
            }
        }
    }
}

/// Queues `cache` and returns once its group is written (and synced per policy).
pub(crate) fn commit_queued(sh: &Shared, cache: TxnCache, xid: u64) -> Result<CommitInfo> {
    let mut infos = commit_queued_many(sh, vec![(cache, xid)])?;
    infos.pop().ok_or_else(|| Error::Invalid {
        what: "commit queue",
        detail: "the group returned no result for the transaction".to_string(),
    })
}

/// Queues `txns` as one entry (contiguous, in order, in one group) and returns once that
/// group is written (and synced per policy): one [`CommitInfo`] per transaction, in order.
pub(crate) fn commit_queued_many(
    sh: &Shared,
    txns: Vec<(TxnCache, u64)>,
) -> Result<Vec<CommitInfo>> {
    let me = Arc::new(Pending {
        len: txns.len(),
        txns: Mutex::new(Some(txns)),
        result: Mutex::new(None),
        answered: AtomicBool::new(false),
        done: Condvar::new(),
    });
    let leader = {
        let mut q = sh.queue.lock();
        q.push(Arc::clone(&me));
        q.len() == 1
    };
    if leader {
        lead(sh);
    }
    let mut r = me.result.lock();
    loop {
        if let Some(r) = r.take() {
            return r;
        }
        me.done.wait(&mut r);
    }
}

fn lead(sh: &Shared) {
    let mut guard = LeaderGuard {
        sh,
        group: Vec::new(),
    };
    let mut log = sh.log.lock();
    let start = Instant::now();
    guard.group = std::mem::take(&mut *sh.queue.lock());
    let group = &guard.group;
    match write_group(sh, &mut log, group) {
        Ok(infos) => {
            let hold = start.elapsed();
            for (p, mut infos) in group.iter().zip(infos) {
                for info in &mut infos {
                    info.lock_hold = hold;
                }
                p.finish(Ok(infos));
            }
            sh.rotate_if_full(&mut log);
        }
        Err(Error::Closed) => {
            // Shut down before this group was written: nothing of it reached the log, and
            // the log is not damaged.
            for p in group {
                p.finish(Err(Error::Closed));
            }
        }
        Err(e) => {
            let reason = match &e {
                Error::Poisoned { reason } => reason.clone(),
                other => log.poison(other),
            };
            for p in group {
                p.finish(Err(Error::Poisoned {
                    reason: reason.clone(),
                }));
            }
        }
    }
}

/// Writes GTID + cache + Xid for every queued transaction, then syncs per policy.
/// Returns, per queue entry, the results of its transactions.
fn write_group(
    sh: &Shared,
    log: &mut LogState,
    group: &[Arc<Pending>],
) -> Result<Vec<Vec<CommitInfo>>> {
    log.check()?;
    let total: usize = group.iter().map(|p| p.len).sum();
    if total >= 2 && sh.panic_next_group.swap(false, Ordering::SeqCst) {
        panic!("injected group-commit leader panic (test hook)");
    }
    let start_pos = log.cur.pos;
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut infos = Vec::with_capacity(group.len());
    let mut written = 0;
    for p in group {
        let Some(txns) = p.txns.lock().take() else {
            return Err(Error::Invalid {
                what: "commit queue",
                detail: "transaction already taken".to_string(),
            });
        };
        let mut entry = Vec::with_capacity(txns.len());
        for (cache, xid) in txns {
            entry.push(write_txn(sh, log, &mut buf, cache, xid)?);
            written += 1;
            if written < total && crash_point_selected(crash_points::COPY_BETWEEN_TXNS) {
                // Only for the crash tests: the transactions so far reach the file, the
                // rest of the group does not.
                log.cur.append(&buf)?;
                buf.clear();
                crash_point(crash_points::COPY_BETWEEN_TXNS);
            }
        }
        infos.push(entry);
    }
    log.cur.append(&buf)?;
    crash_point(crash_points::COPY_BEFORE_SYNC);
    log.sync_after_group(&sh.stats)?;
    crash_point(crash_points::COPY_AFTER_SYNC);
    Counters::add(&sh.stats.commits, total as u64);
    Counters::add(&sh.stats.groups, 1);
    Counters::add(&sh.stats.bytes, log.cur.pos - start_pos);
    Ok(infos)
}

/// Encodes one transaction (GTID, its cache's events, Xid) after what `buf` holds, which
/// goes to the file at `log.cur.pos`; `buf` is written out when it passes [`WRITE_CHUNK`],
/// and a spilled cache is streamed through the file.
fn write_txn(
    sh: &Shared,
    log: &mut LogState,
    buf: &mut Vec<u8>,
    mut cache: TxnCache,
    xid: u64,
) -> Result<CommitInfo> {
    let server_id = sh.cfg.server_id;
    let now = now_secs();
    let gtid = log.gtid.next(cache.domain_id(), server_id);
    let mut ev = Event::new(
        EventBody::Gtid(GtidEvent::transactional(gtid.domain_id, gtid.seq_no)),
        now,
        server_id,
    );
    ev.encode_at(log.cur.pos + buf.len() as u64, ChecksumAlg::Crc32, buf);
    if cache.is_spilled() {
        // Large copy: stream the cache file through the log file (under the lock;
        // this is what commit by rename avoids).
        log.cur.append(buf)?;
        buf.clear();
        let cur = &mut log.cur;
        cache.copy_out(&mut |chunk| cur.append(chunk), &mut || {
            crash_point(crash_points::COPY_MID)
        })?;
    } else {
        cache.copy_out(
            &mut |chunk| {
                buf.extend_from_slice(chunk);
                Ok(())
            },
            &mut || {},
        )?;
    }
    drop(cache);
    let mut xid_ev = Event::new(EventBody::Xid(xid), now, server_id);
    let at = log.cur.pos + buf.len() as u64;
    let n = xid_ev.encode_at(at, ChecksumAlg::Crc32, buf);
    let info = CommitInfo {
        gtid,
        xid,
        file: log.cur.name.clone(),
        end_position: at + n as u64,
        method: CommitMethod::Copied,
        lock_hold: Default::default(),
    };
    if buf.len() >= WRITE_CHUNK {
        log.cur.append(buf)?;
        buf.clear();
    }
    Ok(info)
}
