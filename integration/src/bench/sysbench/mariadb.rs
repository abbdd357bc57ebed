//! [`PrivateMariadb`]: a durable MariaDB 10.11 of the benchmark's own, on a loopback port
//! in a scratch directory, stopped when dropped.
//!
//! Durable as the write-ups' baselines: `sync_binlog=1` (the binlog fsynced at every
//! commit group), `innodb_flush_log_at_trx_commit=1` (the redo log too) and row-based
//! binlog events (<https://mariadb.com/kb/en/replication-and-binary-log-system-variables/>,
//! <https://mariadb.com/kb/en/innodb-system-variables/>).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use super::error::{SysbenchError, tail};

/// A running `mariadbd` started by [`PrivateMariadb::start`].
#[derive(Debug)]
pub struct PrivateMariadb {
    child: Child,
    dir: PathBuf,
    endpoint: Endpoint,
}

impl PrivateMariadb {
    /// Creates a data directory under `dir` with `mariadb-install-db`, starts `mariadbd`
    /// on a free loopback port and waits (up to 60 s) until it answers.
    ///
    /// # Errors
    /// [`SysbenchError::Spawn`] when MariaDB is not installed; [`SysbenchError::Setup`]
    /// with the end of its error log when it does not come up.
    pub fn start(dir: &Path) -> Result<PrivateMariadb, SysbenchError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SysbenchError::Io { path, source }
        };
        let data = dir.join("data");
        let binlog = dir.join("binlog");
        std::fs::create_dir_all(&data).map_err(io(&data))?;
        std::fs::create_dir_all(&binlog).map_err(io(&binlog))?;
        let install = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg("--user=root")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .output()
            .map_err(|e| SysbenchError::Spawn {
                program: "mariadb-install-db".into(),
                detail: e.to_string(),
            })?;
        if !install.status.success() {
            return Err(SysbenchError::Failed {
                what: "mariadb-install-db".into(),
                status: install.status.to_string(),
                stderr: tail(&String::from_utf8_lossy(&install.stderr), 600),
            });
        }
        let port = free_port()?;
        let log = dir.join("mariadbd.err");
        let err = std::fs::File::create(&log).map_err(io(&log))?;
        let child = Command::new("mariadbd")
            .arg("--no-defaults")
            .arg("--user=root")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("mariadbd.sock").display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--log-bin={}", binlog.join("mdb-bin").display()))
            .arg("--server-id=1")
            .arg("--sync-binlog=1")
            .arg("--innodb-flush-log-at-trx-commit=1")
            .arg("--binlog-format=ROW")
            .arg("--innodb-buffer-pool-size=1G")
            .arg("--max-connections=1100")
            .arg("--max-allowed-packet=1G")
            .arg("--skip-name-resolve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| SysbenchError::Spawn {
                program: "mariadbd".into(),
                detail: e.to_string(),
            })?;
        let mut me = PrivateMariadb {
            child,
            dir: dir.to_path_buf(),
            endpoint: Endpoint {
                name: "mariadb".into(),
                host: "127.0.0.1".into(),
                port,
            },
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if me.endpoint.sql("SELECT 1").is_ok() {
                return Ok(me);
            }
            let exited = me.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let detail = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(SysbenchError::Setup {
                    what: format!("MariaDB in {}", me.dir.display()),
                    detail: match exited {
                        Some(s) => format!("mariadbd exited ({s}): {}", tail(&detail, 600)),
                        None => format!("no answer within 60 s: {}", tail(&detail, 600)),
                    },
                });
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Its binlog directory (`mdb-bin.NNNNNN` files and their index).
    pub fn binlog_dir(&self) -> PathBuf {
        self.dir.join("binlog")
    }

    /// The binlog files, in order.
    ///
    /// # Errors
    /// [`SysbenchError::Io`].
    pub fn binlog_files(&self) -> Result<Vec<PathBuf>, SysbenchError> {
        super::big_update::binlog_files(&self.binlog_dir())
    }

    /// Shuts it down (`SHUTDOWN`, then a kill after 60 s) and waits for the process.
    ///
    /// # Errors
    /// [`SysbenchError::Setup`] when it had to be killed.
    pub fn stop(mut self) -> Result<(), SysbenchError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), SysbenchError> {
        if self.child.try_wait().ok().flatten().is_some() {
            return Ok(());
        }
        let _ = self.endpoint.sql("SHUTDOWN");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(SysbenchError::Setup {
            what: format!("MariaDB in {}", self.dir.display()),
            detail: "did not shut down within 60 s; killed".into(),
        })
    }
}

impl Drop for PrivateMariadb {
    /// Never leaves a `mariadbd` behind, even when the benchmark stops on an error.
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// A loopback port free now (bound and released; the server binds it right after).
fn free_port() -> Result<u16, SysbenchError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|source| SysbenchError::Io {
        path: PathBuf::from("127.0.0.1:0"),
        source,
    })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|source| SysbenchError::Io {
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })
}
