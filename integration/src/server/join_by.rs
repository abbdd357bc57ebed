//! [`join_by`]: joins a thread if it ends before a deadline.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Waits until `handle`'s thread has ended or `deadline` has passed, and joins it if it
/// ended. Returns whether it did; a thread still running is left to end alone.
pub(crate) fn join_by(handle: JoinHandle<()>, deadline: Instant) -> bool {
    while !handle.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let ended = handle.is_finished();
    if ended {
        let _ = handle.join();
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_ends_in_time_is_joined_and_one_that_does_not_is_left() {
        let quick = std::thread::spawn(|| {});
        assert!(join_by(quick, Instant::now() + Duration::from_secs(5)));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let slow = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        assert!(!join_by(slow, Instant::now() + Duration::from_millis(20)));
        drop(tx);
    }
}
