//! [`Wal`]: the durable [`LogStore`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::fs::{DirLock, StdFs, WalFile, WalFs};
use super::snap_file::{self, SnapFiles};
use super::{record, segment};
use crate::codec::{self, Reader};
use crate::{
    Entry, Error, GroupWrite, LogStore, RaftState, Result, Snapshot, SnapshotFile,
    SnapshotPersister,
};

/// Settings of a [`Wal`].
///
/// Build it with [`WalOptions::default`] and the `with_*` methods, or assign the public
/// fields of a default value: the struct is `#[non_exhaustive]`, so later settings can be
/// added without breaking callers.
#[non_exhaustive]
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

    /// Sets [`WalOptions::max_segment_bytes`].
    #[must_use]
    pub fn with_max_segment_bytes(mut self, bytes: u64) -> Self {
        self.max_segment_bytes = bytes;
        self
    }

    /// Sets [`WalOptions::max_record_bytes`].
    #[must_use]
    pub fn with_max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes;
        self
    }

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
/// Files: `LOCK`; segments `wal-<seq>.log`; snapshot files
/// `snap/<group>-<index>-<nonce>.snap`, one per snapshot, each written whole and durable
/// (temporary, fsync, rename, fsync dir) before the record that refers to it (by name,
/// length and CRC-32) is written. A group's own snapshots are written by the driver's
/// background snapshot thread ([`LogStore::snapshot_persister`]) and referenced with
/// [`LogStore::write_snapshot_ref`]; snapshots in a [`LogStore::write`] (received from a
/// leader, or seeding a group) are written inline. Once a newer snapshot's reference is
/// durable, the older file is deleted. (Logs of earlier versions kept one
/// `snap-<group>.bin` per group; such a file is still read while the log's latest
/// snapshot of that group refers to it.)
///
/// Recovery: segments are replayed in order, later records win. A torn or corrupt tail of
/// the **last** segment is truncated (those writes were never acknowledged); damage in any
/// other segment is refused with [`Error::Corrupt`] naming the file and offset. Only the
/// file of each group's latest snapshot is read: a missing or damaged one is refused with
/// [`Error::Corrupt`] naming it; every other snapshot file (superseded, or written by a
/// process that died before referring to it) is deleted.
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
/// snapshot never passes through a record (the record holds its position and file name),
/// so its only limit is [`crate::MAX_BYTES_LEN`] of data, what a follower can decode from
/// a message and the snapshot file reader accepts. Writes above them are refused with
/// [`Error::WriteTooLarge`] before anything is written.
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
    /// The file of each group's latest snapshot (absent: no snapshot, or one of the older
    /// format in `snap-<group>.bin`). Invariant: every other file in `snap/` is garbage.
    files: BTreeMap<u64, SnapshotFile>,
    snaps: Arc<SnapFiles>,
    stats: WalStats,
    buf: Vec<u8>,
    payload: Vec<u8>,
    poisoned: bool,
    /// The active segment has bytes not yet synced (commit-only batches).
    dirty: bool,
    /// Where streamed snapshots are received ([`LogStore::snapshot_spool_dir`]).
    spool: Option<PathBuf>,
}

/// The snapshot file of a group in logs of earlier versions.
fn legacy_snap_name(group: u64) -> String {
    format!("snap-{group:016x}.bin")
}

