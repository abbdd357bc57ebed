//! A test executor: an in-memory counter per key with bound checks, fault injection, a commit
//! gate to hold a group in its durable step, and a history of committed groups.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use surge_hotspot::{Applied, Config, Coordinator, GroupExecutor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Add `delta`; rejected unless the result stays within `[min, max]`.
    Add { delta: i64, min: i64, max: i64 },
    /// Always rejected.
    Fail,
    /// Affects no row (like an UPDATE matching nothing); output is the current value.
    NoOp,
    /// Panics in `apply`.
    Panic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub id: u64,
    pub kind: Kind,
}

pub fn add(id: u64, delta: i64) -> Op {
    Op {
        id,
        kind: Kind::Add {
            delta,
            min: i64::MIN,
            max: i64::MAX,
        },
    }
}

#[derive(Debug, thiserror::Error)]
#[error("injected durable failure for group starting with op {first}")]
pub struct InjectedIo {
    pub first: u64,
}

#[derive(Debug)]
pub struct Group {
    value: i64,
    /// Ids in the order `apply` saw them (rejected ones included).
    order: RefCell<Vec<u64>>,
    _active: Active,
}

/// Counts groups between `begin` and their drop (committed or abandoned).
#[derive(Debug)]
struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The model both the executor and the tests use: the outcome of `kind` on `value`.
pub fn model_apply(value: i64, kind: Kind) -> Result<(i64, u64), String> {
    match kind {
        Kind::Add { delta, min, max } => {
            let next = value.checked_add(delta).ok_or("overflow")?;
            if next < min || next > max {
                return Err(format!("{next} outside [{min}, {max}]"));
            }
            Ok((next, 1))
        }
        Kind::Fail => Err("refused".into()),
        Kind::NoOp => Ok((value, 0)),
        Kind::Panic => panic!("model cannot run a panicking op"),
    }
}

/// Counter executor. `history` holds, per committed group, its members' ids in apply order.
#[derive(Debug, Default)]
pub struct TestExec {
    rows: Mutex<HashMap<u64, i64>>,
    pub history: Mutex<Vec<Vec<u64>>>,
    gate_closed: Mutex<bool>,
    gate_cv: Condvar,
    pub in_commit: AtomicUsize,
    concurrent: Arc<AtomicUsize>,
    pub overlap_seen: AtomicBool,
    fail_commit_for: Mutex<HashSet<u64>>,
    pub panic_commit: AtomicBool,
}

impl TestExec {
    pub fn with_value(key: u64, v: i64) -> Self {
        let e = Self::default();
        e.rows.lock().unwrap().insert(key, v);
        e
    }
    pub fn value(&self, key: u64) -> i64 {
        self.rows.lock().unwrap().get(&key).copied().unwrap_or(0)
    }
    pub fn close_gate(&self) {
        *self.gate_closed.lock().unwrap() = true;
    }
    pub fn open_gate(&self) {
        *self.gate_closed.lock().unwrap() = false;
        self.gate_cv.notify_all();
    }
    /// Fail the durable step of the group that applied op `id`.
    pub fn fail_commit_for(&self, id: u64) {
        self.fail_commit_for.lock().unwrap().insert(id);
    }
}

impl GroupExecutor for TestExec {
    type Key = u64;
    type Op = Op;
    type Output = i64;
    type Change = i64;
    type Reject = String;
    type Error = InjectedIo;
    type Group = Group;

    fn begin(&self, key: &u64) -> Result<Group, InjectedIo> {
        if self.concurrent.fetch_add(1, Ordering::SeqCst) != 0 {
            self.overlap_seen.store(true, Ordering::SeqCst);
        }
        let _active = Active(Arc::clone(&self.concurrent));
        Ok(Group {
            value: self.value(*key),
            order: RefCell::new(Vec::new()),
            _active,
        })
    }

    fn apply(&self, g: &Group, op: &Op) -> Result<Applied<i64, i64>, String> {
        g.order.borrow_mut().push(op.id);
        if op.kind == Kind::Panic {
            panic!("executor panics on op {}", op.id);
        }
        let (next, rows) = model_apply(g.value, op.kind)?;
        Ok(Applied {
            change: next,
            output: next,
            affected_rows: rows,
        })
    }

    fn accept(&self, g: &mut Group, next: i64) {
        g.value = next;
    }

    fn commit(&self, key: &u64, g: Group) -> Result<(), InjectedIo> {
        self.in_commit.fetch_add(1, Ordering::SeqCst);
        {
            let mut closed = self.gate_closed.lock().unwrap();
            while *closed {
                closed = self.gate_cv.wait(closed).unwrap();
            }
        }
        self.in_commit.fetch_sub(1, Ordering::SeqCst);
        let order = g.order.into_inner();
        let first = order.first().copied().unwrap_or(0);
        let fail = {
            let set = self.fail_commit_for.lock().unwrap();
            order.iter().any(|id| set.contains(id))
        };
        if self.panic_commit.load(Ordering::SeqCst) {
            panic!("executor panics in commit");
        }
        if fail {
            return Err(InjectedIo { first });
        }
        self.rows.lock().unwrap().insert(*key, g.value);
        self.history.lock().unwrap().push(order);
        Ok(())
    }
}

pub type Hot = Arc<Coordinator<Arc<TestExec>>>;

pub fn coordinator(exec: TestExec, config: Config) -> Hot {
    Arc::new(Coordinator::new(Arc::new(exec), config).unwrap())
}

/// Polls `cond` until true; panics after `secs`.
pub fn wait_until(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

pub type Res = Result<i64, surge_hotspot::Error<String, InjectedIo>>;

/// Forms a known group: a leader `NoOp` (id 0) holds its commit at the gate, then `ops` are
/// submitted one by one (each waits until collected, so arrival order is `ops` order), then
/// the gate opens. Returns each op's result, in `ops` order. Fails instead of hanging.
pub fn run_held_group(hot: &Hot, key: u64, ops: &[(Op, surge_hotspot::Hints)]) -> Vec<Res> {
    let exec = Arc::clone(hot.executor());
    exec.close_gate();
    let h0 = {
        let hot = Arc::clone(hot);
        std::thread::spawn(move || {
            hot.execute(
                &key,
                Op {
                    id: 0,
                    kind: Kind::NoOp,
                },
                surge_hotspot::Hints::new().commit_on_success(),
            )
        })
    };
    wait_until("leader in commit", 10, || {
        exec.in_commit.load(Ordering::SeqCst) == 1
    });
    let mut handles = Vec::new();
    for (i, (op, hints)) in ops.iter().copied().enumerate() {
        let hot2 = Arc::clone(hot);
        handles.push(std::thread::spawn(move || hot2.execute(&key, op, hints)));
        wait_until("member collected", 10, || hot.waiting(&key) == i + 1);
    }
    exec.open_gate();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = h0.join();
        let rs: Vec<Res> = handles
            .into_iter()
            .map(|h| h.join().expect("member thread"))
            .collect();
        let _ = tx.send(rs);
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("members finished (no deadlock)")
}
