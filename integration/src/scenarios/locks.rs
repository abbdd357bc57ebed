//! In-memory pessimistic locks (TiKV 6.0, TiKV RFC 77) at the lock-table level: their budget,
//! the fallback when it is full, migration on split and voluntary leader transfer, their loss
//! on a crash, and deadlock detection.

use std::fmt;

use surge_lock_table::{
    DeadlockDetector, KeyRange, LockError, MemoryBudget, RegionLockTable, WaitForEntry,
};

use super::{ScenarioError, key_text};

/// T1's keys, in the region being split at [`SPLIT_KEY`].
const T1_KEYS: [&str; 3] = ["acct/0001", "acct/0002", "stock/42"];
/// T1's `start_ts`.
const T1_TS: u64 = 100;
/// T2's `start_ts`.
const T2_TS: u64 = 200;
/// Where region 1 splits: keys at or after it go to region 2.
const SPLIT_KEY: &str = "m";
/// Length of T2's keys, so that a few thousand locks fill the 512 KiB region budget.
const FILL_KEY_LEN: usize = 100;

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

/// What the locks scenario observed. The counts add up: `t1_locks + t2_locks` locks are in
/// region 1 when it is full; the split leaves `stayed_after_split` and moves
/// `moved_by_split` (their sum is the same total); the moved ones are proposed before the
/// transfer, held by the new leader and lost in its crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocksReport {
    /// Locks of T1 stored in the leader's memory (no Raft write).
    pub t1_locks: usize,
    /// Locks of T2 (100-byte keys) inserted until the region's 512 KiB budget refused one.
    pub t2_locks: usize,
    /// Bytes charged to region 1 when the budget refused T2's next lock.
    pub region_bytes_when_full: usize,
    /// The refusal that sends the next lock down the pipelined path.
    pub fallback_reason: String,
    /// Locks that stayed in region 1 (keys before the split key).
    pub stayed_after_split: usize,
    /// Locks moved to the new region 2 (keys at or after the split key).
    pub moved_by_split: usize,
    /// Locks handed out to be proposed through Raft before a voluntary leader transfer.
    pub proposed_before_transfer: usize,
    /// Locks the new leader holds after applying the migration.
    pub held_by_new_leader: usize,
    /// Locks lost when the new leader crashed (involuntary leader change).
    pub lost_on_crash: usize,
    /// Whether T1's lock on `stock/42` is still in the (crashed) leader's table; `false` means
    /// T1's prewrite of that key gets `PessimisticLockNotFound`.
    pub t1_lock_found_at_prewrite: bool,
    /// The cycle the deadlock detector refused, starting with the refused wait.
    pub deadlock_chain: Vec<WaitForEntry>,
    /// Bytes charged to the node budget after every table was dropped (zero: every charge
    /// was released).
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
        primary: T1_KEYS[0].as_bytes().to_vec(),
    };

    // Region 1 on its leader: term 5, region version 1.
    let mut left: RegionLockTable<DemoLock> = RegionLockTable::new(&budget);
    left.become_leader(5, 1);
    let batch = T1_KEYS
        .iter()
        .map(|k| (k.as_bytes().to_vec(), lock(T1_TS)))
        .collect();
    let inserted = left.try_insert(batch, 5, 1).map_err(LockError::from)?;

    // Fill the region with another transaction's locks until the budget refuses one.
    let mut filled = 0usize;
    let fallback_reason = loop {
        match left.try_insert_one(fill_key(filled), lock(T2_TS), 5, 1) {
            Ok(_) => filled += 1,
            Err(refused) => break refused.reason,
        }
    };
    let region_bytes_when_full = left.memory_size();

    // Split at SPLIT_KEY: locks at or after it move to the new region.
    let right = left.split(
        2,
        &KeyRange::new(Vec::new(), SPLIT_KEY.as_bytes().to_vec()),
        &[KeyRange::from_start(SPLIT_KEY.as_bytes().to_vec())],
    )?;
    let stayed_after_split = left.len();
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
    let t1_lock_found_at_prewrite = new_leader.get(T1_KEYS[2].as_bytes()).is_some();

    // T1 waits for T2's first lock, then T2 for T1's first lock: a cycle.
    let mut detector = DeadlockDetector::default();
    detector.detect(T1_TS, T2_TS, &fill_key(0))?;
    let deadlock = match detector.detect(T2_TS, T1_TS, T1_KEYS[0].as_bytes()) {
        Ok(()) => return Err(ScenarioError::Unexpected("deadlock not detected")),
        Err(deadlock) => deadlock,
    };

    drop((left, old_leader, new_leader));
    Ok(LocksReport {
        t1_locks: inserted.locks,
        t2_locks: filled,
        region_bytes_when_full,
        fallback_reason: fallback_reason.to_string(),
        stayed_after_split,
        moved_by_split,
        proposed_before_transfer,
        held_by_new_leader,
        lost_on_crash: lost.locks,
        t1_lock_found_at_prewrite,
        deadlock_chain: deadlock.wait_chain,
        node_bytes_at_end: budget.used(),
    })
}

