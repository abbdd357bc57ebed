//! The binlog file being written: creation with its header, appends, fsync, the in-use flag.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::cache::now_secs;
use crate::error::{Error, Result};
use crate::event::{Event, EventBody};
use crate::fde::FormatDescription;
use crate::gtid::GTID_MAX_EVENT_LEN;
use crate::gtid_state::GtidState;
use crate::header::{BINLOG_MAGIC, ChecksumAlg, FLAG_BINLOG_IN_USE, IN_USE_FLAG_OFFSET};
use crate::query::BinlogCheckpoint;

/// Alignment of the header reservation in a cache file (MariaDB's IO_SIZE).
pub const IO_SIZE: u64 = 4096;

/// Header reservation a spill file needs so a file with header of `header_len` bytes plus
/// the largest GTID event fits: rounded up to a multiple of 4096 (normally 4096).
pub(crate) fn reservation_for(header_len: u64) -> u64 {
    (header_len + GTID_MAX_EVENT_LEN).div_ceil(IO_SIZE) * IO_SIZE
}

/// Magic, Format_description (in use), Gtid_list (state before the file), and a
/// Binlog_checkpoint naming the file itself, with real `log_pos` values.
pub(crate) fn build_header(
    name: &str,
    gtid: &GtidState,
    server_id: u32,
    create_ts: u32,
) -> Vec<u8> {
    let now = now_secs();
    let mut out = BINLOG_MAGIC.to_vec();
    let mut fd = Event::new(
        EventBody::FormatDescription(FormatDescription::mariadb(ChecksumAlg::Crc32, create_ts)),
        now,
        server_id,
    );
    fd.header.flags |= FLAG_BINLOG_IN_USE;
    let bodies = [
        EventBody::GtidList(gtid.to_list()),
        EventBody::BinlogCheckpoint(BinlogCheckpoint {
            file: name.to_string(),
        }),
    ];
    let pos = out.len() as u64;
    fd.encode_at(pos, ChecksumAlg::Crc32, &mut out);
    for b in bodies {
        let pos = out.len() as u64;
        Event::new(b, now, server_id).encode_at(pos, ChecksumAlg::Crc32, &mut out);
    }
    out
}

/// The fsyncs of one open binlog file, shared by every handle on it (the log's and the
/// duplicate a rename keeps to fsync its Xid after the log lock).
///
/// Invariant: once an fsync of the file failed, every later one fails. Linux reports a
/// writeback error to one fsync per open file description only, and the handles share
/// one: without this, a concurrent fsync could return success for bytes the failed
/// writeback lost. Fsyncs through the gate are serialized, so the failure is recorded
/// before any later fsync can start.
#[derive(Debug, Default)]
pub(crate) struct SyncGate {
    failed: Mutex<Option<String>>,
    /// Test hook: the next fsync fails without reaching the kernel.
    inject_failure: AtomicBool,
}

impl SyncGate {
    /// fdatasync `file` (data and size), unless an earlier fsync through the gate failed.
    pub(crate) fn sync(&self, file: &File, path: &Path) -> Result<()> {
        let mut failed = self.failed.lock();
        if let Some(reason) = &*failed {
            return Err(Error::Poisoned {
                reason: format!("an earlier fsync of {} failed: {reason}", path.display()),
            });
        }
        let len = crate::iotrace::len_before_sync(path);
        let r = if self.inject_failure.swap(false, Ordering::AcqRel) {
            Err(std::io::Error::other("injected fsync failure (test hook)"))
        } else {
            file.sync_data()
        };
        match r {
            Ok(()) => {
                crate::iotrace::note_sync("fdatasync", path, len);
                Ok(())
            }
            Err(e) => {
                let e = Error::io("fsync", path, e);
                *failed = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Test hook: makes the next fsync through this gate fail.
    pub(crate) fn fail_next(&self) {
        self.inject_failure.store(true, Ordering::Release);
    }
}

/// The open binlog file.
#[derive(Debug)]
pub(crate) struct LogFile {
    /// fsync state shared with duplicates of `file`.
    pub(crate) gate: Arc<SyncGate>,
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    pub(crate) no: u32,
    /// End of the written data; the next event goes here.
    pub(crate) pos: u64,
    /// End of the header events.
    pub(crate) header_len: u64,
}

impl LogFile {
    /// Creates the file (it must not exist), writes `header` and fsyncs it.
    pub(crate) fn create(dir: &Path, name: String, no: u32, header: &[u8]) -> Result<LogFile> {
        let path = dir.join(&name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io("create", &path, e))?;
        file.write_all_at(header, 0)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io("write", &path, e))?;
        crate::iotrace::note_sync("create+fsync", &path, Some(header.len() as u64));
        Ok(LogFile {
            gate: Arc::default(),
            file,
            path,
            name,
            no,
            pos: header.len() as u64,
            header_len: header.len() as u64,
        })
    }

    /// Writes `bytes` at the end and advances the end.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, self.pos)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.pos += bytes.len() as u64;
        crate::iotrace::note_sync("append", &self.path, Some(self.pos));
        Ok(())
    }

    /// fdatasync (data and size).
    pub(crate) fn sync(&self) -> Result<()> {
        self.gate.sync(&self.file, &self.path)
    }

    /// Clears the in-use flag of the Format_description (one byte, in place; the FD's CRC
    /// was computed with the flag masked, so it stays valid).
    pub(crate) fn clear_in_use(&self) -> Result<()> {
        clear_in_use_flag(&self.file, &self.path)
    }
}

/// Clears bit 0 of the Format_description flags of an open binlog file.
pub(crate) fn clear_in_use_flag(file: &File, path: &Path) -> Result<()> {
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, IN_USE_FLAG_OFFSET)
        .map_err(|e| Error::io("read", path, e))?;
    if b[0] & FLAG_BINLOG_IN_USE as u8 != 0 {
        b[0] &= !(FLAG_BINLOG_IN_USE as u8);
        file.write_all_at(&b, IN_USE_FLAG_OFFSET)
            .map_err(|e| Error::io("write", path, e))?;
        crate::iotrace::note("clear-in-use", path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_failed_fsync_every_handle_of_the_file_fails() {
        // The kernel reports a writeback error to one fsync per open file description:
        // a second handle on it (the rename's duplicate) would then get success for
        // lost bytes. The gate remembers the failure for every handle.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let file = File::create(&path).expect("create");
        let dup = file.try_clone().expect("dup");
        let gate = Arc::new(SyncGate::default());
        gate.sync(&file, &path).expect("first fsync");
        gate.fail_next();
        assert!(matches!(gate.sync(&file, &path), Err(Error::Io { .. })));
        let again = Arc::clone(&gate).sync(&dup, &path);
        assert!(
            matches!(again, Err(Error::Poisoned { .. })),
            "the duplicate's fsync must not report success: {again:?}"
        );
    }
}
