//! Commit by rename (MariaDB 11.7, MDEV-32014): a large spilled cache becomes the next
//! binlog file instead of being copied, so the log lock is held for a fixed number of
//! small steps whatever the transaction's size.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::binlog::{CommitInfo, CommitMethod, LogState, Shared};
use crate::cache::{TxnCache, now_secs};
use crate::crash::{crash_point, crash_points};
use crate::error::{Error, Result};
use crate::event::{Event, EventBody};
use crate::gtid::{GTID_MAX_EVENT_LEN, GtidEvent};
use crate::header::{CHECKSUM_LEN, ChecksumAlg};
use crate::index::{file_name, sync_dir, sync_file};
use crate::iotrace::{note, note_rename};
use crate::log_file::{LogFile, SyncGate, build_header, reservation_for};
use crate::stats::Counters;

/// Tries to commit `cache` by rename. `Ok(Err(cache))` hands the cache back when its
/// reserved space cannot hold the new file's header (the caller then copies it).
///
/// Steps, as in MariaDB: (outside the lock) flush and fsync the cache file; (under the
/// lock) Rotate into the old file, new header + GTID padded to the reservation written at
/// offset 0 of the cache file, rename it to the next binlog name, fsync file and
/// directory, add it to the index, append the Xid; (after the lock) fsync the index and,
/// per policy, the Xid, then fsync the old file and clear its in-use flag.
pub(crate) fn commit_by_rename(
    sh: &Shared,
    mut cache: TxnCache,
    xid: u64,
) -> Result<std::result::Result<CommitInfo, TxnCache>> {
    // The big fsync, outside the log lock: afterwards only the header page is dirty.
    cache.sync_spill()?;
    let mut log = sh.log.lock();
    note("lock", &sh.cfg.dir.join("#log"));
    let start = Instant::now();
    log.check()?;
    let no = log.cur.no + 1;
    let name = file_name(&sh.cfg.base_name, no);
    let header = build_header(&name, &log.gtid, sh.cfg.server_id, 0);
    let reserved = cache.reserved_bytes();
    if header.len() as u64 + GTID_MAX_EVENT_LEN > reserved {
        tracing::info!(
            "could not rename binlog cache to binlog: header needs {} + {} bytes, {} reserved",
            header.len(),
            GTID_MAX_EVENT_LEN,
            reserved
        );
        Counters::add(&sh.stats.rename_fallbacks, 1);
        return Ok(Err(cache));
    }
    let After {
        mut info,
        xid_sync,
        old,
    } = match renamed(sh, &mut log, cache, xid, no, name, header, reserved) {
        Ok(r) => r,
        Err(e) => {
            let reason = log.poison(&e);
            return Err(Error::Poisoned { reason });
        }
    };
    sh.rotate_if_full(&mut log);
    let index_path = log.index.path().to_path_buf();
    info.lock_hold = start.elapsed();
    note("unlock", &sh.cfg.dir.join("#log"));
    drop(log);
    crash_point(crash_points::RENAME_BEFORE_OLD_CLOSED);
    // Durability of the index entry and of the Xid, outside the lock: small commits go on
    // meanwhile (their own group fsyncs cover their bytes). The rename and the header were
    // made durable under the lock, before any later commit could land in the new file.
    let synced = sync_file(&index_path).and_then(|()| match &xid_sync {
        Some((f, gate)) => gate.sync(f, &sh.cfg.dir.join(&info.file)),
        None => Ok(()),
    });
    let synced = synced
        .and_then(|()| old.sync())
        .and_then(|()| old.clear_in_use());
    drop(old);
    if let Err(e) = synced {
        let reason = sh.log.lock().poison(&e);
        return Err(Error::Poisoned { reason });
    }
    if xid_sync.is_some() {
        Counters::add(&sh.stats.syncs, 1);
    }
    Ok(Ok(info))
}

/// What the rename leaves to do after the log lock is released.
struct After {
    info: CommitInfo,
    /// A handle (and the file's sync gate) to fsync for the Xid, when the sync policy
    /// says this group syncs.
    xid_sync: Option<(File, Arc<SyncGate>)>,
    /// The previous file: fsync (its Rotate), then clear its in-use flag.
    old: LogFile,
}

