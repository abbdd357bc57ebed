//! [`Wal`]: the durable [`LogStore`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::fs::{DirLock, StdFs, WalFile, WalFs};
use super::{record, segment};
use crate::codec::{self, Reader};
use crate::{Error, GroupWrite, LogStore, RaftState, Result, Snapshot};

/// Settings of a [`Wal`].
#[derive(Debug, Clone)]
pub struct WalOptions {
    /// A segment is closed and a new one started once it grows past this size.
    pub max_segment_bytes: u64,
}

impl Default for WalOptions {
    fn default() -> WalOptions {
        WalOptions {
            max_segment_bytes: 64 << 20,
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
        for (i, &seq) in seqs.iter().enumerate() {
            let path = segment::path(&dir, seq);
            let bytes = fs.read(&path).map_err(|e| Error::io(&path, e))?;
            let last = i + 1 == seqs.len();
            let scan = segment::scan(&bytes, seq);
            for (off, payload) in &scan.records {
                let corrupt = |reason| Error::Corrupt {
                    path: path.clone(),
                    offset: *off,
                    reason,
                };
                let rec = record::decode(payload).map_err(|_| corrupt("undecodable record"))?;
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
                if !last {
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
        Ok(Wal {
            dir,
            fs,
            _lock: lock,
            opts,
            active,
            active_seq: seq,
            active_len,
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

    fn live_bytes(&self) -> u64 {
        self.groups
            .values()
            .map(|g| g.entries.iter().map(|e| e.size() as u64 + 16).sum::<u64>() + 64)
            .sum()
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
        self.stats.bytes += self.buf.len() as u64;
        self.active_len += self.buf.len() as u64;
        self.dirty = false;
        Ok(())
    }

    fn append_only(&mut self) -> Result<()> {
        let path = segment::path(&self.dir, self.active_seq);
        if let Err(e) = self.active.append(&self.buf) {
            self.poisoned = true;
            return Err(Error::io(path, e));
        }
        self.stats.bytes += self.buf.len() as u64;
        self.active_len += self.buf.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Starts a new segment. If the live state is small, it is checkpointed into the new
    /// segment and every older segment is deleted.
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
        self.active = f;
        self.active_seq = seq;
        self.active_len = len;
        self.segments.push(seq);
        if self.live_bytes() < self.opts.max_segment_bytes / 2 {
            self.buf.clear();
            for (g, st) in &self.groups {
                self.payload.clear();
                record::encode_checkpoint(&mut self.payload, *g, st);
                segment::frame(&mut self.buf, seq, &self.payload);
            }
            self.append_sync()?;
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
        }
        self.buf.clear();
        for w in batch {
            if let Some(s) = &w.snapshot {
                // The snapshot is durable before the record that drops the entries it covers.
                if let Err(e) = write_snapshot_file(&*self.fs, &self.dir, w.group, s) {
                    self.poisoned = true;
                    return Err(e);
                }
            }
            self.payload.clear();
            record::encode_write(&mut self.payload, w);
            segment::frame(&mut self.buf, self.active_seq, &self.payload);
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
        self.stats.records += batch.len() as u64;
        for w in batch {
            self.groups.entry(w.group).or_default().apply_write(w)?;
        }
        if self.active_len >= self.opts.max_segment_bytes {
            self.rotate()?;
        }
        Ok(())
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
