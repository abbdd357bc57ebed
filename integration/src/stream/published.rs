//! [`StreamFiles`]: the part of a node's stream that readers (replication dumps) may see:
//! its files and the end of its complete, durable groups.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::config::StreamConfig;
use super::error::StreamError;
use crate::mysql::{FilePin, PurgeTarget, ReplicationError};

/// How long `PURGE BINARY LOGS` waits for the stream's writer to carry it out (the writer
/// looks between two rounds, every `--stream-round-ms` (200 ms), unless a round is slow).
const PURGE_WAIT: Duration = Duration::from_secs(10);

/// A purge asked for by a connection (with an id of its own), and where its answer goes.
pub(crate) type PurgeRequest = (
    u64,
    PurgeTarget,
    std::sync::mpsc::SyncSender<Result<Vec<String>, StreamError>>,
);

/// What the writer has made durable, shared with readers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct View {
    /// File numbers in order (the last may still grow).
    pub(crate) files: Vec<u32>,
    /// End of the complete groups: file number and offset.
    pub(crate) end: (u32, u64),
    /// Last GTID sequence number written (0: none).
    pub(crate) seq: u64,
    /// Every transaction committed at or below this timestamp is in the files.
    pub(crate) done_ts: u64,
}

/// The readable side of a node's replica stream (cheap to share: `Arc<StreamFiles>`).
///
/// # Invariants
/// - Every byte before [`StreamFiles::end`] is durable and never changes: a reader may
///   send it to a replica.
/// - Files are listed in order; a file that ends with a Rotate names the next one, which
///   may appear only later (when the next group is written).
#[derive(Debug)]
pub struct StreamFiles {
    dir: PathBuf,
    server_id: u32,
    domain_id: u32,
    view: Mutex<View>,
    grew: Condvar,
    /// Files pinned by dumps, with how many pins each (`ReplicationSource::pin`). The
    /// writer's purge holds this lock while it decides and removes, so no pin slips in.
    pub(crate) pins: Arc<Mutex<BTreeMap<u32, usize>>>,
    /// A purge waiting for the writer.
    pub(crate) purge_request: Mutex<Option<PurgeRequest>>,
    /// The id of the next purge request.
    purge_ids: std::sync::atomic::AtomicU64,
}

impl StreamFiles {
    pub(crate) fn new(cfg: &StreamConfig, view: View) -> StreamFiles {
        StreamFiles {
            dir: cfg.dir.clone(),
            server_id: cfg.server_id,
            domain_id: cfg.domain_id,
            view: Mutex::new(view),
            grew: Condvar::new(),
            pins: Arc::new(Mutex::new(BTreeMap::new())),
            purge_request: Mutex::new(None),
            purge_ids: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn publish(&self, view: View) {
        *self.view.lock() = view;
        self.grew.notify_all();
    }

    /// The files in order: basename and path.
    pub fn files(&self) -> Vec<(String, PathBuf)> {
        self.view
            .lock()
            .files
            .iter()
            .map(|&n| {
                let name = StreamConfig::file_name(n);
                let path = self.dir.join(&name);
                (name, path)
            })
            .collect()
    }

    /// The end of the complete groups: basename and offset.
    pub fn end(&self) -> (String, u64) {
        let (n, off) = self.view.lock().end;
        (StreamConfig::file_name(n), off)
    }

    /// Blocks until [`StreamFiles::end`] is past `(file, offset)` or `timeout` passed;
    /// returns the end then. A `file` that is not a stream file name counts as before
    /// every file.
    pub fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64) {
        let at = (StreamConfig::file_number(file).unwrap_or(0), offset);
        let deadline = Instant::now() + timeout;
        let mut v = self.view.lock();
        while v.end <= at {
            if self.grew.wait_until(&mut v, deadline).timed_out() {
                break;
            }
        }
        (StreamConfig::file_name(v.end.0), v.end.1)
    }

    /// The server id of the stream's events.
    pub fn server_id(&self) -> u32 {
        self.server_id
    }

    /// The stream's GTID domain.
    pub fn domain_id(&self) -> u32 {
        self.domain_id
    }

    /// The last GTID sequence number in the files (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.view.lock().seq
    }

    /// Every transaction committed at or below this timestamp is in the files.
    pub fn done_ts(&self) -> u64 {
        self.view.lock().done_ts
    }
}

impl crate::mysql::ReplicationSource for StreamFiles {
    fn files(&self) -> Vec<(String, PathBuf)> {
        StreamFiles::files(self)
    }

    fn end(&self) -> (String, u64) {
        StreamFiles::end(self)
    }

    fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64) {
        StreamFiles::wait_past(self, file, offset, timeout)
    }

    fn server_id(&self) -> u32 {
        self.server_id
    }

    /// A replica that moves to this node after another one served it may ask for a GTID
    /// this node's copy has not reached yet (its follower runs a round behind, or it just
    /// restarted and catches up): wait for it rather than answer 1236, which stops the
    /// replica for good.
    fn start_grace(&self) -> Duration {
        START_GRACE
    }

    fn pin(&self, file: &str) -> Result<FilePin, ReplicationError> {
        let gone = || ReplicationError::FileGone {
            file: file.to_string(),
        };
        let n = StreamConfig::file_number(file).ok_or_else(gone)?;
        let mut pins = self.pins.lock();
        if !self.view.lock().files.contains(&n) {
            return Err(gone());
        }
        *pins.entry(n).or_insert(0) += 1;
        drop(pins);
        let pins = Arc::clone(&self.pins);
        Ok(FilePin::new(move || {
            let mut pins = pins.lock();
            if let Some(c) = pins.get_mut(&n) {
                *c -= 1;
                if *c == 0 {
                    pins.remove(&n);
                }
            }
        }))
    }

    /// Handed to the stream's writer, which carries it out between two rounds.
    fn purge(&self, target: PurgeTarget) -> Result<Vec<String>, ReplicationError> {
        let failed = |detail: String| ReplicationError::PurgeFailed { detail };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let id = {
            let mut slot = self.purge_request.lock();
            if slot.is_some() {
                return Err(failed("another PURGE BINARY LOGS is in progress".into()));
            }
            let id = self
                .purge_ids
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *slot = Some((id, target, tx));
            id
        };
        match rx.recv_timeout(PURGE_WAIT) {
            Ok(Ok(removed)) => Ok(removed),
            Ok(Err(StreamError::NoSuchFile { name })) => {
                Err(ReplicationError::PurgeTargetNotFound { file: name })
            }
            Ok(Err(e)) => Err(failed(e.to_string())),
            Err(_) => {
                // Only this request, if the writer has not taken it yet.
                let mut slot = self.purge_request.lock();
                if slot.as_ref().is_some_and(|(mine, _, _)| *mine == id) {
                    slot.take();
                    return Err(failed(format!(
                        "the replica stream's writer did not take the purge within \
                         {PURGE_WAIT:?} (is its follower stopped?); nothing was removed"
                    )));
                }
                Err(failed(format!(
                    "the replica stream's writer did not finish the purge within \
                     {PURGE_WAIT:?}; files may still be removed"
                )))
            }
        }
    }
}

/// How long a dump waits for a requested GTID this node's copy does not have yet.
pub const START_GRACE: Duration = Duration::from_secs(30);
