//! `surgedb cluster start|stop`: a cluster of `surgedb node` processes on loopback.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use surge_raft_lite::NodeId;

use super::manifest::{ClusterManifest, ManifestError, ManifestNode};
use super::process::{is_alive, is_node_process, signal};
use crate::client::{Client, ClientError, ClientOptions};

/// Why a local cluster operation failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LocalClusterError {
    /// The manifest could not be read or written.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The directory holds a cluster of another size.
    #[error("{} holds a cluster of {found} nodes, not {asked}", dir.display())]
    OtherSize {
        /// The directory.
        dir: PathBuf,
        /// Its nodes.
        found: usize,
        /// The count asked for.
        asked: usize,
    },
    /// A node count outside 1..=64.
    #[error("--nodes must be between 1 and 64, not {nodes}")]
    BadNodeCount {
        /// The count.
        nodes: usize,
    },
    /// A node process could not be started.
    #[error("node {node}: {detail}")]
    Spawn {
        /// The node.
        node: NodeId,
        /// What failed.
        detail: String,
    },
    /// A node process exited during start.
    #[error("node {node} exited during start ({status}); its log {} ends with:\n{tail}", log.display())]
    Exited {
        /// The node.
        node: NodeId,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// The cluster did not answer in time.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A node's MySQL port did not greet within the start's timeout.
    #[error("the MySQL port {addr} did not answer within {waited_ms} ms (see the node's log)")]
    MysqlNotAnswering {
        /// The MySQL address.
        addr: String,
        /// How long the start waited.
        waited_ms: u64,
    },
    /// The cluster has no node with this id.
    #[error("{} has no node {node} (its nodes: {known:?})", dir.display())]
    NoSuchNode {
        /// The cluster directory.
        dir: std::path::PathBuf,
        /// The id asked for.
        node: NodeId,
        /// The ids it has.
        known: Vec<NodeId>,
    },
    /// Some node did not stop after SIGTERM or SIGINT and was killed.
    #[error("nodes {nodes:?} did not stop within {waited_ms} ms of the signal and were killed")]
    Killed {
        /// The nodes.
        nodes: Vec<NodeId>,
        /// How long we waited.
        waited_ms: u64,
    },
    /// `--data` names something that exists and is not a directory.
    #[error(
        "{} is a file, not a directory: --data names the cluster's directory (created when \
         missing), e.g. --data /tmp/c",
        path.display()
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// What `cluster start` did to each node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStart {
    /// Started now.
    Started,
    /// Was already running; left alone.
    AlreadyRunning,
}

/// How to start a local cluster.
///
/// Build it with [`StartOptions::new`] (or [`StartOptions::default`] and
/// [`StartOptions::with_exe`]) and the `with_*` methods, or assign the public fields of such
/// a value: the struct is `#[non_exhaustive]`, so later settings can be added without
/// breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The `surgedb` executable to run as `surgedb node`.
    pub exe: PathBuf,
    /// Extra arguments for every `surgedb node` (e.g. `--lock-mode sync`).
    pub node_args: Vec<String>,
    /// Extra environment variables for every `surgedb node` (e.g. a test's crash point,
    /// `SURGE_TXN_CRASH_AT`).
    pub node_env: Vec<(String, String)>,
    /// How long to wait for the cluster to answer.
    pub ready_timeout: Duration,
}

impl Default for StartOptions {
    /// No extra arguments or environment, 60 s to become ready, and no executable: spawning
    /// the nodes fails ([`LocalClusterError::Spawn`]) until one is set with
    /// [`StartOptions::with_exe`].
    fn default() -> StartOptions {
        StartOptions {
            exe: PathBuf::new(),
            node_args: Vec::new(),
            node_env: Vec::new(),
            ready_timeout: Duration::from_secs(60),
        }
    }
}

