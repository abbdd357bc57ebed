//! Which small commits a step held up: those in flight at some moment of it.
//!
//! A small commit blocked behind a big transaction's commit step (the copy of its cache under
//! the binlog's log lock) usually *started* before the step: counting only the commits that
//! started during the step misses exactly the ones it stalled, and with every client blocked
//! none starts at all. So a commit counts when its interval `[start, start + latency)`
//! overlaps the step's `[from, to)`.

use std::time::{Duration, Instant};

/// The small commits in flight during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepWaits {
    /// How many were in flight at some moment of the step.
    pub count: u64,
    /// The longest of their latencies; `None` when none was in flight.
    pub slowest: Option<Duration>,
}

/// The commits of `samples` (each: when it started, how long it took) in flight at some
/// moment of `[from, to)`: started before `to` and finished after `from`.
pub fn waiting_during(samples: &[(Instant, Duration)], from: Instant, to: Instant) -> StepWaits {
    let mut waits = StepWaits::default();
    for &(start, latency) in samples {
        if start < to && start + latency > from {
            waits.count += 1;
            waits.slowest = waits.slowest.max(Some(latency));
        }
    }
    waits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn commits_stalled_across_the_step_count_and_those_outside_do_not() {
        let t0 = Instant::now();
        // The step runs from 100 ms to 324 ms (a 224 ms copy).
        let (from, to) = (t0 + ms(100), t0 + ms(324));
        // (name, commits as (start, latency) in ms, count in flight, slowest in ms)
        type Case = (&'static str, &'static [(u64, u64)], u64, Option<u64>);
        let cases: &[Case] = &[
            // Both clients blocked: their commits started before the step, ended after it.
            ("stalled across", &[(95, 232), (98, 229)], 2, Some(232)),
            // One ended just before the step, one started just after: neither was waiting.
            ("outside", &[(10, 90), (324, 4)], 0, None),
            // Started before, ended inside; started inside, ended after; wholly inside.
            ("overlapping", &[(90, 20), (300, 50), (150, 3)], 3, Some(50)),
            // Ends exactly when the step starts: not in flight during it.
            ("touching", &[(96, 4)], 0, None),
            ("no commits", &[], 0, None),
        ];
        for (name, samples, count, slowest) in cases {
            let samples: Vec<_> = samples
                .iter()
                .map(|&(at, took)| (t0 + ms(at), ms(took)))
                .collect();
            let waits = waiting_during(&samples, from, to);
            assert_eq!(waits.count, *count, "{name}: {waits:?}");
            assert_eq!(waits.slowest, slowest.map(ms), "{name}: {waits:?}");
        }
    }
}
