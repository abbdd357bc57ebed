//! A small linearizability checker for per-key registers (Wing & Gong search with
//! memoization, P-compositional by key). Puts write unique values; an operation whose
//! outcome is unknown (its node crashed) may take effect at any time after its invocation,
//! or never.

use std::collections::{BTreeMap, HashSet};

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
        // An unknown read has no observable effect.
        if op.complete.is_none() && matches!(op.kind, OpKind::Get(_)) {
            continue;
        }
        by_key.entry(op.key).or_default().push(*op);
    }
    for (key, h) in by_key {
        if h.len() > 120 {
            return Err(format!(
                "history of key {key} too long to check ({})",
                h.len()
            ));
        }
        match linearizable(&h) {
            Some(true) => {}
            Some(false) => return Err(format!("key {key} is not linearizable: {h:?}")),
            None => return Err(format!("key {key}: search budget exhausted: {h:?}")),
        }
    }
    Ok(())
}

/// `None` if the search exceeded its budget (a history too tangled to decide quickly).
fn linearizable(h: &[Op]) -> Option<bool> {
    let n = h.len();
    let words = n.div_ceil(64).max(1);
    let mut seen: HashSet<(Vec<u64>, u64)> = HashSet::new();
    let mut done = vec![0u64; words];
    let ok = dfs(h, &mut done, 0, &mut seen);
    if seen.len() > BUDGET {
        return None;
    }
    Some(ok)
}

const BUDGET: usize = 200_000;

fn is_set(done: &[u64], i: usize) -> bool {
    done[i / 64] & (1 << (i % 64)) != 0
}

fn dfs(h: &[Op], done: &mut Vec<u64>, value: u64, seen: &mut HashSet<(Vec<u64>, u64)>) -> bool {
    // Finished once every completed op is linearized (unknown ones are optional).
    let pending_completed = (0..h.len()).any(|i| !is_set(done, i) && h[i].complete.is_some());
    if !pending_completed {
        return true;
    }
    if seen.len() > BUDGET || !seen.insert((done.clone(), value)) {
        return false;
    }
    // An op may go next only if no other pending op completed before it was invoked.
    let min_resp = (0..h.len())
        .filter(|&i| !is_set(done, i))
        .filter_map(|i| h[i].complete)
        .min()
        .unwrap_or(u64::MAX);
    for i in 0..h.len() {
        if is_set(done, i) || h[i].invoke > min_resp {
            continue;
        }
        let next = match h[i].kind {
            OpKind::Put(v) => v,
            OpKind::Get(v) => {
                if v != value {
                    continue;
                }
                value
            }
        };
        done[i / 64] |= 1 << (i % 64);
        if dfs(h, done, next, seen) {
            return true;
        }
        done[i / 64] &= !(1 << (i % 64));
    }
    false
}

#[test]
fn checker_accepts_and_rejects() {
    let op = |kind, invoke, complete| Op {
        key: 1,
        kind,
        invoke,
        complete,
    };
    // put 1 [0,2]; get -> 1 [3,4]: fine.
    assert!(
        check(&[
            op(OpKind::Put(1), 0, Some(2)),
            op(OpKind::Get(1), 3, Some(4))
        ])
        .is_ok()
    );
    // A read after the put completed must not see the old value.
    assert!(
        check(&[
            op(OpKind::Put(1), 0, Some(2)),
            op(OpKind::Get(0), 3, Some(4))
        ])
        .is_err()
    );
    // Concurrent: either order is fine.
    assert!(
        check(&[
            op(OpKind::Put(1), 0, Some(5)),
            op(OpKind::Get(0), 1, Some(4))
        ])
        .is_ok()
    );
    // An unknown put may have happened...
    assert!(
        check(&[
            op(OpKind::Put(7), 0, None),
            op(OpKind::Get(7), 10, Some(11))
        ])
        .is_ok()
    );
    // ...or not,
    assert!(
        check(&[
            op(OpKind::Put(7), 0, None),
            op(OpKind::Get(0), 10, Some(11))
        ])
        .is_ok()
    );
    // but not before it was invoked.
    assert!(check(&[op(OpKind::Get(7), 0, Some(1)), op(OpKind::Put(7), 2, None)]).is_err());
    // Stale read after a newer completed write.
    let h = [
        op(OpKind::Put(1), 0, Some(1)),
        op(OpKind::Put(2), 2, Some(3)),
        op(OpKind::Get(1), 4, Some(5)),
    ];
    assert!(check(&h).is_err());
}
