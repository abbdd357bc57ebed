//! In-memory pessimistic locks (TiKV 6.0, TiKV RFC 77) on a real three-node Raft group: they
//! cost no Raft write, migrate through the log on a voluntary leader transfer, and are lost
//! (and the loss detected at prewrite) when the leader crashes.
//!
//! Each node runs a `surge-raft-lite` driver with its durable write-ahead log in its own
//! directory; the nodes talk over the in-process network. The replicated state machine holds
//! the region's lock column; the leader's [`SharedRegionLockTable`] holds the in-memory locks
//! and follows the leadership callbacks, which `surge-raft-lite` places in log order.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use surge_lock_table::{LockError, MemoryBudget, SharedRegionLockTable};
use surge_raft_lite::{
    ConfState, MemNetwork, Node, NodeId, NodeOptions, Role, StateMachine, Wal, WalOptions,
};

use super::ScenarioError;

/// The one region of the scenario.
const REGION: u64 = 1;
/// Its version (epoch); no split or merge happens here.
const VERSION: u64 = 1;
/// How long to wait for an election, a transfer or an apply.
const PATIENCE: Duration = Duration::from_secs(10);

/// A replicated command: pessimistic locks (or prewrites) written to the lock column, as
/// `(key, start_ts)` pairs. Encoded as a tag byte, then per pair a 2-byte key length, the
/// key and an 8-byte `start_ts`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Command {
    /// Pessimistic locks proposed through Raft (pipelined locks, or in-memory locks migrated
    /// before a leader transfer).
    Locks(Vec<(Vec<u8>, u64)>),
    /// Prewrites: the key's lock becomes a prewrite lock of the same transaction.
    Prewrite(Vec<(Vec<u8>, u64)>),
}

impl Command {
    fn encode(&self) -> Bytes {
        let (tag, pairs) = match self {
            Command::Locks(p) => (1u8, p),
            Command::Prewrite(p) => (2u8, p),
        };
        let mut out = vec![tag];
        for (key, ts) in pairs {
            put_pair(&mut out, key, *ts);
        }
        Bytes::from(out)
    }

    fn decode(data: &[u8]) -> Option<Command> {
        let (&tag, mut rest) = data.split_first()?;
        let mut pairs = Vec::new();
        while !rest.is_empty() {
            pairs.push(take_pair(&mut rest)?);
        }
        match tag {
            1 => Some(Command::Locks(pairs)),
            2 => Some(Command::Prewrite(pairs)),
            _ => None,
        }
    }
}

/// Longest key the command format carries (2-byte length). `lock_in_memory` and `prewrite`
/// refuse longer keys, and every key that reaches `put_pair` came through one of them.
const MAX_KEY_LEN: usize = u16::MAX as usize;

/// Appends a 2-byte key length, the key and an 8-byte `start_ts`. Keys are at most
/// [`MAX_KEY_LEN`] bytes (checked where they enter the scenario).
fn put_pair(out: &mut Vec<u8>, key: &[u8], ts: u64) {
    debug_assert!(key.len() <= MAX_KEY_LEN, "key length checked on entry");
    let len = u16::try_from(key.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&key[..usize::from(len)]);
    out.extend_from_slice(&ts.to_le_bytes());
}

/// Reads what [`put_pair`] wrote; `None` if `rest` is too short.
fn take_pair(rest: &mut &[u8]) -> Option<(Vec<u8>, u64)> {
    let len = usize::from(u16::from_le_bytes(rest.get(..2)?.try_into().ok()?));
    let key = rest.get(2..2 + len)?.to_vec();
    let ts = u64::from_le_bytes(rest.get(2 + len..10 + len)?.try_into().ok()?);
    *rest = &rest[10 + len..];
    Some((key, ts))
}

/// A row of the replicated lock column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockKind {
    Pessimistic,
    Prewrite,
}

type LockColumn = Arc<Mutex<BTreeMap<Vec<u8>, (u64, LockKind)>>>;

