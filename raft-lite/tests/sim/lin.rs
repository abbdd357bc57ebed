//! A linearizability checker for per-key registers whose writes put unique values.
//!
//! The search is G. Lowe's just-in-time linearization ("Testing for linearizability",
//! Concurrency and Computation 2017) with the memoization of Porcupine (A. Athalye's
//! checker, after P. Fonseca's): a depth-first search over the time-ordered list of call
//! and return events that linearizes a call as soon as it is the earliest event left, and
//! backtracks when it meets a return whose call is not yet linearized. A cache of
//! (set of linearized operations, register value) prunes every state already explored,
//! so a register history of thousands of operations with a handful in flight at a time
//! is decided in milliseconds.
//!
//! Before the search the history is cut down, which is sound for registers with unique
//! written values:
//! - by key (linearizability is compositional: Herlihy & Wing, 1990);
//! - a read whose outcome is unknown has no effect and is dropped;
//! - a write whose outcome is unknown and whose value no read returned is dropped: any
//!   linearization containing it stays valid without it (no read observed it);
//! - a write whose outcome is unknown but whose value was read must take effect before
//!   the first read that returned it completed: that is its return time.

use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Put(u64),
    /// A read and the value it returned (0 = never written).
    Get(u64),
}

#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub key: u8,
    pub kind: OpKind,
    pub invoke: u64,
    /// `None`: outcome unknown.
    pub complete: Option<u64>,
}

/// Checks every key's history; `Err` names the first key that has no linearization.
pub fn check(ops: &[Op]) -> Result<(), String> {
    let mut by_key: BTreeMap<u8, Vec<Op>> = BTreeMap::new();
    for op in ops {
        by_key.entry(op.key).or_default().push(*op);
    }
    for (key, h) in by_key {
        let h = prune(&h)?;
        if !linearizable(&h) {
            return Err(format!(
                "key {key} is not linearizable ({} operations): {h:?}",
                h.len()
            ));
        }
    }
    Ok(())
}

/// One operation with a known window: it takes effect at some point in
/// `[invoke, complete]`.
#[derive(Debug, Clone, Copy)]
struct Window {
    kind: OpKind,
    invoke: u64,
    complete: u64,
}

/// Drops what cannot matter and bounds unknown writes (see the module docs).
fn prune(h: &[Op]) -> Result<Vec<Window>, String> {
    // Earliest completion of a read of each value.
    let mut first_read: HashMap<u64, u64> = HashMap::new();
    for op in h {
        if let (OpKind::Get(v), Some(c)) = (op.kind, op.complete) {
            let e = first_read.entry(v).or_insert(c);
            *e = (*e).min(c);
        }
    }
    let mut seen_puts = HashSet::new();
    let mut out = Vec::with_capacity(h.len());
    for op in h {
        let complete = match (op.kind, op.complete) {
            (_, Some(c)) => c,
            (OpKind::Get(_), None) => continue,
            (OpKind::Put(v), None) => match first_read.get(&v) {
                Some(&c) => c,
                None => continue,
            },
        };
        if let OpKind::Put(v) = op.kind
            && (v == 0 || !seen_puts.insert(v))
        {
            return Err(format!("value {v} written twice: writes must be unique"));
        }
        out.push(Window {
            kind: op.kind,
            invoke: op.invoke,
            complete,
        });
    }
    Ok(out)
}

/// An event of the doubly linked entry list: the call or the return of operation `op`.
#[derive(Debug, Clone, Copy)]
struct Event {
    op: usize,
    call: bool,
    prev: usize,
    next: usize,
}

/// The register model: `Some(new value)` if `kind` may take effect on `value`.
fn step(value: u64, kind: OpKind) -> Option<u64> {
    match kind {
        OpKind::Put(v) => Some(v),
        OpKind::Get(v) => (v == value).then_some(value),
    }
}

