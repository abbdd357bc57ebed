//! `WaitRefused`: why a wait was not queued.

use crate::deadlock::Deadlock;

/// Why [`LockWaitManager::enqueue`](crate::LockWaitManager::enqueue) queued nothing.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitRefused {
    /// Waiting would close a cycle: the waiting transaction is the victim (retryable).
    #[error(transparent)]
    Deadlock(#[from] Deadlock),
    /// The manager was closed ([`LockWaitManager::close`](crate::LockWaitManager::close)):
    /// its node is stopping and nobody waits on it any more. The caller answers without
    /// waiting and without taking the lock here.
    #[error("lock waiting is closed (the node is stopping)")]
    Closed,
}
