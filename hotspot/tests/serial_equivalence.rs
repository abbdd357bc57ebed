//! Results equal a serial execution in arrival order, with random operations and failures.

use std::collections::HashMap;

use proptest::prelude::*;
use surge_hotspot::{Config, Error, Hints};

use crate::common::{Kind, Op, Res, TestExec, coordinator, model_apply, run_held_group};

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => (-3i64..4, -4i64..3, 0i64..10)
            .prop_map(|(delta, min, width)| Kind::Add { delta, min, max: min + width }),
        1 => Just(Kind::Fail),
        1 => Just(Kind::NoOp),
    ]
}

fn hints() -> impl Strategy<Value = Hints> {
    (any::<bool>(), prop::option::of(0u64..2)).prop_map(|(rollback, target)| {
        let mut h = Hints::new().commit_on_success();
        if rollback {
            h = h.rollback_on_fail();
        }
        if let Some(t) = target {
            h = h.target_affect_row(t);
        }
        h
    })
}

/// The expected outcome of one member, computed serially.
#[derive(Debug, PartialEq)]
enum Want {
    Ok(i64),
    Rejected { position: usize },
    Target { expected: u64, actual: u64 },
    Durable,
}

fn classify(r: &Res) -> Want {
    match r {
        Ok(v) => Want::Ok(*v),
        Err(Error::Rejected { position, .. }) => Want::Rejected {
            position: *position,
        },
        Err(Error::TargetAffectRow {
            expected, actual, ..
        }) => Want::Target {
            expected: *expected,
            actual: *actual,
        },
        Err(Error::Durable { .. }) => Want::Durable,
        Err(e) => panic!("unexpected error {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn grouped_results_equal_serial_execution_in_arrival_order(
        start in -3i64..3,
        members in prop::collection::vec((kind(), hints()), 1..9),
        max_group in 1usize..10,
        fail_first_commit in any::<bool>(),
    ) {
        let cfg = Config::default().with_max_group_size(max_group);
        let hot = coordinator(TestExec::with_value(1, start), cfg);
        if fail_first_commit {
            hot.executor().fail_commit_for(1);
        }
        let ops: Vec<(Op, Hints)> = members
            .iter()
            .enumerate()
            .map(|(i, (k, h))| (Op { id: i as u64 + 1, kind: *k }, *h))
            .collect();
        let got = run_held_group(&hot, 1, &ops);

        // Serial model: groups are arrival order cut every `max_group` members.
        let mut value = start;
        let mut want = Vec::new();
        for (g, chunk) in ops.chunks(max_group).enumerate() {
            let before = value;
            let first = want.len();
            for (position, (op, h)) in chunk.iter().enumerate() {
                match model_apply(value, op.kind) {
                    Err(_) => want.push(Want::Rejected { position }),
                    Ok((next, rows)) => match h.target() {
                        Some(t) if t != rows => want.push(Want::Target { expected: t, actual: rows }),
                        _ => {
                            value = next;
                            want.push(Want::Ok(next));
                        }
                    },
                }
            }
            let any_kept = want[first..].iter().any(|w| matches!(w, Want::Ok(_)));
            if fail_first_commit && g == 0 && any_kept {
                for w in &mut want[first..] {
                    if matches!(w, Want::Ok(_)) {
                        *w = Want::Durable;
                    }
                }
                value = before;
            }
        }
        let got: Vec<Want> = got.iter().map(classify).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(hot.executor().value(1), value);
    }
}

/// splitmix64: a tiny seeded PRNG (no `rand` in this workspace).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn concurrent_random_traffic_replays_serially_from_the_commit_history() {
    const THREADS: u64 = 8;
    const EACH: u64 = 150;
    let hot = coordinator(TestExec::default(), Config::default());
    let mut plans = Vec::new();
    for t in 0..THREADS {
        let mut rng = Rng(0xC0FFEE ^ t);
        let plan: Vec<(u64, Op, Hints)> = (0..EACH)
            .map(|i| {
                let id = t * 10_000 + i + 1;
                let key = rng.below(2);
                let kind = match rng.below(10) {
                    0 => Kind::Fail,
                    1 => Kind::NoOp,
                    _ => {
                        let min = -(rng.below(20) as i64);
                        Kind::Add {
                            delta: rng.below(7) as i64 - 3,
                            min,
                            max: min + 40,
                        }
                    }
                };
                let mut h = Hints::new().commit_on_success();
                if rng.below(4) == 0 {
                    h = h.target_affect_row(1);
                }
                (key, Op { id, kind }, h)
            })
            .collect();
        plans.push(plan);
    }
    let mut results: HashMap<u64, (u64, Op, Hints, Res)> = HashMap::new();
    std::thread::scope(|s| {
        let hs: Vec<_> = plans
            .iter()
            .map(|plan| {
                let hot = &hot;
                s.spawn(move || {
                    plan.iter()
                        .map(|&(key, op, h)| (key, op, h, hot.execute(&key, op, h)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in hs {
            for (key, op, hints, r) in h.join().unwrap() {
                results.insert(op.id, (key, op, hints, r));
            }
        }
    });
    // Replay the committed groups in commit order, per key, against the model.
    let history = hot.executor().history.lock().unwrap().clone();
    let mut values: HashMap<u64, i64> = HashMap::new();
    let mut replayed = std::collections::HashSet::new();
    for group in &history {
        for (position, id) in group.iter().enumerate() {
            assert!(replayed.insert(*id), "op {id} applied twice");
            let (key, op, hints, got) = &results[id];
            let v = values.entry(*key).or_insert(0);
            let want = match model_apply(*v, op.kind) {
                Err(_) => Want::Rejected { position },
                Ok((next, rows)) => match hints.target() {
                    Some(t) if t != rows => Want::Target {
                        expected: t,
                        actual: rows,
                    },
                    _ => {
                        *v = next;
                        Want::Ok(next)
                    }
                },
            };
            assert_eq!(classify(got), want, "op {id} in group {group:?}");
        }
    }
    for (id, (_, _, _, r)) in &results {
        if !replayed.contains(id) {
            // Only groups where every member failed alone skip the durable step.
            assert!(
                r.as_ref().is_err_and(|e| e.is_member_failure()),
                "op {id} lost: {r:?}"
            );
        }
    }
    for key in 0..2 {
        assert_eq!(
            hot.executor().value(key),
            values.get(&key).copied().unwrap_or(0)
        );
    }
}
