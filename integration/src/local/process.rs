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