/// T2's `n`th key: `fill/` and `n` zero-padded to [`FILL_KEY_LEN`] bytes.
fn fill_key(n: usize) -> Vec<u8> {
    format!("fill/{n:0>width$}", width = FILL_KEY_LEN - 5).into_bytes()
}

impl fmt::Display for LocksReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let region_total = self.t1_locks + self.t2_locks;
        writeln!(
            f,
            "T1 (start_ts {T1_TS}) locks {} keys ({}) in region 1's leader memory: no Raft write",
            self.t1_locks,
            T1_KEYS.join(", ")
        )?;
        writeln!(
            f,
            "T2 (start_ts {T2_TS}) locks {FILL_KEY_LEN}-byte keys fill/000... until the region's \
             512 KiB budget refuses one: {} locks fit, so region 1 holds {} + {} = {region_total} \
             locks in {} bytes",
            self.t2_locks, self.t1_locks, self.t2_locks, self.region_bytes_when_full
        )?;
        writeln!(
            f,
            "  the refused lock ({}) would go through Raft instead (pipelined locking)",
            self.fallback_reason
        )?;
        writeln!(
            f,
            "region 1 splits at \"{SPLIT_KEY}\": {} locks (keys before \"{SPLIT_KEY}\") stay, {} \
             (stock/42) moves to region 2; {} + {} = {}",
            self.stayed_after_split,
            self.moved_by_split,
            self.stayed_after_split,
            self.moved_by_split,
            self.stayed_after_split + self.moved_by_split
        )?;
        writeln!(
            f,
            "region 2's leader transfers leadership on purpose: its {} lock(s) are proposed \
             through Raft first, and the new leader holds {}",
            self.proposed_before_transfer, self.held_by_new_leader
        )?;
        writeln!(
            f,
            "region 2's new leader crashes (an involuntary change): {} lock(s) lost",
            self.lost_on_crash
        )?;
        writeln!(
            f,
            "  T1's prewrite of stock/42 looks for its lock: {}",
            if self.t1_lock_found_at_prewrite {
                "found"
            } else {
                "not found -> PessimisticLockNotFound: T1 cannot commit, so it cannot \
                 overwrite a write made while it held no lock"
            }
        )?;
        writeln!(f, "deadlock detector:")?;
        for (i, wait) in self.deadlock_chain.iter().enumerate() {
            writeln!(
                f,
                "  txn {} waits for txn {} on key {}{}",
                wait.txn,
                wait.wait_for_txn,
                key_text(&wait.key),
                if i == 0 {
                    format!(
                        "  <- refused: it would close the cycle; txn {} aborts",
                        wait.txn
                    )
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(
            f,
            "node budget (100 MiB) in use after the tables are dropped: {} bytes",
            self.node_bytes_at_end
        )?;
        write!(
            f,
            "Shows: locks kept only in the leader's memory are bounded per region, follow the \
             region through split and voluntary transfer, and are lost only in a crash, which \
             prewrite detects."
        )
    }
}
