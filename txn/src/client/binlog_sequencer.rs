//! [`Sequencer`]: orders the binlog groups of one coordinator's conflicting transactions by
//! commit timestamp.
//!
//! A transaction takes a ticket when it prepares, before it prewrites (a pessimistic one
//! holds all its locks by then). Before its group goes to the binlog it waits until every
//! transaction with an earlier ticket whose keys intersect its own has written its group
//! or given up.
//!
//! Why that is commit_ts order for conflicting pairs: if T1 and T2 write a common key and
//! T1 commits first, Percolator makes T2 lock or prewrite that key only after T1's commit
//! record of it exists, which is after T1 prepared; T2 prepares after its own locks (and
//! before its prewrite), so T2's ticket is later and T2 waits for T1. Conversely a
//! transaction with an earlier ticket cannot commit a common key after a later-ticket one
//! with a smaller commit_ts (its locks, or its older start_ts, make one of the two fail).
//! Transactions on disjoint keys never wait for each other: a small commit is not held
//! behind a large one being prewritten.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::error::TxnError;

/// The keys of one registered transaction.
type Keys = Arc<BTreeSet<Vec<u8>>>;

#[derive(Debug, Default)]
struct State {
    next: u64,
    inflight: BTreeMap<u64, Keys>,
    /// Set when the binlog stopped: waiters give up.
    stopped: Option<String>,
}

/// Per-coordinator ordering of binlog writes (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Sequencer {
    state: Mutex<State>,
    turn: Condvar,
}

impl Sequencer {
    /// Registers a transaction writing `keys`; returns its ticket.
    pub(crate) fn register(&self, keys: Keys) -> u64 {
        let mut s = self.state.lock();
        let t = s.next;
        s.next += 1;
        s.inflight.insert(t, keys);
        t
    }

    /// Waits until no transaction with a ticket before `ticket` and a key in common with
    /// it is still registered.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the binlog stopped meanwhile.
    pub(crate) fn wait_turn(&self, ticket: u64) -> Result<(), TxnError> {
        let mut s = self.state.lock();
        loop {
            if let Some(reason) = &s.stopped {
                return Err(TxnError::Binlog {
                    detail: format!("binlog stopped: {reason}"),
                });
            }
            let Some(mine) = s.inflight.get(&ticket) else {
                return Ok(());
            };
            let blocked = s
                .inflight
                .range(..ticket)
                .any(|(_, other)| intersects(mine, other));
            if !blocked {
                return Ok(());
            }
            // Woken by every `finish`; the timeout only bounds a missed wakeup's cost.
            self.turn.wait_for(&mut s, Duration::from_millis(100));
        }
    }

    /// Removes `ticket` (its group is written, or it will never be) and wakes the waiters.
    pub(crate) fn finish(&self, ticket: u64) {
        self.state.lock().inflight.remove(&ticket);
        self.turn.notify_all();
    }

    /// Stops every wait: the binlog cannot take more groups.
    pub(crate) fn stop(&self, reason: &str) {
        self.state
            .lock()
            .stopped
            .get_or_insert_with(|| reason.to_string());
        self.turn.notify_all();
    }

    /// How many transactions are registered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().inflight.len()
    }
}

/// Whether the sets share a key (walks the smaller one).
fn intersects(a: &BTreeSet<Vec<u8>>, b: &BTreeSet<Vec<u8>>) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|k| large.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[&str]) -> Keys {
        Arc::new(ks.iter().map(|k| k.as_bytes().to_vec()).collect())
    }

    #[test]
    fn disjoint_transactions_do_not_wait() -> Result<(), TxnError> {
        let s = Sequencer::default();
        let _big = s.register(keys(&["a", "b", "c"]));
        let small = s.register(keys(&["x"]));
        s.wait_turn(small)?;
        s.finish(small);
        assert_eq!(s.len(), 1);
        Ok(())
    }

    #[test]
    fn a_conflicting_later_ticket_waits_for_the_earlier_one() {
        let s = Arc::new(Sequencer::default());
        let t1 = s.register(keys(&["a", "b"]));
        let t2 = s.register(keys(&["b"]));
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = Arc::clone(&s);
        let waiter = std::thread::spawn(move || {
            let r = s2.wait_turn(t2);
            let _ = tx.send(());
            r
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "t2 went before t1 finished"
        );
        s.finish(t1);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
        assert!(matches!(waiter.join(), Ok(Ok(()))));
    }

    #[test]
    fn an_earlier_ticket_never_waits_for_a_later_one() -> Result<(), TxnError> {
        let s = Sequencer::default();
        let t1 = s.register(keys(&["a"]));
        let _t2 = s.register(keys(&["a"]));
        s.wait_turn(t1)
    }

    #[test]
    fn stop_releases_waiters_with_an_error() {
        let s = Arc::new(Sequencer::default());
        let _t1 = s.register(keys(&["a"]));
        let t2 = s.register(keys(&["a"]));
        let s2 = Arc::clone(&s);
        let waiter = std::thread::spawn(move || s2.wait_turn(t2));
        std::thread::sleep(Duration::from_millis(50));
        s.stop("test");
        assert!(matches!(waiter.join(), Ok(Err(TxnError::Binlog { .. }))));
    }
}
