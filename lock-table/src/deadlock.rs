//! `DeadlockDetector`: a wait-for graph between transactions, with edge expiry.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// One edge of a wait chain: `txn` waits for the lock of `wait_for_txn` on `key`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WaitForEntry {
    /// The waiting transaction (its `start_ts`).
    pub txn: u64,
    /// The transaction holding the lock (its `start_ts`).
    pub wait_for_txn: u64,
    /// The key whose lock is waited for.
    pub key: Vec<u8>,
}

/// A deadlock was found: waiting would close a cycle. The caller aborts the waiting
/// transaction (it is the victim), a retryable outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("deadlock: txn {} would wait in a cycle of {} transactions", .wait_chain.first().map_or(0, |e| e.txn), .wait_chain.len())]
pub struct Deadlock {
    /// The cycle, starting with the refused edge (`txn` → lock holder) and following the
    /// existing edges back to `txn`. Its length is the number of transactions in the cycle.
    pub wait_chain: Vec<WaitForEntry>,
}

#[derive(Debug)]
struct Edge {
    keys: Vec<Vec<u8>>,
    last_seen: Instant,
}

/// A wait-for graph `waiter start_ts → holder start_ts` (TiKV's `DetectTable`).
///
/// ```
/// use surge_lock_table::DeadlockDetector;
///
/// let mut detector = DeadlockDetector::default();
/// detector.detect(1, 2, b"a")?; // txn 1 waits for txn 2's lock on "a"
/// detector.detect(2, 3, b"b")?;
/// // Txn 3 waiting for txn 1 would close the cycle 3 -> 1 -> 2 -> 3.
/// let deadlock = detector.detect(3, 1, b"c").unwrap_err();
/// let chain: Vec<(u64, u64)> = deadlock.wait_chain.iter().map(|e| (e.txn, e.wait_for_txn)).collect();
/// assert_eq!(chain, [(3, 1), (1, 2), (2, 3)]);
/// // Txn 1 stops waiting (woken or timed out): no cycle any more.
/// detector.clean_up_wait_for(1, 2, b"a");
/// detector.detect(3, 1, b"c")?;
/// # Ok::<_, surge_lock_table::Deadlock>(())
/// ```
///
/// # Invariants
/// - The graph never holds a cycle of live edges: [`detect`](Self::detect) refuses (and
///   does not add) any edge that would close one.
/// - An edge not refreshed for `ttl` is expired: it is ignored by detection and removed
///   lazily (when a search meets it, or by [`expire`](Self::expire)), so a waiter that
///   vanished without cleaning up cannot cause false deadlocks forever. An expired edge that
///   no search meets stays stored until `expire` runs: a caller that can lose waiters
///   without clean-up calls it now and then. [`LockWaitManager`](crate::LockWaitManager)
///   cleans up every wait it hands out, so its detector only needs that for leaked handles.
#[derive(Debug)]
pub struct DeadlockDetector {
    wait_for: HashMap<u64, HashMap<u64, Edge>>,
    ttl: Duration,
}

impl Default for DeadlockDetector {
    fn default() -> Self {
        DeadlockDetector::new(Self::DEFAULT_TTL)
    }
}

