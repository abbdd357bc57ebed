//! Streamed snapshots for followers of a durable group: the leader's sender, which hands
//! the state machine's stream ([`StateMachine::snapshot_stream`]) to the follower in
//! chunks with a small window of unacknowledged ones, and the follower's spool, which
//! writes the chunks to a file and installs the snapshot once the last one arrived, as a
//! snapshot whose data only refers to that file. So neither side ever holds a whole
//! snapshot in memory, as TiKV sends snapshots as a stream of chunks to a file on the
//! receiver (its snap manager) and applies them from there.
//!
//! Durability: the follower's file is synced and renamed into place before the snapshot
//! that refers to it goes through the Ready path (which writes the reference to the log
//! before the state machine reads the file); the file stays until the group's log holds a
//! newer snapshot, so a crash while the state machine applies it applies it again at the
//! restart.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::node::Input;
use super::state_machine::{SnapshotStream, StateMachine};
use crate::transport::Transport;
use crate::{Error, Message, MessageKind, NodeId, Result, Snapshot, SnapshotMeta};

/// The size of one [`crate::MessageKind::SnapshotChunk`]'s data (the last may be smaller).
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// Chunks sent and not yet acknowledged, at most: what the sender holds in memory.
const WINDOW: usize = 4;

/// Unacknowledged chunks are sent again after this long without an answer, then after
/// twice as long each time (up to [`RESEND_MAX`]), so a slow follower is not buried under
/// copies of the window.
const RESEND_AFTER: Duration = Duration::from_millis(500);

/// The longest wait between two resends.
const RESEND_MAX: Duration = Duration::from_secs(4);

/// A stream without any acknowledgement for this long is given up (the follower is gone,
/// partitioned or stuck; it asks again later).
const GIVE_UP_AFTER: Duration = Duration::from_secs(15);

/// Snapshots being streamed from one node at a time, at most: each holds a view of its
/// state machine (a storage snapshot), a thread and up to [`WINDOW`] chunks. A follower
/// beyond it asks again at its next heartbeat answer.
pub(crate) const MAX_STREAMS: usize = 4;

/// A receiving follower syncs its file every this many bytes, so the sync before the
/// install (on the driver thread) is short.
const SYNC_EVERY: u64 = 64 << 20;

/// A partly received snapshot with no chunk for this long is dropped (its leader gave up).
pub(crate) const INCOMING_EXPIRES: Duration = Duration::from_secs(30);

/// Snapshot data that refers to a spool file: this prefix, the file's length (u64) and
/// CRC-32 (u32), big-endian, then its name. A state machine's own snapshot starting with
/// these bytes would be mistaken for one; the leading zero byte and the text make that
/// implausible for any encoding.
const FILE_REF_MAGIC: &[u8] = b"\0raft-lite spooled snapshot\0";

/// Snapshot data of a streamed snapshot received in memory (a store without a spool
/// directory): this prefix, then the stream's bytes.
const INLINE_MAGIC: &[u8] = b"\0raft-lite streamed snapshot\0";

/// A follower's answer to a chunk as the driver hands it to the stream's thread: the
/// stream's id, the highest chunk received in order, and whether the follower wants more.
pub(crate) type ChunkAck = (u64, u32, bool);

/// Where a stream for a follower failed.
#[derive(Debug)]
pub(crate) enum StreamError {
    /// Sending: the follower refused, went quiet, or the node stopped. Worth trying again
    /// soon.
    Transfer(String),
    /// The state machine could not produce its state (or panicked): not retried for a
    /// while, since every attempt reads the whole state.
    Produce(String),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Transfer(m) => write!(f, "sending the snapshot: {m}"),
            StreamError::Produce(m) => write!(f, "producing the snapshot: {m}"),
        }
    }
}

/// Who a stream goes to and what it is.
pub(crate) struct StreamTarget {
    /// The stream's id ([`MessageKind::SnapshotChunk::id`]).
    pub(crate) id: u64,
    pub(crate) group: u64,
    pub(crate) from: NodeId,
    pub(crate) to: NodeId,
    /// The leader's term when the stream started: the follower installs the snapshot as
    /// a message of that term, which Raft refuses if a newer leader exists.
    pub(crate) term: u64,
    pub(crate) meta: SnapshotMeta,
}

