//! The benchmark's `off` row lock: FIFO hand-off, as a database row-lock queue grants it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A thread queued on the [`FifoLock`], with its grant flag.
type FifoWaiter = Arc<(std::thread::Thread, AtomicBool)>;

/// A FIFO hand-off lock: `unlock` passes ownership to the oldest waiter and unparks it.
pub struct FifoLock {
    /// (locked, waiters in arrival order)
    state: std::sync::Mutex<(bool, std::collections::VecDeque<FifoWaiter>)>,
}

impl FifoLock {
    /// An unlocked lock.
    pub fn new() -> Self {
        Self {
            state: std::sync::Mutex::new((false, std::collections::VecDeque::new())),
        }
    }

    /// Takes the lock, queueing behind earlier waiters.
    pub fn lock(&self) -> Result<(), String> {
        let me = {
            let mut s = self.state.lock().map_err(|_| "fifo lock poisoned")?;
            if !s.0 {
                s.0 = true;
                return Ok(());
            }
            let me = Arc::new((std::thread::current(), AtomicBool::new(false)));
            s.1.push_back(Arc::clone(&me));
            me
        };
        while !me.1.load(Ordering::Acquire) {
            std::thread::park();
        }
        Ok(())
    }

    /// Hands the lock to the oldest waiter, or frees it.
    pub fn unlock(&self) -> Result<(), String> {
        let mut s = self.state.lock().map_err(|_| "fifo lock poisoned")?;
        match s.1.pop_front() {
            Some(next) => {
                drop(s);
                next.1.store(true, Ordering::Release);
                next.0.unpark();
            }
            None => s.0 = false,
        }
        Ok(())
    }
}
