//! `WaitOutcome` and `WakeUpReport`: how a wait ended and what a release did.

/// How a wait ended. More outcomes may be added (so match with a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// A lock on the key was released and this waiter had the smallest `start_ts` of the
    /// key's queue: retry at once.
    Woken,
    /// A lock on the key was released and this waiter was woken after the wake-up delay.
    WokenAfterDelay,
    /// The timeout passed before a lock on the key was released (a retryable lock-wait
    /// timeout).
    TimedOut,
    /// The manager was closed while this wait was queued
    /// ([`LockWaitManager::close`](crate::LockWaitManager::close): the node is stopping).
    /// The lock may still be held: the caller answers without retrying it here.
    Closed,
}

/// What [`LockWaitManager::wake_up`](crate::LockWaitManager::wake_up) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WakeUpReport {
    /// `start_ts` of the waiter woken at once, if anyone waited on the key.
    pub woken: Option<u64>,
    /// Waiters on the key that will be woken after the delay.
    pub delayed: usize,
}