/// One replica of the region: the replicated lock column, and the in-memory table that is
/// valid only while this replica leads.
struct RegionReplica {
    lock_cf: LockColumn,
    table: SharedRegionLockTable<u64>,
}

impl StateMachine for RegionReplica {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        let mut cf = self.lock_cf.lock().unwrap_or_else(PoisonError::into_inner);
        match Command::decode(data) {
            Some(Command::Locks(pairs)) => {
                for (key, ts) in pairs {
                    cf.insert(key, (ts, LockKind::Pessimistic));
                }
            }
            Some(Command::Prewrite(pairs)) => {
                for (key, ts) in pairs {
                    cf.insert(key, (ts, LockKind::Prewrite));
                }
            }
            // The leader's no-op and anything this scenario did not write.
            None => {}
        }
        Bytes::new()
    }

    fn on_leader(&mut self, term: u64) {
        self.table.become_leader(term, VERSION);
    }

    fn on_follower(&mut self, _term: u64) {
        self.table.become_follower();
    }

    /// The lock column as records: a kind byte (1 pessimistic, 2 prewrite), then a pair.
    fn snapshot(&mut self) -> Bytes {
        let cf = self.lock_cf.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        for (key, (ts, kind)) in cf.iter() {
            out.push(match kind {
                LockKind::Pessimistic => 1,
                LockKind::Prewrite => 2,
            });
            put_pair(&mut out, key, *ts);
        }
        Bytes::from(out)
    }

    fn restore(&mut self, _index: u64, mut data: &[u8]) {
        let mut cf = self.lock_cf.lock().unwrap_or_else(PoisonError::into_inner);
        cf.clear();
        while let Some((&kind, mut rest)) = data.split_first() {
            let Some((key, ts)) = take_pair(&mut rest) else {
                break;
            };
            let kind = if kind == 2 {
                LockKind::Prewrite
            } else {
                LockKind::Pessimistic
            };
            cf.insert(key, (ts, kind));
            data = rest;
        }
    }
}

/// What the cluster scenario observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReport {
    /// The first leader.
    pub first_leader: NodeId,
    /// Raft entries proposed while T1 took its in-memory pessimistic lock (zero).
    pub raft_entries_for_in_memory_lock: u64,
    /// In-memory locks proposed through Raft before the voluntary transfer.
    pub migrated_on_transfer: usize,
    /// The leader after the transfer.
    pub leader_after_transfer: NodeId,
    /// T1's prewrite on the new leader found its lock (migrated through the log).
    pub t1_prewrite_after_transfer: PrewriteOutcome,
    /// The leader that crashed while T2 held an in-memory lock.
    pub crashed_leader: NodeId,
    /// The leader elected after the crash.
    pub leader_after_crash: NodeId,
    /// T2's prewrite on that leader: its lock was lost with the crash.
    pub t2_prewrite_after_crash: PrewriteOutcome,
    /// T3 then locks and prewrites the same key: exactly one of T2 and T3 can commit.
    pub t3_prewrite_same_key: PrewriteOutcome,
    /// The `start_ts` of the transaction whose prewrite lock the replicated lock column holds
    /// for `k2` on the last leader at the end (T3's, 30), or `None` if no prewrite lock.
    pub k2_prewritten_by: Option<u64>,
}

/// How a prewrite of a pessimistically locked key ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrewriteOutcome {
    /// The transaction's pessimistic lock was found and the prewrite is replicated.
    Prewritten,
    /// The lock is gone (lost with a crashed leader): the transaction must abort or amend,
    /// it never overwrites a newer write.
    PessimisticLockNotFound,
}

struct Replica {
    node: Option<Node>,
    lock_cf: LockColumn,
    table: SharedRegionLockTable<u64>,
}

struct Cluster {
    net: Arc<MemNetwork>,
    replicas: Vec<Replica>,
}