impl StartOptions {
    /// Runs `exe` as `surgedb node`, with the defaults otherwise.
    pub fn new(exe: impl Into<PathBuf>) -> StartOptions {
        StartOptions::default().with_exe(exe)
    }

    /// Sets [`StartOptions::exe`].
    #[must_use]
    pub fn with_exe(mut self, exe: impl Into<PathBuf>) -> Self {
        self.exe = exe.into();
        self
    }

    /// Sets [`StartOptions::node_args`].
    #[must_use]
    pub fn with_node_args(mut self, node_args: Vec<String>) -> Self {
        self.node_args = node_args;
        self
    }

    /// Sets [`StartOptions::node_env`].
    #[must_use]
    pub fn with_node_env(mut self, node_env: Vec<(String, String)>) -> Self {
        self.node_env = node_env;
        self
    }

    /// Sets [`StartOptions::ready_timeout`].
    #[must_use]
    pub fn with_ready_timeout(mut self, ready_timeout: Duration) -> Self {
        self.ready_timeout = ready_timeout;
        self
    }
}

/// Starts the nodes of the cluster in `dir` that are not running: all of them, on fresh
/// loopback ports, for a new directory; the stopped or killed ones, on their recorded ports
/// and data directories, for an existing one. Waits until every region has a leader and the
/// oracle answers.
///
/// # Errors
/// [`LocalClusterError`] naming what failed.
pub fn start(
    dir: &Path,
    nodes: usize,
    opts: &StartOptions,
) -> Result<(ClusterManifest, Vec<(NodeId, NodeStart)>), LocalClusterError> {
    if !(1..=64).contains(&nodes) {
        return Err(LocalClusterError::BadNodeCount { nodes });
    }
    if dir.exists() && !dir.is_dir() {
        return Err(LocalClusterError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| LocalClusterError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let dir = dir.canonicalize().map_err(|source| LocalClusterError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut manifest = match ClusterManifest::load(&dir) {
        Ok(m) if m.nodes.len() != nodes => {
            return Err(LocalClusterError::OtherSize {
                dir,
                found: m.nodes.len(),
                asked: nodes,
            });
        }
        Ok(m) => m,
        Err(ManifestError::Missing { .. }) => new_manifest(&dir, nodes)?,
        Err(e) => return Err(e.into()),
    };
    let mut outcome = Vec::new();
    let mut children = Vec::new();
    for i in 0..manifest.nodes.len() {
        let node = manifest.nodes[i].clone();
        if is_alive(node.pid) && is_node_process(node.pid, &node.data) {
            outcome.push((node.id, NodeStart::AlreadyRunning));
            continue;
        }
        let child = spawn_node(&manifest, &node, opts)?;
        manifest.nodes[i].pid = child.id();
        children.push((node.id, node.log.clone(), child));
        outcome.push((node.id, NodeStart::Started));
    }
    manifest.save(&dir)?;
    wait_ready(&manifest, &mut children, opts.ready_timeout)?;
    Ok((manifest, outcome))
}

/// Starts node `id` of the cluster in `dir` again (after `kill -9` or a stop) and records
/// its new pid. Does not wait for it to catch up.
///
/// # Errors
/// As [`start`].
pub fn restart_node(dir: &Path, id: NodeId, opts: &StartOptions) -> Result<u32, LocalClusterError> {
    let mut manifest = ClusterManifest::load(dir)?;
    let Some(i) = manifest.nodes.iter().position(|n| n.id == id) else {
        return Err(LocalClusterError::Spawn {
            node: id,
            detail: "no such node in the manifest".into(),
        });
    };
    let node = manifest.nodes[i].clone();
    let child = spawn_node(&manifest, &node, opts)?;
    manifest.nodes[i].pid = child.id();
    manifest.save(dir)?;
    Ok(child.id())
}

/// Sends SIGINT (a clean stop without the leader handover: every node is stopping) to
/// every running node of the cluster in `dir` and waits up to `timeout` for them to exit;
/// a node still running then gets SIGKILL (and the stop reports it).
/// Returns the nodes that were running.
///
/// # Errors
/// [`LocalClusterError::Manifest`], or [`LocalClusterError::Killed`].
pub fn stop(dir: &Path, timeout: Duration) -> Result<Vec<NodeId>, LocalClusterError> {
    let manifest = ClusterManifest::load(dir)?;
    // SIGINT: a clean stop without handing leaders over, since every node is stopping.
    stop_where(&manifest, timeout, "INT", |_| true)
}

/// As [`stop`], for node `id` only (the others keep running), with SIGTERM: the node
/// hands the regions it leads, with their in-memory locks, to the others before it stops
/// (`surgedb node --evict-leaders-on-stop-secs`). Returns `[id]` if it was running, `[]`
/// if not.
///
/// # Errors
/// As [`stop`], and [`LocalClusterError::NoSuchNode`].
pub fn stop_node(
    dir: &Path,
    id: NodeId,
    timeout: Duration,
) -> Result<Vec<NodeId>, LocalClusterError> {
    let manifest = ClusterManifest::load(dir)?;
    if manifest.node(id).is_none() {
        return Err(LocalClusterError::NoSuchNode {
            dir: dir.to_path_buf(),
            node: id,
            known: manifest.nodes.iter().map(|n| n.id).collect(),
        });
    }
    // SIGTERM: a clean stop that hands the node's leaders to the others first.
    stop_where(&manifest, timeout, "TERM", |n| n.id == id)
}

fn stop_where(
    manifest: &ClusterManifest,
    timeout: Duration,
    how: &str,
    chosen: impl Fn(&ManifestNode) -> bool,
) -> Result<Vec<NodeId>, LocalClusterError> {
    let running: Vec<&ManifestNode> = manifest
        .nodes
        .iter()
        .filter(|n| chosen(n) && is_alive(n.pid) && is_node_process(n.pid, &n.data))
        .collect();
    for n in &running {
        signal(n.pid, how);
    }
    let start = Instant::now();
    while start.elapsed() < timeout && running.iter().any(|n| is_alive(n.pid)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stubborn: Vec<NodeId> = running
        .iter()
        .filter(|n| is_alive(n.pid))
        .map(|n| {
            signal(n.pid, "KILL");
            n.id
        })
        .collect();
    if !stubborn.is_empty() {
        return Err(LocalClusterError::Killed {
            nodes: stubborn,
            waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        });
    }
    Ok(running.iter().map(|n| n.id).collect())
}

fn new_manifest(dir: &Path, nodes: usize) -> Result<ClusterManifest, LocalClusterError> {
    let mut used = BTreeSet::new();
    let mut list = Vec::new();
    for id in 1..=nodes as NodeId {
        let port = free_port_pair(&used).map_err(|source| LocalClusterError::Io {
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })?;
        used.insert(port);
        used.insert(port + 1);
        let mysql = free_port(&used).map_err(|source| LocalClusterError::Io {
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })?;
        used.insert(mysql);
        list.push(ManifestNode {
            id,
            addr: format!("127.0.0.1:{port}"),
            mysql_addr: Some(format!("127.0.0.1:{mysql}")),
            data: dir.join(format!("node-{id}")),
            log: dir.join(format!("node-{id}.log")),
            pid: 0,
        });
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Ok(ClusterManifest {
        cluster_id: format!("local-{:x}-{:x}", nanos, std::process::id()),
        nodes: list,
    })
}

/// A loopback port `p` such that `p` and `p + 1` (the node's Raft port) are both free now
/// and not in `used`.
fn free_port_pair(used: &BTreeSet<u16>) -> std::io::Result<u16> {
    for _ in 0..200 {
        let a = TcpListener::bind("127.0.0.1:0")?;
        let p = a.local_addr()?.port();
        if p == u16::MAX || used.contains(&p) || used.contains(&(p + 1)) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return Ok(p);
        }
    }
    Err(std::io::Error::other(
        "no free pair of loopback ports found",
    ))
}

/// A loopback port free now and not in `used` (a node's MySQL port).
fn free_port(used: &BTreeSet<u16>) -> std::io::Result<u16> {
    for _ in 0..200 {
        let p = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        if !used.contains(&p) && !used.contains(&p.wrapping_sub(1)) {
            return Ok(p);
        }
    }
    Err(std::io::Error::other("no free loopback port found"))
}

fn spawn_node(
    manifest: &ClusterManifest,
    node: &ManifestNode,
    opts: &StartOptions,
) -> Result<std::process::Child, LocalClusterError> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&node.log)
        .map_err(|source| LocalClusterError::Io {
            path: node.log.clone(),
            source,
        })?;
    let log2 = log.try_clone().map_err(|source| LocalClusterError::Io {
        path: node.log.clone(),
        source,
    })?;
    Command::new(&opts.exe)
        .arg("node")
        .arg("--id")
        .arg(node.id.to_string())
        .arg("--listen")
        .arg(&node.addr)
        .arg("--peers")
        .arg(manifest.peers_arg())
        .arg("--data")
        .arg(&node.data)
        .arg("--cluster-id")
        .arg(&manifest.cluster_id)
        .args(
            node.mysql_addr
                .iter()
                .flat_map(|a| ["--mysql-listen".to_string(), a.clone()]),
        )
        .args(&opts.node_args)
        .envs(opts.node_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| LocalClusterError::Spawn {
            node: node.id,
            detail: format!("{}: {e}", opts.exe.display()),
        })
}

fn wait_ready(
    manifest: &ClusterManifest,
    children: &mut [(NodeId, PathBuf, std::process::Child)],
    timeout: Duration,
) -> Result<(), LocalClusterError> {
    let start = Instant::now();
    loop {
        for (node, log, child) in children.iter_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(LocalClusterError::Exited {
                    node: *node,
                    status: status.to_string(),
                    log: log.clone(),
                    tail: log_tail(log, 5),
                });
            }
        }
        let left = timeout.saturating_sub(start.elapsed());
        let ready = Client::connect(&manifest.addrs(), ClientOptions::default())
            .and_then(|c| c.wait_ready(left.min(Duration::from_millis(500))));
        match ready {
            // The MySQL port of a node is served once its transaction coordinator is ready
            // (a session needs it); until then connections wait unanswered in the backlog.
            Ok(()) => match mysql_not_answering(manifest) {
                None => return Ok(()),
                Some(addr) if start.elapsed() >= timeout => {
                    return Err(LocalClusterError::MysqlNotAnswering {
                        addr,
                        waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                    });
                }
                Some(_) => std::thread::sleep(Duration::from_millis(100)),
            },
            Err(e) if start.elapsed() >= timeout => return Err(e.into()),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The first node MySQL address of `manifest` that does not send its greeting within
/// 500 ms, if any.
fn mysql_not_answering(manifest: &ClusterManifest) -> Option<String> {
    manifest
        .nodes
        .iter()
        .filter_map(|n| n.mysql_addr.clone())
        .find(|addr| !mysql_greets(addr, Duration::from_millis(500)))
}

/// Whether a MySQL server at `addr` sends its first packet (a handshake, or an error such
/// as "too many connections") within `timeout`.
pub(crate) fn mysql_greets(addr: &str, timeout: Duration) -> bool {
    use std::io::Read;
    use std::net::ToSocketAddrs;
    let Some(sock) = addr.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return false;
    };
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&sock, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    // A 4-byte packet header, then the payload's first byte: 10 (protocol version 10) for a
    // handshake, 0xff for an error packet.
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && matches!(head[4], 10 | 0xff)
}

/// The last `n` lines of a log file (empty if unreadable).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
