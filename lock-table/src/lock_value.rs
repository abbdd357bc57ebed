//! The trait a lock value implements so the table can charge its memory.

/// A value stored in the lock table, able to report the heap memory it owns.
///
/// The table charges every entry `key.len() + heap_size() + ENTRY_OVERHEAD`
/// (see [`RegionLockTable::ENTRY_OVERHEAD`](crate::RegionLockTable::ENTRY_OVERHEAD)).
/// The charge is computed once when the entry is stored and kept beside it, so a value whose
/// reported size changed later cannot make the accounting drift; it is the value at insert
/// time that is released on removal.
///
/// `Clone` is needed because migration (leader transfer, merge) hands copies of the locks to
/// the caller to propose while the originals stay visible to readers.
pub trait LockValue: Clone {
    /// Bytes this value owns on the heap (not counting `size_of::<Self>()`, which the table
    /// already charges as part of the per-entry overhead).
    fn heap_size(&self) -> usize;
}

impl LockValue for Vec<u8> {
    fn heap_size(&self) -> usize {
        self.len()
    }
}

impl LockValue for Box<[u8]> {
    fn heap_size(&self) -> usize {
        self.len()
    }
}

impl LockValue for u64 {
    fn heap_size(&self) -> usize {
        0
    }
}

impl LockValue for () {
    fn heap_size(&self) -> usize {
        0
    }
}
