//! `TxnCache`: the events one transaction writes while it runs.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::event::{Event, EventBody};
use crate::header::ChecksumAlg;

/// Prefix of cache file names in `#binlog_cache_files/`; recovery deletes every such file.
pub const CACHE_FILE_PREFIX: &str = "ML_";
/// Name of the cache directory inside the binlog directory.
pub const CACHE_DIR_NAME: &str = "#binlog_cache_files";
/// Table id used for `surgedb`.`kv` in the row events.
pub const KV_TABLE_ID: u64 = 1;
/// Largest event a cache accepts (the header's 32-bit size field).
pub(crate) const MAX_EVENT_LEN: usize = u32::MAX as usize;

/// What every cache of one binlog shares with it.
#[derive(Debug)]
pub(crate) struct CacheContext {
    pub(crate) dir: PathBuf,
    pub(crate) server_id: u32,
    pub(crate) domain_id: u32,
    pub(crate) buffer_size: usize,
    /// Header space to reserve at the front of a spill file; recomputed by the binlog after
    /// each new file, read when a cache first spills (so a cache may carry a stale value,
    /// in which case its commit falls back to copying).
    pub(crate) reserved: AtomicU64,
    pub(crate) counter: AtomicU64,
    /// Fsync the spill file after this many new bytes (0: only before a rename).
    pub(crate) sync_interval: u64,
}

/// The spill file of a cache. Logical position `p` is at physical offset `reserved + p`.
#[derive(Debug)]
pub(crate) struct Spill {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    pub(crate) reserved: u64,
    /// Logical bytes in the file.
    pub(crate) flushed: u64,
    /// Bytes written since the last fsync.
    pub(crate) unsynced: u64,
}

impl Spill {
    /// Counts `n` new bytes and fsyncs once `interval` bytes are unsynced. Keeping the
    /// unsynced part of a large cache small means the fsync before a rename has little
    /// left to write, so the device is not busy for long with the cache's data while
    /// small commits fsync the binlog.
    fn written(&mut self, n: u64, interval: u64) -> Result<()> {
        self.unsynced += n;
        if interval > 0 && self.unsynced >= interval {
            self.file
                .sync_data()
                .map_err(|e| Error::io("fsync", &self.path, e))?;
            self.unsynced = 0;
        }
        Ok(())
    }
}

/// A position in a cache to roll back to (a savepoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint {
    len: u64,
}

/// The events one transaction writes while it runs, in their final binlog form.
///
/// Events go to a memory buffer ([`crate::BinlogConfig::cache_buffer_size`], 32 KiB by
/// default); beyond it they spill to `#binlog_cache_files/ML_<n>` in the binlog directory,
/// after a reserved gap at the front that can later hold the header of a new binlog file,
/// so that a large cache can become a binlog file by rename.
///
/// # Invariants
/// * Every stored event has `log_pos` 0 and its CRC-32 already computed: the bytes are
///   copied or renamed into the binlog unchanged.
/// * `len()` counts logical bytes (spilled + buffered); the reserved gap is not counted.
/// * Dropping a cache deletes its spill file.
#[derive(Debug)]
pub struct TxnCache {
    ctx: Arc<CacheContext>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    spill: Option<Spill>,
    domain_id: u32,
    timestamp: u32,
}

impl TxnCache {
    pub(crate) fn new(ctx: Arc<CacheContext>) -> Self {
        let domain_id = ctx.domain_id;
        TxnCache {
            ctx,
            buf: Vec::new(),
            scratch: Vec::new(),
            spill: None,
            domain_id,
            timestamp: now_secs(),
        }
    }

    /// Whether the cache was made by the binlog owning `ctx`.
    pub(crate) fn belongs_to(&self, ctx: &Arc<CacheContext>) -> bool {
        Arc::ptr_eq(&self.ctx, ctx)
    }