impl Cluster {
    fn start(dir: &Path, budget: &MemoryBudget) -> Result<Cluster, ScenarioError> {
        let net = MemNetwork::new(7);
        let mut replicas = Vec::new();
        for id in 1..=3u64 {
            let mut opts = NodeOptions::new(id);
            // A shared 2-core machine can stall a thread: generous election timeout.
            opts.raft.election_tick = 30;
            opts.raft.heartbeat_tick = 3;
            let wal_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&wal_dir)?;
            let wal = Wal::open(&wal_dir, WalOptions::default())?;
            let node = Node::start(opts, Box::new(wal), net.clone())?;
            net.register(id, node.mailbox());
            let lock_cf = LockColumn::default();
            let table = SharedRegionLockTable::new(budget);
            node.add_group(
                REGION,
                ConfState::with_voters([1, 2, 3]),
                Box::new(RegionReplica {
                    lock_cf: lock_cf.clone(),
                    table: table.clone(),
                }),
            )?;
            replicas.push(Replica {
                node: Some(node),
                lock_cf,
                table,
            });
        }
        Ok(Cluster { net, replicas })
    }

    fn replica(&self, id: NodeId) -> Result<&Replica, ScenarioError> {
        usize::try_from(id - 1)
            .ok()
            .and_then(|i| self.replicas.get(i))
            .ok_or(ScenarioError::Unexpected("no such node"))
    }

    fn node(&self, id: NodeId) -> Result<&Node, ScenarioError> {
        self.replica(id)?
            .node
            .as_ref()
            .ok_or(ScenarioError::Unexpected("node is down"))
    }

    /// Waits until a live node leads and its lock table is writable in its term (the leader
    /// applied the no-op of its term, so `on_leader` ran).
    fn wait_leader(&self) -> Result<NodeId, ScenarioError> {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            for (i, r) in self.replicas.iter().enumerate() {
                let Some(node) = &r.node else { continue };
                let status = node.status(REGION)?;
                if status.role == Role::Leader
                    && r.table.read().is_writable()
                    && r.table.term() == status.term
                {
                    return Ok(i as NodeId + 1);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err(ScenarioError::Unexpected("no leader within 10 s"))
    }

    /// Takes in-memory pessimistic locks on the leader `id`: no Raft write.
    fn lock_in_memory(&self, id: NodeId, keys: &[&[u8]], ts: u64) -> Result<(), ScenarioError> {
        check_keys(keys)?;
        let table = &self.replica(id)?.table;
        let batch = keys.iter().map(|k| (k.to_vec(), ts)).collect();
        table
            .try_insert(batch, table.term(), VERSION)
            .map_err(LockError::from)?;
        Ok(())
    }

    /// Prewrites `key` for `ts` on the leader `id`: the transaction's pessimistic lock must
    /// be in the leader's memory or in the replicated lock column.
    fn prewrite(&self, id: NodeId, key: &[u8], ts: u64) -> Result<PrewriteOutcome, ScenarioError> {
        check_keys(&[key])?;
        let replica = self.replica(id)?;
        let in_memory = replica
            .table
            .get(key)
            .is_some_and(|e| *e.lock() == ts && !e.is_deleted());
        let replicated = replica
            .lock_cf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            == Some(&(ts, LockKind::Pessimistic));
        if !in_memory && !replicated {
            return Ok(PrewriteOutcome::PessimisticLockNotFound);
        }
        // The prewrite replaces the in-memory lock: mark it so nobody relies on it while the
        // proposal is in flight, and remove it once applied.
        replica.table.mark_deleted(key);
        let proposal = self
            .node(id)?
            .propose(REGION, Command::Prewrite(vec![(key.to_vec(), ts)]).encode());
        proposal.wait_applied(PATIENCE)?;
        replica
            .table
            .remove_applied(key, replica.table.term(), VERSION);
        Ok(PrewriteOutcome::Prewritten)
    }

    /// A voluntary leader transfer from `from` to `to`, migrating the in-memory locks
    /// through the log first, as TiKV does.
    fn transfer(&self, from: NodeId, to: NodeId) -> Result<usize, ScenarioError> {
        let replica = self.replica(from)?;
        let locks = replica.table.start_transfer()?;
        let migrated = locks.len();
        if !locks.is_empty() {
            self.node(from)?
                .propose(REGION, Command::Locks(locks).encode())
                .wait_applied(PATIENCE)?;
        }
        self.node(from)?.transfer_leader(REGION, to)?;
        Ok(migrated)
    }

    /// Crashes node `id`: its driver stops and the network forgets it; what lived only in its
    /// memory is gone.
    fn crash(&mut self, id: NodeId) -> Result<(), ScenarioError> {
        let index = usize::try_from(id - 1).map_err(|_| ScenarioError::Unexpected("node id"))?;
        let replica = self
            .replicas
            .get_mut(index)
            .ok_or(ScenarioError::Unexpected("no such node"))?;
        self.net.unregister(id);
        if let Some(mut node) = replica.node.take() {
            node.stop();
        }
        // The process is gone, and with it the in-memory table.
        replica.table.become_follower();
        Ok(())
    }
}

/// Runs the scenario with the three nodes' logs under `dir`.
///
/// # Errors
/// [`ScenarioError::Raft`], [`ScenarioError::Locks`] or [`ScenarioError::Io`] if a component
/// fails, [`ScenarioError::Unexpected`] if no leader is elected within 10 s.
pub fn run(dir: &Path) -> Result<ClusterReport, ScenarioError> {
    let budget = MemoryBudget::default();
    let mut cluster = Cluster::start(dir, &budget)?;
    cluster.node(1)?.campaign(REGION)?;
    let first_leader = cluster.wait_leader()?;

    // T1 (start_ts 10) locks "k1" in the leader's memory.
    let before = cluster.node(first_leader)?.stats().proposals;
    cluster.lock_in_memory(first_leader, &[b"k1"], 10)?;
    let raft_entries_for_in_memory_lock = cluster.node(first_leader)?.stats().proposals - before;

    // Voluntary transfer to another node: the lock goes through the log first.
    let target = first_leader % 3 + 1;
    let migrated_on_transfer = cluster.transfer(first_leader, target)?;
    let leader_after_transfer = wait_for(&cluster, |l| l == target)?;
    let t1_prewrite_after_transfer = cluster.prewrite(leader_after_transfer, b"k1", 10)?;

    // T2 (start_ts 20) locks "k2" in memory; then its leader crashes.
    cluster.lock_in_memory(leader_after_transfer, &[b"k2"], 20)?;
    let crashed_leader = leader_after_transfer;
    cluster.crash(crashed_leader)?;
    let leader_after_crash = wait_for(&cluster, |l| l != crashed_leader)?;
    let t2_prewrite_after_crash = cluster.prewrite(leader_after_crash, b"k2", 20)?;

    // T3 (start_ts 30) takes the key T2 lost.
    cluster.lock_in_memory(leader_after_crash, &[b"k2"], 30)?;
    let t3_prewrite_same_key = cluster.prewrite(leader_after_crash, b"k2", 30)?;
    let k2_prewritten_by = match cluster
        .replica(leader_after_crash)?
        .lock_cf
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(b"k2".as_slice())
    {
        Some(&(ts, LockKind::Prewrite)) => Some(ts),
        _ => None,
    };

    Ok(ClusterReport {
        first_leader,
        raft_entries_for_in_memory_lock,
        migrated_on_transfer,
        leader_after_transfer,
        t1_prewrite_after_transfer,
        crashed_leader,
        leader_after_crash,
        t2_prewrite_after_crash,
        t3_prewrite_same_key,
        k2_prewritten_by,
    })
}

/// Refuses keys the command format cannot carry.
fn check_keys(keys: &[&[u8]]) -> Result<(), ScenarioError> {
    if keys.iter().any(|k| k.len() > MAX_KEY_LEN) {
        return Err(ScenarioError::Unexpected("a key is over 64 KiB - 1 bytes"));
    }
    Ok(())
}

/// Waits for a leader that satisfies `ok`.
fn wait_for(cluster: &Cluster, ok: impl Fn(NodeId) -> bool) -> Result<NodeId, ScenarioError> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let leader = cluster.wait_leader()?;
        if ok(leader) {
            return Ok(leader);
        }
        if Instant::now() > deadline {
            return Err(ScenarioError::Unexpected(
                "the expected leader change did not happen",
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl fmt::Display for PrewriteOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PrewriteOutcome::Prewritten => "lock found, prewrite replicated",
            PrewriteOutcome::PessimisticLockNotFound => "PessimisticLockNotFound",
        })
    }
}

