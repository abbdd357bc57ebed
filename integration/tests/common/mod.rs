//! Helpers for the tests that run real `surgedb node` processes: a cluster started with
//! `surgedb cluster start` in a temporary directory, stopped (SIGINT, then SIGKILL) when
//! dropped, and faults applied to its processes with the `kill` command.
#![allow(dead_code)] // Each test file uses a different part of the helpers.
#![allow(clippy::unwrap_used)] // Test helpers: a failure here is the test failing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use surgedb::local::{ClusterManifest, StartOptions, signal};
use surgedb::{Client, ClientOptions, RemoteConfig};

/// Node arguments for garbage collection on a test's time scale: a 2 s life time, a
/// collection every second, a 5 s margin (the safe point trails the clock by 7 s).
pub const FAST_GC_ARGS: &[&str] = &[
    "--gc-life-time-secs=2",
    "--gc-interval-secs=1",
    "--gc-margin-secs=5",
];

/// The `surgedb` binary under test.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_surgedb"))
}

/// Whether the long versions of the fault tests were asked for (`SURGE_LONG=1`).
pub fn long() -> bool {
    std::env::var("SURGE_LONG").is_ok_and(|v| v == "1")
}

/// Runs `surgedb ARGS`, returning (success, stdout, stderr).
pub fn surgedb(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(exe()).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A cluster of node processes in a temporary directory.
pub struct ProcCluster {
    pub tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub manifest: ClusterManifest,
    /// The `node_args` it started with, given again to a restarted node.
    pub node_args: Vec<String>,
}

impl ProcCluster {
    /// `surgedb cluster start --nodes N --data DIR --lock-mode MODE`.
    pub fn start(nodes: usize, lock_mode: &str) -> ProcCluster {
        Self::start_with_args(nodes, lock_mode, &[])
    }

    /// As [`ProcCluster::start`], with `node_args` given to every node process.
    pub fn start_with_args(nodes: usize, lock_mode: &str, node_args: &[&str]) -> ProcCluster {
        let tmp = kept_tempdir();
        let dir = tmp.path().join("cluster");
        let d = dir.to_str().unwrap();
        let n = nodes.to_string();
        let mut args = vec![
            "cluster".to_string(),
            "start".into(),
            "--nodes".into(),
            n,
            "--data".into(),
            d.into(),
            "--lock-mode".into(),
            lock_mode.into(),
        ];
        args.extend(node_args.iter().map(|a| format!("--node-arg={a}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = surgedb(&args);
        assert!(ok, "cluster start failed:\n{out}\n{err}");
        let manifest = ClusterManifest::load(&dir).unwrap();
        ProcCluster {
            tmp,
            dir,
            manifest,
            node_args: node_args.iter().map(|a| (*a).to_string()).collect(),
        }
    }

    pub fn dir_str(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    /// A client with short transport timeouts (a paused node costs seconds, not minutes).
    pub fn client(&self) -> Client {
        let options = ClientOptions::default()
            .with_remote(RemoteConfig::default().with_request_timeout(Duration::from_secs(3)));
        Client::connect(&self.manifest.addrs(), options).unwrap()
    }

    pub fn pid(&self, node: u64) -> u32 {
        ClusterManifest::load(&self.dir)
            .unwrap()
            .node(node)
            .unwrap()
            .pid
    }

    /// `kill -9` of node `node`'s process, waiting until it is gone with all its threads.
    ///
    /// The process shows as a zombie as soon as its main thread has exited, while its other
    /// threads may still be exiting with the open files (the `flock` on `DIR/LOCK`
    /// included); a restart in that window is refused as "in use by another process". A
    /// thread leaves `/proc/PID/task` only after it closed its files, so the wait lasts
    /// until the main thread is the only one listed (or the process is gone).
    pub fn kill9(&self, node: u64) {
        let pid = self.pid(node);
        assert!(signal(pid, "KILL"), "kill -9 {pid}");
        wait_gone(pid);
    }

    /// SIGTERM to node `node` alone (`surgedb cluster stop --node`), waiting until its
    /// process is gone with all its threads (see [`ProcCluster::kill9`]).
    pub fn stop_node(&self, node: u64) {
        let pid = self.pid(node);
        let stopped = surgedb::local::stop_node(&self.dir, node, Duration::from_secs(30)).unwrap();
        assert_eq!(stopped, vec![node], "node {node} was not running");
        wait_gone(pid);
    }

    /// SIGSTOP / SIGCONT of node `node`'s process.
    pub fn pause(&self, node: u64) {
        assert!(signal(self.pid(node), "STOP"));
    }

    pub fn resume(&self, node: u64) {
        assert!(signal(self.pid(node), "CONT"));
    }

    /// Starts node `node` again from its data directory.
    pub fn restart(&self, node: u64) {
        self.restart_with_env(node, &[]);
    }

    /// As [`ProcCluster::restart`], with `env` set in the node's environment (a crash
    /// point, say). The node gets the `node_args` the cluster started with again (not its
    /// `--lock-mode`, which `surgedb cluster start` gave it).
    pub fn restart_with_env(&self, node: u64, env: &[(&str, &str)]) {
        let opts = StartOptions::new(exe())
            .with_node_args(self.node_args.clone())
            .with_node_env(
                env.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
            .with_ready_timeout(Duration::from_secs(60));
        surgedb::local::restart_node(&self.dir, node, &opts).unwrap();
    }

    pub fn log(&self, node: u64) -> String {
        std::fs::read_to_string(self.dir.join(format!("node-{node}.log"))).unwrap_or_default()
    }
}

/// What a node's log says its clean stop handed over (`surgedb node N: stopping: M of L
/// leaders moved to other nodes (K in-memory locks with them) in T ms`): `(M, L, K)`, or
/// `None` when it printed no such line (it led nothing, or stopped without the handover).
pub fn leaders_handed_over(log: &str) -> Option<(usize, usize, usize)> {
    let line = log
        .lines()
        .find(|l| l.contains(" leaders moved to other nodes ("))?;
    let (_, rest) = line.split_once("stopping: ")?;
    let (moved, rest) = rest.split_once(" of ")?;
    let (led, rest) = rest.split_once(" leaders moved to other nodes (")?;
    let locks = rest.split(' ').next()?;
    Some((moved.parse().ok()?, led.parse().ok()?, locks.parse().ok()?))
}

/// A temporary directory, kept (and named on stderr) when `SURGE_KEEP_TEST_DIR` is set: a
/// cluster's data, node logs and stream copies for a post-mortem of a failed run.
pub fn kept_tempdir() -> tempfile::TempDir {
    let keep = std::env::var_os("SURGE_KEEP_TEST_DIR").is_some();
    let tmp = tempfile::Builder::new()
        .disable_cleanup(keep)
        .tempdir()
        .unwrap();
    if keep {
        eprintln!("test directory kept: {}", tmp.path().display());
    }
    tmp
}

impl Drop for ProcCluster {
    fn drop(&mut self) {
        // A paused node would ignore the stop signal until SIGKILL: let it run first.
        if let Ok(m) = ClusterManifest::load(&self.dir) {
            for n in &m.nodes {
                signal(n.pid, "CONT");
            }
        }
        let _ = surgedb::local::stop(&self.dir, Duration::from_secs(20));
    }
}

/// Waits until process `pid` has exited and its threads have closed their files (a zombie
/// whose main thread is the only one listed in `/proc/PID/task`, or no process at all).
pub fn wait_gone(pid: u32) {
    wait_until(Duration::from_secs(10), || {
        !surgedb::local::is_alive(pid)
            && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count) <= 1
    });
}

/// Polls `f` every 20 ms until it is true; panics after `timeout`.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) {
    poll(timeout, || {
        f().then_some(()).ok_or_else(|| "condition not met".into())
    });
}

/// Calls `f` every 20 ms until it gives a value; after `timeout`, fails with what `f` said
/// last (the state a condition waited for, a connection's error).
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Result<T, String>) -> T {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(why) => assert!(start.elapsed() < timeout, "after {timeout:?}: {why}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The data region holding `key` in the founding map.
pub fn region_of(key: &[u8]) -> u64 {
    surge_txn::rpc::initial_regions(
        &surge_txn::rpc::even_split_keys(surgedb::server::INITIAL_REGIONS),
        &[1, 2, 3],
    )
    .iter()
    .find(|r| r.contains(key))
    .unwrap()
    .id
}

/// A loopback port `p` with `p + 1` (the Raft port) free too.
pub fn free_port_pair() -> u16 {
    loop {
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

/// A one-node cluster run as `surgedb node` directly (not through `cluster start`).
///
/// Its stdout and stderr are read as they come (a node logs warnings to stderr: a pipe
/// left unread fills at 64 KiB and then blocks the logging thread, the Raft driver's
/// included) and returned when it exits.
pub struct SoloNode {
    pub child: std::process::Child,
    pub addr: String,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(
    pipe: Option<impl std::io::Read + Send + 'static>,
) -> Option<std::thread::JoinHandle<Vec<u8>>> {
    let mut pipe = pipe?;
    Some(std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut pipe, &mut bytes);
        bytes
    }))
}

impl SoloNode {
    /// Spawns `surgedb node --id 1 --listen ADDR --peers 1=ADDR --data DATA EXTRA...`.
    pub fn spawn(data: &Path, extra: &[&str]) -> SoloNode {
        SoloNode::spawn_at(data, &format!("127.0.0.1:{}", free_port_pair()), extra)
    }

    /// As [`SoloNode::spawn`] on `addr` (a restart of a node spawned there before).
    pub fn spawn_at(data: &Path, addr: &str, extra: &[&str]) -> SoloNode {
        let addr = addr.to_string();
        let mut child = Command::new(exe())
            .args(["node", "--id", "1", "--listen", &addr])
            .args(["--peers", &format!("1={addr}")])
            .arg("--data")
            .arg(data)
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        SoloNode {
            child,
            addr,
            out,
            err,
        }
    }

    /// Waits until the node serves (every region led, the oracle answering).
    pub fn wait_serving(&self) -> Client {
        let mut last = String::new();
        for _ in 0..300 {
            match Client::connect(std::slice::from_ref(&self.addr), ClientOptions::default())
                .and_then(|c| c.wait_ready(Duration::from_secs(1)).map(|()| c))
            {
                Ok(c) => return c,
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("node at {} never served: {last}", self.addr);
    }

    /// Waits (at most 30 s) for the process to exit on its own; returns its output.
    pub fn wait_exit(mut self) -> std::process::Output {
        poll(Duration::from_secs(30), || match self.child.try_wait() {
            Ok(Some(_)) => Ok(()),
            _ => Err("the node has not exited".into()),
        });
        self.output()
    }

    /// SIGTERM, then waits for the exit; returns the process's output.
    pub fn stop(mut self) -> std::process::Output {
        signal(self.child.id(), "TERM");
        self.output()
    }

    /// Waits for the exit; returns the status and everything the process printed.
    pub fn output(&mut self) -> std::process::Output {
        let status = self.child.wait().unwrap();
        let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        std::process::Output {
            status,
            stdout: join(self.out.take()),
            stderr: join(self.err.take()),
        }
    }
}

impl Drop for SoloNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every replica-stream file of a stream directory, by name, with its bytes.
pub fn stream_file_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            surgedb::stream::StreamConfig::file_number(&name)?;
            Some((name, std::fs::read(e.path()).ok()?))
        })
        .collect();
    out.sort();
    out
}
