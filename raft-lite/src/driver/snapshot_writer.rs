//! The node's background snapshot writer: persists the snapshots its groups take of
//! themselves, so the file write and its fsync never stall the driver thread (and with it
//! every other group of the node). TiKV likewise generates snapshots on a region worker,
//! not on its raftstore thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;

use super::node::Input;
use crate::{Error, NodeId, Result, Snapshot, SnapshotPersister};

/// A snapshot to persist.
struct Job {
    group: u64,
    snapshot: Snapshot,
}

/// One thread per node. Each finished job comes back to the driver as
/// [`Input::SnapshotPersisted`]; the driver then refers to the file in its log and
/// compacts the group (or discards the file).
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
                    let r = persister.persist(job.group, &job.snapshot);
                    let abandoned = stop.load(Ordering::Acquire);
                    let sent = !abandoned
                        && done
                            .send(Input::SnapshotPersisted(
                                job.group,
                                job.snapshot,
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

    /// Queues `snapshot` of `group`; false if the writer is gone (stopped).
    pub(crate) fn submit(&self, group: u64, snapshot: Snapshot) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|j| j.send(Job { group, snapshot }).is_ok())
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
