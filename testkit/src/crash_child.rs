//! The parent side of a crash test: this test binary re-run as a child process on one of
//! its tests, waited for until it reports its crash point, then killed with SIGKILL and
//! reaped.
//!
//! The child runs `<test> --exact --nocapture --test-threads=1`, so exactly one test runs
//! and its stdout reaches the parent line by line. The test tells the roles apart by the
//! environment the parent gives it ([`CrashChild::spawn`]'s `env`: a directory, a crash
//! point's name). A crash point reports itself with a line `reached` or `reached <name>`
//! ([`CrashChild::wait_reached`]); the parent may instead stop on a line of its own choice
//! ([`CrashChild::wait_until`]).
//!
//! Invariants the tests rely on:
//! * every wait is bounded by [`REACH_DEADLINE`]: a child that hangs, or exits, before its
//!   point fails the test with the tail of its stdout and stderr instead of hanging it;
//! * dropping a [`CrashChild`] kills and reaps the child, so a parent test that panics
//!   (a failed assertion while the child waits at its point) leaves no orphan;
//! * the lines handed to the caller are the child's own: libtest's `test <name> ... `, which
//!   it prints without a newline before the test's output, is removed from their start.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long a child may take to reach its crash point before the test fails.
pub const REACH_DEADLINE: Duration = Duration::from_secs(120);

/// How many of the child's last lines a failure message quotes.
const TAIL_LINES: usize = 30;

/// One line of the child's output.
#[derive(Debug)]
enum Line {
    Out(String),
    Err(String),
}

/// As a failure message quotes it: `out| ` or `err| `, then the line.
impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Line::Out(l) => write!(f, "out| {l}"),
            Line::Err(l) => write!(f, "err| {l}"),
        }
    }
}

/// A child process running one test of this test binary; killed and reaped when dropped.
#[derive(Debug)]
pub struct CrashChild {
    test: String,
    child: Child,
    lines: Receiver<Line>,
    /// The last [`TAIL_LINES`] lines read, stdout and stderr marked, for failure messages.
    tail: VecDeque<String>,
}

impl CrashChild {
    /// Runs the test named `test` (its full path in this binary, as `--exact` matches it)
    /// alone in a child process, with the variables of `env` added to this process's
    /// environment.
    ///
    /// # Panics
    /// If this binary's path is unknown or the child does not start.
    pub fn spawn<K, V>(test: &str, env: impl IntoIterator<Item = (K, V)>) -> CrashChild
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the child running {test} starts: {e}"));
        // Both pipes are read on threads: the parent waits with a deadline, and a child
        // whose stderr nobody read would block once the pipe is full.
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("stdout is piped");
        let libtest_prefix = format!("test {test} ... ");
        forward(out, tx.clone(), move |l| {
            Line::Out(match l.strip_prefix(&libtest_prefix) {
                Some(rest) => rest.to_owned(),
                None => l,
            })
        });
        let err = child.stderr.take().expect("stderr is piped");
        forward(err, tx, Line::Err);
        CrashChild {
            test: test.to_owned(),
            child,
            lines,
            tail: VecDeque::with_capacity(TAIL_LINES),
        }
    }

    /// Hands every stdout line to `on_line` until the child prints `reached` or
    /// `reached <point>` (that line too).
    ///
    /// # Panics
    /// If the child exits first or does not get there within [`REACH_DEADLINE`]; the
    /// message quotes the end of its output. The child is killed and reaped as the
    /// [`CrashChild`] is dropped.
    pub fn wait_reached(&mut self, mut on_line: impl FnMut(&str)) {
        self.wait_until("its crash point", |line| {
            on_line(line);
            line == "reached" || line.starts_with("reached ")
        });
    }

    /// Hands every stdout line to `until` until it returns true; `what` names that moment
    /// in the failure message.
    ///
    /// # Panics
    /// As [`CrashChild::wait_reached`].
    pub fn wait_until(&mut self, what: &str, mut until: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + REACH_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let stop = matches!(&line, Line::Out(l) if until(l));
                    self.remember(line);
                    if stop {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "the child running {} did not reach {what} within {REACH_DEADLINE:?}; \
                     its output ended with:\n{}",
                    self.test,
                    self.tail()
                ),
                // Both pipes closed: the child has exited.
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().expect("reap the child");
                    panic!(
                        "the child running {} exited ({status}) before it reached {what}; \
                         its output ended with:\n{}",
                        self.test,
                        self.tail()
                    )
                }
            }
        }
    }

    /// Kills the child with SIGKILL and reaps it; the lines it printed that were not read
    /// yet are dropped.
    ///
    /// # Panics
    /// If the child cannot be killed or reaped.
    pub fn kill(mut self) {
        self.kill_and_reap();
    }

    /// Lets the child run for `after`, kills it with SIGKILL (mid-stream, if it went on
    /// working), reaps it, and hands `on_line` every stdout line it printed before dying.
    ///
    /// # Panics
    /// If the child cannot be killed or reaped.
    pub fn kill_after(mut self, after: Duration, mut on_line: impl FnMut(&str)) {
        std::thread::sleep(after);
        self.kill_and_reap();
        // Once reaped, the child's ends of the pipes are closed: the readers reach the end
        // of both and the channel ends.
        for line in self.lines.iter() {
            if let Line::Out(l) = line {
                on_line(&l);
            }
        }
    }

    fn kill_and_reap(&mut self) {
        self.child.kill().expect("SIGKILL the child");
        // Once `wait` returns, every descriptor and file lock the child held is released.
        self.child.wait().expect("reap the child");
    }

    fn remember(&mut self, line: Line) {
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line.to_string());
    }

    fn tail(&self) -> String {
        if self.tail.is_empty() {
            return "  (nothing)".to_owned();
        }
        let lines: Vec<String> = self.tail.iter().map(|l| format!("  {l}")).collect();
        lines.join("\n")
    }
}

