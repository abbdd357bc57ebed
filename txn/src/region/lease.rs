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
/// - The lease is dropped on every leadership change, and a round that started before
///   such a drop cannot renew it.
/// - Before a voluntary leader transfer the lease is dropped and *suspended*
///   ([`Lease::suspend`]): a transferee campaigns at once and the followers grant its votes
///   however recently they heard from this leader, so until this node is a follower
///   ([`Lease::resume`]), the transfer could not be sent, or the suspension runs out,
///   rounds confirm one read each but grant no lease. Becoming leader does not lift it:
///   a transfer may be asked for before the new term's first entry applies.
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
    /// An early renewal (of a lease still held) is in flight: no other caller starts one.
    renewing: bool,
    /// A voluntary transfer may be under way until then: no round renews the lease.
    suspended_until: Option<Instant>,
}

impl State {
    /// No lease, and no round in flight may renew one.
    fn drop_lease(&mut self) {
        self.until = None;
        self.generation += 1;
        self.renewing = false;
    }
}

/// What a caller must do before it serves from the leader's state.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LeaseCheck {
    /// The lease holds for more than half its duration, or in its second half while
    /// another caller renews it: serve.
    Held,
    /// The lease holds but is in its second half, and this caller is the one to renew it:
    /// run a confirmation round, then [`Lease::renew`] (or [`Lease::abandon`] on failure).
    /// Renewing before the end keeps a busy leader from ever running out, so its callers
    /// do not all stop for rounds of their own at once when it does.
    Renew(Round),
    /// The lease does not hold: run a confirmation round before serving.
    Confirm(Round),
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
    #[cfg(test)]
    pub(crate) fn valid(&self) -> bool {
        self.state.lock().until.is_some_and(|u| Instant::now() < u)
    }

    /// Whether the lease holds now, and whether this caller should confirm or renew it.
    fn check(&self) -> LeaseCheck {
        let now = Instant::now();
        let mut s = self.state.lock();
        let round = Round {
            started: now,
            generation: s.generation,
        };
        match s.until {
            Some(u) if now < u => {
                if s.renewing || u - now > self.duration / 2 {
                    LeaseCheck::Held
                } else {
                    s.renewing = true;
                    LeaseCheck::Renew(round)
                }
            }
            _ => LeaseCheck::Confirm(round),
        }
    }

    /// Serves once the lease holds: if [`Lease::check`] asks for a round, runs
    /// `round_trip` (a ReadIndex) and renews the lease with it, or gives the round up
    /// and returns its error.
    ///
    /// # Errors
    /// `round_trip`'s.
    pub(crate) fn confirm<E>(&self, round_trip: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        let round = match self.check() {
            LeaseCheck::Held => return Ok(()),
            LeaseCheck::Renew(round) | LeaseCheck::Confirm(round) => round,
        };
        match round_trip() {
            Ok(()) => {
                self.renew(round);
                Ok(())
            }
            Err(e) => {
                self.abandon(round);
                Err(e)
            }
        }
    }

    /// A confirmation round starts now.
    #[cfg(test)]
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
        if s.generation == round.generation {
            s.renewing = false;
            let suspended = s.suspended_until.is_some_and(|t| Instant::now() < t);
            if !suspended && s.until.is_none_or(|old| old < until) {
                s.until = Some(until);
            }
        }
    }

    /// A round from [`Lease::check`] failed: another caller may renew.
    pub(crate) fn abandon(&self, round: Round) {
        let mut s = self.state.lock();
        if s.generation == round.generation {
            s.renewing = false;
        }
    }

    /// Leadership changed or is about to: ask a quorum again.
    pub(crate) fn invalidate(&self) {
        self.state.lock().drop_lease();
    }

    /// This node is a follower (the transfer is over), or the transfer was never sent:
    /// rounds grant leases again. Drops the lease as [`Lease::invalidate`] does.
    pub(crate) fn resume(&self) {
        let mut s = self.state.lock();
        s.drop_lease();
        s.suspended_until = None;
    }

    /// Runs `send` (a voluntary leader transfer's request) with the lease suspended for
    /// `transfer` ([`Lease::suspend`]), lifting the suspension again if `send` fails:
    /// then nothing was sent and no transferee can campaign.
    ///
    /// # Errors
    /// `send`'s.
    pub(crate) fn around_transfer<T, E>(
        &self,
        transfer: Duration,
        send: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.suspend(transfer);
        let sent = send();
        if sent.is_err() {
            self.resume();
        }
        sent
    }

    /// A voluntary leader transfer starts: the lease is dropped and no round renews it for
    /// `transfer` (the node's `transfer_timeout`, well above the one election timeout after
    /// which Raft gives a transfer up) or until [`Lease::resume`], whichever comes first.
    pub(crate) fn suspend(&self, transfer: Duration) {
        let mut s = self.state.lock();
        s.drop_lease();
        s.suspended_until = Some(Instant::now() + transfer);
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
    fn one_caller_renews_a_lease_in_its_second_half_while_the_others_serve() {
        // Long enough that a loaded machine wakes from the sleep inside the second half.
        let lease = Lease::new(Duration::from_secs(2));
        assert!(matches!(lease.check(), LeaseCheck::Confirm(_)));
        lease.renew(lease.start_round());
        assert!(matches!(lease.check(), LeaseCheck::Held), "fresh: held");
        std::thread::sleep(Duration::from_millis(1100));
        let LeaseCheck::Renew(round) = lease.check() else {
            panic!("past half: the first caller renews");
        };
        assert!(
            matches!(lease.check(), LeaseCheck::Held),
            "one renewal at a time; the lease still holds"
        );
        lease.abandon(round);
        let LeaseCheck::Renew(round) = lease.check() else {
            panic!("an abandoned renewal lets the next caller try");
        };
        lease.renew(round);
        assert!(matches!(lease.check(), LeaseCheck::Held), "renewed");
    }

    #[test]
    fn a_renewal_started_before_a_drop_neither_renews_nor_blocks_the_next() {
        let lease = Lease::new(Duration::from_secs(2));
        lease.renew(lease.start_round());
        std::thread::sleep(Duration::from_millis(1100));
        let LeaseCheck::Renew(stale) = lease.check() else {
            panic!("past half: renew");
        };
        lease.invalidate();
        lease.renew(stale);
        assert!(
            !lease.valid(),
            "a round from before the drop does not renew"
        );
        let LeaseCheck::Confirm(round) = lease.check() else {
            panic!("dropped: confirm");
        };
        lease.renew(round);
        assert!(lease.valid());
    }

    #[test]
    fn a_suspended_lease_is_not_renewed_until_resumed_or_run_out() {
        let lease = Lease::new(Duration::from_secs(5));
        lease.renew(lease.start_round());
        // Long enough that a loaded machine renews inside the suspension.
        lease.suspend(Duration::from_secs(2));
        assert!(!lease.valid(), "dropped at once");
        let LeaseCheck::Confirm(round) = lease.check() else {
            panic!("suspended: confirm every read");
        };
        lease.renew(round);
        assert!(
            !lease.valid(),
            "a confirmed read grants no lease while suspended"
        );
        lease.invalidate();
        lease.renew(lease.start_round());
        assert!(!lease.valid(), "becoming leader again does not lift it");
        std::thread::sleep(Duration::from_millis(2100));
        lease.renew(lease.start_round());
        assert!(lease.valid(), "the suspension ran out: renewed again");
        lease.suspend(Duration::from_secs(60));
        lease.resume();
        lease.renew(lease.start_round());
        assert!(
            lease.valid(),
            "a follower's (or an unsent transfer's) resume ends it"
        );
    }

    #[test]
    fn a_lease_runs_out() {
        let lease = Lease::new(Duration::from_millis(20));
        lease.renew(lease.start_round());
        std::thread::sleep(Duration::from_millis(30));
        assert!(!lease.valid());
    }
}
