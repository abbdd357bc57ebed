//! The directory lock against child processes: a process forked by another thread while
//! a log is open shares the lock's open file description until it execs. Closing the log
//! must release the lock anyway, or a reopen in the meantime fails with `Locked`.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::Command;

use surge_binlog::Binlog;

use crate::common::{fresh, test_config, verify_all};

#[test]
fn reopen_is_not_blocked_by_a_child_forked_before_the_close() {
    let (dir, log) = fresh();
    log.commit(log.new_cache(), 1).unwrap();
    // The child, between fork and exec, tells us it exists, then waits for our word: it
    // holds a copy of every descriptor of this process, the log's lock file included.
    let (mut ready_r, ready_w) = std::io::pipe().unwrap();
    let (go_r, mut go_w) = std::io::pipe().unwrap();
    let mut cmd = Command::new("true");
    #[allow(unsafe_code)] // pre_exec: the closure only writes and reads a pipe (async-signal-safe).
    // SAFETY: the closure makes no allocation and takes no lock; write and read are
    // async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            (&ready_w).write_all(b"r")?;
            let mut b = [0u8; 1];
            (&go_r).read_exact(&mut b)
        });
    }
    let spawner = std::thread::spawn(move || cmd.status().unwrap());
    let mut b = [0u8; 1];
    ready_r.read_exact(&mut b).unwrap();
    // The child is forked and has not exec'd: close the log and reopen the directory.
    drop(log);
    let reopened = Binlog::open(test_config(dir.path()));
    go_w.write_all(b"g").unwrap();
    assert!(spawner.join().unwrap().success());
    let log = reopened.expect("reopen while a forked child still held the old lock fd");
    assert_eq!(log.commit(log.new_cache(), 2).unwrap().gtid.seq_no, 2);
    drop(log);
    verify_all(dir.path());
}