/// Starts a thread that streams `produce` to `target.to`; the outcome (the bytes sent)
/// comes back to the driver as [`Input::SnapshotStreamed`], whatever happens (a panic
/// too). `acks` carries the follower's [`MessageKind::SnapshotChunkAck`]s as
/// `(id, seq, accepted)`; those of another stream are ignored.
///
/// # Errors
/// [`Error::Io`] if the thread cannot be spawned.
pub(crate) fn spawn_stream(
    target: StreamTarget,
    produce: SnapshotStream,
    transport: Arc<dyn Transport>,
    acks: Receiver<ChunkAck>,
    done: Sender<Input>,
) -> Result<()> {
    let name = format!("raft-snap-send-{}-{}", target.group, target.to);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let (group, to, id) = (target.group, target.to, target.id);
            let r = catch_unwind(AssertUnwindSafe(|| {
                stream(&target, produce, transport, acks)
            }))
            .unwrap_or_else(|_| Err(StreamError::Transfer("the sender panicked".into())));
            let _ = done.send(Input::SnapshotStreamed(group, to, id, r));
        })
        .map(|_| ())
        .map_err(|e| Error::io("raft snapshot sender thread", e))
}

/// Runs one stream to its end.
fn stream(
    target: &StreamTarget,
    produce: SnapshotStream,
    transport: Arc<dyn Transport>,
    acks: Receiver<ChunkAck>,
) -> std::result::Result<u64, StreamError> {
    let mut s = ChunkSender {
        target,
        transport,
        acks,
        next_seq: 0,
        unacked: VecDeque::new(),
        buf: Vec::with_capacity(SNAPSHOT_CHUNK_BYTES),
        wait: RESEND_AFTER,
        silent: Duration::ZERO,
        sent: 0,
        failed: None,
    };
    let produced = catch_unwind(AssertUnwindSafe(|| {
        produce(&mut |piece: &[u8]| s.write(piece))
    }));
    if let Some(e) = s.failed.take() {
        return Err(StreamError::Transfer(e));
    }
    match produced {
        Err(_) => Err(StreamError::Produce("the state machine panicked".into())),
        Ok(Err(e)) => Err(StreamError::Produce(e)),
        Ok(Ok(())) => s
            .finish()
            .map(|()| s.sent)
            .map_err(|e| StreamError::Transfer(e.to_string())),
    }
}

/// The sending half: cuts the state machine's pieces into chunks and keeps at most
/// [`WINDOW`] unacknowledged ones.
struct ChunkSender<'a> {
    target: &'a StreamTarget,
    transport: Arc<dyn Transport>,
    acks: Receiver<ChunkAck>,
    next_seq: u32,
    /// Sent, not yet acknowledged: `(seq, last, data)`, oldest first.
    unacked: VecDeque<(u32, bool, Bytes)>,
    /// The chunk being filled.
    buf: Vec<u8>,
    /// How long to wait for an answer before resending the window.
    wait: Duration,
    /// How long the follower has been silent.
    silent: Duration,
    /// Bytes of the stream so far.
    sent: u64,
    /// Why sending failed, when it did (the state machine sees only an I/O error).
    failed: Option<String>,
}

