//! Recovery at open: clean the cache directory, reconcile the index with the files, find
//! files left in use, cut a torn last event, and report the transactions at the tail.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use crate::cache::CACHE_FILE_PREFIX;
use crate::error::{DecodeError, Error, Result};
use crate::event::EventBody;
use crate::file_reader::FileEvents;
use crate::gtid::Gtid;
use crate::gtid_state::GtidState;
use crate::header::{BINLOG_MAGIC, EventType, FLAG_BINLOG_IN_USE, HEADER_LEN, IN_USE_FLAG_OFFSET};
use crate::index::{Index, file_number, sync_dir};
use crate::log_file::clear_in_use_flag;

/// A transaction found in a file that was left in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailTxn {
    /// Its GTID.
    pub gtid: Gtid,
    /// The xid of its Xid event (`None` for incomplete ones and for DDL).
    pub xid: Option<u64>,
    /// File holding its GTID event.
    pub file: String,
    /// Offset of its GTID event.
    pub offset: u64,
}

/// A torn last event that recovery cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncatedTail {
    /// The file.
    pub file: String,
    /// New length (offset of the torn event).
    pub offset: u64,
    /// Bytes removed.
    pub removed: u64,
}

/// What recovery found and did when the binlog was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// `ML_*` cache files deleted from `#binlog_cache_files/`.
    pub removed_cache_files: Vec<PathBuf>,
    /// Other files in `#binlog_cache_files/`, left alone (warned about).
    pub foreign_cache_files: Vec<PathBuf>,
    /// Binlog files present but missing from the index, added to it.
    pub adopted_files: Vec<String>,
    /// Files whose Format_description still had the in-use flag (the writer crashed).
    pub in_use_files: Vec<String>,
    /// Torn events cut off.
    pub truncated: Vec<TruncatedTail>,
    /// Every transaction with its commit event (Xid, or `COMMIT`/standalone query) in the
    /// files left in use, in log order: both those whose commit call returned before the
    /// crash and those written but not yet acknowledged (the log cannot tell them apart).
    /// All of them are in the log for good: readers and replicas see them, so the caller
    /// must treat each as committed (MariaDB commits the prepared engine transaction of
    /// every xid found here). Files that were closed cleanly are not scanned, so their
    /// transactions are not listed.
    pub complete: Vec<TailTxn>,
    /// Transactions in files left in use that have no commit event (cut short by the crash,
    /// or ended by `ROLLBACK`): not committed, never acknowledged; the caller rolls its side
    /// back. Their events stay in the file, and readers skip them
    /// ([`crate::Transactions`]).
    pub incomplete: Vec<TailTxn>,
}

impl RecoveryReport {
    /// Whether the previous writer did not close the log cleanly.
    pub fn crashed(&self) -> bool {
        !self.in_use_files.is_empty()
    }
}

/// What the binlog needs to continue after recovery.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub(crate) report: RecoveryReport,
    pub(crate) index: Index,
    pub(crate) gtid: GtidState,
    pub(crate) last_no: u32,
}

/// Deletes `ML_*` files in the cache directory (creating it if absent); warns about others.
fn clean_cache_dir(cache_dir: &Path, report: &mut RecoveryReport) -> Result<()> {
    std::fs::create_dir_all(cache_dir).map_err(|e| Error::io("create", cache_dir, e))?;
    let entries = std::fs::read_dir(cache_dir).map_err(|e| Error::io("list", cache_dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", cache_dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(CACHE_FILE_PREFIX) {
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            report.removed_cache_files.push(path);
        } else {
            tracing::warn!(
                "{} is in {}/, but it is not a binlog cache file",
                name,
                cache_dir.display()
            );
            report.foreign_cache_files.push(path);
        }
    }
    if !report.removed_cache_files.is_empty() {
        sync_dir(cache_dir)?;
    }
    Ok(())
}

