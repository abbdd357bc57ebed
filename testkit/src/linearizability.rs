//! A linearizability checker for single-key registers with unique written values, reads and
//! compare-and-set.
//!
//! The search is G. Lowe's just-in-time linearization ("Testing for linearizability",
//! Concurrency and Computation, 2017) with Porcupine's memoization (A. Athalye, after
//! P. Fonseca et al.): a depth-first search over the time-ordered list of call and return
//! events. It linearizes a call as soon as the call is the earliest event left and the
//! register allows it, and backtracks when it meets a return whose call is not linearized
//! yet. A cache of (set of linearized operations, register value) cuts every state already
//! explored, so a few thousand operations with a handful in flight are decided quickly.
//!
//! The history is first cut down, which is sound for registers with unique written values:
//! - by key: linearizability is compositional (Herlihy & Wing, 1990);
//! - a read whose outcome is unknown has no effect: dropped;
//! - a write (or compare-and-set) whose outcome is unknown and whose value no operation
//!   observed is dropped: in any linearization that contains it, only blind writes can
//!   follow it before the next write, so removing it keeps the linearization valid;
//! - a write whose outcome is unknown but whose value was observed must have taken effect
//!   before the first observer completed: that becomes its completion (a kept
//!   compare-and-set of unknown outcome observes its expected value by then in turn).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::history::{Op, OpKind};

/// Checks every key's history. `Err` describes the first key without a linearization and
/// lists its operations.
pub fn check_registers(ops: &[Op]) -> Result<(), String> {
    let mut by_key: BTreeMap<u64, Vec<Op>> = BTreeMap::new();
    for op in ops {
        by_key.entry(op.key).or_default().push(*op);
    }
    for (key, h) in by_key {
        let windows = prune(key, &h)?;
        if !linearizable(&windows) {
            return Err(format!(
                "key {key} is not linearizable; its {} operations (times in us):\n{}",
                windows.len(),
                describe(&windows)
            ));
        }
    }
    Ok(())
}

/// An operation with a known window: it took effect at one point of `[invoke, complete]`.
#[derive(Debug, Clone, Copy)]
struct Window {
    kind: OpKind,
    client: u64,
    invoke: u64,
    complete: u64,
}