impl ChunkSender<'_> {
    fn write(&mut self, mut piece: &[u8]) -> std::io::Result<()> {
        if let Some(e) = &self.failed {
            return Err(std::io::Error::other(e.clone()));
        }
        while !piece.is_empty() {
            let take = (SNAPSHOT_CHUNK_BYTES - self.buf.len()).min(piece.len());
            self.buf.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            if self.buf.len() == SNAPSHOT_CHUNK_BYTES
                && let Err(e) = self.emit(false)
            {
                self.failed = Some(e.to_string());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Sends the chunk being filled (after waiting for room in the window).
    fn emit(&mut self, last: bool) -> std::io::Result<()> {
        while self.unacked.len() >= WINDOW {
            self.wait_ack()?;
        }
        let next = if last { 0 } else { SNAPSHOT_CHUNK_BYTES };
        let data = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(next)));
        let seq = self.next_seq;
        self.next_seq = seq
            .checked_add(1)
            .ok_or_else(|| std::io::Error::other("snapshot has too many chunks"))?;
        self.sent += data.len() as u64;
        self.send(seq, last, data.clone());
        self.unacked.push_back((seq, last, data));
        Ok(())
    }

    fn send(&self, seq: u32, last: bool, data: Bytes) {
        let t = self.target;
        self.transport.send(
            t.group,
            Message {
                from: t.from,
                to: t.to,
                term: t.term,
                kind: MessageKind::SnapshotChunk {
                    id: t.id,
                    meta: t.meta.clone(),
                    seq,
                    last,
                    data,
                },
            },
        );
    }

    /// Waits for one acknowledgement; resends the window after [`RESEND_AFTER`] of
    /// silence, doubling the wait each time (chunks or their answers may be lost, or the
    /// follower may be busy), and gives up after [`GIVE_UP_AFTER`] of silence.
    fn wait_ack(&mut self) -> std::io::Result<()> {
        match self.acks.recv_timeout(self.wait) {
            Ok((id, _, _)) if id != self.target.id => Ok(()),
            Ok((_, seq, true)) => {
                let before = self.unacked.len();
                while self.unacked.front().is_some_and(|(s, _, _)| *s <= seq) {
                    self.unacked.pop_front();
                }
                if self.unacked.len() < before {
                    self.wait = RESEND_AFTER;
                    self.silent = Duration::ZERO;
                }
                Ok(())
            }
            Ok((_, _, false)) => Err(std::io::Error::other("the follower refused the snapshot")),
            Err(RecvTimeoutError::Timeout) => {
                self.silent += self.wait;
                if self.silent >= GIVE_UP_AFTER {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no answer from the follower",
                    ));
                }
                self.wait = (self.wait * 2).min(RESEND_MAX);
                for (seq, last, data) in &self.unacked {
                    self.send(*seq, *last, data.clone());
                }
                Ok(())
            }
            Err(RecvTimeoutError::Disconnected) => Err(std::io::Error::other("the node stopped")),
        }
    }

    /// Sends the last chunk and waits until every chunk is acknowledged.
    fn finish(&mut self) -> std::io::Result<()> {
        self.emit(true)?;
        while !self.unacked.is_empty() {
            self.wait_ack()?;
        }
        Ok(())
    }
}

/// The follower's directory of received snapshots (`None`: they are received in memory,
/// for stores that keep no files of their own).
#[derive(Debug)]
pub(crate) struct Spool {
    dir: Option<PathBuf>,
    /// Groups that may have received files here: [`Spool::gc`] lists the directory only
    /// for them, not at every compaction of every durable group.
    holding: std::collections::BTreeSet<u64>,
}

/// A snapshot being received.
pub(crate) struct Incoming {
    /// The stream's id.
    pub(crate) id: u64,
    pub(crate) meta: SnapshotMeta,
    pub(crate) from: NodeId,
    pub(crate) term: u64,
    /// The next chunk expected.
    pub(crate) next: u32,
    /// When the last chunk was written.
    pub(crate) last_chunk: std::time::Instant,
    sink: Sink,
}

enum Sink {
    File {
        file: std::io::BufWriter<std::fs::File>,
        dir: PathBuf,
        name: String,
        crc: crc32fast::Hasher,
        len: u64,
        /// Bytes written since the last sync.
        unsynced: u64,
    },
    Memory(Vec<u8>),
}

fn file_name(group: u64, meta: &SnapshotMeta) -> String {
    format!("g{group:016x}-{:016x}-{:016x}", meta.index, meta.term)
}

fn group_prefix(group: u64) -> String {
    format!("g{group:016x}-")
}