/// Makes the index list exactly the binlog files that exist: drops missing entries, adopts
/// newer files the index lacks (a crash between creating or renaming a file and updating
/// the index), deletes newer files without an intact header ([`has_intact_header`]).
fn reconcile_index(
    dir: &Path,
    base: &str,
    index: &mut Index,
    report: &mut RecoveryReport,
) -> Result<()> {
    let mut files: Vec<String> = index
        .files
        .iter()
        .filter(|f| dir.join(f).exists())
        .cloned()
        .collect();
    let mut changed = files.len() != index.files.len() || index.damaged;
    let last = files
        .iter()
        .filter_map(|f| file_number(base, f))
        .max()
        .unwrap_or(0);
    let mut extra = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(n) = file_number(base, &name)
            && n > last
        {
            extra.push((n, name));
        }
    }
    extra.sort();
    for (_, name) in extra {
        let path = dir.join(&name);
        if has_intact_header(&path) {
            files.push(name.clone());
            report.adopted_files.push(name);
        } else {
            tracing::warn!("deleting {}: no valid binlog header", path.display());
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        }
        changed = true;
    }
    if changed {
        index.rewrite(files)?;
    }
    Ok(())
}

/// Whether an unindexed file starts with a Format_description and decodes through its
/// first GTID event (or to its end). Such a file was created, or renamed from a cache,
/// before the index named it; its header events (for a rename: up to the padded GTID
/// that fills the reserved space) were written in one go and made durable before any
/// commit in the file returned. A header that does not decode therefore never reached
/// the disk whole, nothing in the file was acknowledged, and the file is not adopted.
fn has_intact_header(path: &Path) -> bool {
    let Ok(mut f) = FileEvents::open(path) else {
        return false;
    };
    match f.next_event() {
        Ok(Some((_, ev))) if matches!(ev.body, EventBody::FormatDescription(_)) => {}
        _ => return false,
    }
    loop {
        match f.next_event() {
            Ok(None) => return true,
            Ok(Some((_, ev))) if matches!(ev.body, EventBody::Gtid(_)) => return true,
            Ok(Some(_)) => {}
            Err(_) => return false,
        }
    }
}

/// An event group being scanned.
struct Open {
    gtid: Gtid,
    standalone: bool,
    file: String,
    offset: u64,
}

