//! [`Wal`]: the durable [`LogStore`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::fs::{DirLock, StdFs, WalFile, WalFs};
use super::{record, segment};
use crate::codec::{self, Reader};
use crate::{Entry, Error, GroupWrite, LogStore, RaftState, Result, Snapshot};

/// Settings of a [`Wal`].
#[derive(Debug, Clone)]
pub struct WalOptions {
    /// A segment is closed and a new one started once this many bytes were appended to it
    /// (besides the checkpoint it starts with).
    pub max_segment_bytes: u64,
    /// Largest record, for the writer and the reader alike: a group's write above it is
    /// split over several records (applied together or not at all), and an entry that
    /// cannot fit one record ([`Wal::max_entry_bytes`]) is refused with
    /// [`Error::WriteTooLarge`]. At open, a frame longer than this is a torn tail, unless
    /// it is intact, which means the limit was lowered after it was written: open then
    /// refuses the log instead of dropping an acknowledged write, so never lower it on an
    /// existing log. Between 4 KiB and [`WalOptions::MAX_RECORD_BYTES`] (default).
    pub max_record_bytes: usize,
}

impl WalOptions {
    /// The largest value of [`WalOptions::max_record_bytes`]: 1 GiB (a frame's length
    /// prefix is a `u32`; one record holds at least one entry of
    /// [`crate::MAX_BYTES_LEN`]).
    pub const MAX_RECORD_BYTES: usize = 1 << 30;
    const MIN_RECORD_BYTES: usize = 4 << 10;

    fn validate(&self) -> Result<()> {
        let bad = |field, reason| Err(Error::InvalidConfig { field, reason });
        if self.max_record_bytes < Self::MIN_RECORD_BYTES {
            return bad("max_record_bytes", "must be at least 4 KiB");
        }
        if self.max_record_bytes > Self::MAX_RECORD_BYTES {
            return bad("max_record_bytes", "must be at most 1 GiB");
        }
        if self.max_segment_bytes == 0 {
            return bad("max_segment_bytes", "must be at least 1");
        }
        Ok(())
    }
}

impl Default for WalOptions {
    fn default() -> WalOptions {
        WalOptions {
            max_segment_bytes: 64 << 20,
            max_record_bytes: WalOptions::MAX_RECORD_BYTES,
        }
    }
}

/// Counters of a [`Wal`] (a plain snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// `fdatasync` calls on segments.
    pub syncs: u64,
    /// Group records written.
    pub records: u64,
    /// Bytes appended to segments.
    pub bytes: u64,
    /// Segments currently on disk.
    pub segments: u64,
    /// Bytes in the segments currently on disk (what a restart replays).
    pub segment_bytes: u64,
    /// Checkpoints written (each retires every older segment).
    pub checkpoints: u64,
    /// Bytes of torn tail cut from the last segment at open.
    pub truncated_tail_bytes: u64,
}

/// A write-ahead log shared by every group of a node (so one `fdatasync` covers many
/// groups' appends), in a directory locked against other processes.
///
/// Files: `LOCK`; segments `wal-<seq>.log`; one snapshot file per group,
/// `snap-<group>.bin`, replaced atomically (write temporary, fsync, rename, fsync dir)
/// before the record that refers to it is written.
///
/// Recovery: segments are replayed in order, later records win. A torn or corrupt tail of
/// the **last** segment is truncated (those writes were never acknowledged); damage in any
/// other segment is refused with [`Error::Corrupt`] naming the file and offset.
///
/// Retirement: when a segment is closed and at least half of the bytes in the closed
/// segments are dead (the live state, every group's entries since its snapshot plus its
/// hard state, is at most half of them), the live state of every group is rewritten as a
/// checkpoint at the start of the new segment and every older segment is deleted. So,
/// whatever the number of groups, the segments on disk (and what a restart replays) stay
/// under twice the live state plus the active segment (a checkpoint of the live state and
/// `max_segment_bytes` after it), and rewriting costs at most one byte per byte appended.
///
/// Limits: whatever a write is acknowledged with reopens. A record never exceeds
/// [`WalOptions::max_record_bytes`], the reader's limit too (larger writes are split); a
/// snapshot's data never exceeds [`crate::MAX_BYTES_LEN`], the snapshot reader's limit.
/// Writes above them are refused with [`Error::WriteTooLarge`] before anything is written.
///
/// Invariant: the in-memory mirror `groups` equals what replaying the segments yields. An
/// I/O error poisons the log: later writes fail (a failed fsync may have lost data).
#[derive(Debug)]
pub struct Wal {
    dir: PathBuf,
    fs: Arc<dyn WalFs>,
    _lock: Box<dyn DirLock>,
    opts: WalOptions,
    active: Box<dyn WalFile>,
    active_seq: u64,
    active_len: u64,
    /// Length of the active segment's header and checkpoint (not counted toward rotation).
    active_base: u64,
    /// Bytes in the closed segments still on disk.
    closed_bytes: u64,
    segments: Vec<u64>,
    groups: BTreeMap<u64, RaftState>,
    stats: WalStats,
    buf: Vec<u8>,
    payload: Vec<u8>,
    poisoned: bool,
    /// The active segment has bytes not yet synced (commit-only batches).
    dirty: bool,
}

