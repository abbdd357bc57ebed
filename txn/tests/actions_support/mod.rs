//! Helpers for the action tests: run an action on a snapshot of a `MemEngine` (or of a
//! disk engine's region, `Env::on_disk`), then apply what it wrote, as the region layer
//! does (TiKV's `must_*` test helpers, in spirit).
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::sync::Arc;

use surge_lock_table::{MemoryBudget, RegionLockTable};
use surge_txn::{
    Cf, Engine, EngineIdentity, FjallEngine, FjallOptions, MemEngine, MvccError, WriteBatch,
    actions::{
        CommitKind, Mutation, MvccReader, MvccTxn, PessimisticAction, PessimisticLockOutcome,
        PessimisticLockRequest, TxnCommitRecord, TxnProps, acquire_pessimistic_lock, commit,
        prewrite, rollback,
    },
    codec::{Lock, Write, WriteType, encode_key, encode_key_with_ts},
};

/// A region's data, and optionally its in-memory pessimistic lock table.
pub struct Env {
    pub engine: Arc<dyn Engine>,
    pub mem: Option<RegionLockTable<Lock>>,
    _budget: MemoryBudget,
    /// The disk engine's directory and options (`Env::on_disk`).
    disk: Option<(tempfile::TempDir, FjallOptions)>,
}

const TERM: u64 = 1;
const VERSION: u64 = 1;

impl Env {
    /// Locks always go to the lock column family.
    pub fn new() -> Env {
        Env {
            engine: Arc::new(MemEngine::new()),
            mem: None,
            _budget: MemoryBudget::default(),
            disk: None,
        }
    }