/// Scans one file: GTID state, groups, and (if `in_use`) cuts a torn tail.
fn scan_file(
    dir: &Path,
    name: &str,
    in_use: bool,
    gtid: &mut GtidState,
    report: &mut RecoveryReport,
) -> Result<()> {
    let path = dir.join(name);
    let mut events = FileEvents::open(&path)?;
    let mut open: Option<Open> = None;
    loop {
        match events.next_event() {
            Ok(Some((offset, ev))) => match ev.body {
                EventBody::GtidList(l) => l.gtids.into_iter().for_each(|g| gtid.observe(g)),
                EventBody::Gtid(g) => {
                    let id = Gtid {
                        domain_id: g.domain_id,
                        server_id: ev.header.server_id,
                        seq_no: g.seq_no,
                    };
                    gtid.observe(id);
                    if let Some(o) = open.take() {
                        push_incomplete(o, in_use, report);
                    }
                    open = Some(Open {
                        gtid: id,
                        standalone: g.is_standalone(),
                        file: name.to_string(),
                        offset,
                    });
                }
                EventBody::Xid(x) => {
                    if let Some(o) = open.take() {
                        push_complete(o, Some(x), in_use, report);
                    }
                }
                EventBody::Query(q) => {
                    if let Some(o) = open.take() {
                        if o.standalone || q.query.eq_ignore_ascii_case(b"COMMIT") {
                            push_complete(o, None, in_use, report);
                        } else if q.query.eq_ignore_ascii_case(b"ROLLBACK") {
                            push_incomplete(o, in_use, report);
                        } else {
                            open = Some(o);
                        }
                    }
                }
                _ => {}
            },
            Ok(None) => break,
            Err(Error::Corrupt { offset, source, .. })
                if in_use && is_torn(&path, offset, events.file_len(), &source)? =>
            {
                let len = events.file_len();
                tracing::warn!("{}: cutting torn event at offset {offset}", path.display());
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| Error::io("open", &path, e))?;
                f.set_len(offset)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| Error::io("truncate", &path, e))?;
                report.truncated.push(TruncatedTail {
                    file: name.to_string(),
                    offset,
                    removed: len - offset,
                });
                break;
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(o) = open.take() {
        push_incomplete(o, in_use, report);
    }
    Ok(())
}

/// A torn write at the end of a file: an event cut short, or a bad event (garbage, bad CRC)
/// whose declared size reaches the end of the file or is followed only by zeros. A bad
/// event with more data after it is corruption, which recovery refuses to repair.
fn is_torn(path: &Path, offset: u64, len: u64, e: &DecodeError) -> Result<bool> {
    if matches!(
        e,
        DecodeError::Truncated { .. } | DecodeError::BadMagic { .. }
    ) {
        return Ok(true);
    }
    if len - offset < 13 {
        return Ok(true);
    }
    let f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut size = [0u8; 4];
    f.read_exact_at(&mut size, offset + 9)
        .map_err(|e| Error::io("read", path, e))?;
    let size = u64::from(u32::from_le_bytes(size));
    if offset + size >= len {
        return Ok(true);
    }
    // A bad event followed only by zeros: the file was extended (its size reached the
    // disk) but the blocks of the last write were not, so they read as zeros. Nothing
    // there was acknowledged (an fsync covering it would have written them).
    let from = if size >= HEADER_LEN as u64 {
        offset + size
    } else {
        offset
    };
    all_zero(&f, path, from, len)
}

/// Whether bytes `from..len` of `f` are all zero.
fn all_zero(f: &std::fs::File, path: &Path, from: u64, len: u64) -> Result<bool> {
    let mut buf = vec![0u8; 64 << 10];
    let mut at = from;
    while at < len {
        let n = buf.len().min((len - at) as usize);
        f.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io("read", path, e))?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

fn push_complete(o: Open, xid: Option<u64>, in_use: bool, report: &mut RecoveryReport) {
    if in_use {
        report.complete.push(TailTxn {
            gtid: o.gtid,
            xid,
            file: o.file,
            offset: o.offset,
        });
    }
}

fn push_incomplete(o: Open, in_use: bool, report: &mut RecoveryReport) {
    if in_use {
        report.incomplete.push(TailTxn {
            gtid: o.gtid,
            xid: None,
            file: o.file,
            offset: o.offset,
        });
    }
}

/// Whether the file starts with the magic and a Format_description header whose in-use
/// flag is set, read without decoding the event (files too short or not binlogs: false).
fn in_use_flag_set(path: &Path) -> Result<bool> {
    let f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut b = [0u8; BINLOG_MAGIC.len() + HEADER_LEN];
    match f.read_exact_at(&mut b, 0) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(Error::io("read", path, e)),
    }
    Ok(b[..4] == BINLOG_MAGIC
        && b[4 + 4] == EventType::FormatDescription.code()
        && b[IN_USE_FLAG_OFFSET as usize] & FLAG_BINLOG_IN_USE as u8 != 0)
}

/// Whether the file's Format_description carries the in-use flag.
fn is_in_use(path: &Path) -> Result<bool> {
    let mut f = FileEvents::open(path)?;
    match f.next_event() {
        Ok(Some((_, ev))) => Ok(ev.header.flags & FLAG_BINLOG_IN_USE != 0),
        Ok(None) => Ok(true),
        Err(Error::Corrupt { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Runs recovery for `base` in `dir`.
pub(crate) fn recover(dir: &Path, base: &str, cache_dir: &Path) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    clean_cache_dir(cache_dir, &mut report)?;
    let mut index = Index::load(dir, base)?;
    reconcile_index(dir, base, &mut index, &mut report)?;
    let mut gtid = GtidState::default();
    let files = index.files.clone();
    // A crash usually leaves the last file in use and, after a rotation or rename that
    // stopped before clearing the old flag, the one before it. But a rename clears the
    // old file's flag after releasing the log lock, and by then the renamed file may have
    // been rotated too: the old file is then third from last. So every file's flag is
    // checked (a cheap read of its first bytes), and the last two are fully checked. The
    // last file is always scanned: its events give the GTID state to continue from.
    let first_scan = files.len().saturating_sub(2);
    for (i, name) in files.iter().enumerate() {
        let path = dir.join(name);
        if i < first_scan && !in_use_flag_set(&path)? {
            continue;
        }
        let in_use = is_in_use(&path)?;
        if !in_use && i + 1 < files.len() {
            // A cleanly closed file before the last: its GTIDs are in the next Gtid_list.
            continue;
        }
        scan_file(dir, name, in_use, &mut gtid, &mut report)?;
        if in_use {
            report.in_use_files.push(name.clone());
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| Error::io("open", &path, e))?;
            clear_in_use_flag(&f, &path)?;
            f.sync_all().map_err(|e| Error::io("fsync", &path, e))?;
        }
    }
    let last_no = files
        .iter()
        .filter_map(|f| file_number(base, f))
        .max()
        .unwrap_or(0);
    Ok(Recovered {
        report,
        index,
        gtid,
        last_no,
    })
}
