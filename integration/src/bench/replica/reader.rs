//! A stock stream reader for `surgedb bench replica`: `mariadb-binlog
//! --read-from-remote-server --raw --stop-never` saving a node's stream into files, so a
//! run can measure what serving the stream costs the cluster apart from what a MariaDB
//! replica applying it costs the machine.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::setup;
use crate::bench::sysbench::{Endpoint, SysbenchError};

/// A running `mariadb-binlog` and the directory it writes into.
pub(super) struct BinlogReader {
    child: Child,
    dir: PathBuf,
}

/// The tool's arguments: from `first_file` of `ep`'s stream, following it until stopped.
fn args(ep: &Endpoint, dir: &Path, first_file: &str) -> Vec<String> {
    vec![
        // No option files: the run must not depend on the machine's client settings.
        "--no-defaults".into(),
        "--read-from-remote-server".into(),
        format!("--host={}", ep.host),
        format!("--port={}", ep.port),
        "--user=root".into(),
        "--raw".into(),
        "--stop-never".into(),
        format!("--result-file={}/", dir.display()),
        first_file.into(),
    ]
}

impl BinlogReader {
    /// Starts reading `ep`'s stream from `first_file` into `dir` (created), its messages
    /// into `log` (outside `dir`, which holds only the saved files).
    ///
    /// # Errors
    /// [`SysbenchError::Setup`] when the directory, the log or the process cannot be made.
    pub(super) fn start(
        ep: &Endpoint,
        dir: &Path,
        log: &Path,
        first_file: &str,
    ) -> Result<Self, SysbenchError> {
        std::fs::create_dir_all(dir).map_err(|e| setup("the binlog reader's directory", e))?;
        let log = std::fs::File::create(log).map_err(|e| setup("the binlog reader's log", e))?;
        let child = Command::new("mariadb-binlog")
            .args(args(ep, dir, first_file))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| setup("mariadb-binlog (apt-get install mariadb-client)", e))?;
        Ok(BinlogReader {
            child,
            dir: dir.to_path_buf(),
        })
    }

    /// Its process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until it has saved as many bytes as the stream files in `stream_dir` (a node's
    /// copy) hold, the same twice 200 ms apart (raw mode saves each file's bytes as they
    /// are in the copy).
    ///
    /// # Errors
    /// [`SysbenchError::Setup`] when it exits or `timeout` passes first.
    pub(super) fn wait_caught_up(
        &mut self,
        stream_dir: &Path,
        timeout: Duration,
    ) -> Result<(), SysbenchError> {
        let deadline = Instant::now() + timeout;
        let mut last = None;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(setup(
                    "mariadb-binlog reading the stream",
                    format!("it ended before catching up: {status}"),
                ));
            }
            let now = (self.bytes(), dir_bytes(stream_dir));
            if now.0 >= now.1 && last == Some(now) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(setup(
                    "mariadb-binlog reading the stream",
                    format!(
                        "{} of the stream's {} bytes saved after {timeout:?}",
                        now.0, now.1
                    ),
                ));
            }
            last = Some(now);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Bytes saved so far (every file in its directory).
    pub(super) fn bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    /// Stops it. An exit before this (a refused dump, a lost connection) is an error that
    /// says so: the run it measured had no reader for part of its time.
    ///
    /// # Errors
    /// [`SysbenchError::Setup`] naming how it ended.
    pub(super) fn stop(mut self) -> Result<(), SysbenchError> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(setup(
                "mariadb-binlog reading the stream",
                format!("it ended during the run: {status}"),
            ));
        }
        // Dropping `self` kills and reaps it.
        Ok(())
    }
}

/// Whether `mariadb-binlog` runs at all.
///
/// # Errors
/// [`SysbenchError::Setup`] naming the package to install.
pub(super) fn check_installed() -> Result<(), SysbenchError> {
    match Command::new("mariadb-binlog").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(setup(
            "mariadb-binlog --version",
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )),
        Err(e) => Err(setup("mariadb-binlog (apt-get install mariadb-client)", e)),
    }
}

/// Bytes of the stream files in `dir` (`surge-stream-bin.NNNNNN`; 0 when unreadable).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| {
                    let e = e.ok()?;
                    crate::stream::StreamConfig::file_number(&e.file_name().to_string_lossy())?;
                    e.metadata().ok()
                })
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl Drop for BinlogReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_follows_the_named_file_into_the_directory() {
        let ep = Endpoint::parse("surgedb node 1", "127.0.0.1:4000").expect("endpoint");
        let a = args(&ep, Path::new("/tmp/r"), "surge-stream-bin.000001");
        assert!(a.contains(&"--port=4000".to_string()) && a.contains(&"--stop-never".to_string()));
        assert_eq!(
            a.last().map(String::as_str),
            Some("surge-stream-bin.000001")
        );
        assert!(a.contains(&"--result-file=/tmp/r/".to_string()));
    }
}