    /// As `Env::new`, on region 1 of a disk engine (in a temporary directory) whose
    /// newest-write index remembers `keys` keys.
    pub fn on_disk(keys: usize) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let options = FjallOptions::default()
            .with_cache_bytes(8 << 20)
            .with_memtable_bytes(1 << 20)
            .with_worker_threads(1)
            .with_newest_write_keys(keys);
        let mut env = Env {
            engine: Arc::new(MemEngine::new()),
            mem: None,
            _budget: MemoryBudget::default(),
            disk: Some((dir, options)),
        };
        env.reopen();
        env
    }

    /// Closes and opens the disk engine again (`Env::on_disk`), as a restart does; the
    /// region's record is as of its last checkpoint (`Engine::checkpoint` first to keep
    /// everything, as the Raft log replay would).
    pub fn reopen(&mut self) {
        let (dir, options) = self.disk.as_ref().expect("an Env::on_disk");
        // The old view must be gone before the region opens again.
        self.engine = Arc::new(MemEngine::new());
        let engine = FjallEngine::open(dir.path(), &EngineIdentity::new("c", 1), *options).unwrap();
        self.engine = engine.region(1, b"", b"").unwrap();
    }

    /// Pessimistic locks go to a memory table, as on a leader with in-memory locks.
    pub fn with_memory_locks() -> Env {
        let budget = MemoryBudget::default();
        let mut table = RegionLockTable::new(&budget);
        table.become_leader(TERM, VERSION);
        Env {
            engine: Arc::new(MemEngine::new()),
            mem: Some(table),
            _budget: budget,
            disk: None,
        }
    }

    /// Runs `action` for the transaction `start_ts`; on success applies its writes:
    /// pessimistic locks into the memory table when there is one (else the lock CF),
    /// everything else to the engine, and removes the memory locks of keys whose lock CF
    /// entry the batch changed.
    pub fn run<T>(
        &mut self,
        start_ts: u64,
        action: impl FnOnce(&mut MvccTxn, &MvccReader<'_>) -> Result<T, MvccError>,
    ) -> Result<T, MvccError> {
        let mut txn = MvccTxn::new(start_ts);
        let result = {
            let snap = self.engine.snapshot();
            let reader = MvccReader::new(&*snap, self.mem.as_ref());
            action(&mut txn, &reader)
        };
        if result.is_ok() {
            let mut writes = txn.into_writes();
            if let Some(table) = self.mem.as_mut() {
                let locks = std::mem::take(&mut writes.pessimistic_locks);
                if !locks.is_empty() {
                    table
                        .try_insert(locks, TERM, VERSION)
                        .expect("memory table accepts");
                }
                table.mark_deleted_batch(&writes.lock_cf_keys);
                let keys = writes.lock_cf_keys.clone();
                self.engine
                    .write(&Self::indexed(&*self.engine, writes.into_batch()))
                    .unwrap();
                table.remove_applied_batch(&keys, TERM, VERSION);
            } else {
                self.engine
                    .write(&Self::indexed(&*self.engine, writes.into_batch()))
                    .unwrap();
            }
        }
        result
    }

    /// `batch` at the index after `engine`'s last one, as the Raft log numbers them.
    fn indexed(engine: &dyn Engine, mut batch: WriteBatch) -> WriteBatch {
        batch.applied_index = engine.applied_index() + 1;
        batch
    }

    /// Writes a checkpoint of the disk engine's region (the record and the newest-write
    /// timestamp with it), as a Raft log compaction does.
    pub fn checkpoint(&self) {
        self.engine.checkpoint()().unwrap();
    }

    /// Runs a read-only function on a reader.
    pub fn read<T>(&self, f: impl FnOnce(&MvccReader<'_>) -> T) -> T {
        let snap = self.engine.snapshot();
        let reader = MvccReader::new(&*snap, self.mem.as_ref());
        f(&reader)
    }

    /// The raw lock-CF entry of `key`, bypassing the memory table.
    pub fn lock_cf(&self, key: &[u8]) -> Option<Lock> {
        let bytes = self.engine.snapshot().get(Cf::Lock, &encode_key(key))?;
        Some(Lock::from_bytes(key, &bytes).unwrap())
    }

    /// The write record of `key` at exactly `ts`.
    pub fn write_at(&self, key: &[u8], ts: u64) -> Option<Write> {
        let bytes = self
            .engine
            .snapshot()
            .get(Cf::Write, &encode_key_with_ts(key, ts))?;
        Some(Write::from_bytes(key, &bytes).unwrap())
    }

    /// Whether a long value of `key` by the transaction `start_ts` is stored.
    pub fn has_default(&self, key: &[u8], start_ts: u64) -> bool {
        self.engine
            .snapshot()
            .get(Cf::Default, &encode_key_with_ts(key, start_ts))
            .is_some()
    }
}

/// The engines a conflict test runs on: `MemEngine`; the disk engine, whose newest-write
/// index lets a prewrite skip its seek; and the disk engine with an index of one key,
/// emptied by nearly every write (its bound is then the newest timestamp of all).
pub fn engines() -> [(&'static str, fn() -> Env); 3] {
    [
        ("memory", Env::new),
        ("disk", || Env::on_disk(1 << 16)),
        ("disk, index of 1 key", || Env::on_disk(1)),
    ]
}

pub fn lock_req<'k>(
    key: &'k [u8],
    primary: &'k [u8],
    for_update_ts: u64,
) -> PessimisticLockRequest<'k> {
    PessimisticLockRequest {
        key,
        primary,
        should_not_exist: false,
        lock_ttl: 3000,
        for_update_ts,
        need_value: false,
        need_check_existence: false,
        min_commit_ts: for_update_ts + 1,
    }
}

pub fn try_acquire(
    env: &mut Env,
    req: PessimisticLockRequest<'_>,
    start_ts: u64,
) -> Result<PessimisticLockOutcome, MvccError> {
    env.run(start_ts, |txn, reader| {
        acquire_pessimistic_lock(txn, reader, &req)
    })
}

pub fn must_acquire(env: &mut Env, key: &[u8], primary: &[u8], start_ts: u64, for_update_ts: u64) {
    try_acquire(env, lock_req(key, primary, for_update_ts), start_ts).unwrap();
}