impl DeadlockDetector {
    /// Default edge time-to-live: 3 s (TiKV's default `wait-for-lock-timeout` is 1 s, and
    /// edges must outlive the waits that created them).
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3);

    /// An empty graph whose edges expire after `ttl`.
    pub fn new(ttl: Duration) -> Self {
        DeadlockDetector {
            wait_for: HashMap::new(),
            ttl,
        }
    }

    /// The edge time-to-live.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Changes the edge time-to-live.
    pub fn set_ttl(&mut self, ttl: Duration) {
        self.ttl = ttl;
    }

    /// Number of edges (transaction pairs) currently stored, expired ones included.
    pub fn edge_count(&self) -> usize {
        self.wait_for.values().map(HashMap::len).sum()
    }

    /// [`detect_at`](Self::detect_at) now.
    ///
    /// # Errors
    /// [`Deadlock`] with the wait chain if the edge would close a cycle.
    pub fn detect(&mut self, txn: u64, lock_ts: u64, key: &[u8]) -> Result<(), Deadlock> {
        self.detect_at(txn, lock_ts, key, Instant::now())
    }

    /// `txn` is about to wait for the lock of `lock_ts` on `key`. If that closes a cycle of
    /// live edges the edge is not added and the cycle is returned; otherwise the edge is
    /// added (or refreshed). A transaction waiting for itself is not an edge.
    ///
    /// # Errors
    /// [`Deadlock`] with the wait chain if the edge would close a cycle.
    pub fn detect_at(
        &mut self,
        txn: u64,
        lock_ts: u64,
        key: &[u8],
        now: Instant,
    ) -> Result<(), Deadlock> {
        if txn == lock_ts {
            return Ok(());
        }
        if let Some(path) = self.find_path(lock_ts, txn, now) {
            let mut wait_chain = Vec::with_capacity(path.len() + 1);
            wait_chain.push(WaitForEntry {
                txn,
                wait_for_txn: lock_ts,
                key: key.to_vec(),
            });
            wait_chain.extend(path);
            return Err(Deadlock { wait_chain });
        }
        let edge = self
            .wait_for
            .entry(txn)
            .or_default()
            .entry(lock_ts)
            .or_insert_with(|| Edge {
                keys: Vec::new(),
                last_seen: now,
            });
        if now.saturating_duration_since(edge.last_seen) > self.ttl {
            // The edge expired (its waits were abandoned) but was not yet removed: its keys
            // belong to those dead waits and would keep the edge alive after this wait is
            // cleaned up, a false deadlock later. Start afresh.
            edge.keys.clear();
        }
        edge.last_seen = edge.last_seen.max(now);
        if !edge.keys.iter().any(|k| k == key) {
            edge.keys.push(key.to_vec());
        }
        Ok(())
    }

    /// Depth-first search for a path of live edges `from ⇝ to`; expired edges met on the way
    /// are removed.
    fn find_path(&mut self, from: u64, to: u64, now: Instant) -> Option<Vec<WaitForEntry>> {
        let mut expired: Vec<(u64, u64)> = Vec::new();
        let mut visited: HashSet<u64> = HashSet::new();
        // parent[node] = (previous node, key of the edge previous -> node)
        let mut parent: HashMap<u64, (u64, &[u8])> = HashMap::new();
        let mut stack = vec![from];
        visited.insert(from);
        let mut found = false;
        while let Some(node) = stack.pop() {
            if node == to {
                found = true;
                break;
            }
            let Some(out) = self.wait_for.get(&node) else {
                continue;
            };
            for (&next, edge) in out {
                if now.saturating_duration_since(edge.last_seen) > self.ttl {
                    expired.push((node, next));
                    continue;
                }
                if visited.insert(next) {
                    let key = edge.keys.first().map_or(&[][..], Vec::as_slice);
                    parent.insert(next, (node, key));
                    stack.push(next);
                }
            }
        }
        let path = found.then(|| {
            let mut path = Vec::new();
            let mut node = to;
            // Every node reached, except `from`, has a parent entry.
            while node != from {
                let Some(&(prev, key)) = parent.get(&node) else {
                    break;
                };
                path.push(WaitForEntry {
                    txn: prev,
                    wait_for_txn: node,
                    key: key.to_vec(),
                });
                node = prev;
            }
            path.reverse();
            path
        });
        for (waiter, holder) in expired {
            self.remove_edge(waiter, holder);
        }
        path
    }

    fn remove_edge(&mut self, waiter: u64, holder: u64) {
        if let Some(out) = self.wait_for.get_mut(&waiter) {
            out.remove(&holder);
            if out.is_empty() {
                self.wait_for.remove(&waiter);
            }
        }
    }

    /// `txn` still waits for the lock of `lock_ts`: the edge's expiry clock restarts at `now`.
    /// Returns whether the edge was live. A missing edge (cleaned up) is not re-added, and an
    /// expired one is removed rather than revived: detection ignored it while it was expired,
    /// so reviving it without a check could put a cycle in the graph.
    pub fn refresh(&mut self, txn: u64, lock_ts: u64, now: Instant) -> bool {
        let ttl = self.ttl;
        let Some(edge) = self
            .wait_for
            .get_mut(&txn)
            .and_then(|out| out.get_mut(&lock_ts))
        else {
            return false;
        };
        if now.saturating_duration_since(edge.last_seen) > ttl {
            self.remove_edge(txn, lock_ts);
            return false;
        }
        edge.last_seen = edge.last_seen.max(now);
        true
    }

    /// `txn` stopped waiting for the lock of `lock_ts` on `key` (woken or timed out): the
    /// key is removed from the edge, and the edge when no key is left.
    pub fn clean_up_wait_for(&mut self, txn: u64, lock_ts: u64, key: &[u8]) {
        let Some(out) = self.wait_for.get_mut(&txn) else {
            return;
        };
        if let Some(edge) = out.get_mut(&lock_ts) {
            edge.keys.retain(|k| k != key);
            if edge.keys.is_empty() {
                self.remove_edge(txn, lock_ts);
            }
        }
    }

    /// `txn` finished: every edge it waits on is removed.
    pub fn clean_up(&mut self, txn: u64) {
        self.wait_for.remove(&txn);
    }

    /// Removes every edge not refreshed within the TTL; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let ttl = self.ttl;
        let mut removed = 0;
        self.wait_for.retain(|_, out| {
            let before = out.len();
            out.retain(|_, e| now.saturating_duration_since(e.last_seen) <= ttl);
            removed += before - out.len();
            !out.is_empty()
        });
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cycle_is_found_and_not_added() {
        let mut d = DeadlockDetector::default();
        d.detect(1, 2, b"a").unwrap();
        let err = d.detect(2, 1, b"b").unwrap_err();
        assert_eq!(
            err.wait_chain,
            vec![
                WaitForEntry {
                    txn: 2,
                    wait_for_txn: 1,
                    key: b"b".to_vec()
                },
                WaitForEntry {
                    txn: 1,
                    wait_for_txn: 2,
                    key: b"a".to_vec()
                },
            ]
        );
        assert_eq!(d.edge_count(), 1);
    }

    #[test]
    fn self_wait_is_ignored() {
        let mut d = DeadlockDetector::default();
        assert!(d.detect(5, 5, b"k").is_ok());
        assert_eq!(d.edge_count(), 0);
    }
}
