//! Cutting a transaction's secondaries into commit batches for the paced background path
//! ([`ClientConfig::secondary_batch_keys`], [`ClientConfig::secondary_batch_bytes`]).

use super::config::ClientConfig;
use crate::{Mutation, SHORT_VALUE_MAX_LEN};

/// One secondary key and the bytes its commit writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecondaryKey {
    /// The key.
    pub(crate) key: Vec<u8>,
    /// The key's length plus the short value its commit moves from the lock into the
    /// commit record (0 for longer values, which prewrite already wrote).
    pub(crate) bytes: usize,
}

impl SecondaryKey {
    /// The secondary key of `mutation`.
    pub(crate) fn of(mutation: &Mutation) -> SecondaryKey {
        let short_value = match mutation {
            Mutation::Put { value, .. } if value.len() <= SHORT_VALUE_MAX_LEN => value.len(),
            _ => 0,
        };
        let key = mutation.key().to_vec();
        SecondaryKey {
            bytes: key.len() + short_value,
            key,
        }
    }
}

/// The bounds of one commit batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// At most this many keys (at least 1).
    pub(crate) keys: usize,
    /// At most this many bytes, unless one key alone is larger.
    pub(crate) bytes: usize,
}

impl BatchLimits {
    /// The limits `config` asks for (a key bound of 0 counts as 1).
    pub(crate) fn of(config: &ClientConfig) -> BatchLimits {
        BatchLimits {
            keys: config.secondary_batch_keys.max(1),
            bytes: config.secondary_batch_bytes,
        }
    }
}

/// Cuts each region's keys (`groups`, one per region, in the order to send) into batches
/// within `limits`, keeping the keys' order. A batch never spans two regions, so each is one
/// commit request; it is never empty, and a key larger than `limits.bytes` goes alone.
pub(crate) fn cut_batches(
    groups: Vec<Vec<SecondaryKey>>,
    limits: BatchLimits,
) -> Vec<Vec<Vec<u8>>> {
    groups
        .into_iter()
        .flat_map(|group| cut_in_order(group, |k| k.bytes, limits))
        .map(|batch| batch.into_iter().map(|k| k.key).collect())
        .collect()
}

/// `items` cut into batches within `limits` (`size` gives an item's bytes), keeping their
/// order; no batch is empty, and an item larger than `limits.bytes` goes alone. The one cut
/// of the client's bounded requests (`dispatch::bounded_batches`) and paced commits.
pub(crate) fn cut_in_order<T>(
    items: Vec<T>,
    size: impl Fn(&T) -> usize,
    limits: BatchLimits,
) -> Vec<Vec<T>> {
    let mut batches = Vec::new();
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    for item in items {
        let n = size(&item);
        let full = batch.len() >= limits.keys || bytes.saturating_add(n) > limits.bytes;
        if full && !batch.is_empty() {
            batches.push(std::mem::take(&mut batch));
            bytes = 0;
        }
        bytes = bytes.saturating_add(n);
        batch.push(item);
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize, bytes: usize) -> Vec<SecondaryKey> {
        (0..n)
            .map(|i| SecondaryKey {
                key: vec![i as u8],
                bytes,
            })
            .collect()
    }

    fn sizes(batches: &[Vec<Vec<u8>>]) -> Vec<usize> {
        batches.iter().map(Vec::len).collect()
    }

    #[test]
    fn batches_respect_both_bounds_and_never_span_regions() {
        // (region sizes, bytes per key, key bound, byte bound, expected batch sizes)
        type Case = (Vec<usize>, usize, usize, usize, Vec<usize>);
        let cases: Vec<Case> = vec![
            (vec![10], 1, 4, 1 << 20, vec![4, 4, 2]),
            (vec![3, 5], 1, 4, 1 << 20, vec![3, 4, 1]),
            (vec![10], 10, 100, 35, vec![3, 3, 3, 1]),
            (vec![4], 10, 2, 35, vec![2, 2]),
            // A key larger than the byte bound goes alone.
            (vec![3], 50, 100, 35, vec![1, 1, 1]),
            // A key bound of 0 counts as 1 (as `BatchLimits::of` gives it).
            (vec![2], 1, 1, 1 << 20, vec![1, 1]),
            (vec![], 1, 4, 1 << 20, vec![]),
            (vec![0, 2], 1, 4, 1 << 20, vec![2]),
        ];
        for (regions, per_key, max_keys, max_bytes, want) in cases {
            let groups = regions.iter().map(|&n| keys(n, per_key)).collect();
            let limits = BatchLimits {
                keys: max_keys,
                bytes: max_bytes,
            };
            let got = cut_batches(groups, limits);
            assert_eq!(sizes(&got), want, "{regions:?} {per_key} {limits:?}");
        }
    }

    #[test]
    fn keys_keep_their_order() {
        let groups = vec![keys(5, 1)];
        let limits = BatchLimits { keys: 2, bytes: 99 };
        let flat: Vec<Vec<u8>> = cut_batches(groups, limits).concat();
        assert_eq!(flat, (0..5u8).map(|i| vec![i]).collect::<Vec<_>>());
    }

    #[test]
    fn commit_bytes_count_short_values_only() {
        let short = Mutation::Put {
            key: b"k1".to_vec(),
            value: vec![0; SHORT_VALUE_MAX_LEN],
        };
        let long = Mutation::Put {
            key: b"k2".to_vec(),
            value: vec![0; SHORT_VALUE_MAX_LEN + 1],
        };
        let delete = Mutation::Delete {
            key: b"k3".to_vec(),
        };
        assert_eq!(SecondaryKey::of(&short).bytes, 2 + SHORT_VALUE_MAX_LEN);
        assert_eq!(SecondaryKey::of(&long).bytes, 2);
        assert_eq!(SecondaryKey::of(&delete).bytes, 2);
        let config = ClientConfig {
            secondary_batch_keys: 0,
            ..ClientConfig::default()
        };
        assert_eq!(BatchLimits::of(&config).keys, 1);
    }
}
