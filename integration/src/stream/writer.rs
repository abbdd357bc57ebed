//! [`StreamWriter`]: appends the cluster's committed transactions, in commit_ts order, to
//! a node's stream files, so that every node that is given the same history writes the
//! same bytes.
//!
//! Layout, a function of the history and the [`StreamConfig`] only:
//! - each file: the binlog magic, a Format_description (created 0, no in-use flag), a
//!   Gtid_list holding the stream's last GTID before the file (empty in the first file),
//!   a Binlog_checkpoint naming the file, then groups, and a Rotate to the next file when
//!   it is full; header events and Rotates carry timestamp 0;
//! - one group per [`StreamedGroup`]: a GTID (domain and server id of the config, sequence
//!   numbers 1, 2, 3, ... without gaps), the group's events, and an Xid carrying the
//!   transaction's start_ts unless the group is standalone (DDL); their timestamp is the
//!   commit_ts's second;
//! - a file is full once its length reaches `max_file_size` after a group;
//! - a group of at least `large_group` bytes goes alone to a new file (the current file,
//!   if any, is closed by a Rotate first), built aside under a temporary name and renamed
//!   into place, as MariaDB 11.7 commits a large transaction by renaming its cache.
//!
//! Durability: see [`super::cursor`]. A file after a Rotate is created only by the next
//! group, so the readers' end never sits in a file that a rename could replace.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_binlog::{
    BINLOG_MAGIC, BinlogCheckpoint, ChecksumAlg, Event, EventBody, FormatDescription, GTID_FL_DDL,
    GTID_FL_STANDALONE, Gtid, GtidEvent, GtidList, Rotate,
};

use super::config::StreamConfig;
use super::crash::{crash_point, points};
use super::cursor::{Cursor, sync_dir};
use super::error::StreamError;
use super::item::{StreamedGroup, StreamedTxn};
use super::published::{StreamFiles, View};
use crate::mysql::PurgeTarget;

/// Temporary name of a large group's file while it is built.
const LARGE_TMP: &str = "#stream_large.tmp";
/// An idle round's progress (only the watermark moved) is made durable at most this often;
/// losing it costs a re-read, never a byte.
const IDLE_CURSOR_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct OpenFile {
    no: u32,
    path: PathBuf,
    file: File,
    len: u64,
}

/// Writes a node's copy of the replica stream (see the module docs).
#[derive(Debug)]
pub struct StreamWriter {
    cfg: StreamConfig,
    cursor: Cursor,
    cur: Option<OpenFile>,
    /// Files written since the last fsync.
    dirty: Vec<PathBuf>,
    files: Arc<StreamFiles>,
    numbers: Vec<u32>,
    cursor_stored_at: Instant,
    /// `(lower_record_ts, done_ts)` of the cursor as last stored: what a restart resumes
    /// from, and so what this node may tell the cluster it needs.
    stored: (u64, u64),
}

/// The second of a timestamp in TiKV's layout (`physical_ms << 18 | logical`).
fn secs(commit_ts: u64) -> u32 {
    u32::try_from((commit_ts >> 18) / 1000).unwrap_or(u32::MAX)
}

