//! [`Lease`]: how long a leader may serve reads (and timestamps) without asking a quorum.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A leader lease (Raft thesis §6.4.1): after a quorum confirmed this node's leadership with a
/// ReadIndex round that *started* at `t`, no other leader can be elected before
/// `t + election timeout`, because the followers that answered ignore votes for an election
/// timeout after hearing from their leader (check-quorum). So until `t + duration`, with
/// `duration` well below the election timeout, the leader may answer from its applied state
/// without another round.
///
/// # Invariants
/// - `duration` is below the smallest election timeout (the cluster configures half of it).
/// - The lease is dropped on every leadership change and before a voluntary leader transfer
///   (a transferee does not wait for an election timeout), and a round that started before
///   such a drop cannot renew it.
#[derive(Debug)]
pub(crate) struct Lease {
    state: Mutex<State>,
    duration: Duration,
}

#[derive(Debug, Default)]
struct State {
    until: Option<Instant>,
    /// Bumped by every drop; a round renews only within the generation it started in.
    generation: u64,
}

/// A confirmation round in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Round {
    started: Instant,
    generation: u64,
}

impl Lease {
    pub(crate) fn new(duration: Duration) -> Lease {
        Lease {
            state: Mutex::new(State::default()),
            duration,
        }
    }

    /// The configured duration.
    pub(crate) fn duration(&self) -> Duration {
        self.duration
    }

    /// Whether the lease holds now.
    pub(crate) fn valid(&self) -> bool {
        self.state.lock().until.is_some_and(|u| Instant::now() < u)
    }

    /// A confirmation round starts now.
    pub(crate) fn start_round(&self) -> Round {
        Round {
            started: Instant::now(),
            generation: self.state.lock().generation,
        }
    }

    /// The round succeeded: the lease holds until its start plus the duration.
    pub(crate) fn renew(&self, round: Round) {
        if self.duration.is_zero() {
            return;
        }
        let until = round.started + self.duration;
        let mut s = self.state.lock();
        if s.generation == round.generation && s.until.is_none_or(|old| old < until) {
            s.until = Some(until);
        }
    }

    /// Leadership changed or is about to: ask a quorum again.
    pub(crate) fn invalidate(&self) {
        let mut s = self.state.lock();
        s.until = None;
        s.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_holds_from_the_round_start_until_it_runs_out_or_is_dropped() {
        let lease = Lease::new(Duration::from_millis(50));
        assert!(!lease.valid());
        lease.renew(lease.start_round());
        assert!(lease.valid());
        lease.invalidate();
        assert!(!lease.valid());
        let off = Lease::new(Duration::ZERO);
        off.renew(off.start_round());
        assert!(!off.valid(), "a zero lease is never valid");
    }

    #[test]
    fn a_round_started_before_a_drop_does_not_renew() {
        let lease = Lease::new(Duration::from_secs(5));
        let round = lease.start_round();
        lease.invalidate();
        lease.renew(round);
        assert!(!lease.valid());
        lease.renew(lease.start_round());
        assert!(lease.valid());
    }

    #[test]
    fn a_lease_runs_out() {
        let lease = Lease::new(Duration::from_millis(20));
        lease.renew(lease.start_round());
        std::thread::sleep(Duration::from_millis(30));
        assert!(!lease.valid());
    }
}