fn describe(windows: &[Window]) -> String {
    let mut sorted = windows.to_vec();
    sorted.sort_by_key(|w| (w.invoke, w.complete));
    sorted
        .iter()
        .map(|w| {
            format!(
                "  [{:>10} .. {:>10}] client {} {:?}",
                w.invoke / 1000,
                w.complete / 1000,
                w.client,
                w.kind
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Drops what cannot matter and bounds unknown writes (see the module docs). Refuses a
/// history that reuses a written value, or that observed a value nobody wrote.
fn prune(key: u64, h: &[Op]) -> Result<Vec<Window>, String> {
    // When each value was first observed. A compare-and-set whose outcome is unknown
    // observes its expected value only if it is kept, that is once its own value was
    // observed, and then by that time: iterate until nothing changes.
    let mut first_observed: HashMap<u64, u64> = HashMap::new();
    let observe = |seen: &mut HashMap<u64, u64>, v: u64, c: u64| {
        let e = seen.entry(v).or_insert(c);
        let changed = c < *e;
        *e = (*e).min(c);
        changed
    };
    for op in h {
        if let (Some(v), Some(c)) = (op.kind.observed(), op.complete) {
            observe(&mut first_observed, v, c);
        }
    }
    loop {
        let mut changed = false;
        for op in h {
            if let (OpKind::Cas { expect, new }, None) = (op.kind, op.complete)
                && let Some(&c) = first_observed.get(&new)
            {
                let fresh = !first_observed.contains_key(&expect);
                changed |= observe(&mut first_observed, expect, c.max(op.invoke)) || fresh;
            }
        }
        if !changed {
            break;
        }
    }
    let mut written = HashSet::new();
    for op in h {
        if let Some(v) = op.kind.written()
            && (v == 0 || !written.insert(v))
        {
            return Err(format!("key {key}: value {v} written twice (or 0 written)"));
        }
    }
    for (v, c) in &first_observed {
        if *v != 0 && !written.contains(v) {
            return Err(format!(
                "key {key}: value {v} was observed (by an operation completed at {} us) but \
                 no write of it succeeded or stayed unknown: a failed write became visible",
                c / 1000
            ));
        }
    }
    let mut out = Vec::with_capacity(h.len());
    for op in h {
        let complete = match (op.kind, op.complete) {
            (_, Some(c)) => c,
            (OpKind::Read(_), None) => continue,
            (kind, None) => match kind.written().and_then(|v| first_observed.get(&v)) {
                Some(&c) => c.max(op.invoke),
                None => continue,
            },
        };
        out.push(Window {
            kind: op.kind,
            client: op.client,
            invoke: op.invoke,
            complete,
        });
    }
    Ok(out)
}

/// The register: the value after `kind` takes effect on `value`, if it may.
fn step(value: u64, kind: OpKind) -> Option<u64> {
    match kind {
        OpKind::Write(v) => Some(v),
        OpKind::Read(v) => (v == value).then_some(value),
        OpKind::Cas { expect, new } => (expect == value).then_some(new),
    }
}

/// One node of the doubly linked event list: the call or the return of operation `op`.
#[derive(Debug, Clone, Copy)]
struct Event {
    op: usize,
    call: bool,
    prev: usize,
    next: usize,
}

const NIL: usize = usize::MAX;

/// The event list with O(1) removal and reinsertion (Knuth's dancing links).
struct Events {
    ev: Vec<Event>,
    call_node: Vec<usize>,
    ret_node: Vec<usize>,
}

impl Events {
    fn new(h: &[Window]) -> Events {
        let n = h.len();
        // By time; at equal times calls first, so operations that touch count as
        // concurrent (either order is allowed).
        let mut order: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * n);
        for (i, w) in h.iter().enumerate() {
            order.push((w.invoke, true, i));
            order.push((w.complete, false, i));
        }
        order.sort_by_key(|&(t, call, i)| (t, !call, i));
        // Node 0 is the head sentinel; event k of `order` is node k + 1.
        let mut ev = Vec::with_capacity(order.len() + 1);
        ev.push(Event {
            op: NIL,
            call: false,
            prev: NIL,
            next: if order.is_empty() { NIL } else { 1 },
        });
        let mut call_node = vec![0; n];
        let mut ret_node = vec![0; n];
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
        Events {
            ev,
            call_node,
            ret_node,
        }
    }

    fn first(&self) -> usize {
        self.ev[0].next
    }

    fn unlink(&mut self, node: usize) {
        let (p, x) = (self.ev[node].prev, self.ev[node].next);
        self.ev[p].next = x;
        if x != NIL {
            self.ev[x].prev = p;
        }
    }

    /// Puts back a node removed by `unlink` (in the reverse order of removal).
    fn relink(&mut self, node: usize) {
        let (p, x) = (self.ev[node].prev, self.ev[node].next);
        self.ev[p].next = node;
        if x != NIL {
            self.ev[x].prev = node;
        }
    }

    fn take(&mut self, op: usize) {
        self.unlink(self.call_node[op]);
        self.unlink(self.ret_node[op]);
    }

    fn put_back(&mut self, op: usize) {
        self.relink(self.ret_node[op]);
        self.relink(self.call_node[op]);
    }
}

fn linearizable(h: &[Window]) -> bool {
    let mut events = Events::new(h);
    let mut linearized = vec![0u64; h.len().div_ceil(64)];
    let mut cache: HashSet<(Vec<u64>, u64)> = HashSet::new();
    // The operations linearized so far, with the register value before each.
    let mut chosen: Vec<(usize, u64)> = Vec::new();
    let mut value = 0u64;
    let mut cur = events.first();
    while events.first() != NIL {
        if cur == NIL {
            // Every candidate was tried at this level: only a return ends a level, so
            // this cannot happen; refuse rather than loop.
            return false;
        }
        let e = events.ev[cur];
        if e.call {
            let op = e.op;
            if let Some(next_value) = step(value, h[op].kind) {
                linearized[op / 64] |= 1 << (op % 64);
                if cache.insert((linearized.clone(), next_value)) {
                    chosen.push((op, value));
                    value = next_value;
                    events.take(op);
                    cur = events.first();
                    continue;
                }
                linearized[op / 64] &= !(1 << (op % 64));
            }
            cur = e.next;
        } else {
            // The earliest pending return is of an operation not linearized yet: undo
            // the last choice and try the candidate after it.
            let Some((op, before)) = chosen.pop() else {
                return false;
            };
            value = before;
            linearized[op / 64] &= !(1 << (op % 64));
            events.put_back(op);
            cur = events.ev[events.call_node[op]].next;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use OpKind::{Cas, Read, Write};

    fn op(kind: OpKind, invoke: u64, complete: Option<u64>) -> Op {
        Op {
            key: 1,
            kind,
            client: 0,
            invoke,
            complete,
        }
    }

    #[test]
    fn accepts_and_rejects_small_histories() {
        let cases: Vec<(&str, Vec<Op>, bool)> = vec![
            (
                "read after write",
                vec![op(Write(1), 0, Some(2)), op(Read(1), 3, Some(4))],
                true,
            ),
            (
                "stale read after a completed write",
                vec![op(Write(1), 0, Some(2)), op(Read(0), 3, Some(4))],
                false,
            ),
            (
                "concurrent read may see either",
                vec![op(Write(1), 0, Some(5)), op(Read(0), 1, Some(4))],
                true,
            ),
            (
                "unknown write seen",
                vec![op(Write(7), 0, None), op(Read(7), 10, Some(11))],
                true,
            ),
            (
                "unknown write not seen",
                vec![op(Write(7), 0, None), op(Read(0), 10, Some(11))],
                true,
            ),
            (
                "read before the write was invoked",
                vec![op(Read(7), 0, Some(1)), op(Write(7), 2, None)],
                false,
            ),
            (
                "value nobody wrote",
                vec![op(Write(1), 0, Some(1)), op(Read(9), 2, Some(3))],
                false,
            ),
            (
                "cas on the current value",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Cas { expect: 1, new: 2 }, 2, Some(3)),
                    op(Read(2), 4, Some(5)),
                ],
                true,
            ),
            (
                "two cas from the same value both succeed: a lost update",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Cas { expect: 1, new: 2 }, 2, Some(5)),
                    op(Cas { expect: 1, new: 3 }, 2, Some(5)),
                ],
                false,
            ),
            (
                "cas after its expected value was overwritten",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Write(2), 2, Some(3)),
                    op(Cas { expect: 1, new: 4 }, 4, Some(5)),
                ],
                false,
            ),
            (
                "unknown cas observed, then an older value read",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Cas { expect: 1, new: 2 }, 2, None),
                    op(Read(2), 3, Some(4)),
                    op(Read(1), 5, Some(6)),
                ],
                false,
            ),
            (
                "read of a value overwritten by a completed write",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Write(2), 2, Some(3)),
                    op(Read(1), 4, Some(5)),
                ],
                false,
            ),
            (
                "unknown write observed, then an older value read",
                vec![
                    op(Write(1), 0, Some(1)),
                    op(Write(2), 2, None),
                    op(Read(2), 3, Some(4)),
                    op(Read(1), 5, Some(6)),
                ],
                false,
            ),
            (
                "reads disagree on the order of two concurrent writes",
                vec![
                    op(Write(1), 0, Some(10)),
                    op(Write(2), 0, Some(10)),
                    op(Read(1), 11, Some(12)),
                    op(Read(2), 13, Some(14)),
                    op(Read(1), 15, Some(16)),
                ],
                false,
            ),
        ];
        for (name, h, ok) in cases {
            assert_eq!(check_registers(&h).is_ok(), ok, "{name}: {h:?}");
        }
    }

    /// A long history from a sequential execution with jittered windows and hidden
    /// outcomes is accepted fast, and one stale read appended to it is found.
    #[test]
    fn long_histories_are_decided_quickly() {
        let mut rng = crate::SplitMix64::new(7);
        let mut value = 0;
        let mut next = 1;
        let mut h = Vec::new();
        for i in 0..4000u64 {
            let at = 10 * i + 100;
            // The first operation is a completed write of 1, so that reading 1 at the end
            // is provably stale.
            let kind = match if i == 0 { 0 } else { rng.below(3) } {
                0 => {
                    value = next;
                    next += 1;
                    Write(value)
                }
                1 => {
                    let expect = value;
                    value = next;
                    next += 1;
                    Cas { expect, new: value }
                }
                _ => Read(value),
            };
            let complete = (i == 0 || !rng.chance(10)).then_some(at + rng.below(30));
            h.push(op(kind, at - rng.below(30), complete));
        }
        let start = std::time::Instant::now();
        check_registers(&h).expect("a real execution is linearizable");
        assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
        let end = h.iter().filter_map(|o| o.complete).max().unwrap_or(0) + 100;
        h.push(op(Read(1), end, Some(end + 1)));
        assert!(check_registers(&h).is_err(), "stale read at the end");
    }
}