impl Drop for CrashChild {
    fn drop(&mut self) {
        // Errors are moot here: the child is already dead or the parent is unwinding.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends the lines of `from`, made into [`Line`]s by `make`, until it ends or the parent
/// stops listening.
fn forward(
    from: impl Read + Send + 'static,
    to: Sender<Line>,
    make: impl Fn(String) -> Line + Send + 'static,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if to.send(make(line)).is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child side of these tests, chosen by `SURGE_TESTKIT_CHILD`.
    #[test]
    fn child_role() {
        match std::env::var("SURGE_TESTKIT_CHILD").as_deref() {
            Ok("reach") => {
                println!("step 1");
                eprintln!("a diagnostic");
                println!("reached here");
                std::thread::sleep(Duration::from_secs(600));
            }
            Ok("exit") => {
                println!("step 1");
                eprintln!("giving up");
                std::process::exit(7);
            }
            _ => {}
        }
    }

    const CHILD_TEST: &str = "crash_child::tests::child_role";

    #[test]
    fn lines_come_without_the_libtest_prefix_and_the_kill_reaps() {
        let mut c = CrashChild::spawn(CHILD_TEST, [("SURGE_TESTKIT_CHILD", "reach")]);
        let mut seen = Vec::new();
        c.wait_reached(|l| seen.push(l.to_owned()));
        assert!(
            seen.ends_with(&["step 1".to_owned(), "reached here".to_owned()]),
            "{seen:?}"
        );
        let pid = c.child.id();
        c.kill_after(Duration::ZERO, |l| panic!("nothing after reached: {l}"));
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the child {pid} is reaped"
        );
    }

    #[test]
    fn a_child_that_exits_early_fails_with_its_output() {
        let outcome = std::panic::catch_unwind(|| {
            CrashChild::spawn(CHILD_TEST, [("SURGE_TESTKIT_CHILD", "exit")]).wait_reached(|_| {});
        });
        let err = outcome.expect_err("the wait fails");
        let msg = err
            .downcast_ref::<String>()
            .expect("a formatted panic message");
        assert!(msg.contains("exited (exit status: 7)"), "{msg}");
        assert!(msg.contains("out| step 1"), "{msg}");
        assert!(msg.contains("err| giving up"), "{msg}");
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        let mut c = CrashChild::spawn(CHILD_TEST, [("SURGE_TESTKIT_CHILD", "reach")]);
        c.wait_reached(|_| {});
        let pid = c.child.id();
        drop(c);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
