//! The simulation's history as per-key registers with unique written values, checked for
//! linearizability by `surge-testkit`'s checker (G. Lowe's just-in-time linearization with
//! Porcupine's memoization, after cutting the history by key and dropping operations of
//! unknown outcome that nobody observed; see that crate).

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
    let registers: Vec<surge_testkit::Op> = ops
        .iter()
        .map(|op| surge_testkit::Op {
            key: u64::from(op.key),
            kind: match op.kind {
                OpKind::Put(v) => surge_testkit::OpKind::Write(v),
                OpKind::Get(v) => surge_testkit::OpKind::Read(v),
            },
            client: 0,
            invoke: op.invoke,
            complete: op.complete,
        })
        .collect();
    surge_testkit::check_registers(&registers)
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