#[allow(clippy::too_many_arguments)] // One call site; the values are the rename's inputs.
fn renamed(
    sh: &Shared,
    log: &mut LogState,
    mut cache: TxnCache,
    xid: u64,
    no: u32,
    name: String,
    mut header: Vec<u8>,
    reserved: u64,
) -> Result<After> {
    let server_id = sh.cfg.server_id;
    let logical = cache.len();
    let domain = cache.domain_id();
    let Some(spill) = cache.take_spill() else {
        return Err(Error::Invalid {
            what: "cache",
            detail: "not spilled".to_string(),
        });
    };
    sh.write_rotate(log, &name)?;
    crash_point(crash_points::RENAME_AFTER_ROTATE);

    let now = now_secs();
    let header_len = header.len() as u64;
    let gtid = log.gtid.next(domain, server_id);
    let mut g = GtidEvent::transactional(domain, gtid.seq_no);
    if !g.pad_to_event_len(reserved - header_len, CHECKSUM_LEN) {
        return Err(Error::Invalid {
            what: "reservation",
            detail: format!("{reserved} bytes cannot hold a {header_len}-byte header"),
        });
    }
    Event::new(EventBody::Gtid(g), now, server_id).encode_at(
        header_len,
        ChecksumAlg::Crc32,
        &mut header,
    );
    debug_assert_eq!(header.len() as u64, reserved);
    spill
        .file
        .write_all_at(&header, 0)
        .map_err(|e| Error::io("write", &spill.path, e))?;
    note("write-header", &spill.path);
    let path = sh.cfg.dir.join(&name);
    std::fs::rename(&spill.path, &path).map_err(|e| Error::io("rename", &spill.path, e))?;
    note_rename(&spill.path, &path);
    crash_point(crash_points::RENAME_AFTER_RENAME);

    // The size was made durable by the fsync outside the lock; only the header page is new
    // (fdatasync), and the rename is made durable by the directory fsync.
    let gate = Arc::new(SyncGate::default());
    gate.sync(&spill.file, &path)?;
    sync_dir(&sh.cfg.dir)?;
    log.index.append_unsynced(&name)?;
    let end = reserved + spill.flushed;
    let new = LogFile {
        gate,
        file: spill.file,
        path,
        name: name.clone(),
        no,
        pos: end,
        header_len,
    };
    // The old file (its Rotate) is fsynced and then marked closed after the lock is
    // released: the flag must not reach the disk before the Rotate does, and neither is
    // needed by later commits (recovery scans a file left in use).
    let old = std::mem::replace(&mut log.cur, new);
    sh.cache_ctx
        .reserved
        .store(reservation_for(header_len), Ordering::Release);
    crash_point(crash_points::RENAME_BEFORE_XID);

    let mut buf = Vec::new();
    let n = Event::new(EventBody::Xid(xid), now, server_id).encode_at(
        end,
        ChecksumAlg::Crc32,
        &mut buf,
    );
    log.cur.append(&buf)?;
    // The Xid's fsync (per policy) happens after the lock is released.
    let sync = if log.sync_due() {
        Some((
            log.cur
                .file
                .try_clone()
                .map_err(|e| Error::io("dup", &log.cur.path, e))?,
            Arc::clone(&log.cur.gate),
        ))
    } else {
        None
    };
    Counters::add(&sh.stats.commits, 1);
    Counters::add(&sh.stats.groups, 1);
    Counters::add(&sh.stats.renames, 1);
    Counters::add(&sh.stats.rotations, 1);
    Counters::add(&sh.stats.bytes, reserved - header_len + logical + n as u64);
    let info = CommitInfo {
        gtid,
        xid,
        file: name,
        end_position: end + n as u64,
        method: CommitMethod::Renamed,
        lock_hold: Default::default(),
    };
    Ok(After {
        info,
        xid_sync: sync,
        old,
    })
}
