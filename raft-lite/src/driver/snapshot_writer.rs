//! The node's background snapshot writer: encodes and persists the snapshots its groups
//! take of themselves, so neither the encoding of the state machine's data
//! ([`super::StateMachine::snapshot_deferred`]) nor the file write and its fsync stall the
//! driver thread (and with it every other group of the node). TiKV likewise generates
//! snapshots on a region worker, not on its raftstore thread.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use bytes::Bytes;
use crossbeam_channel::Sender;

use super::node::Input;
use crate::{Error, NodeId, Result, Snapshot, SnapshotMeta, SnapshotPersister};

/// A snapshot taken at `meta.index` whose data is not encoded yet.
pub(crate) struct PendingSnapshot {
    pub(crate) meta: SnapshotMeta,
    /// Encodes the state machine's view captured at `meta.index` (or fails: a marker
    /// whose state could not be made durable).
    pub(crate) encode: Box<dyn FnOnce() -> Result<Bytes> + Send>,
}

impl PendingSnapshot {
    /// Runs the encoding.
    ///
    /// # Errors
    /// [`Error::WriteTooLarge`] if the data exceeds [`crate::MAX_BYTES_LEN`] (followers
    /// could not decode it, nor the store read it back), [`Error::StateMachine`] if the
    /// encoding panicked or failed. Either way nothing was written: the log stays as it is.
    pub(crate) fn encode(self) -> Result<Snapshot> {
        let data =
            catch_unwind(AssertUnwindSafe(self.encode)).map_err(|_| Error::StateMachine {
                message: "snapshot encoding panicked".to_owned(),
            })??;
        if data.len() > crate::MAX_BYTES_LEN {
            return Err(Error::WriteTooLarge {
                what: "snapshot data",
                size: data.len(),
                limit: crate::MAX_BYTES_LEN,
            });
        }
        Ok(Snapshot {
            meta: self.meta,
            data,
        })
    }
}

/// A snapshot to encode and persist (the writer thread's).
struct Job {
    group: u64,
    pending: PendingSnapshot,
}

/// One thread per node. Each finished job comes back to the driver as
/// [`Input::SnapshotPersisted`]; the driver then refers to the file in its log and
/// compacts the group (or discards the file).
///
/// Snapshots for a follower (a durable group's) are streamed by a thread of their own
/// (`super::snapshot_stream`).
pub(crate) struct SnapshotWriter {
    jobs: Option<Sender<Job>>,
    /// Set when the node stops: jobs not yet started are dropped, files written after it
    /// are deleted (nobody will refer to them).
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SnapshotWriter {
    /// Starts the thread of node `node`; results go to the driver through `done`.
    ///
    /// # Errors
    /// [`Error::Io`] if the thread cannot be spawned.
    pub(crate) fn start(
        node: NodeId,
        persister: Arc<dyn SnapshotPersister>,
        done: Sender<Input>,
    ) -> Result<SnapshotWriter> {
        let (jobs, rx) = crossbeam_channel::unbounded::<Job>();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = stopping.clone();
        let thread = std::thread::Builder::new()
            .name(format!("raft-snap-{node}"))
            .spawn(move || {
                for job in rx {
                    if stop.load(Ordering::Acquire) {
                        continue;
                    }
                    let meta = job.pending.meta.clone();
                    let (snapshot, r) = match job.pending.encode() {
                        Ok(s) => {
                            // The encoding may have taken a while: no file once stopping.
                            if stop.load(Ordering::Acquire) {
                                continue;
                            }
                            let r = persister.persist(job.group, &s);
                            (s, r)
                        }
                        // Only the index is read back on failure: no data is carried.
                        Err(e) => (
                            Snapshot {
                                meta,
                                data: Bytes::new(),
                            },
                            Err(e),
                        ),
                    };
                    let abandoned = stop.load(Ordering::Acquire);
                    let sent = !abandoned
                        && done
                            .send(Input::SnapshotPersisted(
                                job.group,
                                snapshot,
                                r.as_ref().map_err(Error::duplicate).cloned(),
                            ))
                            .is_ok();
                    if !sent && let Ok(f) = &r {
                        persister.discard(f);
                    }
                }
            })
            .map_err(|e| Error::io("raft snapshot writer thread", e))?;
        Ok(SnapshotWriter {
            jobs: Some(jobs),
            stopping,
            thread: Some(thread),
        })
    }

    /// Queues `pending` of `group`; false if the writer is gone (stopped).
    pub(crate) fn submit(&self, group: u64, pending: PendingSnapshot) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|j| j.send(Job { group, pending }).is_ok())
    }

    /// Stops the thread after the job it is writing, if any (so no file is written once
    /// the log is closed) and waits for it.
    pub(crate) fn stop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        self.stop();
    }
}