impl StreamWriter {
    /// Opens (or creates) the stream in `cfg.dir`: cuts whatever a crash left past the
    /// cursor, and creates the first file of a new stream.
    ///
    /// # Errors
    /// [`StreamError::Io`] or [`StreamError::BadCursor`].
    pub fn open(cfg: StreamConfig) -> Result<StreamWriter, StreamError> {
        let dir = cfg.dir.clone();
        fs::create_dir_all(&dir).map_err(|e| StreamError::io("create", &dir, e))?;
        let _ = fs::remove_file(dir.join(LARGE_TMP));
        let mut numbers = list_files(&cfg)?;
        let cursor = match Cursor::load(&dir)? {
            Some(c) => c,
            None => Cursor::genesis(),
        };
        // Files past the cursor are a cut batch's: remove them, newest first.
        for &n in numbers.iter().rev().filter(|&&n| n >= cursor.next_file) {
            let p = dir.join(StreamConfig::file_name(n));
            fs::remove_file(&p).map_err(|e| StreamError::io("remove", p, e))?;
        }
        numbers.retain(|&n| n < cursor.next_file);
        sync_dir(&dir)?;
        let cur = match cursor.current {
            Some((n, len)) => {
                let path = dir.join(StreamConfig::file_name(n));
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(|e| StreamError::io("open", &path, e))?;
                let have = file
                    .metadata()
                    .map_err(|e| StreamError::io("stat", &path, e))?
                    .len();
                if have < len {
                    return Err(StreamError::BadCursor {
                        path: dir.join(super::cursor::CURSOR_FILE),
                        detail: format!(
                            "{} has {have} bytes, the cursor says {len}",
                            path.display()
                        ),
                    });
                }
                file.set_len(len)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| StreamError::io("truncate", &path, e))?;
                Some(OpenFile {
                    no: n,
                    path,
                    file,
                    len,
                })
            }
            None => None,
        };
        let files = Arc::new(StreamFiles::new(&cfg, View::default()));
        let mut w = StreamWriter {
            cfg,
            cursor: cursor.clone(),
            cur,
            dirty: Vec::new(),
            files,
            numbers,
            cursor_stored_at: Instant::now(),
            stored: (cursor.lower_record_ts, cursor.done_ts),
        };
        if w.numbers.is_empty() {
            // A new stream starts with a file, so that a replica asking for everything
            // finds one whose Gtid_list is empty.
            w.new_file()?;
            w.sync_and_store()?;
        }
        w.publish();
        Ok(w)
    }

    /// The readable side, for replication dumps.
    pub fn files(&self) -> Arc<StreamFiles> {
        self.files.clone()
    }

    /// The settings it writes with.
    pub fn config(&self) -> &StreamConfig {
        &self.cfg
    }

    /// The progress: where the next read of the cluster starts. An idle round's may be
    /// ahead of what is durable by up to a second ([`StreamWriter::stored_position`]).
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// `(lower_record_ts, done_ts)` of the cursor as last made durable: what this node
    /// resumes from after a crash, so the records it may need again
    /// (`TxnClient::stream_publish_position`).
    pub fn stored_position(&self) -> (u64, u64) {
        self.stored
    }

    /// Appends `txns` (commit_ts rising, each above the stream's watermark; equal ones may
    /// follow each other: one region's one-phase commits of disjoint keys), then records
    /// that every transaction committed at or below `done_ts` is in, and that the next read
    /// of the cluster may start at record timestamp `lower_record_ts`. Durable when it
    /// returns (an idle round's watermark at most a second later).
    ///
    /// # Errors
    /// [`StreamError::OutOfOrder`] for a transaction at or below the watermark (nothing is
    /// written then), [`StreamError::Io`] when a write fails (the stream must be reopened).
    pub fn append(
        &mut self,
        txns: &[StreamedTxn],
        done_ts: u64,
        lower_record_ts: u64,
    ) -> Result<(), StreamError> {
        let mut prev = self.cursor.done_ts;
        for t in txns {
            if t.commit_ts <= self.cursor.done_ts || t.commit_ts < prev {
                return Err(StreamError::OutOfOrder {
                    commit_ts: t.commit_ts,
                    done_ts: prev,
                });
            }
            prev = t.commit_ts;
        }
        if prev > done_ts {
            return Err(StreamError::OutOfOrder {
                commit_ts: prev,
                done_ts,
            });
        }
        for t in txns {
            for g in &t.groups {
                self.write_group(t, g)?;
            }
        }
        self.cursor.done_ts = done_ts.max(self.cursor.done_ts);
        // Never lower: a watermark's bound may come out below an earlier one's, but every
        // record below the earlier bound was delivered by the earlier watermark, so the
        // larger bound is as good for the next read, and a position the cluster was told
        // (`stored_position`) never goes back.
        self.cursor.lower_record_ts = self.cursor.lower_record_ts.max(lower_record_ts);
        if !txns.is_empty() || self.cursor_stored_at.elapsed() >= IDLE_CURSOR_EVERY {
            self.sync_and_store()?;
        }
        self.publish();
        Ok(())
    }

    fn write_group(&mut self, t: &StreamedTxn, g: &StreamedGroup) -> Result<(), StreamError> {
        let seq = self.cursor.seq + 1;
        // The group's size does not depend on where it goes (`log_pos` is a fixed-width
        // field), so it decides small or large before anything is encoded or created, and
        // sizes the one buffer the group is encoded into.
        let size = self.group_size(t, g, seq)?;
        if size as u64 >= self.cfg.large_group {
            self.write_large(t, g, seq, size)?;
        } else {
            if self.cur.is_none() {
                self.new_file()?;
            }
            let at = self
                .cur
                .as_ref()
                .map(|c| c.len)
                .ok_or_else(|| StreamError::BadGroup {
                    start_ts: t.start_ts,
                    commit_ts: t.commit_ts,
                    detail: "no current file".into(),
                })?;
            let mut bytes = Vec::with_capacity(size);
            self.encode_group(t, g, seq, at, &mut bytes)?;
            debug_assert_eq!(bytes.len(), size);
            let cur = self.cur.as_mut().ok_or_else(|| StreamError::BadGroup {
                start_ts: t.start_ts,
                commit_ts: t.commit_ts,
                detail: "no current file".into(),
            })?;
            append(cur, &bytes)?;
            crash_point(points::MID_BATCH);
            if self
                .cur
                .as_ref()
                .is_some_and(|c| c.len >= self.cfg.max_file_size)
            {
                self.rotate()?;
            }
        }
        self.cursor.seq = seq;
        Ok(())
    }

    /// A large group of `size` bytes (as [`StreamWriter::group_size`] gives): close the
    /// current file, build the group's own file aside, rename it into place, and close it
    /// with a Rotate too.
    fn write_large(
        &mut self,
        t: &StreamedTxn,
        g: &StreamedGroup,
        seq: u64,
        size: usize,
    ) -> Result<(), StreamError> {
        if self.cur.is_some() {
            self.rotate()?;
        }
        let no = self.cursor.next_file;
        let head = header(&self.cfg, no, self.cursor.seq);
        let at = head.len() as u64;
        // The Rotate's position is known before the group is encoded, so the file's bytes
        // go into one buffer of exactly their length (encoding a 66 MB group into a growing
        // buffer held up to twice that).
        let mut tail = Vec::new();
        rotate_event(no + 1, at + size as u64, &mut tail);
        let mut bytes = Vec::with_capacity(head.len() + size + tail.len());
        bytes.extend_from_slice(&head);
        self.encode_group(t, g, seq, at, &mut bytes)?;
        debug_assert_eq!(bytes.len(), head.len() + size);
        bytes.extend_from_slice(&tail);
        let tmp = self.cfg.dir.join(LARGE_TMP);
        let mut f = File::create(&tmp).map_err(|e| StreamError::io("create", &tmp, e))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| StreamError::io("write", &tmp, e))?;
        crash_point(points::LARGE_BEFORE_RENAME);
        let path = self.cfg.dir.join(StreamConfig::file_name(no));
        fs::rename(&tmp, &path).map_err(|e| StreamError::io("rename", &path, e))?;
        crash_point(points::LARGE_AFTER_RENAME);
        self.numbers.push(no);
        self.cursor.next_file = no + 1;
        self.cursor.current = None;
        // The directory (the new name) is fsynced with the batch.
        Ok(())
    }

    /// Calls `f` with each event of group `g` as the stream writes it (the GTID numbered
    /// `seq`, the group's events, the Xid of a transactional group), all borrowed; the
    /// group's own events are never copied.
    ///
    /// # Errors
    /// [`StreamError::BadGroup`] for an event the writer places itself (nothing is passed to
    /// `f` then).
    fn each_event(
        &self,
        t: &StreamedTxn,
        g: &StreamedGroup,
        seq: u64,
        mut f: impl FnMut(&EventBody),
    ) -> Result<(), StreamError> {
        if let Some(e) = g.events.iter().find(|e| {
            matches!(
                e,
                EventBody::Gtid(_)
                    | EventBody::Xid(_)
                    | EventBody::Rotate(_)
                    | EventBody::FormatDescription(_)
                    | EventBody::GtidList(_)
                    | EventBody::BinlogCheckpoint(_)
            )
        }) {
            return Err(StreamError::BadGroup {
                start_ts: t.start_ts,
                commit_ts: t.commit_ts,
                detail: format!(
                    "a group may not carry a {} event (the writer places those)",
                    e.event_type().name()
                ),
            });
        }
        let mut gtid = GtidEvent::transactional(self.cfg.domain_id, seq);
        if g.standalone {
            gtid.flags2 = GTID_FL_STANDALONE | GTID_FL_DDL;
        }
        f(&EventBody::Gtid(gtid));
        for e in &g.events {
            f(e);
        }
        if !g.standalone {
            f(&EventBody::Xid(t.start_ts));
        }
        Ok(())
    }

    /// The bytes [`StreamWriter::encode_group`] writes for `g`, wherever they go: each event
    /// is encoded alone into a small scratch buffer (the largest event's size), not the
    /// whole group at once.
    ///
    /// # Errors
    /// As [`StreamWriter::each_event`].
    fn group_size(
        &self,
        t: &StreamedTxn,
        g: &StreamedGroup,
        seq: u64,
    ) -> Result<usize, StreamError> {
        let ts = secs(t.commit_ts);
        let sid = self.cfg.server_id;
        let mut scratch = Vec::new();
        let mut size = 0usize;
        self.each_event(t, g, seq, |body| {
            scratch.clear();
            size += Event::encode_body_at(body, ts, sid, 0, ChecksumAlg::Crc32, &mut scratch);
        })?;
        Ok(size)
    }

    /// Appends group `g` (GTID `seq`) to `out` as placed at file offset `at`.
    ///
    /// # Errors
    /// As [`StreamWriter::each_event`] (nothing is appended then).
    fn encode_group(
        &self,
        t: &StreamedTxn,
        g: &StreamedGroup,
        seq: u64,
        mut at: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let ts = secs(t.commit_ts);
        let sid = self.cfg.server_id;
        self.each_event(t, g, seq, |body| {
            let n = Event::encode_body_at(body, ts, sid, at, ChecksumAlg::Crc32, out);
            at += n as u64;
        })
    }

    /// Closes the current file with a Rotate to the next number.
    fn rotate(&mut self) -> Result<(), StreamError> {
        if let Some(mut cur) = self.cur.take() {
            let mut b = Vec::new();
            rotate_event(self.cursor.next_file, cur.len, &mut b);
            append(&mut cur, &b)?;
            self.dirty.push(cur.path.clone());
            self.cursor.current = None;
        }
        Ok(())
    }

    fn new_file(&mut self) -> Result<(), StreamError> {
        let no = self.cursor.next_file;
        let path = self.cfg.dir.join(StreamConfig::file_name(no));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| StreamError::io("create", &path, e))?;
        let mut f = OpenFile {
            no,
            path,
            file,
            len: 0,
        };
        append(&mut f, &header(&self.cfg, no, self.cursor.seq))?;
        self.numbers.push(no);
        self.cursor.next_file = no + 1;
        self.cur = Some(f);
        Ok(())
    }

    fn sync_and_store(&mut self) -> Result<(), StreamError> {
        for p in self.dirty.drain(..) {
            File::open(&p)
                .and_then(|f| f.sync_all())
                .map_err(|e| StreamError::io("fsync", &p, e))?;
        }
        if let Some(c) = &self.cur {
            c.file
                .sync_all()
                .map_err(|e| StreamError::io("fsync", &c.path, e))?;
        }
        sync_dir(&self.cfg.dir)?;
        crash_point(points::BEFORE_CURSOR);
        self.cursor.current = self.cur.as_ref().map(|c| (c.no, c.len));
        self.cursor.store(&self.cfg.dir)?;
        self.cursor_stored_at = Instant::now();
        self.stored = (self.cursor.lower_record_ts, self.cursor.done_ts);
        Ok(())
    }

    /// Removes the files before `target` (`PURGE BINARY LOGS`), oldest first: never the
    /// last file, nor a file a dump has pinned or any after it; for
    /// [`PurgeTarget::Before`], up to the first file last modified at or after the time.
    /// Returns the names removed. The cursor names only the last file and the next
    /// number, so nothing else changes; readers see the shorter list at once.
    ///
    /// # Errors
    /// [`StreamError::NoSuchFile`] for a [`PurgeTarget::To`] that names no file of the
    /// stream (nothing removed); [`StreamError::Io`] when a file cannot be removed (those
    /// before it are gone and unlisted) or the directory not synced.
    pub fn purge(&mut self, target: &PurgeTarget) -> Result<Vec<String>, StreamError> {
        let files = Arc::clone(&self.files);
        // Held while deciding, removing and publishing: a dump cannot pin a file about to
        // go, nor one gone but still listed.
        let pins = files.pins.lock();
        let keep_from = match target {
            PurgeTarget::To(name) => StreamConfig::file_number(name)
                .filter(|n| self.numbers.contains(n))
                .ok_or_else(|| StreamError::NoSuchFile { name: name.clone() })?,
            PurgeTarget::Before(_) => u32::MAX,
        };
        let last = self.numbers.last().copied().unwrap_or(0);
        let pinned = pins.keys().next().copied().unwrap_or(u32::MAX);
        let mut removed = Vec::new();
        let mut failed = None;
        for &n in &self.numbers {
            if n >= keep_from || n >= last || n >= pinned {
                break;
            }
            let path = self.cfg.dir.join(StreamConfig::file_name(n));
            match purge_file(&path, target) {
                Ok(true) => removed.push(StreamConfig::file_name(n)),
                Ok(false) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // What went is unlisted whatever stopped the loop, so the list and the files
        // never disagree.
        self.numbers.drain(..removed.len());
        if !removed.is_empty() {
            self.publish();
        }
        drop(pins);
        if let Some(e) = failed {
            return Err(e);
        }
        if !removed.is_empty() {
            sync_dir(&self.cfg.dir)?;
        }
        Ok(removed)
    }

    fn publish(&self) {
        let end = match &self.cur {
            Some(c) => (c.no, c.len),
            None => {
                let last = self.numbers.last().copied().unwrap_or(0);
                let len = fs::metadata(self.cfg.dir.join(StreamConfig::file_name(last)))
                    .map_or(0, |m| m.len());
                (last, len)
            }
        };
        self.files.publish(View {
            files: self.numbers.clone(),
            end,
            seq: self.cursor.seq,
            done_ts: self.cursor.done_ts,
        });
    }
}

fn append(f: &mut OpenFile, bytes: &[u8]) -> Result<(), StreamError> {
    use std::os::unix::fs::FileExt;
    f.file
        .write_all_at(bytes, f.len)
        .map_err(|e| StreamError::io("write", &f.path, e))?;
    f.len += bytes.len() as u64;
    Ok(())
}

/// A file's leading bytes: magic, Format_description, Gtid_list, Binlog_checkpoint.
fn header(cfg: &StreamConfig, no: u32, last_seq: u64) -> Vec<u8> {
    let mut out = BINLOG_MAGIC.to_vec();
    let sid = cfg.server_id;
    let gtids = if last_seq == 0 {
        Vec::new()
    } else {
        vec![Gtid {
            domain_id: cfg.domain_id,
            server_id: sid,
            seq_no: last_seq,
        }]
    };
    for body in [
        EventBody::FormatDescription(FormatDescription::mariadb(ChecksumAlg::Crc32, 0)),
        EventBody::GtidList(GtidList { flags: 0, gtids }),
        EventBody::BinlogCheckpoint(BinlogCheckpoint {
            file: StreamConfig::file_name(no),
        }),
    ] {
        let at = out.len() as u64;
        Event::new(body, 0, sid).encode_at(at, ChecksumAlg::Crc32, &mut out);
    }
    out
}

fn rotate_event(next: u32, at: u64, out: &mut Vec<u8>) {
    let body = EventBody::Rotate(Rotate {
        position: 4,
        next_file: StreamConfig::file_name(next),
    });
    // The server id does not matter to readers of a Rotate; 0 keeps it out of the way.
    Event::new(body, 0, 0).encode_at(at, ChecksumAlg::Crc32, out);
}

/// The stream files in `cfg.dir`, by number.
/// Removes the stream file at `path` for `target` (already known to be before its bound):
/// `false` when a [`PurgeTarget::Before`] finds it modified at or after its time. A file
/// already gone counts as removed.
fn purge_file(path: &std::path::Path, target: &PurgeTarget) -> Result<bool, StreamError> {
    if let PurgeTarget::Before(t) = target {
        match fs::metadata(path).and_then(|m| m.modified()) {
            Ok(modified) if modified >= *t => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(StreamError::io("stat", path, e)),
        }
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(StreamError::io("remove", path, e)),
    }
}

fn list_files(cfg: &StreamConfig) -> Result<Vec<u32>, StreamError> {
    let mut out = Vec::new();
    let rd = fs::read_dir(&cfg.dir).map_err(|e| StreamError::io("list", &cfg.dir, e))?;
    for e in rd {
        let e = e.map_err(|e| StreamError::io("list", &cfg.dir, e))?;
        if let Some(n) = e.file_name().to_str().and_then(StreamConfig::file_number) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}
