//! The leader's view of each follower's log (raft-rs `tracker/progress.rs`, simplified).

use std::collections::VecDeque;

/// Replication mode of one follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProgressState {
    /// Matching index unknown: one append in flight at a time.
    Probe,
    /// Log matches: appends are pipelined up to the in-flight window.
    Replicate,
    /// A snapshot up to `pending_snapshot` was sent.
    Snapshot,
}

/// Invariant: `matched < next`.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    pub(crate) matched: u64,
    pub(crate) next: u64,
    pub(crate) state: ProgressState,
    /// In probe state: an append was sent and not yet answered.
    pub(crate) probe_sent: bool,
    pub(crate) pending_snapshot: u64,
    /// Heard from since the last check-quorum round.
    pub(crate) recent_active: bool,
    /// Last index of each append in flight (replicate state).
    pub(crate) inflights: VecDeque<u64>,
    pub(crate) max_inflight: usize,
}

impl Progress {
    pub(crate) fn new(next: u64, max_inflight: usize) -> Progress {
        Progress {
            matched: 0,
            next,
            state: ProgressState::Probe,
            probe_sent: false,
            pending_snapshot: 0,
            recent_active: false,
            inflights: VecDeque::new(),
            max_inflight: max_inflight.max(1),
        }
    }

    pub(crate) fn is_paused(&self) -> bool {
        match self.state {
            ProgressState::Probe => self.probe_sent,
            ProgressState::Replicate => self.inflights.len() >= self.max_inflight,
            ProgressState::Snapshot => true,
        }
    }

    pub(crate) fn become_probe(&mut self) {
        if self.state == ProgressState::Snapshot {
            self.next = (self.matched + 1).max(self.pending_snapshot + 1);
        } else {
            self.next = self.matched + 1;
        }
        self.state = ProgressState::Probe;
        self.probe_sent = false;
        self.pending_snapshot = 0;
        self.inflights.clear();
    }

    pub(crate) fn become_replicate(&mut self) {
        self.state = ProgressState::Replicate;
        self.next = self.matched + 1;
        self.probe_sent = false;
        self.inflights.clear();
    }

    pub(crate) fn become_snapshot(&mut self, index: u64) {
        self.state = ProgressState::Snapshot;
        self.pending_snapshot = index;
        self.inflights.clear();
    }

    /// An acknowledgement up to `n`; false if it tells nothing new (stale or duplicate).
    pub(crate) fn maybe_update(&mut self, n: u64) -> bool {
        let updated = self.matched < n;
        if updated {
            self.matched = n;
            self.probe_sent = false;
        }
        self.next = self.next.max(n + 1);
        updated
    }

    /// A rejection of `rejected` with the follower's last index `hint`; false if stale.
    pub(crate) fn maybe_decr_to(&mut self, rejected: u64, hint: u64) -> bool {
        if self.state == ProgressState::Replicate {
            if rejected <= self.matched {
                return false;
            }
            self.next = self.matched + 1;
            return true;
        }
        if self.next == 0 || self.next - 1 != rejected {
            return false;
        }
        self.next = rejected.min(hint + 1).max(self.matched + 1).max(1);
        self.probe_sent = false;
        true
    }

    pub(crate) fn free_to(&mut self, index: u64) {
        while self.inflights.front().is_some_and(|&i| i <= index) {
            self.inflights.pop_front();
        }
    }

    /// Records that an append ending at `last` was sent.
    pub(crate) fn sent_entries(&mut self, last: Option<u64>) {
        match self.state {
            ProgressState::Replicate => {
                if let Some(last) = last {
                    self.next = last + 1;
                    self.inflights.push_back(last);
                }
            }
            ProgressState::Probe => self.probe_sent = true,
            ProgressState::Snapshot => {}
        }
    }
}

/// The highest index that a majority of `matched` values reach (Raft §5.3/§5.4.2; the
/// caller still checks the term). Returns 0 for an empty set.
pub(crate) fn quorum_index(mut matched: Vec<u64>) -> u64 {
    if matched.is_empty() {
        return 0;
    }
    matched.sort_unstable_by(|a, b| b.cmp(a));
    matched[matched.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force oracle: the largest i such that more than half the values are >= i.
    fn oracle(v: &[u64]) -> u64 {
        let mut best = 0;
        for &cand in v {
            let n = v.iter().filter(|&&x| x >= cand).count();
            if 2 * n > v.len() {
                best = best.max(cand);
            }
        }
        best
    }

    proptest::proptest! {
        #[test]
        fn quorum_index_matches_oracle(v in proptest::collection::vec(0u64..20, 1..8)) {
            proptest::prop_assert_eq!(quorum_index(v.clone()), oracle(&v));
        }
    }

    #[test]
    fn quorum_index_table() {
        let cases: &[(&[u64], u64)] = &[
            (&[5], 5),
            (&[5, 1], 1),
            (&[5, 3, 1], 3),
            (&[5, 5, 1, 1], 1),
            (&[9, 8, 7, 1, 1], 7),
        ];
        for (v, want) in cases {
            assert_eq!(quorum_index(v.to_vec()), *want, "{v:?}");
        }
    }

    #[test]
    fn stale_reject_is_ignored_in_probe() {
        let mut p = Progress::new(10, 4);
        assert!(
            !p.maybe_decr_to(5, 3),
            "reject of an index other than next-1 is stale"
        );
        assert!(p.maybe_decr_to(9, 3));
        assert_eq!(p.next, 4);
    }
}