pub fn props(primary: &[u8], start_ts: u64, for_update_ts: u64) -> TxnProps {
    TxnProps {
        start_ts,
        primary: primary.to_vec(),
        lock_ttl: 3000,
        for_update_ts,
        txn_size: 1,
        min_commit_ts: start_ts + 1,
        commit_kind: CommitKind::TwoPc,
    }
}

pub fn put(key: &[u8], value: &[u8]) -> Mutation {
    Mutation::Put {
        key: key.to_vec(),
        value: value.to_vec(),
    }
}

pub fn try_prewrite(
    env: &mut Env,
    props: &TxnProps,
    mutation: Mutation,
    action: PessimisticAction,
) -> Result<(), MvccError> {
    env.run(props.start_ts, |txn, reader| {
        prewrite(txn, reader, props, &mutation, action, None)
    })
}

/// Optimistic prewrite of a put.
pub fn must_prewrite_put(env: &mut Env, key: &[u8], value: &[u8], primary: &[u8], start_ts: u64) {
    try_prewrite(
        env,
        &props(primary, start_ts, 0),
        put(key, value),
        PessimisticAction::SkipPessimisticCheck,
    )
    .unwrap();
}

/// Pessimistic prewrite of a put on a locked key.
pub fn must_pessimistic_prewrite_put(
    env: &mut Env,
    key: &[u8],
    value: &[u8],
    primary: &[u8],
    start_ts: u64,
    for_update_ts: u64,
) {
    try_prewrite(
        env,
        &props(primary, start_ts, for_update_ts),
        put(key, value),
        PessimisticAction::DoPessimisticCheck,
    )
    .unwrap();
}

pub fn try_commit(
    env: &mut Env,
    key: &[u8],
    start_ts: u64,
    commit_ts: u64,
) -> Result<(), MvccError> {
    env.run(start_ts, |txn, reader| commit(txn, reader, key, commit_ts))
}

pub fn must_commit(env: &mut Env, key: &[u8], start_ts: u64, commit_ts: u64) {
    try_commit(env, key, start_ts, commit_ts).unwrap();
}

pub fn try_rollback(
    env: &mut Env,
    key: &[u8],
    start_ts: u64,
    protect: bool,
) -> Result<(), MvccError> {
    env.run(start_ts, |txn, reader| rollback(txn, reader, key, protect))
}

pub fn must_rollback(env: &mut Env, key: &[u8], start_ts: u64, protect: bool) {
    try_rollback(env, key, start_ts, protect).unwrap();
}

/// Puts `value` at `key` committed by a transaction `start_ts`..`commit_ts`.
pub fn must_put_committed(env: &mut Env, key: &[u8], value: &[u8], start_ts: u64, commit_ts: u64) {
    must_prewrite_put(env, key, value, key, start_ts);
    must_commit(env, key, start_ts, commit_ts);
}

pub fn must_get(env: &Env, key: &[u8], ts: u64) -> Option<Vec<u8>> {
    env.read(|r| r.get(key, ts)).unwrap()
}

pub fn must_locked(env: &Env, key: &[u8], start_ts: u64) -> Lock {
    let lock = env
        .read(|r| r.load_lock(key))
        .unwrap()
        .expect("key is locked");
    assert_eq!(lock.start_ts, start_ts);
    lock
}

pub fn must_unlocked(env: &Env, key: &[u8]) {
    assert_eq!(env.read(|r| r.load_lock(key)).unwrap(), None);
}

/// The transaction's record on `key`, which must be of `write_type` at `commit_ts`.
pub fn must_written(
    env: &Env,
    key: &[u8],
    start_ts: u64,
    commit_ts: u64,
    write_type: WriteType,
) -> Write {
    let write = env.write_at(key, commit_ts).expect("record exists");
    assert_eq!(write.start_ts, start_ts);
    assert_eq!(write.write_type, write_type);
    write
}

pub fn commit_record(env: &Env, key: &[u8], start_ts: u64) -> TxnCommitRecord {
    env.read(|r| r.get_txn_commit_record(key, start_ts))
        .unwrap()
}
