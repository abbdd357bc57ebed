//! Half-open key ranges, used for scans and region splits.

use std::ops::Bound;

/// A half-open range of keys `[start, end)`; `end == None` means unbounded above.
///
/// Invariant: none; a range whose bounded end is `<= start` is simply empty
/// ([`KeyRange::is_empty`]), and [`RegionLockTable::split`](crate::RegionLockTable::split)
/// rejects such ranges with an error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct KeyRange {
    start: Vec<u8>,
    end: Option<Vec<u8>>,
}

impl KeyRange {
    /// The range `[start, end)`.
    pub fn new(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>) -> Self {
        KeyRange {
            start: start.into(),
            end: Some(end.into()),
        }
    }

    /// The range of every key `>= start`.
    pub fn from_start(start: impl Into<Vec<u8>>) -> Self {
        KeyRange {
            start: start.into(),
            end: None,
        }
    }

    /// The range of every key.
    pub fn all() -> Self {
        KeyRange::default()
    }

    /// The inclusive start key.
    pub fn start(&self) -> &[u8] {
        &self.start
    }

    /// The exclusive end key, `None` when unbounded.
    pub fn end(&self) -> Option<&[u8]> {
        self.end.as_deref()
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }

    /// Whether no key can lie in the range (`end <= start`).
    pub fn is_empty(&self) -> bool {
        self.end
            .as_deref()
            .is_some_and(|end| end <= self.start.as_slice())
    }

    /// The range as a pair of bounds for `BTreeMap::range`.
    pub(crate) fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let end = match &self.end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        (Bound::Included(self.start.as_slice()), end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_and_empty() {
        let r = KeyRange::new(b"b".to_vec(), b"d".to_vec());
        assert!(!r.contains(b"a"));
        assert!(r.contains(b"b"));
        assert!(r.contains(b"c\xff"));
        assert!(!r.contains(b"d"));
        assert!(!r.is_empty());
        assert!(KeyRange::new(b"d".to_vec(), b"d".to_vec()).is_empty());
        assert!(KeyRange::new(b"e".to_vec(), b"d".to_vec()).is_empty());
        assert!(KeyRange::from_start(b"x".to_vec()).contains(b"\xff\xff"));
        assert!(KeyRange::all().contains(b""));
    }
}
