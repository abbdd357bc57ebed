//! [`Backoff`]: jittered exponential sleeps between retries, bounded in total.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::config::ClientConfig;
use super::error::TxnError;

/// Retries allowed in a row without sleeping (leader hints, regrouping) before a sleep is
/// forced, so two nodes that name each other as leader cannot make a client spin.
const MAX_IMMEDIATE_RETRIES: u32 = 8;

/// The retry state of one operation: sleeps start at `base`, double up to `cap`, are
/// jittered to `[d/2, d]` ("equal jitter", so concurrent clients spread out), and stop once
/// their sum would pass `budget`.
///
/// # Invariants
/// - `slept <= budget` at all times: a sleep that would pass the budget is not taken and the
///   last error is returned instead.
/// - `outcome_unknown` only goes from false to true: once a request may have been applied
///   without an answer, the operation stays ambiguous until its caller resolves it.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    cap: Duration,
    budget: Duration,
    slept: Duration,
    immediate: u32,
    rng: u64,
    last_error: Option<TxnError>,
    outcome_unknown: bool,
}

impl Backoff {
    /// A backoff with `config`'s base, cap and total budget.
    pub(crate) fn new(config: &ClientConfig) -> Backoff {
        Backoff::with_budget(config, config.max_backoff)
    }

    /// A backoff with `config`'s base and cap and the given total budget.
    pub(crate) fn with_budget(config: &ClientConfig, budget: Duration) -> Backoff {
        Backoff {
            next: config.backoff_base.max(Duration::from_millis(1)),
            cap: config.backoff_cap.max(config.backoff_base),
            budget,
            slept: Duration::ZERO,
            immediate: 0,
            rng: seed(),
            last_error: None,
            outcome_unknown: false,
        }
    }

    /// Records why the operation is about to retry; it is what the caller gets if the budget
    /// runs out.
    pub(crate) fn note(&mut self, error: TxnError) {
        self.last_error = Some(error);
    }

    /// Records that a request may have been applied although no answer came back.
    pub(crate) fn mark_outcome_unknown(&mut self) {
        self.outcome_unknown = true;
    }

    /// Whether some request of this operation may have been applied without an answer.
    pub(crate) fn outcome_unknown(&self) -> bool {
        self.outcome_unknown
    }

    /// Total time slept so far.
    #[cfg(test)]
    pub(crate) fn slept(&self) -> Duration {
        self.slept
    }

    /// The next sleep, without taking it; `None` when it would pass the budget.
    pub(crate) fn next_delay(&mut self) -> Option<Duration> {
        let full = self.next;
        let half = full / 2;
        let span = (full - half).as_micros() as u64;
        let jitter = if span == 0 {
            0
        } else {
            self.next_random() % (span + 1)
        };
        let delay = half + Duration::from_micros(jitter);
        if self.slept + delay > self.budget {
            return None;
        }
        self.slept += delay;
        self.next = (self.next * 2).min(self.cap);
        self.immediate = 0;
        Some(delay)
    }

    /// Sleeps before the next retry.
    ///
    /// # Errors
    /// The last noted error (or a generic region-busy error) when the budget is spent.
    pub(crate) fn sleep(&mut self) -> Result<(), TxnError> {
        match self.next_delay() {
            Some(d) => {
                std::thread::sleep(d);
                Ok(())
            }
            None => Err(self.exhausted()),
        }
    }

    /// Allows a retry without sleeping, unless too many happened in a row (then sleeps).
    ///
    /// # Errors
    /// As [`Backoff::sleep`].
    pub(crate) fn retry_now(&mut self) -> Result<(), TxnError> {
        self.immediate += 1;
        if self.immediate > MAX_IMMEDIATE_RETRIES {
            return self.sleep();
        }
        Ok(())
    }

    /// The error to report when the budget is spent.
    pub(crate) fn exhausted(&self) -> TxnError {
        self.last_error.clone().unwrap_or(TxnError::Protocol {
            detail: "backoff budget spent without a recorded error".to_string(),
        })
    }

    fn next_random(&mut self) -> u64 {
        // splitmix64: enough to spread sleeps of concurrent clients; not for security.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A per-backoff seed: the clock mixed with a process-wide counter, so backoffs created in
/// the same nanosecond still differ.
fn seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos
        ^ COUNTER
            .fetch_add(0x9E37_79B9, Ordering::Relaxed)
            .rotate_left(17)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_ms: u64, cap_ms: u64, budget_ms: u64) -> ClientConfig {
        ClientConfig {
            backoff_base: Duration::from_millis(base_ms),
            backoff_cap: Duration::from_millis(cap_ms),
            max_backoff: Duration::from_millis(budget_ms),
            ..ClientConfig::default()
        }
    }

    #[test]
    fn delays_double_within_jitter_bounds_up_to_the_cap() {
        let mut bo = Backoff::new(&config(2, 500, 1_000_000));
        let mut full = Duration::from_millis(2);
        for _ in 0..20 {
            let d = bo.next_delay().expect("budget is large");
            assert!(
                d >= full / 2 && d <= full,
                "{d:?} outside [{:?}, {full:?}]",
                full / 2
            );
            full = (full * 2).min(Duration::from_millis(500));
        }
        assert_eq!(full, Duration::from_millis(500));
    }

    #[test]
    fn total_sleep_never_passes_the_budget() {
        for budget_ms in [0, 1, 7, 100, 1234] {
            let mut bo = Backoff::new(&config(2, 500, budget_ms));
            let mut n = 0;
            while bo.next_delay().is_some() {
                n += 1;
                assert!(n < 10_000);
            }
            assert!(
                bo.slept() <= Duration::from_millis(budget_ms),
                "budget {budget_ms}"
            );
        }
    }

    #[test]
    fn exhausted_returns_the_last_noted_error() {
        let mut bo = Backoff::new(&config(2, 500, 0));
        bo.note(TxnError::KeyIsLocked {
            key: b"k".to_vec(),
            lock_ts: 3,
        });
        assert_eq!(
            bo.sleep(),
            Err(TxnError::KeyIsLocked {
                key: b"k".to_vec(),
                lock_ts: 3
            })
        );
    }

    #[test]
    fn immediate_retries_are_bounded() {
        let mut bo = Backoff::new(&config(2, 500, 1_000_000));
        for _ in 0..MAX_IMMEDIATE_RETRIES {
            bo.retry_now().expect("immediate");
        }
        assert_eq!(bo.slept(), Duration::ZERO);
        bo.retry_now().expect("forced sleep");
        assert!(
            bo.slept() > Duration::ZERO,
            "the ninth immediate retry must sleep"
        );
    }
}
