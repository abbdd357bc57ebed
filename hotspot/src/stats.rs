//! `Group_update_*` status counters, as `SHOW GLOBAL STATUS LIKE '%Group_update%'` shows them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters (relaxed atomics; each is exact, a snapshot of several is not atomic).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) leader: AtomicU64,
    pub(crate) follower: AtomicU64,
    pub(crate) fail: AtomicU64,
    pub(crate) total: AtomicU64,
    pub(crate) reuse: AtomicU64,
    pub(crate) ignore: AtomicU64,
    pub(crate) bypass: AtomicU64,
    pub(crate) durable_fail: AtomicU64,
    pub(crate) leader_wait_ns: AtomicU64,
    pub(crate) timed_waits: AtomicU64,
    pub(crate) max_group: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        if n != 0 {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// A snapshot of the coordinator's counters.
///
/// Names and meanings follow AliSQL's `Group_update_*` status variables where they exist
/// ([`Stats::status_rows`] prints them that way). Each request is counted once as a leader, a
/// follower or a bypass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// `Group_update_leader_count`: groups run (one leader each).
    pub leader_count: u64,
    /// `Group_update_follower_count`: members that joined a group led by another request.
    pub follower_count: u64,
    /// `Group_update_fail_count`: members (grouped or not) that did not commit, for any reason.
    pub fail_count: u64,
    /// `Group_update_total_count`: per-key group objects ever allocated (AliSQL's name). Not a
    /// count of groups: one object serves every group of its key for as long as requests for
    /// the key are in flight, then goes to a free list and is reused for another key
    /// ([`Stats::reuse_count`]). So it follows the most keys in flight at once (one for a
    /// single hot row, whatever the load) and stays far below [`Stats::leader_count`], which
    /// counts groups.
    pub total_count: u64,
    /// `Group_update_free_count`: per-key group objects now idle in the free list.
    pub free_count: u64,
    /// `Group_update_reuse_count`: per-key group objects taken from the free list.
    pub reuse_count: u64,
    /// `Group_update_ignore_count`: members that committed having affected no row.
    pub ignore_count: u64,
    /// Requests that took the ordinary, ungrouped path (switch off, or no `commit_on_success`).
    pub bypass_count: u64,
    /// Groups whose load or durable step failed or whose executor panicked.
    pub group_fail_count: u64,
    /// Total time leaders spent between becoming leader and starting their group, in ns
    /// (waiting for the previous group's commit plus any timed wait for followers).
    pub leader_wait_ns: u64,
    /// Leaders that used the timed `max_wait` wait (others in flight for the key).
    pub timed_wait_count: u64,
    /// Largest group seen.
    pub max_group_size: u64,
}

impl Stats {
    /// Mean members per group: (leaders + followers) / leaders; 0 before the first group.
    pub fn mean_group_size(&self) -> f64 {
        if self.leader_count == 0 {
            return 0.0;
        }
        (self.leader_count + self.follower_count) as f64 / self.leader_count as f64
    }

    /// Mean leader wait per group in microseconds; 0 before the first group.
    pub fn mean_leader_wait_us(&self) -> f64 {
        if self.leader_count == 0 {
            return 0.0;
        }
        self.leader_wait_ns as f64 / self.leader_count as f64 / 1000.0
    }

    /// The counters as `(Variable_name, Value)` rows, AliSQL names first.
    pub fn status_rows(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("Group_update_leader_count", self.leader_count),
            ("Group_update_follower_count", self.follower_count),
            ("Group_update_fail_count", self.fail_count),
            ("Group_update_total_count", self.total_count),
            ("Group_update_free_count", self.free_count),
            ("Group_update_reuse_count", self.reuse_count),
            ("Group_update_ignore_count", self.ignore_count),
            ("Group_update_bypass_count", self.bypass_count),
            ("Group_update_group_fail_count", self.group_fail_count),
            ("Group_update_leader_wait_ns", self.leader_wait_ns),
            ("Group_update_timed_wait_count", self.timed_wait_count),
            ("Group_update_max_group_size", self.max_group_size),
        ]
    }

    /// The counter increase from `earlier` to `self` (`free_count` and `max_group_size` are
    /// gauges and keep `self`'s value).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            leader_count: self.leader_count.saturating_sub(earlier.leader_count),
            follower_count: self.follower_count.saturating_sub(earlier.follower_count),
            fail_count: self.fail_count.saturating_sub(earlier.fail_count),
            total_count: self.total_count.saturating_sub(earlier.total_count),
            free_count: self.free_count,
            reuse_count: self.reuse_count.saturating_sub(earlier.reuse_count),
            ignore_count: self.ignore_count.saturating_sub(earlier.ignore_count),
            bypass_count: self.bypass_count.saturating_sub(earlier.bypass_count),
            group_fail_count: self
                .group_fail_count
                .saturating_sub(earlier.group_fail_count),
            leader_wait_ns: self.leader_wait_ns.saturating_sub(earlier.leader_wait_ns),
            timed_wait_count: self
                .timed_wait_count
                .saturating_sub(earlier.timed_wait_count),
            max_group_size: self.max_group_size,
        }
    }
}

impl Counters {
    pub(crate) fn snapshot(&self, free_count: u64) -> Stats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            leader_count: l(&self.leader),
            follower_count: l(&self.follower),
            fail_count: l(&self.fail),
            total_count: l(&self.total),
            free_count,
            reuse_count: l(&self.reuse),
            ignore_count: l(&self.ignore),
            bypass_count: l(&self.bypass),
            group_fail_count: l(&self.durable_fail),
            leader_wait_ns: l(&self.leader_wait_ns),
            timed_wait_count: l(&self.timed_waits),
            max_group_size: l(&self.max_group),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_rows() {
        let s = Stats {
            leader_count: 4,
            follower_count: 12,
            leader_wait_ns: 8_000,
            ..Stats::default()
        };
        assert_eq!(s.mean_group_size(), 4.0);
        assert_eq!(s.mean_leader_wait_us(), 2.0);
        assert_eq!(Stats::default().mean_group_size(), 0.0);
        let rows = s.status_rows();
        assert_eq!(rows[0], ("Group_update_leader_count", 4));
        assert_eq!(rows[1], ("Group_update_follower_count", 12));
        let later = Stats {
            leader_count: 10,
            follower_count: 20,
            ..s
        };
        let d = later.since(&s);
        assert_eq!((d.leader_count, d.follower_count), (6, 8));
    }
}
