//! Test helpers common to the modules: a TiKV-like pessimistic lock value, table
//! constructors and a lock wait manager.

use std::time::Duration;

use surge_lock_table::{
    BudgetConfig, LockValue, LockWaitManager, MemoryBudget, RegionLockTable, SharedRegionLockTable,
    WaitConfig,
};

/// A pessimistic lock shaped like TiKV's `PessimisticLock` (the parts that matter here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PLock {
    pub primary: Vec<u8>,
    pub start_ts: u64,
    pub for_update_ts: u64,
}

impl LockValue for PLock {
    fn heap_size(&self) -> usize {
        self.primary.len()
    }
}

pub type Table = RegionLockTable<PLock>;

pub fn lock(primary: &[u8], start_ts: u64) -> PLock {
    PLock {
        primary: primary.to_vec(),
        start_ts,
        for_update_ts: start_ts + 10,
    }
}

/// Per-entry overhead charged for a `PLock`.
pub fn overhead() -> usize {
    Table::ENTRY_OVERHEAD
}

/// The charge of one entry.
pub fn charge(key: &[u8], primary: &[u8]) -> usize {
    key.len() + primary.len() + overhead()
}

/// A leader table at `term` / `version`.
pub fn leader(budget: &MemoryBudget, term: u64, version: u64) -> Table {
    let mut t = Table::new(budget);
    t.become_leader(term, version);
    t
}

pub fn budget_with(node_limit: usize, region_limit: usize) -> MemoryBudget {
    MemoryBudget::new(
        BudgetConfig::default()
            .with_node_limit(node_limit)
            .with_region_limit(region_limit),
    )
}

pub fn one(key: &[u8], l: PLock) -> Vec<(Vec<u8>, PLock)> {
    vec![(key.to_vec(), l)]
}

/// Sum of the charged bytes of every entry, computed from the entries themselves.
pub fn recount(table: &Table) -> usize {
    table.iter().map(|(_, e)| e.charged_bytes()).sum()
}

/// A lock wait manager whose default timeout (20 s) is far above any test's wait, so that a
/// wait ending quickly proves a wake-up reached it; `delay_ms` is the wake-up delay.
pub fn wait_manager(delay_ms: u64) -> LockWaitManager {
    LockWaitManager::new(
        WaitConfig::default()
            .with_default_timeout(Duration::from_secs(20))
            .with_wake_up_delay(Duration::from_millis(delay_ms)),
    )
}

/// A thread-safe leader table at term 1, version 1, whose lock is the holder's `start_ts`.
pub fn leader_handle(budget: &MemoryBudget) -> SharedRegionLockTable<u64> {
    let table = SharedRegionLockTable::new(budget);
    table.become_leader(1, 1);
    table
}
