//! A private MariaDB server, started and stopped by the test that needs it.
//!
//! [`MariadbServer::start`] creates a data directory in a new temp dir with
//! `mariadb-install-db --no-defaults`, then runs `mariadbd --no-defaults` on it, listening on
//! a Unix socket in that dir and on a free loopback port, with `--skip-grant-tables` (no
//! passwords; the server is reachable only from this machine and dies with the test). It
//! never touches a system server, `/etc/mysql` or the default port. Nothing is shared
//! between servers, so tests can run in parallel.
//!
//! * When the binaries are not installed, `start` prints `SKIPPED: ...` and returns `None`,
//!   unless `SURGE_REQUIRE_MARIADB_SERVER=1` (as in CI), when it panics instead.
//! * Every wait is bounded ([`START_TIMEOUT`], [`CLIENT_TIMEOUT`]): a hung server or client
//!   fails the test with the server's error log instead of hanging it.
//! * Dropping the server kills it (SIGKILL, then waits for it) and deletes its directory.
//!
//! Tests that need a server are expected to check their binlog with it: a test that finds
//! no server and is not required to have one must say `SKIPPED` and pass, never pretend.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Longest wait for `mariadb-install-db` and then for the server to accept connections.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest wait for one client command (or pipeline) to finish.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);
/// The environment variable that turns a missing server into a failure.
pub const REQUIRE_ENV: &str = "SURGE_REQUIRE_MARIADB_SERVER";

/// A running private `mariadbd`; killed when dropped.
#[derive(Debug)]
pub struct MariadbServer {
    child: Child,
    dir: tempfile::TempDir,
    socket: PathBuf,
    port: u16,
}

impl MariadbServer {
    /// Installs a data directory and starts a server on it; `None` (after printing why)
    /// when the MariaDB server binaries are not installed and [`REQUIRE_ENV`] is not `1`.
    ///
    /// # Panics
    /// If the binaries are missing and [`REQUIRE_ENV`] is `1`, or if installing or starting
    /// fails or takes longer than [`START_TIMEOUT`].
    pub fn start() -> Option<MariadbServer> {
        for tool in [
            "mariadb-install-db",
            "mariadbd",
            "mariadb",
            "mariadb-binlog",
        ] {
            if locate(tool).is_none() {
                if std::env::var(REQUIRE_ENV).as_deref() == Ok("1") {
                    panic!("{tool} is required ({REQUIRE_ENV}=1) but not installed");
                }
                eprintln!(
                    "SKIPPED: {tool} is not installed (apt-get install mariadb-server mariadb-client)"
                );
                return None;
            }
        }
        let dir = tempfile::tempdir().expect("temp dir for the server");
        let data = dir.path().join("data");
        // A private temporary directory: servers started by tests at the same time in /tmp
        // collided on their internal temporary tables ("Error on delete of
        // '/tmp/#sql-temptable-...MAI'") and the installation failed.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("server tmpdir");
        let install = program("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg("--auth-root-authentication-method=normal")
            .args(root_user())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mariadb-install-db");
        let out = wait_output(install, START_TIMEOUT, "mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db: {}",
            describe(&out)
        );

        let socket = dir.path().join("mysqld.sock");
        let port = free_port();
        let log = dir.path().join("error.log");
        let child = program("mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--skip-grant-tables")
            .arg(format!(
                "--pid-file={}",
                dir.path().join("mysqld.pid").display()
            ))
            .arg(format!("--log-error={}", log.display()))
            // Small memory, quick start: a test server holds little data.
            .arg("--innodb-buffer-pool-size=32M")
            .arg("--max-allowed-packet=64M")
            .args(root_user())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mariadbd");
        let mut server = MariadbServer {
            child,
            dir,
            socket,
            port,
        };
        server.wait_ready();
        Some(server)
    }

    /// The Unix socket the server listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The loopback TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `mariadb` client command connected to this server as root, batch mode, no column
    /// names; add `-e SQL` or feed it stdin.
    pub fn client(&self) -> Command {
        let mut c = program("mariadb");
        c.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .arg("--user=root")
            .arg("--batch")
            .arg("--skip-column-names");
        c
    }

    /// Runs `sql` and returns its output; panics (with the server log) if it fails.
    pub fn sql(&self, sql: &str) -> String {
        let child = self
            .client()
            .arg("-e")
            .arg(sql)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mariadb");
        let out = wait_output(child, CLIENT_TIMEOUT, "mariadb");
        assert!(
            out.status.success(),
            "{sql}: {}\nserver log:\n{}",
            describe(&out),
            self.log_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Pipes `mariadb-binlog FILES...` into the client (`mariadb-binlog FILES | mariadb`), as
    /// a replica's operator replays a binlog. Returns the client's exit status and stderr.
    pub fn replay_binlog(&self, files: &[PathBuf]) -> (ExitStatus, String) {
        let mut dump = program("mariadb-binlog")
            .arg("--no-defaults")
            .args(files)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mariadb-binlog");
        let stdout = dump.stdout.take().expect("piped stdout");
        let client = self
            .client()
            .stdin(Stdio::from(stdout))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mariadb");
        let out = wait_output(client, CLIENT_TIMEOUT, "mariadb (replay)");
        let dumped = wait_output(dump, CLIENT_TIMEOUT, "mariadb-binlog");
        // The dump may die of SIGPIPE when the client stops at an error: only a dump that
        // failed on its own counts.
        assert!(
            dumped.status.success() || !out.status.success(),
            "mariadb-binlog: {}",
            describe(&dumped)
        );
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The last 4 KB of the server's error log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default();
        let mut from = text.len().saturating_sub(4096);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        text[from..].to_string()
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("mariadbd exited at start ({status}):\n{}", self.log_tail());
            }
            let ping = self
                .client()
                .arg("-e")
                .arg("SELECT 1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if ping.is_ok_and(|s| s.success()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd not ready after {START_TIMEOUT:?}:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for MariadbServer {
    fn drop(&mut self) {
        // SIGKILL: the data is thrown away with the directory, so no clean shutdown needed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `tool` is: on the PATH, or in the sbin directories Debian installs `mariadbd` in
/// (not on a non-root user's PATH).
fn locate(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// A command running `tool` (found by [`locate`]; by name when not found, so the error
/// names it).
fn program(tool: &str) -> Command {
    Command::new(locate(tool).unwrap_or_else(|| PathBuf::from(tool)))
}

/// `--user=root` when running as root (mariadbd refuses to run as root without it).
fn root_user() -> Vec<String> {
    let uid = Command::new("id").arg("-u").output();
    match uid {
        Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0" => vec!["--user=root".into()],
        _ => Vec::new(),
    }
}

/// A loopback port free right now (the server binds it a moment later; a collision makes
/// the start fail loudly, not silently).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("local addr").port()
}

/// Waits for `child` at most `limit`, killing it after that; collects its piped output.
fn wait_output(mut child: Child, limit: Duration, what: &str) -> Output {
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let drain = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for child") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Exit status, stderr and the end of stdout, for a failure message.
fn describe(out: &Output) -> String {
    format!(
        "{}\nstderr: {}\nstdout tail: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout[out.stdout.len().saturating_sub(2000)..])
    )
}
