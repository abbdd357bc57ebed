//! [`WriteBuffer`]: a transaction's writes, held on the client until commit.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::{Mutation, PessimisticAction};

/// One buffered change of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BufferedOp {
    /// Write this value.
    Put(Vec<u8>),
    /// Delete the key.
    Delete,
    /// Lock the key without changing it (`get_for_update`): commits as a lock record, so a
    /// concurrent writer of the key conflicts.
    Lock,
}

/// What the buffer knows about a key for a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufferedRead<'a> {
    /// The transaction wrote this value.
    Value(&'a [u8]),
    /// The transaction deleted the key.
    Deleted,
    /// The transaction did not write the key: read it from the store.
    NotWritten,
}

/// A transaction's buffered writes by key.
///
/// # Invariants
/// - One entry per key; the last write wins, and a [`BufferedOp::Lock`] never replaces a
///   write (locking a key the transaction already writes changes nothing).
#[derive(Debug, Default)]
pub(crate) struct WriteBuffer {
    ops: BTreeMap<Vec<u8>, BufferedOp>,
}

impl WriteBuffer {
    /// Buffers a put.
    pub(crate) fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.ops.insert(key, BufferedOp::Put(value));
    }

    /// Buffers a delete.
    pub(crate) fn delete(&mut self, key: Vec<u8>) {
        self.ops.insert(key, BufferedOp::Delete);
    }

    /// Buffers a lock of `key` unless the key is already written.
    pub(crate) fn lock(&mut self, key: Vec<u8>) {
        self.ops.entry(key).or_insert(BufferedOp::Lock);
    }

    /// What a read of `key` should see from the buffer.
    pub(crate) fn read(&self, key: &[u8]) -> BufferedRead<'_> {
        match self.ops.get(key) {
            Some(BufferedOp::Put(v)) => BufferedRead::Value(v),
            Some(BufferedOp::Delete) => BufferedRead::Deleted,
            Some(BufferedOp::Lock) | None => BufferedRead::NotWritten,
        }
    }

    /// Whether `key` is buffered (written or locked).
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.ops.contains_key(key)
    }

    /// The smallest buffered key.
    pub(crate) fn first_key(&self) -> Option<&[u8]> {
        self.ops.keys().next().map(Vec::as_slice)
    }

    /// The prewrite mutations in key order, the buffer consumed (its keys and values move
    /// into them: a large transaction's write set is not copied): keys in `pessimistic` are
    /// checked for their pessimistic lock at prewrite, others are not.
    pub(crate) fn into_mutations(
        self,
        pessimistic: &BTreeSet<Vec<u8>>,
    ) -> Vec<(Mutation, PessimisticAction)> {
        self.ops
            .into_iter()
            .map(|(key, op)| {
                let action = if pessimistic.contains(&key) {
                    PessimisticAction::DoPessimisticCheck
                } else {
                    PessimisticAction::SkipPessimisticCheck
                };
                let mutation = match op {
                    BufferedOp::Put(value) => Mutation::Put { key, value },
                    BufferedOp::Delete => Mutation::Delete { key },
                    BufferedOp::Lock => Mutation::Lock { key },
                };
                (mutation, action)
            })
            .collect()
    }

    /// How many buffered deletes fall in `[start, end)`: a scan of the store must fetch this
    /// many extra pairs to still fill its limit after they are removed.
    pub(crate) fn deletes_in(&self, start: &[u8], end: Option<&[u8]>) -> usize {
        self.range(start, end)
            .filter(|(_, op)| **op == BufferedOp::Delete)
            .count()
    }

    /// Merges the store's `pairs` of `[start, end)` (in key order, fetched with a limit of
    /// at least `limit + deletes_in(start, end)`) with the buffer: buffered puts replace or
    /// add pairs, buffered deletes remove them. Returns at most `limit` pairs in key order.
    ///
    /// Why the extra fetch suffices: if the store returned fewer pairs than asked, every
    /// store pair of the range is there; otherwise at least `limit` of them survive the
    /// deletes and all lie at or below the last one fetched, so no pair beyond it can be
    /// among the first `limit` of the merge.
    pub(crate) fn merge_scan(
        &self,
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = pairs.into_iter().collect();
        for (key, op) in self.range(start, end) {
            match op {
                BufferedOp::Put(v) => {
                    merged.insert(key.clone(), v.clone());
                }
                BufferedOp::Delete => {
                    merged.remove(key);
                }
                BufferedOp::Lock => {}
            }
        }
        merged.into_iter().take(limit).collect()
    }

    fn range<'s>(
        &'s self,
        start: &'s [u8],
        end: Option<&'s [u8]>,
    ) -> impl Iterator<Item = (&'s Vec<u8>, &'s BufferedOp)> + 's {
        self.ops
            .range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
            .take_while(move |(k, _)| end.is_none_or(|e| k.as_slice() < e))
    }
}