    /// Logical size in bytes (events only).
    pub fn len(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.flushed) + self.buf.len() as u64
    }

    /// Whether no event was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the cache has spilled to a file.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Path of the spill file, once spilled.
    pub fn spill_path(&self) -> Option<&Path> {
        self.spill.as_ref().map(|s| s.path.as_path())
    }

    /// Bytes reserved at the front of the spill file (0 before spilling).
    pub fn reserved_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.reserved)
    }

    /// GTID domain the transaction will commit in.
    pub fn domain_id(&self) -> u32 {
        self.domain_id
    }

    /// Chooses the GTID domain of the transaction (default: the binlog's).
    pub fn set_domain_id(&mut self, domain_id: u32) {
        self.domain_id = domain_id;
    }

    /// Adds one event (any body). It is stored encoded with `log_pos` 0 and a CRC.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an event larger than 4 GiB; [`Error::Io`] if spilling fails.
    pub fn push(&mut self, body: EventBody) -> Result<()> {
        let ev = Event::new(body, self.timestamp, self.ctx.server_id);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        ev.encode_into(&mut scratch, ChecksumAlg::Crc32);
        let r = if scratch.len() > MAX_EVENT_LEN {
            Err(Error::Invalid {
                what: "event",
                detail: format!("{} bytes exceed the 4 GiB event limit", scratch.len()),
            })
        } else {
            self.append(&scratch)
        };
        if scratch.capacity() <= 1 << 20 {
            self.scratch = scratch;
        }
        r
    }

    /// Adds an Annotate_rows event carrying the SQL text of the next statement.
    ///
    /// # Errors
    /// As [`TxnCache::push`].
    pub fn annotate(&mut self, sql: &str) -> Result<()> {
        self.push(EventBody::AnnotateRows(sql.as_bytes().to_vec()))
    }

    /// Marks the current end, to roll back to later.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint { len: self.len() }
    }

    /// Drops every event added after `sp` (ROLLBACK TO SAVEPOINT).
    ///
    /// # Errors
    /// [`Error::Invalid`] if `sp` lies beyond the current end (already rolled back past);
    /// [`Error::Io`] if truncating the spill file fails.
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        if sp.len > self.len() {
            return Err(Error::Invalid {
                what: "savepoint",
                detail: format!("at {} beyond the cache end {}", sp.len, self.len()),
            });
        }
        let flushed = self.spill.as_ref().map_or(0, |s| s.flushed);
        if sp.len >= flushed {
            self.buf.truncate((sp.len - flushed) as usize);
        } else if let Some(s) = &mut self.spill {
            self.buf.clear();
            s.flushed = sp.len;
            s.file
                .set_len(s.reserved + s.flushed)
                .map_err(|e| Error::io("truncate", &s.path, e))?;
        }
        Ok(())
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if self.buf.len() + bytes.len() <= self.ctx.buffer_size {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        self.flush_buffer()?;
        if bytes.len() > self.ctx.buffer_size {
            let interval = self.ctx.sync_interval;
            let s = self.spill_file()?;
            s.file
                .write_all_at(bytes, s.reserved + s.flushed)
                .map_err(|e| Error::io("write", &s.path, e))?;
            s.flushed += bytes.len() as u64;
            s.written(bytes.len() as u64, interval)?;
        } else {
            self.buf.extend_from_slice(bytes);
        }
        Ok(())
    }

    fn spill_file(&mut self) -> Result<&mut Spill> {
        if self.spill.is_none() {
            let n = self.ctx.counter.fetch_add(1, Ordering::Relaxed);
            let path = self.ctx.dir.join(format!("{CACHE_FILE_PREFIX}{n}"));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| Error::io("create", &path, e))?;
            self.spill = Some(Spill {
                file,
                path,
                reserved: self.ctx.reserved.load(Ordering::Acquire),
                flushed: 0,
                unsynced: 0,
            });
        }
        self.spill.as_mut().ok_or_else(|| Error::Invalid {
            what: "cache",
            detail: "spill file missing".to_string(),
        })
    }

    /// Writes the memory buffer to the spill file (creating it).
    fn flush_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let interval = self.ctx.sync_interval;
        let buf = std::mem::take(&mut self.buf);
        // On any failure the buffer is put back untouched: its events are still the
        // cache's (a partial write past `flushed` is overwritten by the next flush).
        let s = match self.spill_file() {
            Ok(s) => s,
            Err(e) => {
                self.buf = buf;
                return Err(e);
            }
        };
        if let Err(e) = s.file.write_all_at(&buf, s.reserved + s.flushed) {
            let e = Error::io("write", &s.path, e);
            self.buf = buf;
            return Err(e);
        }
        s.flushed += buf.len() as u64;
        let r = s.written(buf.len() as u64, interval);
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// For a spilled cache: moves the buffer to the file, cuts the file at the logical end
    /// and fsyncs it. Runs outside the log lock, before a commit by rename.
    pub(crate) fn sync_spill(&mut self) -> Result<()> {
        if self.spill.is_none() {
            return Ok(());
        }
        self.flush_buffer()?;
        if let Some(s) = &self.spill {
            s.file
                .set_len(s.reserved + s.flushed)
                .map_err(|e| Error::io("truncate", &s.path, e))?;
            let len = crate::iotrace::len_before_sync(&s.path);
            s.file
                .sync_all()
                .map_err(|e| Error::io("fsync", &s.path, e))?;
            crate::iotrace::note_sync("fsync", &s.path, len);
        }
        Ok(())
    }

    /// Takes the spill file out of the cache (the rename path now owns it).
    pub(crate) fn take_spill(&mut self) -> Option<Spill> {
        self.spill.take()
    }

    /// Feeds every logical byte, in order, to `sink` in chunks of at most 1 MiB.
    /// `on_half` runs once after about half the bytes (for the mid-copy crash point).
    pub(crate) fn copy_out(
        &mut self,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
        on_half: &mut dyn FnMut(),
    ) -> Result<()> {
        let total = self.len();
        let mut done = 0u64;
        let mut halfway = false;
        if let Some(s) = &self.spill {
            let mut chunk = vec![0u8; (1 << 20).min(s.flushed as usize)];
            while done < s.flushed {
                let n = chunk.len().min((s.flushed - done) as usize);
                s.file
                    .read_exact_at(&mut chunk[..n], s.reserved + done)
                    .map_err(|e| Error::io("read", &s.path, e))?;
                sink(&chunk[..n])?;
                done += n as u64;
                if !halfway && done * 2 >= total {
                    halfway = true;
                    on_half();
                }
            }
        }
        sink(&self.buf)
    }
}

impl Drop for TxnCache {
    fn drop(&mut self) {
        if let Some(s) = self.spill.take() {
            drop(s.file);
            // Best effort: a file left behind is deleted by recovery at the next open.
            let _ = std::fs::remove_file(&s.path);
        }
    }
}

pub(crate) fn now_secs() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}