impl fmt::Display for ClusterReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "node {} leads region 1 (3 replicas, each with a durable write-ahead log)",
            self.first_leader
        )?;
        writeln!(
            f,
            "T1 (start_ts 10) locks k1 in the leader's memory: {} Raft proposals made for it",
            self.raft_entries_for_in_memory_lock
        )?;
        writeln!(
            f,
            "node {} hands leadership to node {} on purpose: {} in-memory lock(s) proposed \
             through Raft first",
            self.first_leader, self.leader_after_transfer, self.migrated_on_transfer
        )?;
        writeln!(
            f,
            "  T1's prewrite of k1 on node {}: {}",
            self.leader_after_transfer, self.t1_prewrite_after_transfer
        )?;
        writeln!(
            f,
            "T2 (start_ts 20) locks k2 in node {}'s memory; node {} crashes; node {} is elected",
            self.crashed_leader, self.crashed_leader, self.leader_after_crash
        )?;
        writeln!(
            f,
            "  T2's prewrite of k2 on node {}: {}",
            self.leader_after_crash, self.t2_prewrite_after_crash
        )?;
        writeln!(
            f,
            "  T3 (start_ts 30) locks k2 and prewrites it: {}",
            self.t3_prewrite_same_key
        )?;
        writeln!(
            f,
            "  replicated lock column on node {}, key k2: {}",
            self.leader_after_crash,
            match self.k2_prewritten_by {
                Some(ts) => format!("prewrite lock of start_ts {ts}"),
                None => "no prewrite lock".to_owned(),
            }
        )?;
        write!(
            f,
            "Shows: on a real Raft group an in-memory lock costs no log entry, survives a planned \
             transfer, and when a crash loses it, the lock holder's prewrite fails, so only one \
             of the two transactions that locked k2 (T3) can commit."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_garbage_is_refused() {
        for cmd in [
            Command::Locks(vec![(b"k1".to_vec(), 10), (Vec::new(), u64::MAX)]),
            Command::Prewrite(vec![(b"k2".to_vec(), 20)]),
            Command::Locks(Vec::new()),
        ] {
            assert_eq!(Command::decode(&cmd.encode()), Some(cmd));
        }
        assert_eq!(Command::decode(&[]), None);
        assert_eq!(Command::decode(&[9]), None);
        assert_eq!(Command::decode(&[1, 5, 0, b'a']), None);
    }

    #[test]
    fn snapshot_restores_the_lock_column() {
        let budget = MemoryBudget::default();
        let mut a = RegionReplica {
            lock_cf: LockColumn::default(),
            table: SharedRegionLockTable::new(&budget),
        };
        a.apply(
            1,
            &Command::Locks(vec![(b"x".to_vec(), 1), (b"y".to_vec(), 2)]).encode(),
        );
        a.apply(2, &Command::Prewrite(vec![(b"y".to_vec(), 2)]).encode());
        let snap = a.snapshot();
        let mut b = RegionReplica {
            lock_cf: LockColumn::default(),
            table: SharedRegionLockTable::new(&budget),
        };
        b.apply(1, &Command::Locks(vec![(b"stale".to_vec(), 9)]).encode());
        b.restore(2, &snap);
        assert_eq!(*a.lock_cf.lock().unwrap(), *b.lock_cf.lock().unwrap());
        assert_eq!(b.lock_cf.lock().unwrap().len(), 2);
    }
}
