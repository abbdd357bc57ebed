use std::collections::HashMap;

use proptest::prelude::*;

use super::NewestWrites;

#[test]
fn a_noted_key_is_bounded_by_its_newest_write_and_others_by_the_floor() {
    let index = NewestWrites::new(10, 8);
    assert_eq!(index.bound(b"a"), 10);
    index.note([(&b"a"[..], 30), (&b"b"[..], 20)]);
    // A rollback record older than the key's commit does not lower its bound.
    index.note([(&b"a"[..], 25)]);
    assert_eq!(index.bound(b"a"), 30);
    assert_eq!(index.bound(b"b"), 20);
    assert_eq!(index.bound(b"c"), 10);
    assert_eq!(index.newest(), 30);
    // A write at or below the floor needs no entry.
    index.note([(&b"d"[..], 5)]);
    assert_eq!(index.len(), 2);
    assert_eq!(index.bound(b"d"), 10);
}

#[test]
fn a_full_map_is_emptied_into_the_floor() {
    let index = NewestWrites::new(0, 2);
    index.note([(&b"a"[..], 5), (&b"b"[..], 7)]);
    assert_eq!(index.bound(b"x"), 0);
    index.note([(&b"c"[..], 6)]);
    assert_eq!(index.len(), 0);
    for key in [&b"a"[..], b"b", b"c", b"x"] {
        assert_eq!(index.bound(key), 7, "{key:?}");
    }
    // Later writes get entries again, above the new floor.
    index.note([(&b"a"[..], 9)]);
    assert_eq!(index.bound(b"a"), 9);
    assert_eq!(index.bound(b"b"), 7);
}

#[test]
fn an_unknown_floor_bounds_nothing_below_the_maximum() {
    let index = NewestWrites::new(0, 16);
    index.note([(&b"a"[..], 3)]);
    index.raise_floor(u64::MAX);
    assert_eq!(index.bound(b"a"), u64::MAX);
    assert_eq!(index.bound(b"b"), u64::MAX);
    assert_eq!(index.newest(), u64::MAX);
}

proptest! {
    /// The invariant: whatever the writes and however small the map, no key's bound is
    /// below its newest write, and a restart's floor (`newest`) is above every write.
    #[test]
    fn bounds_never_fall_below_the_truth(
        floor in 0u64..50,
        capacity in 0usize..6,
        writes in proptest::collection::vec((0u8..10, 0u64..200), 0..80),
    ) {
        let index = NewestWrites::new(floor, capacity);
        let mut truth: HashMap<u8, u64> = HashMap::new();
        for (key, ts) in writes {
            index.note([(&[key][..], ts)]);
            let t = truth.entry(key).or_default();
            *t = (*t).max(ts);
            for (k, newest) in &truth {
                prop_assert!(index.bound(&[*k]) >= *newest, "key {k}: bound below {newest}");
                prop_assert!(index.newest() >= *newest);
            }
        }
    }
}