/// The primary key of a transaction about to commit: the key it locked first (a pessimistic
/// transaction, when that key is still buffered), else the smallest buffered key.
pub(crate) fn select_primary(buffer: &WriteBuffer, first_locked: Option<&[u8]>) -> Option<Vec<u8>> {
    first_locked
        .filter(|k| buffer.contains(k))
        .or_else(|| buffer.first_key())
        .map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
        (k.as_bytes().to_vec(), v.as_bytes().to_vec())
    }

    #[test]
    fn reads_see_the_last_buffered_write_and_lock_does_not_downgrade() {
        let mut b = WriteBuffer::default();
        b.put(b"a".to_vec(), b"1".to_vec());
        b.lock(b"a".to_vec());
        assert_eq!(b.read(b"a"), BufferedRead::Value(b"1"));
        b.delete(b"a".to_vec());
        assert_eq!(b.read(b"a"), BufferedRead::Deleted);
        b.lock(b"c".to_vec());
        assert_eq!(b.read(b"c"), BufferedRead::NotWritten);
        assert_eq!(b.read(b"z"), BufferedRead::NotWritten);
        b.put(b"c".to_vec(), b"3".to_vec());
        assert_eq!(b.read(b"c"), BufferedRead::Value(b"3"));
    }

    #[test]
    fn mutations_are_in_key_order_with_pessimistic_checks_for_locked_keys() {
        let mut b = WriteBuffer::default();
        b.put(b"b".to_vec(), b"2".to_vec());
        b.delete(b"a".to_vec());
        b.lock(b"c".to_vec());
        let locked: BTreeSet<Vec<u8>> = [b"b".to_vec(), b"c".to_vec()].into();
        let got = b.into_mutations(&locked);
        assert_eq!(
            got,
            vec![
                (
                    Mutation::Delete { key: b"a".to_vec() },
                    PessimisticAction::SkipPessimisticCheck
                ),
                (
                    Mutation::Put {
                        key: b"b".to_vec(),
                        value: b"2".to_vec()
                    },
                    PessimisticAction::DoPessimisticCheck
                ),
                (
                    Mutation::Lock { key: b"c".to_vec() },
                    PessimisticAction::DoPessimisticCheck
                ),
            ]
        );
    }

    #[test]
    fn primary_is_the_first_locked_key_else_the_smallest() {
        let mut b = WriteBuffer::default();
        assert_eq!(select_primary(&b, None), None);
        b.put(b"m".to_vec(), vec![]);
        b.put(b"c".to_vec(), vec![]);
        let cases: &[(Option<&[u8]>, &[u8])] =
            &[(None, b"c"), (Some(b"m"), b"m"), (Some(b"x"), b"c")];
        for (first_locked, want) in cases {
            assert_eq!(
                select_primary(&b, *first_locked).as_deref(),
                Some(*want),
                "{first_locked:?}"
            );
        }
    }

    #[test]
    fn scan_merge_applies_puts_and_deletes_within_the_range_and_limit() {
        let mut b = WriteBuffer::default();
        b.put(b"b".to_vec(), b"B".to_vec()); // new key
        b.put(b"c".to_vec(), b"C2".to_vec()); // overwrite
        b.delete(b"d".to_vec());
        b.delete(b"e".to_vec());
        b.put(b"z".to_vec(), b"Z".to_vec()); // outside [a, x)
        b.lock(b"f".to_vec());
        assert_eq!(b.deletes_in(b"a", Some(b"x")), 2);
        assert_eq!(b.deletes_in(b"e", None), 1);
        let store = vec![
            kv("a", "A"),
            kv("c", "C"),
            kv("d", "D"),
            kv("e", "E"),
            kv("f", "F"),
            kv("g", "G"),
        ];
        let got = b.merge_scan(store.clone(), b"a", Some(b"x"), 10);
        assert_eq!(
            got,
            vec![
                kv("a", "A"),
                kv("b", "B"),
                kv("c", "C2"),
                kv("f", "F"),
                kv("g", "G")
            ]
        );
        let got = b.merge_scan(store, b"a", Some(b"x"), 3);
        assert_eq!(got, vec![kv("a", "A"), kv("b", "B"), kv("c", "C2")]);
    }
}
