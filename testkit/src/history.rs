//! [`History`]: the operations of a register workload with their invocation and completion
//! times, recorded from many threads.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// What a single-key operation did. Values are unique per written operation; 0 stands for
/// "never written" (the key is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// A blind write of the value.
    Write(u64),
    /// A read and the value it returned.
    Read(u64),
    /// A compare-and-set that found `expect` and wrote `new`.
    Cas {
        /// The value it required.
        expect: u64,
        /// The value it wrote.
        new: u64,
    },
}

impl OpKind {
    /// The value this operation writes, if it writes.
    pub fn written(self) -> Option<u64> {
        match self {
            OpKind::Write(v) | OpKind::Cas { new: v, .. } => Some(v),
            OpKind::Read(_) => None,
        }
    }

    /// The value this operation observed (a read's result, a compare-and-set's expectation).
    pub fn observed(self) -> Option<u64> {
        match self {
            OpKind::Read(v) | OpKind::Cas { expect: v, .. } => Some(v),
            OpKind::Write(_) => None,
        }
    }
}

/// One operation: it took effect, if at all, somewhere in `[invoke, complete]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// The register (key index).
    pub key: u64,
    /// What it did.
    pub kind: OpKind,
    /// The client thread that ran it (for reports).
    pub client: u64,
    /// When it was invoked, in nanoseconds since the history began.
    pub invoke: u64,
    /// When it completed; `None`: its outcome is unknown (it may or may not have taken
    /// effect, at any time after `invoke`).
    pub complete: Option<u64>,
}

/// A history shared by the client threads: one clock, one list. Cheap to clone.
#[derive(Debug, Clone)]
pub struct History {
    start: Instant,
    ops: Arc<Mutex<Vec<Op>>>,
}

impl Default for History {
    fn default() -> History {
        History::new()
    }
}

impl History {
    /// An empty history whose clock starts now.
    pub fn new() -> History {
        History {
            start: Instant::now(),
            ops: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Now on the history's clock. Call it before the operation's first request (its
    /// invocation) and after its last reply (its completion).
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records an operation.
    pub fn record(&self, op: Op) {
        self.ops.lock().push(op);
    }

    /// Every operation recorded so far.
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().clone()
    }
}