impl Spool {
    /// Opens `dir` (created if missing), deleting partly received files.
    ///
    /// # Errors
    /// [`Error::Io`] naming the directory.
    pub(crate) fn open(dir: Option<PathBuf>) -> Result<Spool> {
        let mut holding = std::collections::BTreeSet::new();
        if let Some(d) = &dir {
            if !d.exists() {
                std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
                // The directory entry must be durable before a file in it is referred to.
                if let Some(parent) = d.parent() {
                    std::fs::File::open(parent)
                        .and_then(|f| f.sync_all())
                        .map_err(|e| Error::io(parent, e))?;
                }
            }
            for entry in std::fs::read_dir(d).map_err(|e| Error::io(d, e))? {
                let path = entry.map_err(|e| Error::io(d, e))?.path();
                if path.extension().is_some_and(|x| x == "part") {
                    let _ = std::fs::remove_file(&path);
                } else if let Some(group) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix('g'))
                    .and_then(|n| n.get(..16))
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                {
                    holding.insert(group);
                }
            }
        }
        Ok(Spool { dir, holding })
    }

    /// `group` now has a received file here (its snapshot was just installed).
    pub(crate) fn received(&mut self, group: u64) {
        if self.dir.is_some() {
            self.holding.insert(group);
        }
    }

    /// Where spooled files are, if anywhere.
    pub(crate) fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Starts receiving the snapshot `meta` of `group` from `from` in `term`.
    pub(crate) fn begin(
        &self,
        group: u64,
        id: u64,
        meta: SnapshotMeta,
        from: NodeId,
        term: u64,
    ) -> std::io::Result<Incoming> {
        let sink = match &self.dir {
            Some(dir) => {
                let name = file_name(group, &meta);
                let file = std::fs::File::create(dir.join(format!("{name}.part")))?;
                Sink::File {
                    file: std::io::BufWriter::new(file),
                    dir: dir.clone(),
                    name,
                    crc: crc32fast::Hasher::new(),
                    len: 0,
                    unsynced: 0,
                }
            }
            None => Sink::Memory(INLINE_MAGIC.to_vec()),
        };
        Ok(Incoming {
            id,
            last_chunk: std::time::Instant::now(),
            meta,
            from,
            term,
            next: 0,
            sink,
        })
    }

    /// Deletes the received files of `group` except the one `keep` (a snapshot's data)
    /// refers to: called whenever the group's log starts at a new snapshot, so a file
    /// lives exactly while the log may still need it.
    pub(crate) fn gc(&mut self, group: u64, keep: Option<&[u8]>) {
        let Some(dir) = &self.dir else {
            return;
        };
        if !self.holding.contains(&group) {
            return;
        }
        let kept = keep.and_then(|d| FileRef::decode(d).ok().flatten().map(|r| r.name));
        if kept.is_none() {
            self.holding.remove(&group);
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let prefix = group_prefix(group);
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".snap") else {
                continue;
            };
            if stem.starts_with(&prefix)
                && kept.as_deref() != Some(stem)
                && let Err(e) = std::fs::remove_file(entry.path())
            {
                tracing::warn!(group, file = %name, error = %e, "raft: spooled snapshot not deleted");
            }
        }
    }
}

impl Incoming {
    /// Appends the next chunk.
    pub(crate) fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::File {
                file,
                crc,
                len,
                unsynced,
                ..
            } => {
                file.write_all(data)?;
                crc.update(data);
                *len += data.len() as u64;
                *unsynced += data.len() as u64;
                if *unsynced >= SYNC_EVERY {
                    file.flush()?;
                    file.get_ref().sync_data()?;
                    *unsynced = 0;
                }
            }
            Sink::Memory(buf) => buf.extend_from_slice(data),
        }
        self.next += 1;
        self.last_chunk = std::time::Instant::now();
        Ok(())
    }

    /// Makes the received snapshot durable (file synced, renamed into place, directory
    /// synced) and returns the snapshot to install: its data refers to the file.
    pub(crate) fn finish(self) -> std::io::Result<Snapshot> {
        let data = match self.sink {
            Sink::File {
                file,
                dir,
                name,
                crc,
                len,
                ..
            } => {
                let file = file.into_inner().map_err(|e| e.into_error())?;
                file.sync_all()?;
                drop(file);
                std::fs::rename(
                    dir.join(format!("{name}.part")),
                    dir.join(format!("{name}.snap")),
                )?;
                std::fs::File::open(&dir)?.sync_all()?;
                FileRef {
                    len,
                    crc: crc.finalize(),
                    name,
                }
                .encode()
            }
            Sink::Memory(buf) => Bytes::from(buf),
        };
        Ok(Snapshot {
            meta: self.meta,
            data,
        })
    }

    /// Drops a partly received snapshot (its file).
    pub(crate) fn abandon(self) {
        if let Sink::File {
            file, dir, name, ..
        } = self.sink
        {
            drop(file);
            let _ = std::fs::remove_file(dir.join(format!("{name}.part")));
        }
    }
}

