//! [`BatchPool`]: the threads that carry one transaction's region batches at once
//! (`dispatch.rs`, [`ClientCore::run_groups_concurrently`]).
//!
//! # Why not a general-purpose pool
//!
//! A region batch is a blocking request that waits a Raft round (milliseconds) on its node,
//! and a transaction has only a few of them. A thread per batch cost about a quarter of
//! the client's CPU in `oltp_write_only` (stack map and unmap). A work-stealing pool
//! (rayon, used before) lets idle workers spin with `sched_yield` before they sleep: with
//! batches arriving every few hundred microseconds its workers never slept, and the
//! spinning took about 14% of a 2-core machine's CPU under `oltp_write_only` with the
//! replica stream on (measured with `perf record -a`). Here, idle workers block on a
//! channel.
//!
//! # Invariants
//! - A task runs at most once: whoever takes its work first (a worker, or the caller
//!   reclaiming a task no worker has started) runs it.
//! - The caller never waits for a task that no thread has started: after running its own
//!   batch it takes back every task still queued ([`Task::run`]), so a pool whose workers
//!   are all busy (or a nested call from a worker) never deadlocks; it only runs the
//!   batches one after the other.
//! - Workers start on demand, up to a bound, and hold the client only weakly between
//!   tasks: dropping the client closes the queue and they exit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::core::ClientCore;

/// The work of one task: runs against the client that owns the pool.
pub(crate) type Work = Box<dyn FnOnce(&ClientCore) + Send>;

/// One queued region batch; see the module invariants.
pub(crate) struct Task {
    work: Mutex<Option<Work>>,
}

impl Task {
    /// A task that runs `work`.
    pub(crate) fn new(work: Work) -> Arc<Task> {
        Arc::new(Task {
            work: Mutex::new(Some(work)),
        })
    }

    /// Runs the task on this thread unless someone already took it. Returns whether it ran
    /// here.
    pub(crate) fn run(&self, core: &ClientCore) -> bool {
        let work = self.work.lock().take();
        match work {
            Some(work) => {
                work(core);
                true
            }
            None => false,
        }
    }
}

/// Worker threads fed through a channel; see the module docs.
pub(crate) struct BatchPool {
    queue: Sender<Arc<Task>>,
    receiver: Receiver<Arc<Task>>,
    core: Weak<ClientCore>,
    max_threads: usize,
    /// Threads started so far.
    started: AtomicUsize,
    /// Threads waiting for a task.
    idle: Arc<AtomicUsize>,
}

impl std::fmt::Debug for BatchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchPool")
            .field("max_threads", &self.max_threads)
            .field("started", &self.started.load(Ordering::Relaxed))
            .field("idle", &self.idle.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl BatchPool {
    /// A pool for the client `core` (not started yet: `Arc::new_cyclic` hands out the weak
    /// reference before the client exists) of at most `max_threads` threads, none started
    /// until a task is offered.
    pub(crate) fn new(core: Weak<ClientCore>, max_threads: usize) -> BatchPool {
        let (queue, receiver) = crossbeam_channel::unbounded();
        BatchPool {
            queue,
            receiver,
            core,
            max_threads,
            started: AtomicUsize::new(0),
            idle: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Queues `task` for a worker, starting one if none is idle and the bound allows.
    /// Whether or not a worker picks it up, the caller must [`Task::run`] it afterwards
    /// (a no-op once a worker took it) before waiting for its result.
    pub(crate) fn offer(&self, task: Arc<Task>) {
        if self.idle.load(Ordering::Acquire) == 0 {
            self.start_worker();
        }
        // The receiver lives in `self`, so the queue is open while `self` is.
        let _ = self.queue.send(task);
    }

    fn start_worker(&self) {
        let n = self.started.fetch_add(1, Ordering::AcqRel);
        if n >= self.max_threads {
            self.started.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let receiver = self.receiver.clone();
        let core = self.core.clone();
        let idle = Arc::clone(&self.idle);
        let spawned = std::thread::Builder::new()
            .name(format!("surge-txn-batch-{n}"))
            .spawn(move || worker(&receiver, &core, &idle));
        if let Err(e) = spawned {
            self.started.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(error = %e, "no batch thread; the caller runs its batches itself");
        }
    }
}

/// A worker's loop: runs tasks until the pool (and so the channel's senders) is dropped.
fn worker(receiver: &Receiver<Arc<Task>>, core: &Weak<ClientCore>, idle: &AtomicUsize) {
    loop {
        idle.fetch_add(1, Ordering::AcqRel);
        let task = receiver.recv();
        idle.fetch_sub(1, Ordering::AcqRel);
        let Ok(task) = task else { return };
        let Some(core) = core.upgrade() else { return };
        // A panicking batch must not take the worker down with it; its caller sees the
        // result channel close without a result and reports that.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.run(&core)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn a_task_runs_once_however_many_threads_reach_for_it() {
        let router = super::super::fake_router::FakeRouter::new(|_, _| {
            Err(crate::ServiceError::Unavailable {
                node: 1,
                detail: "not used".into(),
            })
        });
        let client = crate::TxnClient::new(Arc::new(router), crate::ClientConfig::default());
        let core = Arc::clone(client.core());
        let runs = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let counted = Arc::clone(&runs);
            let task = Task::new(Box::new(move |_core: &ClientCore| {
                counted.fetch_add(1, Ordering::SeqCst);
            }));
            let ran_here = std::thread::scope(|s| {
                let takers: Vec<_> = (0..4).map(|_| s.spawn(|| task.run(&core))).collect();
                takers
                    .into_iter()
                    .map(|t| t.join().unwrap_or(false))
                    .filter(|ran| *ran)
                    .count()
            });
            assert_eq!(ran_here, 1);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 50);
    }
}
