//! The fuzz target's interpreter run on random bytes, so it runs in CI too.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn random_bytes_keep_invariants(data in prop::collection::vec(any::<u8>(), 0..600)) {
        crate::ops_interpreter::run(&data);
    }
}

#[test]
fn fixed_programs_reach_every_operation() {
    let empty = crate::ops_interpreter::run(&[]);
    assert_eq!(empty.inserted + empty.refused, 0);
    // Insert "\x05.." , split at "\x4d..", merge back, lose leadership.
    let s = crate::ops_interpreter::run(&[0, 0, 3, 5, 8, 0, 5, 77, 9, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!((s.inserted, s.splits, s.merges), (1, 1, 1), "{s:?}");
}

/// Seeded random programs, long enough to split, merge and hit the budgets.
#[test]
fn seeded_programs_cover_splits_merges_and_refusals() {
    let mut state = 0x1234_5678_u64;
    let mut total = crate::ops_interpreter::Stats::default();
    for _ in 0..60 {
        let data: Vec<u8> = (0..2000)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u8
            })
            .collect();
        let s = crate::ops_interpreter::run(&data);
        total.inserted += s.inserted;
        total.refused += s.refused;
        total.splits += s.splits;
        total.merges += s.merges;
    }
    assert!(total.inserted > 100 && total.refused > 100, "{total:?}");
    assert!(total.splits > 20 && total.merges > 5, "{total:?}");
}