fn snap_name(group: u64) -> String {
    format!("snap-{group:016x}.bin")
}

fn sync_dir(fs: &dyn WalFs, dir: &Path) -> Result<()> {
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

const SNAP_MAGIC: &[u8; 4] = b"SRSN";

fn write_snapshot_file(fs: &dyn WalFs, dir: &Path, group: u64, s: &Snapshot) -> Result<()> {
    let mut body = Vec::with_capacity(s.data.len() + 64);
    codec::put_snapshot_meta(&mut body, &s.meta);
    codec::put_bytes(&mut body, &s.data);
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(SNAP_MAGIC);
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    let dst = dir.join(snap_name(group));
    fs.write_atomic(&dst, &out).map_err(|e| Error::io(&dst, e))
}

fn read_snapshot_file(fs: &dyn WalFs, path: &Path) -> Result<Snapshot> {
    let bytes = fs.read(path).map_err(|e| Error::io(path, e))?;
    let corrupt = |offset, reason| Error::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    if bytes.len() < 8 || &bytes[..4] != SNAP_MAGIC {
        return Err(corrupt(0, "bad snapshot magic"));
    }
    let want = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if crc32fast::hash(&bytes[8..]) != want {
        return Err(corrupt(4, "snapshot checksum mismatch"));
    }
    let mut r = Reader::new(&bytes[8..], "snapshot file");
    let meta = codec::get_snapshot_meta(&mut r).map_err(|_| corrupt(8, "bad snapshot metadata"))?;
    let data = r.bytes().map_err(|_| corrupt(8, "bad snapshot data"))?;
    Ok(Snapshot { meta, data })
}

impl Wal {
    /// Opens (or creates) the log in `dir`, locking it and recovering every group.
    ///
    /// # Errors
    /// [`Error::Locked`] if another process holds the directory; [`Error::Corrupt`] for
    /// damage outside the last segment's tail; [`Error::Io`].
    pub fn open(dir: impl AsRef<Path>, opts: WalOptions) -> Result<Wal> {
        Wal::open_with(Arc::new(StdFs), dir, opts)
    }

    /// Opens the log on the given file system (for tests: [`crate::MemFs`]).
    ///
    /// # Errors
    /// As [`Wal::open`].
    pub fn open_with(fs: Arc<dyn WalFs>, dir: impl AsRef<Path>, opts: WalOptions) -> Result<Wal> {
        opts.validate()?;
        let dir = dir.as_ref().to_path_buf();
        fs.create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let Some(lock) = fs.lock(&dir).map_err(|e| Error::io(dir.join("LOCK"), e))? else {
            return Err(Error::Locked { path: dir });
        };
        let mut seqs = Vec::new();
        let mut snap_files = BTreeMap::new();
        for name in fs.list(&dir).map_err(|e| Error::io(&dir, e))? {
            let path = dir.join(&name);
            if let Some(seq) = segment::parse_name(&name) {
                seqs.push(seq);
            } else if let Some(hex) = name
                .strip_prefix("snap-")
                .and_then(|n| n.strip_suffix(".bin"))
                && let Ok(g) = u64::from_str_radix(hex, 16)
            {
                snap_files.insert(g, path);
            } else if name.ends_with(".tmp") {
                let _ = fs.remove(&path);
            }
        }
        seqs.sort_unstable();
        let mut groups: BTreeMap<u64, RaftState> = BTreeMap::new();
        let mut stats = WalStats::default();
        let mut kept = Vec::new();
        let mut closed_bytes = 0;
        for (i, &seq) in seqs.iter().enumerate() {
            let path = segment::path(&dir, seq);
            let bytes = fs.read(&path).map_err(|e| Error::io(&path, e))?;
            let last = i + 1 == seqs.len();
            let scan = segment::scan(&bytes, seq, opts.max_record_bytes);
            // Leading entries of split writes, applied only with their final record: a
            // tear between them drops the whole (unacknowledged) write.
            let mut parts: BTreeMap<u64, Vec<Entry>> = BTreeMap::new();
            for (off, payload) in &scan.records {
                let corrupt = |reason| Error::Corrupt {
                    path: path.clone(),
                    offset: *off,
                    reason,
                };
                let mut rec = record::decode(payload).map_err(|_| corrupt("undecodable record"))?;
                if rec.kind == record::REC_PART {
                    let held = parts.entry(rec.group).or_default();
                    if let (Some(a), Some(b)) = (held.last(), rec.write.entries.first())
                        && a.index + 1 != b.index
                    {
                        return Err(corrupt("split write parts are not consecutive"));
                    }
                    held.append(&mut rec.write.entries);
                    continue;
                }
                if let Some(mut held) = parts.remove(&rec.group) {
                    if let (Some(a), Some(b)) = (held.last(), rec.write.entries.first())
                        && a.index + 1 != b.index
                    {
                        return Err(corrupt("split write parts are not consecutive"));
                    }
                    held.append(&mut rec.write.entries);
                    rec.write.entries = held;
                }
                if rec.kind == record::REC_CHECKPOINT {
                    let mut st = RaftState {
                        conf: rec.conf.unwrap_or_default(),
                        ..RaftState::default()
                    };
                    if let Some(m) = rec.snap {
                        st.snapshot = Some(Snapshot {
                            meta: m,
                            data: bytes::Bytes::new(),
                        });
                    }
                    st.apply_write(&rec.write)
                        .map_err(|_| corrupt("checkpoint leaves a hole"))?;
                    groups.insert(rec.group, st);
                } else {
                    let st = groups.entry(rec.group).or_default();
                    if let Some(m) = rec.snap {
                        st.install_snapshot(Snapshot {
                            meta: m,
                            data: bytes::Bytes::new(),
                        });
                    }
                    st.apply_write(&rec.write)
                        .map_err(|_| corrupt("entries leave a hole in the log"))?;
                }
            }
            if let Some(stop) = scan.stop {
                if !last || stop.intact {
                    return Err(Error::Corrupt {
                        path,
                        offset: stop.offset,
                        reason: stop.reason,
                    });
                }
                // The torn tail of the last segment was never acknowledged: cut it.
                stats.truncated_tail_bytes = bytes.len() as u64 - stop.offset;
                tracing::info!(
                    path = %path.display(),
                    offset = stop.offset,
                    reason = stop.reason,
                    "wal: truncating torn tail"
                );
                if stop.offset < segment::HEADER_LEN as u64 {
                    fs.remove(&path).map_err(|e| Error::io(&path, e))?;
                    sync_dir(&*fs, &dir)?;
                    continue;
                }
                fs.truncate(&path, stop.offset)
                    .map_err(|e| Error::io(&path, e))?;
                closed_bytes += stop.offset;
            } else {
                if !last && !parts.is_empty() {
                    // A batch never spans segments: its parts end before the next one.
                    return Err(Error::Corrupt {
                        path,
                        offset: bytes.len() as u64,
                        reason: "split write without its final record",
                    });
                }
                closed_bytes += bytes.len() as u64;
            }
            kept.push(seq);
        }
        let snap_paths: Vec<u64> = snap_files.keys().copied().collect();
        for (g, path) in snap_files {
            let snap = read_snapshot_file(&*fs, &path)?;
            let st = groups.entry(g).or_default();
            let have = st.snapshot.as_ref().map_or(0, |s| s.meta.index);
            if snap.meta.index < have {
                return Err(Error::Corrupt {
                    path,
                    offset: 0,
                    reason: "snapshot file is older than the log says",
                });
            }
            if snap.meta.index == have {
                st.snapshot = Some(snap);
            } else {
                // Durable before its record, which was lost: still a valid snapshot.
                st.install_snapshot(snap);
            }
        }
        for (g, st) in &groups {
            if let Some(s) = &st.snapshot
                && s.meta.index > 0
                && s.data.is_empty()
                && !snap_paths.contains(g)
            {
                return Err(Error::Corrupt {
                    path: dir.join(snap_name(*g)),
                    offset: 0,
                    reason: "snapshot file is missing",
                });
            }
        }
        let seq = kept.last().copied().unwrap_or(0) + 1;
        let (active, active_len) = Self::create_segment(&*fs, &dir, seq)?;
        kept.push(seq);
        stats.segments = kept.len() as u64;
        stats.segment_bytes = closed_bytes + active_len;
        Ok(Wal {
            dir,
            fs,
            _lock: lock,
            opts,
            active,
            active_seq: seq,
            active_len,
            active_base: active_len,
            closed_bytes,
            segments: kept,
            groups,
            stats,
            buf: Vec::new(),
            payload: Vec::new(),
            poisoned: false,
            dirty: false,
        })
    }

    fn create_segment(fs: &dyn WalFs, dir: &Path, seq: u64) -> Result<(Box<dyn WalFile>, u64)> {
        let path = segment::path(dir, seq);
        let mut f = fs.create(&path).map_err(|e| Error::io(&path, e))?;
        f.append(&segment::header(seq))
            .map_err(|e| Error::io(&path, e))?;
        // The header must be durable before any record relies on it (raft-engine does the
        // same), and the directory entry with it.
        f.sync().map_err(|e| Error::io(&path, e))?;
        sync_dir(fs, dir)?;
        Ok((f, segment::HEADER_LEN as u64))
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Counters.
    pub fn stats(&self) -> WalStats {
        self.stats
    }

    /// The largest entry data a write may carry: [`crate::MAX_BYTES_LEN`], or less if
    /// [`WalOptions::max_record_bytes`] leaves less room in one record.
    pub fn max_entry_bytes(&self) -> usize {
        record::max_entry_data(self.opts.max_record_bytes)
    }

    /// An estimate (from above) of the bytes a checkpoint of every group takes.
    fn live_bytes(&self) -> u64 {
        self.groups
            .values()
            .map(|g| g.entries.iter().map(|e| e.size() as u64 + 16).sum::<u64>() + 64)
            .sum()
    }

    fn grew(&mut self, n: u64) {
        self.stats.bytes += n;
        self.active_len += n;
        self.stats.segment_bytes = self.closed_bytes + self.active_len;
    }

    fn append_sync(&mut self) -> Result<()> {
        let path = segment::path(&self.dir, self.active_seq);
        let r = self
            .active
            .append(&self.buf)
            .and_then(|()| self.active.sync());
        if let Err(e) = r {
            // fsyncgate: after a failed write or sync the page cache state is unknown.
            self.poisoned = true;
            return Err(Error::io(path, e));
        }
        self.stats.syncs += 1;
        self.grew(self.buf.len() as u64);
        self.dirty = false;
        Ok(())
    }

    fn append_only(&mut self) -> Result<()> {
        let path = segment::path(&self.dir, self.active_seq);
        if let Err(e) = self.active.append(&self.buf) {
            self.poisoned = true;
            return Err(Error::io(path, e));
        }
        self.grew(self.buf.len() as u64);
        self.dirty = true;
        Ok(())
    }

    /// Frames a checkpoint of every group into `buf`; false (and nothing framed) if one
    /// does not fit the record limit (only a membership too large for one record could do
    /// that: every entry was checked when written), in which case segments stay.
    fn frame_checkpoint(&mut self, seq: u64) -> bool {
        self.buf.clear();
        for (g, st) in &self.groups {
            let r = record::frame_checkpoint(
                &mut self.buf,
                &mut self.payload,
                seq,
                self.opts.max_record_bytes,
                *g,
                st,
            );
            if let Err(e) = r {
                tracing::warn!(group = g, error = %e, "wal: cannot checkpoint; old segments stay");
                self.buf.clear();
                return false;
            }
        }
        true
    }

    /// Starts a new segment. If at least half of the closed segments' bytes are dead, the
    /// live state is checkpointed into the new segment and every older segment is deleted
    /// (see the type docs for the bound this keeps).
    fn rotate(&mut self) -> Result<()> {
        // Only the last segment may have a torn tail: make this one whole first.
        if self.dirty {
            if let Err(e) = self.active.sync() {
                self.poisoned = true;
                return Err(Error::io(segment::path(&self.dir, self.active_seq), e));
            }
            self.stats.syncs += 1;
            self.dirty = false;
        }
        let seq = self.active_seq + 1;
        let (f, len) = Self::create_segment(&*self.fs, &self.dir, seq)?;
        self.closed_bytes += self.active_len;
        self.active = f;
        self.active_seq = seq;
        self.active_len = len;
        self.active_base = len;
        self.stats.segment_bytes = self.closed_bytes + len;
        self.segments.push(seq);
        if self.live_bytes().saturating_mul(2) <= self.closed_bytes && self.frame_checkpoint(seq) {
            self.append_sync()?;
            self.active_base = self.active_len;
            self.stats.checkpoints += 1;
            // Newest first: if we die midway, what remains is a prefix of the log (the
            // oldest segments) followed by the checkpoint, which replays consistently.
            // Oldest first would leave a later segment without its predecessors: a hole
            // (found by the SIGKILL cluster test).
            let old: Vec<u64> = self.segments.drain(..self.segments.len() - 1).collect();
            for seq in old.into_iter().rev() {
                let p = segment::path(&self.dir, seq);
                self.fs.remove(&p).map_err(|e| Error::io(&p, e))?;
            }
            sync_dir(&*self.fs, &self.dir)?;
            self.closed_bytes = 0;
            self.stats.segment_bytes = self.active_len;
        }
        self.stats.segments = self.segments.len() as u64;
        Ok(())
    }
}

impl LogStore for Wal {
    fn write(&mut self, batch: &[GroupWrite]) -> Result<()> {
        if self.poisoned {
            return Err(Error::io(
                &self.dir,
                std::io::Error::other("log poisoned by an earlier I/O error"),
            ));
        }
        for w in batch {
            // Refuse a bad write before it becomes durable (recovery would refuse it too).
            if let Some(st) = self.groups.get(&w.group) {
                st.check_write(w)?;
            } else {
                RaftState::default().check_write(w)?;
            }
            if let Some(s) = &w.snapshot
                && s.data.len() > codec::MAX_BYTES_LEN
            {
                // The snapshot file's reader refuses more: the node could not restart.
                return Err(Error::WriteTooLarge {
                    what: "snapshot data",
                    size: s.data.len(),
                    limit: codec::MAX_BYTES_LEN,
                });
            }
        }
        // Frame everything first: a write too large for the records is refused before
        // any of it (or any snapshot file) is written.
        self.buf.clear();
        let mut records = 0;
        for w in batch {
            records += record::frame_write(
                &mut self.buf,
                &mut self.payload,
                self.active_seq,
                self.opts.max_record_bytes,
                w,
            )?;
        }
        for w in batch {
            if let Some(s) = &w.snapshot {
                // The snapshot is durable before the record that drops the entries it covers.
                if let Err(e) = write_snapshot_file(&*self.fs, &self.dir, w.group, s) {
                    self.poisoned = true;
                    return Err(e);
                }
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        // A batch that only advances commit indexes need not be synced by itself: a lost
        // commit index is learned again from the leader (and never below what was applied,
        // see `RawNode::new`). Everything else is synced before returning.
        let need_sync = batch.iter().any(|w| {
            let prev = self.groups.get(&w.group).map(|g| g.hard_state);
            w.snapshot.is_some()
                || !w.entries.is_empty()
                || w.hard_state
                    .is_some_and(|hs| prev.is_none_or(|p| p.term != hs.term || p.vote != hs.vote))
        });
        if need_sync {
            self.append_sync()?;
        } else {
            self.append_only()?;
        }
        self.stats.records += records as u64;
        for w in batch {
            self.groups.entry(w.group).or_default().apply_write(w)?;
        }
        if self.active_len - self.active_base >= self.opts.max_segment_bytes {
            self.rotate()?;
        }
        Ok(())
    }

    fn max_entry_bytes(&self) -> usize {
        Wal::max_entry_bytes(self)
    }

    fn load(&self, group: u64) -> Result<Option<RaftState>> {
        Ok(self.groups.get(&group).cloned())
    }

    fn groups(&self) -> Vec<u64> {
        self.groups.keys().copied().collect()
    }

    fn hard_state(&self, group: u64) -> Result<Option<crate::HardState>> {
        Ok(self.groups.get(&group).map(|g| g.hard_state))
    }
}
