//! Parameters: the `hotspot` switch, `max_wait`, `max_group_size` and the automatic mode.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::ConfigError;

/// Default `max_wait`: 100 µs, as AliSQL's `hotspot_update_max_wait_time`.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_micros(100);
/// Default `max_group_size`: large enough never to bind below 512 clients.
pub const DEFAULT_MAX_GROUP_SIZE: usize = 1024;
/// Default `spin_yields`: how many times a waiting member yields the CPU before it sleeps.
pub const DEFAULT_SPIN_YIELDS: u32 = 64;
const MAX_MAX_WAIT: Duration = Duration::from_secs(1);

/// Coordinator parameters. Every one can also be changed at run time on the
/// [`Coordinator`](crate::Coordinator).
///
/// Build it with [`Config::default`] and the `with_*` methods, or assign the public fields of
/// a default value: the struct is `#[non_exhaustive]`, so later parameters can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `hotspot` switch: when off every request takes the ordinary path (lock the key, apply,
    /// make durable, unlock). Default on.
    pub hotspot: bool,
    /// Longest a leader waits for followers it has reason to expect: only when it could commit at
    /// once, other requests for its key are in flight (returning from the previous group, say),
    /// and at most 64 of them are missing. It stops waiting as soon as they have all joined. A
    /// leader alone never waits; a leader behind a committing group does not wait beyond that
    /// commit. Default [`DEFAULT_MAX_WAIT`]; at most 1 s; zero disables it.
    pub max_wait: Duration,
    /// Most members in one group; later arrivals form the next group. Default
    /// [`DEFAULT_MAX_GROUP_SIZE`]; at least 1.
    pub max_group_size: usize,
    /// Automatic mode: when non-zero, a request without `commit_on_success` is grouped anyway once
    /// at least this many requests (itself included) are in flight for its key. Zero (default):
    /// hints only.
    pub auto_group_threshold: usize,
    /// How many times a member waiting for its group yields the CPU (`sched_yield`) before it
    /// sleeps on a condition variable. With more clients than cores this replaces most futex
    /// sleep/wake pairs by cheaper yields; with idle cores a yield returns at once. Zero: sleep at
    /// once. Default [`DEFAULT_SPIN_YIELDS`]. Where members share the cores with other busy
    /// threads (a server's connection threads), a yield mostly hands the CPU to another
    /// yielding member: measure 0 there (the crate README's figures).
    pub spin_yields: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            hotspot: true,
            max_wait: DEFAULT_MAX_WAIT,
            max_group_size: DEFAULT_MAX_GROUP_SIZE,
            auto_group_threshold: 0,
            spin_yields: DEFAULT_SPIN_YIELDS,
        }
    }
}

impl Config {
    /// Sets [`Config::hotspot`].
    #[must_use]
    pub fn with_hotspot(mut self, on: bool) -> Self {
        self.hotspot = on;
        self
    }

    /// Sets [`Config::max_wait`].
    #[must_use]
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Sets [`Config::max_group_size`].
    #[must_use]
    pub fn with_max_group_size(mut self, members: usize) -> Self {
        self.max_group_size = members;
        self
    }

    /// Sets [`Config::auto_group_threshold`].
    #[must_use]
    pub fn with_auto_group_threshold(mut self, requests: usize) -> Self {
        self.auto_group_threshold = requests;
        self
    }

    /// Sets [`Config::spin_yields`].
    #[must_use]
    pub fn with_spin_yields(mut self, yields: u32) -> Self {
        self.spin_yields = yields;
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_group_size(self.max_group_size)?;
        check_max_wait(self.max_wait)
    }
}

pub(crate) fn check_group_size(value: usize) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::MaxGroupSize { value });
    }
    Ok(())
}

pub(crate) fn check_max_wait(value: Duration) -> Result<(), ConfigError> {
    if value > MAX_MAX_WAIT {
        return Err(ConfigError::MaxWait {
            value_us: value.as_micros(),
        });
    }
    Ok(())
}

/// The run-time copy of [`Config`], read with relaxed atomics on every request.
#[derive(Debug)]
pub(crate) struct Settings {
    hotspot: AtomicBool,
    max_wait_ns: AtomicU64,
    max_group_size: AtomicUsize,
    auto_group_threshold: AtomicUsize,
    spin_yields: AtomicU32,
}

impl Settings {
    pub(crate) fn new(c: &Config) -> Self {
        Self {
            hotspot: AtomicBool::new(c.hotspot),
            max_wait_ns: AtomicU64::new(duration_ns(c.max_wait)),
            max_group_size: AtomicUsize::new(c.max_group_size),
            auto_group_threshold: AtomicUsize::new(c.auto_group_threshold),
            spin_yields: AtomicU32::new(c.spin_yields),
        }
    }

    pub(crate) fn hotspot(&self) -> bool {
        self.hotspot.load(Ordering::Relaxed)
    }
    pub(crate) fn set_hotspot(&self, on: bool) {
        self.hotspot.store(on, Ordering::Relaxed);
    }
    pub(crate) fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.max_wait_ns.load(Ordering::Relaxed))
    }
    pub(crate) fn set_max_wait(&self, d: Duration) {
        self.max_wait_ns.store(duration_ns(d), Ordering::Relaxed);
    }
    pub(crate) fn max_group_size(&self) -> usize {
        self.max_group_size.load(Ordering::Relaxed)
    }
    pub(crate) fn set_max_group_size(&self, n: usize) {
        self.max_group_size.store(n, Ordering::Relaxed);
    }
    pub(crate) fn auto_group_threshold(&self) -> usize {
        self.auto_group_threshold.load(Ordering::Relaxed)
    }
    pub(crate) fn set_auto_group_threshold(&self, n: usize) {
        self.auto_group_threshold.store(n, Ordering::Relaxed);
    }
    pub(crate) fn spin_yields(&self) -> u32 {
        self.spin_yields.load(Ordering::Relaxed)
    }
    pub(crate) fn set_spin_yields(&self, n: u32) {
        self.spin_yields.store(n, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self) -> Config {
        Config {
            hotspot: self.hotspot(),
            max_wait: self.max_wait(),
            max_group_size: self.max_group_size(),
            auto_group_threshold: self.auto_group_threshold(),
            spin_yields: self.spin_yields(),
        }
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_the_bad_field() {
        let ok = Config::default();
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.max_wait, Duration::from_micros(100));
        let zero = Config {
            max_group_size: 0,
            ..Config::default()
        };
        assert_eq!(zero.validate(), Err(ConfigError::MaxGroupSize { value: 0 }));
        let long = Config {
            max_wait: Duration::from_secs(2),
            ..Config::default()
        };
        assert_eq!(
            long.validate(),
            Err(ConfigError::MaxWait {
                value_us: 2_000_000
            })
        );
        assert!(
            long.validate()
                .unwrap_err()
                .to_string()
                .contains("max_wait")
        );
    }

    #[test]
    fn settings_round_trip() {
        let c = Config {
            hotspot: false,
            auto_group_threshold: 4,
            ..Config::default()
        };
        let s = Settings::new(&c);
        assert_eq!(s.snapshot(), c);
        s.set_hotspot(true);
        s.set_max_wait(Duration::ZERO);
        s.set_max_group_size(7);
        s.set_auto_group_threshold(0);
        let d = s.snapshot();
        assert!(d.hotspot);
        assert_eq!(
            (d.max_wait, d.max_group_size, d.auto_group_threshold),
            (Duration::ZERO, 7, 0)
        );
    }
}
