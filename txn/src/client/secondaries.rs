//! Committing secondaries in the background: once the primary is committed the transaction
//! is, and the caller need not wait for the other keys (as TiDB does). A small pool of
//! threads per client does it; a key it does not reach is committed by whoever meets its
//! lock, from the primary's record.

use std::sync::Weak;

use crossbeam_channel::{Receiver, Sender};

use super::core::ClientCore;
use super::two_pc::CommitPlan;

/// Threads committing secondaries for one client.
const WORKERS: usize = 8;

/// A secondary commit waiting for a worker.
pub(crate) type SecondaryJob = (CommitPlan, u64);

/// Starts the workers; they stop when the client is gone.
pub(crate) fn spawn(core: Weak<ClientCore>) -> Sender<SecondaryJob> {
    let (tx, rx): (Sender<SecondaryJob>, Receiver<SecondaryJob>) = crossbeam_channel::unbounded();
    for i in 0..WORKERS {
        let rx = rx.clone();
        let core = core.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("surge-txn-secondaries-{i}"))
            .spawn(move || {
                while let Ok((plan, commit_ts)) = rx.recv() {
                    let Some(core) = core.upgrade() else { return };
                    core.commit_secondaries(&plan, commit_ts);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start a secondary-commit thread");
        }
    }
    tx
}
