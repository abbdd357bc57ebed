//! Process ids: is one alive, and signalling it, through `/proc` and the `kill` command
//! (the workspace has no unsafe code, so no direct `kill(2)`).

use std::process::{Command, Stdio};

/// Whether process `pid` is running (a zombie counts as gone). Reads `/proc/PID/stat`
/// where there is a `/proc`, else asks `kill -0`.
pub fn is_alive(pid: u32) -> bool {
    if std::path::Path::new("/proc/self").exists() {
        return match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name in parentheses: `pid (comm) S ...`.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        };
    }
    signal(pid, "0")
}

/// Seconds of CPU (user and system) process `pid` has used so far, from `/proc/PID/stat`
/// (`utime` and `stime`, counted in Linux's `USER_HZ` of 100 ticks a second); `None`
/// without a `/proc` or for a process that is gone.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name start at field 3 (state); utime and
    // stime are fields 14 and 15.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / 100.0)
}

/// Whether process `pid` was started as `surgedb node` with `data` among its arguments:
/// guards against signalling an unrelated process that reused a recorded pid.
pub fn is_node_process(pid: u32, data: &std::path::Path) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(raw) => {
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.iter().any(|a| a == "node") && args.iter().any(|a| std::path::Path::new(a) == data)
        }
        // No /proc: trust the pid.
        Err(_) => !std::path::Path::new("/proc/self").exists() && is_alive(pid),
    }
}

/// Sends `sig` (`TERM`, `KILL`, `STOP`, `CONT`, `0`) to `pid` with the `kill` command.
/// Returns whether it succeeded.
pub fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_counts_this_process_and_not_a_missing_one() {
        if !std::path::Path::new("/proc/self").exists() {
            return;
        }
        let me = std::process::id();
        let before = cpu_seconds(me).expect("this process's stat");
        // Burn CPU until the count (in 10 ms ticks) moved by 50 ms, for at most 10 s of wall
        // time (other tests share the cores).
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut after = before;
        while after - before < 0.05 && t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            after = cpu_seconds(me).expect("this process's stat");
        }
        assert!(after - before >= 0.05, "{before} -> {after}");
        assert_eq!(cpu_seconds(u32::MAX), None);
    }
}