fn linearizable(h: &[Window]) -> bool {
    let n = h.len();
    if n == 0 {
        return true;
    }
    // Events by time; at equal times calls come first, so operations that touch are
    // concurrent (either order is allowed).
    let mut order: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * n);
    for (i, w) in h.iter().enumerate() {
        order.push((w.invoke, true, i));
        order.push((w.complete, false, i));
    }
    order.sort_by_key(|&(t, call, i)| (t, !call, i));
    // Node 0 is the head sentinel; event k of `order` is node k + 1.
    const NIL: usize = usize::MAX;
    let mut ev = Vec::with_capacity(order.len() + 1);
    ev.push(Event {
        op: NIL,
        call: false,
        prev: NIL,
        next: 1,
    });
    let mut ret_node = vec![0usize; n];
    let mut call_node = vec![0usize; n];
    for (k, &(_, call, i)) in order.iter().enumerate() {
        let node = k + 1;
        ev.push(Event {
            op: i,
            call,
            prev: k,
            next: if node == order.len() { NIL } else { node + 1 },
        });
        if call {
            call_node[i] = node;
        } else {
            ret_node[i] = node;
        }
    }
    let lift = |ev: &mut Vec<Event>, node: usize| {
        let (p, x) = (ev[node].prev, ev[node].next);
        ev[p].next = x;
        if x != NIL {
            ev[x].prev = p;
        }
    };
    let unlift = |ev: &mut Vec<Event>, node: usize| {
        let (p, x) = (ev[node].prev, ev[node].next);
        ev[p].next = node;
        if x != NIL {
            ev[x].prev = node;
        }
    };
    let words = n.div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, u64)> = HashSet::new();
    let mut calls: Vec<(usize, u64)> = Vec::new();
    let mut value = 0u64;
    let mut cur = ev[0].next;
    while ev[0].next != NIL {
        if cur == NIL {
            // Only reachable if a return was lifted without its call: cannot happen.
            return false;
        }
        let e = ev[cur];
        if e.call {
            let op = e.op;
            if let Some(next_value) = step(value, h[op].kind) {
                linearized[op / 64] |= 1 << (op % 64);
                if cache.insert((linearized.clone(), next_value)) {
                    calls.push((op, value));
                    value = next_value;
                    lift(&mut ev, call_node[op]);
                    lift(&mut ev, ret_node[op]);
                    cur = ev[0].next;
                    continue;
                }
                linearized[op / 64] &= !(1 << (op % 64));
            }
            cur = e.next;
        } else {
            // The earliest pending return belongs to an operation not yet linearized:
            // undo the last choice and try the next candidate after it.
            let Some((op, prev_value)) = calls.pop() else {
                return false;
            };
            value = prev_value;
            linearized[op / 64] &= !(1 << (op % 64));
            // Relink in the reverse order of lifting.
            unlift(&mut ev, ret_node[op]);
            unlift(&mut ev, call_node[op]);
            cur = ev[call_node[op]].next;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, invoke: u64, complete: Option<u64>) -> Op {
        Op {
            key: 1,
            kind,
            invoke,
            complete,
        }
    }

    #[test]
    fn checker_accepts_and_rejects() {
        use OpKind::{Get, Put};
        // put 1 [0,2]; get -> 1 [3,4]: fine.
        assert!(check(&[op(Put(1), 0, Some(2)), op(Get(1), 3, Some(4))]).is_ok());
        // A read after the put completed must not see the old value.
        assert!(check(&[op(Put(1), 0, Some(2)), op(Get(0), 3, Some(4))]).is_err());
        // Concurrent: either order is fine.
        assert!(check(&[op(Put(1), 0, Some(5)), op(Get(0), 1, Some(4))]).is_ok());
        // An unknown put may have happened...
        assert!(check(&[op(Put(7), 0, None), op(Get(7), 10, Some(11))]).is_ok());
        // ...or not,
        assert!(check(&[op(Put(7), 0, None), op(Get(0), 10, Some(11))]).is_ok());
        // but not before it was invoked.
        assert!(check(&[op(Get(7), 0, Some(1)), op(Put(7), 2, None)]).is_err());
        // Stale read after a newer completed write.
        let h = [
            op(Put(1), 0, Some(1)),
            op(Put(2), 2, Some(3)),
            op(Get(1), 4, Some(5)),
        ];
        assert!(check(&h).is_err());
        // An unknown put that was read must take effect before that read: a later read of
        // the older value is then stale.
        let h = [
            op(Put(1), 0, Some(1)),
            op(Put(2), 2, None),
            op(Get(2), 3, Some(4)),
            op(Get(1), 5, Some(6)),
        ];
        assert!(check(&h).is_err());
        // Two reads that disagree on the order of two concurrent writes.
        let h = [
            op(Put(1), 0, Some(10)),
            op(Put(2), 0, Some(10)),
            op(Get(1), 11, Some(12)),
            op(Get(2), 13, Some(14)),
            op(Get(1), 15, Some(16)),
        ];
        assert!(check(&h).is_err());
    }

    /// A known non-linearizable history buried in a long, busy one is still found.
    #[test]
    fn long_history_with_one_stale_read_is_rejected() {
        let mut h = long_history(4000, 11);
        let last_put = h
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Put(v) => Some((o.complete.unwrap_or(0), v)),
                OpKind::Get(_) => None,
            })
            .max()
            .unwrap();
        // Long after the last write completed, read a value other than the last one.
        let t = h.iter().filter_map(|o| o.complete).max().unwrap() + 10;
        h.push(op(OpKind::Get(last_put.1 + 1_000_000), t, Some(t + 1)));
        assert!(check(&h).is_err());
    }

    /// Several thousand operations with up to six in flight and unknown outcomes: accepted
    /// quickly.
    #[test]
    fn long_linearizable_history_is_accepted_fast() {
        for seed in 0..3 {
            let h = long_history(5000, seed);
            let start = std::time::Instant::now();
            check(&h).unwrap();
            let took = start.elapsed();
            assert!(took.as_secs() < 5, "took {took:?}");
        }
    }

    /// A history of one register produced by a real (sequential) execution: each operation
    /// gets a random window around its linearization point, up to six overlap, and about
    /// one in ten has its outcome hidden (a crashed client).
    fn long_history(n: usize, seed: u64) -> Vec<Op> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rand = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut value = 0;
        let mut next = 1;
        let mut out = Vec::with_capacity(n);
        for i in 0..n as u64 {
            // Linearization point 10 * i; the window reaches back and forward up to
            // 30 steps, so about six operations overlap.
            let at = 10 * i + 100;
            let invoke = at - rand(30);
            let complete = at + rand(30);
            let kind = if rand(2) == 0 {
                value = next;
                next += 1;
                OpKind::Put(value)
            } else {
                OpKind::Get(value)
            };
            let complete = (rand(10) != 0).then_some(complete);
            out.push(Op {
                key: 1,
                kind,
                invoke,
                complete,
            });
        }
        out
    }
}