fn sync_dir(fs: &dyn WalFs, dir: &Path) -> Result<()> {
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Magic of the older format's snapshot files.
const SNAP_MAGIC: &[u8; 4] = b"SRSN";

/// Reads a snapshot file of the older format (one per group, `snap-<group>.bin`).
fn read_legacy_snapshot_file(fs: &dyn WalFs, path: &Path) -> Result<Snapshot> {
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
        let mut wal = Wal::open_with(Arc::new(StdFs), dir.as_ref(), opts)?;
        wal.spool = Some(dir.as_ref().join("spool"));
        Ok(wal)
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
        // The file of each group's latest snapshot as the log names it (`None`: older
        // format, data in `snap-<group>.bin`).
        let mut latest: BTreeMap<u64, Option<SnapshotFile>> = BTreeMap::new();
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
                        latest.insert(rec.group, rec.file);
                    } else {
                        latest.remove(&rec.group);
                    }
                    st.apply_write(&rec.write)
                        .map_err(|_| corrupt("checkpoint leaves a hole"))?;
                    groups.insert(rec.group, st);
                } else {
                    let st = groups.entry(rec.group).or_default();
                    if let Some(m) = rec.snap {
                        let before = st.snapshot.as_ref().map_or(0, |s| s.meta.index);
                        let index = m.index;
                        st.install_snapshot(Snapshot {
                            meta: m,
                            data: bytes::Bytes::new(),
                        });
                        // An older snapshot than the group's is ignored, and so is its file.
                        if index > before {
                            latest.insert(rec.group, rec.file);
                        }
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
        let (snaps, files) = Self::load_snapshots(&fs, &dir, &mut groups, &latest, snap_files)?;
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
            files,
            snaps: Arc::new(snaps),
            stats,
            buf: Vec::new(),
            payload: Vec::new(),
            poisoned: false,
            dirty: false,
            spool: None,
        })
    }

    /// Reads the latest snapshot of every replayed group into `groups` and deletes every
    /// other snapshot file. `latest` is what the log names as each group's latest
    /// snapshot file; `legacy` the `snap-<group>.bin` files of the older format.
    fn load_snapshots(
        fs: &Arc<dyn WalFs>,
        dir: &Path,
        groups: &mut BTreeMap<u64, RaftState>,
        latest: &BTreeMap<u64, Option<SnapshotFile>>,
        legacy: BTreeMap<u64, PathBuf>,
    ) -> Result<(SnapFiles, BTreeMap<u64, SnapshotFile>)> {
        let snap_dir = dir.join(snap_file::DIR);
        fs.create_dir_all(&snap_dir)
            .map_err(|e| Error::io(&snap_dir, e))?;
        sync_dir(&**fs, dir)?;
        let names = fs.list(&snap_dir).map_err(|e| Error::io(&snap_dir, e))?;
        let max_nonce = names
            .iter()
            .filter_map(|n| snap_file::parse_name(n))
            .map(|(_, _, nonce)| nonce)
            .max();
        let snaps = SnapFiles::new(fs.clone(), dir, max_nonce.map_or(0, |n| n + 1));
        let mut files = BTreeMap::new();
        for (g, st) in groups.iter_mut() {
            let (Some(s), Some(Some(f))) = (&st.snapshot, latest.get(g)) else {
                continue;
            };
            let snap = snaps.read(f)?;
            if snap.meta != s.meta {
                return Err(Error::Corrupt {
                    path: snaps.path(&f.name),
                    offset: 0,
                    reason: "snapshot file does not match its log record",
                });
            }
            st.snapshot = Some(snap);
            files.insert(*g, f.clone());
        }
        let legacy_groups: Vec<u64> = legacy.keys().copied().collect();
        for (g, path) in legacy {
            if files.contains_key(&g) {
                // A newer snapshot file superseded it.
                fs.remove(&path).map_err(|e| Error::io(&path, e))?;
                continue;
            }
            let snap = read_legacy_snapshot_file(&**fs, &path)?;
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
        for (g, st) in groups.iter() {
            if let Some(s) = &st.snapshot
                && s.meta.index > 0
                && !files.contains_key(g)
                && !legacy_groups.contains(g)
            {
                return Err(Error::Corrupt {
                    path: dir.join(legacy_snap_name(*g)),
                    offset: 0,
                    reason: "snapshot file is missing",
                });
            }
        }
        // Superseded files, and files whose writer died before the log referred to them
        // (the log still holds the entries they cover), and temporaries.
        let keep: Vec<&str> = files.values().map(|f| f.name.as_str()).collect();
        let mut removed = false;
        for name in names.iter().filter(|n| !keep.contains(&n.as_str())) {
            let path = snap_dir.join(name);
            fs.remove(&path).map_err(|e| Error::io(&path, e))?;
            removed = true;
        }
        if removed {
            sync_dir(&**fs, &snap_dir)?;
        }
        Ok((snaps, files))
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
        codec::release_scratch(&mut self.buf);
        codec::release_scratch(&mut self.payload);
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
        codec::release_scratch(&mut self.buf);
        codec::release_scratch(&mut self.payload);
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
                (seq, self.opts.max_record_bytes),
                (*g, st),
                self.files.get(g),
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

impl Wal {
    /// Refuses a batch the log is poisoned for, or that replay would refuse.
    fn check_batch(&self, batch: &[GroupWrite]) -> Result<()> {
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
        }
        Ok(())
    }

    /// Frames the batch into `buf`, each snapshot naming its file (`files`, in batch
    /// order); returns the number of records.
    fn frame_batch(
        &mut self,
        batch: &[GroupWrite],
        files: &[Option<SnapshotFile>],
    ) -> Result<usize> {
        self.buf.clear();
        let mut records = 0;
        for (w, f) in batch.iter().zip(files) {
            records += record::frame_write(
                &mut self.buf,
                &mut self.payload,
                (self.active_seq, self.opts.max_record_bytes),
                w,
                f.as_ref(),
            )?;
        }
        Ok(records)
    }

    /// Appends the framed batch (synced unless it only advances commit indexes), applies
    /// it to the mirror, deletes the snapshot files it supersedes, and rotates.
    fn append_batch(
        &mut self,
        batch: &[GroupWrite],
        files: Vec<Option<SnapshotFile>>,
        records: usize,
    ) -> Result<()> {
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
        for (w, f) in batch.iter().zip(files) {
            let st = self.groups.entry(w.group).or_default();
            let before = st.snapshot.as_ref().map_or(0, |s| s.meta.index);
            st.apply_write(w)?;
            if let (Some(s), Some(f)) = (&w.snapshot, f) {
                if s.meta.index > before {
                    // The reference is durable: the group's previous file is garbage.
                    if let Some(old) = self.files.insert(w.group, f) {
                        self.snaps.discard(&old.name);
                    }
                } else {
                    // Not newer than the group's snapshot: ignored, by replay too.
                    self.snaps.discard(&f.name);
                }
            }
        }
        if self.active_len - self.active_base >= self.opts.max_segment_bytes {
            self.rotate()?;
        }
        Ok(())
    }
}

impl LogStore for Wal {
    fn write(&mut self, batch: &[GroupWrite]) -> Result<()> {
        self.check_batch(batch)?;
        // Encode the snapshot files and frame everything first: a write too large for
        // the records or the snapshot reader is refused before any of it is written.
        let encoded = batch
            .iter()
            .map(|w| {
                w.snapshot
                    .as_ref()
                    .map(|s| self.snaps.encode(w.group, s))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let files: Vec<Option<SnapshotFile>> = encoded
            .iter()
            .map(|e| e.as_ref().map(|e| e.file.clone()))
            .collect();
        let records = self.frame_batch(batch, &files)?;
        for e in encoded.iter().flatten() {
            // The snapshot is durable before the record that drops the entries it covers.
            if let Err(e) = self.snaps.store(e) {
                self.poisoned = true;
                return Err(e);
            }
        }
        self.append_batch(batch, files, records)
    }

    fn snapshot_persister(&self) -> Option<Arc<dyn SnapshotPersister>> {
        Some(self.snaps.clone())
    }

    /// `DIR/spool` for a log on the real file system ([`Wal::open`]); none on another
    /// [`WalFs`] (the driver writes spool files with `std::fs`).
    fn snapshot_spool_dir(&self) -> Option<PathBuf> {
        self.spool.clone()
    }

    fn write_snapshot_ref(
        &mut self,
        group: u64,
        snapshot: Snapshot,
        file: SnapshotFile,
    ) -> Result<()> {
        let have = self
            .groups
            .get(&group)
            .and_then(|st| st.snapshot.as_ref())
            .map_or(0, |s| s.meta.index);
        if snapshot.meta.index <= have {
            self.snaps.discard(&file.name);
            return Ok(());
        }
        let batch = [GroupWrite {
            group,
            snapshot: Some(snapshot),
            ..GroupWrite::default()
        }];
        self.check_batch(&batch)?;
        let files = vec![Some(file)];
        let records = self.frame_batch(&batch, &files)?;
        self.append_batch(&batch, files, records)
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