/// A spool file as snapshot data refers to it.
#[derive(Debug, PartialEq, Eq)]
struct FileRef {
    len: u64,
    crc: u32,
    name: String,
}

impl FileRef {
    fn encode(&self) -> Bytes {
        let mut out = FILE_REF_MAGIC.to_vec();
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.crc.to_be_bytes());
        out.extend_from_slice(self.name.as_bytes());
        Bytes::from(out)
    }

    /// `None`: not a reference (ordinary data).
    fn decode(data: &[u8]) -> std::result::Result<Option<FileRef>, String> {
        let Some(rest) = data.strip_prefix(FILE_REF_MAGIC) else {
            return Ok(None);
        };
        if rest.len() < 12 {
            return Err("a spooled snapshot's reference is truncated".into());
        }
        let (len, rest) = rest.split_at(8);
        let (crc, name) = rest.split_at(4);
        let name = std::str::from_utf8(name)
            .ok()
            .filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && *n != "..")
            .ok_or("a spooled snapshot's reference names no valid file")?;
        Ok(Some(FileRef {
            len: u64::from_be_bytes(len.try_into().map_err(|_| "bad length")?),
            crc: u32::from_be_bytes(crc.try_into().map_err(|_| "bad crc")?),
            name: name.to_owned(),
        }))
    }
}

/// A reader that checks the length and CRC-32 of what it read.
struct Checked<R> {
    inner: R,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// Hands a snapshot to the state machine: a streamed one (a spool file, or inline) to
/// [`StateMachine::restore_from`], any other to [`StateMachine::restore`].
///
/// # Errors
/// A spool file that is missing, damaged (length or CRC differ from the reference, when
/// the state machine read it to its end) or refused by the state machine.
pub(crate) fn restore(
    sm: &mut dyn StateMachine,
    snap: &Snapshot,
    spool: Option<&Path>,
) -> std::result::Result<(), String> {
    let index = snap.meta.index;
    if let Some(stream) = snap.data.strip_prefix(INLINE_MAGIC) {
        return sm.restore_from(index, &mut &stream[..]);
    }
    let Some(r) = FileRef::decode(&snap.data)? else {
        sm.restore(index, &snap.data);
        return Ok(());
    };
    let dir = spool.ok_or("a spooled snapshot on a store without a spool directory")?;
    let path = dir.join(format!("{}.snap", r.name));
    let file = std::fs::File::open(&path)
        .map_err(|e| format!("spooled snapshot {}: {e}", path.display()))?;
    // A file of the wrong length is refused before the state machine reads any of it.
    let on_disk = file
        .metadata()
        .map_err(|e| format!("spooled snapshot {}: {e}", path.display()))?
        .len();
    if on_disk != r.len {
        return Err(format!(
            "spooled snapshot {}: {on_disk} bytes where {} were received",
            path.display(),
            r.len
        ));
    }
    let mut reader = Checked {
        inner: std::io::BufReader::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
        len: 0,
    };
    sm.restore_from(index, &mut reader)?;
    // A state machine that holds the index already reads nothing; one that read to the
    // end must have read exactly the file that was received.
    let mut rest = [0u8; 1];
    let at_end = reader.len > 0 && matches!(reader.read(&mut rest), Ok(0));
    if at_end && (reader.len != r.len || reader.crc.finalize() != r.crc) {
        return Err(format!(
            "spooled snapshot {}: {} bytes read where {} were received, or its checksum differs",
            path.display(),
            reader.len,
            r.len
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "snapshot_stream_test.rs"]
mod snapshot_stream_test;
