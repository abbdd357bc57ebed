//! The parent side of a crash test: re-run this test binary as a child process, read its
//! stdout until it reports "reached", let it run a moment longer, then SIGKILL and reap it.
//! Shared by `crash.rs` and `crash_cluster.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a child may take to reach its crash point before the test fails (not hangs).
const REACH_DEADLINE: Duration = Duration::from_secs(120);

/// A running child process and the lines of its stdout.
pub struct CrashChild {
    child: Child,
    lines: crossbeam_channel::Receiver<String>,
}

impl CrashChild {
    /// Runs the test named `test` of this binary alone in a child, with `env` set (the
    /// variables that select the child role).
    pub fn spawn(test: &str, env: &[(&str, String)]) -> CrashChild {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([test, "--exact", "--nocapture"])
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the child test process starts");
        let out = child.stdout.take().expect("stdout is piped");
        // Read on a thread so the parent can wait with a deadline.
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        CrashChild { child, lines }
    }

    /// Hands every line to `on_line` until the child prints "reached". A child that does not
    /// get there within the deadline is killed and the test fails.
    pub fn wait_reached(&mut self, mut on_line: impl FnMut(&str)) {
        let deadline = Instant::now() + REACH_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    on_line(&line);
                    if line == "reached" {
                        return;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!("child never reached its crash point: {e:?}");
                }
            }
        }
    }

    /// Lets the child run for `after`, kills it with SIGKILL mid-stream, reaps it, and hands
    /// `on_line` every line it printed before dying.
    pub fn kill_after(mut self, after: Duration, mut on_line: impl FnMut(&str)) {
        std::thread::sleep(after);
        self.child.kill().expect("SIGKILL the child");
        self.child.wait().expect("reap the child");
        // The pipe closes with the child: the reader thread then ends the channel.
        for line in self.lines.iter() {
            on_line(&line);
        }
    }
}
