//! The node-wide memory budget that every region's lock table charges.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::counters::{Counters, LockTableCounters};

/// Limits of a [`MemoryBudget`]; every one can be changed later at run time.
///
/// Build it from [`BudgetConfig::default`] and the `with_*` methods (or assign the public
/// fields of a default value): the struct is `#[non_exhaustive]`, so later settings can be
/// added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetConfig {
    /// Bytes all regions of the node may hold together (TiKV
    /// `in-memory-instance-size-limit`, default 100 MiB).
    pub node_limit: usize,
    /// Bytes one region may hold (TiKV `in-memory-peer-size-limit`, default 512 KiB).
    pub region_limit: usize,
    /// Longest key accepted, in bytes (default 64 KiB). Longer keys are refused as bad input.
    pub max_key_size: usize,
}

impl BudgetConfig {
    /// Default node limit: 100 MiB.
    pub const DEFAULT_NODE_LIMIT: usize = 100 << 20;
    /// Default region limit: 512 KiB.
    pub const DEFAULT_REGION_LIMIT: usize = 512 << 10;
    /// Default maximum key size: 64 KiB.
    pub const DEFAULT_MAX_KEY_SIZE: usize = 64 << 10;

    /// Sets [`BudgetConfig::node_limit`].
    #[must_use]
    pub fn with_node_limit(mut self, bytes: usize) -> Self {
        self.node_limit = bytes;
        self
    }

    /// Sets [`BudgetConfig::region_limit`].
    #[must_use]
    pub fn with_region_limit(mut self, bytes: usize) -> Self {
        self.region_limit = bytes;
        self
    }

    /// Sets [`BudgetConfig::max_key_size`].
    #[must_use]
    pub fn with_max_key_size(mut self, bytes: usize) -> Self {
        self.max_key_size = bytes;
        self
    }
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            node_limit: Self::DEFAULT_NODE_LIMIT,
            region_limit: Self::DEFAULT_REGION_LIMIT,
            max_key_size: Self::DEFAULT_MAX_KEY_SIZE,
        }
    }
}

/// The memory budget of one node, cheaply cloned into all its region lock tables,
/// together with the node-wide counters.
///
/// # Invariants
/// - `used()` is exactly the sum of `memory_size()` of every live table created from this
///   budget: tables reserve before they store, and release on remove, clear and drop.
/// - Reservations are atomic compare-and-swap operations that never take `used()` above the
///   node limit. `used()` can only be above the limit after the limit itself was lowered at
///   run time; new reservations are then refused until enough locks are released.
#[derive(Debug, Clone, Default)]
pub struct MemoryBudget {
    inner: Arc<BudgetInner>,
}

#[derive(Debug)]
struct BudgetInner {
    node_limit: AtomicUsize,
    region_limit: AtomicUsize,
    max_key_size: AtomicUsize,
    used: AtomicUsize,
    counters: Counters,
}

impl Default for BudgetInner {
    fn default() -> Self {
        BudgetInner::new(BudgetConfig::default())
    }
}

impl BudgetInner {
    fn new(config: BudgetConfig) -> Self {
        BudgetInner {
            node_limit: AtomicUsize::new(config.node_limit),
            region_limit: AtomicUsize::new(config.region_limit),
            max_key_size: AtomicUsize::new(config.max_key_size),
            used: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }
}

/// Why a reservation failed: what was in use and the limit at that moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OverBudget {
    pub(crate) used: usize,
    pub(crate) limit: usize,
}

impl MemoryBudget {
    /// A budget with the given limits.
    pub fn new(config: BudgetConfig) -> Self {
        MemoryBudget {
            inner: Arc::new(BudgetInner::new(config)),
        }
    }

    /// The current limits.
    pub fn config(&self) -> BudgetConfig {
        BudgetConfig {
            node_limit: self.node_limit(),
            region_limit: self.region_limit(),
            max_key_size: self.max_key_size(),
        }
    }

    /// Bytes all tables may hold together.
    pub fn node_limit(&self) -> usize {
        self.inner.node_limit.load(Ordering::Relaxed)
    }

    /// Bytes one table may hold.
    pub fn region_limit(&self) -> usize {
        self.inner.region_limit.load(Ordering::Relaxed)
    }

    /// Longest key accepted.
    pub fn max_key_size(&self) -> usize {
        self.inner.max_key_size.load(Ordering::Relaxed)
    }

    /// Changes the node limit. Locks already held are kept even when above the new limit.
    pub fn set_node_limit(&self, bytes: usize) {
        self.inner.node_limit.store(bytes, Ordering::Relaxed);
    }

    /// Changes the per-region limit. Locks already held are kept even when above it.
    pub fn set_region_limit(&self, bytes: usize) {
        self.inner.region_limit.store(bytes, Ordering::Relaxed);
    }

    /// Changes the maximum key size for later inserts.
    pub fn set_max_key_size(&self, bytes: usize) {
        self.inner.max_key_size.store(bytes, Ordering::Relaxed);
    }

    /// Bytes currently charged by all tables of this budget.
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Acquire)
    }

    /// A snapshot of the node-wide counters.
    pub fn counters(&self) -> LockTableCounters {
        self.inner.counters.snapshot(self.used())
    }

    /// Whether two handles share the same budget.
    pub fn same_as(&self, other: &MemoryBudget) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn counters_ref(&self) -> &Counters {
        &self.inner.counters
    }

    /// Reserves `bytes` if `used + bytes <= node_limit`; never overshoots under concurrency.
    pub(crate) fn try_reserve(&self, bytes: usize) -> Result<(), OverBudget> {
        if bytes == 0 {
            return Ok(());
        }
        let limit = self.node_limit();
        let mut used = self.inner.used.load(Ordering::Relaxed);
        loop {
            let next = match used.checked_add(bytes) {
                Some(next) if next <= limit => next,
                _ => return Err(OverBudget { used, limit }),
            };
            match self.inner.used.compare_exchange_weak(
                used,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => used = actual,
            }
        }
    }

    /// Returns `bytes` previously reserved.
    pub(crate) fn release(&self, bytes: usize) {
        if bytes != 0 {
            let before = self.inner.used.fetch_sub(bytes, Ordering::AcqRel);
            debug_assert!(before >= bytes, "memory budget released more than reserved");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_never_exceeds_limit() {
        let budget = MemoryBudget::new(BudgetConfig {
            node_limit: 100,
            ..BudgetConfig::default()
        });
        assert!(budget.try_reserve(60).is_ok());
        let err = budget.try_reserve(41).expect_err("over the limit");
        assert_eq!((err.used, err.limit), (60, 100));
        assert!(budget.try_reserve(40).is_ok());
        assert_eq!(budget.used(), 100);
        budget.release(100);
        assert_eq!(budget.used(), 0);
        assert!(budget.try_reserve(usize::MAX).is_err());
    }

    #[test]
    fn limits_change_at_run_time() {
        let budget = MemoryBudget::default();
        assert_eq!(budget.config(), BudgetConfig::default());
        budget.set_node_limit(10);
        budget.set_region_limit(5);
        budget.set_max_key_size(3);
        assert_eq!(
            budget.config(),
            BudgetConfig {
                node_limit: 10,
                region_limit: 5,
                max_key_size: 3
            }
        );
        assert!(budget.try_reserve(11).is_err());
    }
}
