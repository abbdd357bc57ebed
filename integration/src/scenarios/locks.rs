//! Seed 000 at the lock-table level: in-memory pessimistic locks, their budget, fallback,
//! migration on split and voluntary leader transfer, and their loss on a crash.

use std::fmt;

use surge_lock_table::{DeadlockDetector, KeyRange, LockError, MemoryBudget, RegionLockTable};

use super::ScenarioError;

/// A pessimistic lock as the demo stores it: the transaction's `start_ts` and its primary key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DemoLock {
    start_ts: u64,
    primary: Vec<u8>,
}

impl surge_lock_table::LockValue for DemoLock {
    fn heap_size(&self) -> usize {
        self.primary.len()
    }
}

/// What the locks scenario observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocksReport {
    /// Locks of one transaction stored in the leader's memory (no Raft write).
    pub in_memory_locks: usize,
    /// How many 100-byte-key locks fit in one region's 512 KiB budget.
    pub locks_until_region_full: usize,
    /// The refusal that sends the next lock down the pipelined path.
    pub fallback_reason: String,
    /// Locks moved to the new right-hand region by a split.
    pub moved_by_split: usize,
    /// Locks handed out to be proposed before a voluntary leader transfer.
    pub proposed_before_transfer: usize,
    /// Locks the new leader holds after applying the migration.
    pub held_by_new_leader: usize,
    /// Locks lost when the new leader crashed (involuntary leader change).
    pub lost_on_crash: usize,
    /// Whether the crashed leader's transaction finds its lock gone at prewrite.
    pub prewrite_finds_lock_gone: bool,
    /// The wait chain of the deadlock between two transactions, as `waiter -> holder` pairs.
    pub deadlock_chain: Vec<(u64, u64)>,
    /// Bytes charged to the node budget at the end (zero: every charge was released).
    pub node_bytes_at_end: usize,
}

/// Runs the scenario on one node's budget with the default limits (100 MiB per node,
/// 512 KiB per region).
///
/// # Errors
/// [`ScenarioError::Locks`] if a lock-table operation the scenario relies on is refused, or
/// [`ScenarioError::Unexpected`] if the tables do not behave as the seed describes.
pub fn run() -> Result<LocksReport, ScenarioError> {
    let budget = MemoryBudget::default();
    let lock = |ts: u64| DemoLock {
        start_ts: ts,
        primary: b"acct/0001".to_vec(),
    };

    // Region 1 on its leader: term 5, region version 1.
    let mut left: RegionLockTable<DemoLock> = RegionLockTable::new(&budget);
    left.become_leader(5, 1);
    let t1_keys: Vec<Vec<u8>> = ["acct/0001", "acct/0002", "stock/42"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let batch = t1_keys.iter().map(|k| (k.clone(), lock(100))).collect();
    let inserted = left.try_insert(batch, 5, 1).map_err(LockError::from)?;

    // Fill the region with another transaction's locks until the budget refuses one.
    let mut filled = 0usize;
    let fallback_reason = loop {
        let key = format!("fill/{filled:0>95}").into_bytes();
        match left.try_insert_one(key, lock(200), 5, 1) {
            Ok(_) => filled += 1,
            Err(refused) => break refused.reason,
        }
    };

    // Split at "m": locks at or after it move to the new region.
    let right = left.split(
        2,
        &KeyRange::new(Vec::new(), b"m".to_vec()),
        &[KeyRange::from_start(b"m".to_vec())],
    )?;
    let moved_by_split = right.iter().map(RegionLockTable::len).sum();

    // Voluntary leader transfer of the right region: its locks are proposed, then applied
    // on the new leader, which becomes leader in term 6.
    let mut old_leader = right
        .into_iter()
        .next()
        .ok_or(ScenarioError::Unexpected("split returned no new region"))?;
    let proposed = old_leader.start_transfer()?;
    let proposed_before_transfer = proposed.len();
    old_leader.become_follower();
    let mut new_leader: RegionLockTable<DemoLock> = RegionLockTable::new(&budget);
    new_leader.become_leader(6, 2);
    new_leader
        .insert_migrated(proposed)
        .map_err(LockError::from)?;
    let held_by_new_leader = new_leader.len();

    // The new leader crashes: an involuntary change loses what only lived in memory.
    let lost = new_leader.become_follower();
    let prewrite_finds_lock_gone = new_leader.get(b"stock/42").is_none();

    // Two transactions wait for each other.
    let mut detector = DeadlockDetector::default();
    detector.detect(100, 200, b"acct/0001")?;
    let deadlock = match detector.detect(200, 100, b"fill/0") {
        Ok(()) => return Err(ScenarioError::Unexpected("deadlock not detected")),
        Err(deadlock) => deadlock,
    };
    let deadlock_chain = deadlock
        .wait_chain
        .iter()
        .map(|e| (e.txn, e.wait_for_txn))
        .collect();

    drop((left, old_leader, new_leader));
    Ok(LocksReport {
        in_memory_locks: inserted.locks,
        locks_until_region_full: filled,
        fallback_reason: fallback_reason.to_string(),
        moved_by_split,
        proposed_before_transfer,
        held_by_new_leader,
        lost_on_crash: lost.locks,
        prewrite_finds_lock_gone,
        deadlock_chain,
        node_bytes_at_end: budget.used(),
    })
}

impl fmt::Display for LocksReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "T1 locked {} keys in the leader's memory: no Raft write",
            self.in_memory_locks
        )?;
        writeln!(
            f,
            "{} more locks filled the region's 512 KiB; the next was refused ({}) and goes \
             down the pipelined path",
            self.locks_until_region_full, self.fallback_reason
        )?;
        writeln!(
            f,
            "split at \"m\" moved {} locks to the new region",
            self.moved_by_split
        )?;
        writeln!(
            f,
            "voluntary leader transfer proposed {} locks; the new leader holds {}",
            self.proposed_before_transfer, self.held_by_new_leader
        )?;
        writeln!(
            f,
            "the new leader crashed: {} locks lost; T1's prewrite finds its lock gone: {} \
             (PessimisticLockNotFound, never a lost update)",
            self.lost_on_crash, self.prewrite_finds_lock_gone
        )?;
        writeln!(f, "deadlock detected, wait chain {:?}", self.deadlock_chain)?;
        write!(
            f,
            "node budget at the end: {} bytes",
            self.node_bytes_at_end
        )
    }
}
