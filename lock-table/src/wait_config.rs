//! `WaitConfig`: the timing of lock waits.

use std::time::Duration;

/// Timing of lock waits; changeable at run time with
/// [`LockWaitManager::set_config`](crate::LockWaitManager::set_config).
///
/// Build it from [`WaitConfig::default`] and the `with_*` methods (or assign the public fields
/// of a default value): the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitConfig {
    /// How long a waiter waits when no timeout is given (TiKV `wait-for-lock-timeout`, 1 s).
    pub default_timeout: Duration,
    /// After a release wakes the waiter with the smallest `start_ts`, the others are woken
    /// this much later (TiKV `wake-up-delay-duration`, 20 ms), so the first one can take the
    /// lock without a stampede.
    pub wake_up_delay: Duration,
}

impl Default for WaitConfig {
    fn default() -> Self {
        WaitConfig {
            default_timeout: Duration::from_secs(1),
            wake_up_delay: Duration::from_millis(20),
        }
    }
}

impl WaitConfig {
    /// Sets [`WaitConfig::default_timeout`].
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Sets [`WaitConfig::wake_up_delay`].
    #[must_use]
    pub fn with_wake_up_delay(mut self, delay: Duration) -> Self {
        self.wake_up_delay = delay;
        self
    }
}
