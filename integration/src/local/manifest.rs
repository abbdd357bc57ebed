//! [`ClusterManifest`]: what `surgedb cluster start` writes to `DIR/cluster.json`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;

/// The manifest's file name in a cluster directory.
pub const MANIFEST_FILE: &str = "cluster.json";

/// One node of a local cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestNode {
    /// The node's id.
    pub id: NodeId,
    /// Its client address (Raft listens on the next port).
    pub addr: String,
    /// Its MySQL-protocol address (`surgedb node --mysql-listen`), if it serves one. A
    /// manifest written before the MySQL front end has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_addr: Option<String>,
    /// Its data directory.
    pub data: PathBuf,
    /// Its log file (standard output and error).
    pub log: PathBuf,
    /// The process id of its last start.
    pub pid: u32,
}

/// A local multi-process cluster: its id and nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterManifest {
    /// The cluster's id.
    pub cluster_id: String,
    /// The nodes.
    pub nodes: Vec<ManifestNode>,
}

/// Why a manifest could not be read or written.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The directory holds no manifest.
    #[error("{} has no {MANIFEST_FILE}: not a directory made by `surgedb cluster start`", dir.display())]
    Missing {
        /// The directory.
        dir: PathBuf,
    },
    /// The path names something that is not a directory.
    #[error(
        "{} is a file, not a directory: name the directory `surgedb cluster start --data DIR` made",
        path.display()
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The manifest does not parse.
    #[error("{}: {detail}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        detail: String,
    },
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl ClusterManifest {
    /// Reads `dir/cluster.json`.
    ///
    /// # Errors
    /// [`ManifestError`].
    pub fn load(dir: &Path) -> Result<ClusterManifest, ManifestError> {
        if dir.exists() && !dir.is_dir() {
            return Err(ManifestError::NotADirectory {
                path: dir.to_path_buf(),
            });
        }
        let path = dir.join(MANIFEST_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ManifestError::Missing {
                    dir: dir.to_path_buf(),
                });
            }
            Err(source) => return Err(ManifestError::Io { path, source }),
        };
        serde_json::from_slice(&bytes).map_err(|e| ManifestError::Damaged {
            path,
            detail: e.to_string(),
        })
    }

    /// Writes `dir/cluster.json` durably (temporary file, fsync, rename).
    ///
    /// # Errors
    /// [`ManifestError::Io`].
    pub fn save(&self, dir: &Path) -> Result<(), ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        crate::server::write_durably(dir, &path, self)
            .map_err(|source| ManifestError::Io { path, source })
    }

    /// The client addresses of every node.
    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    /// `--peers` for the nodes: `1=ADDR,2=ADDR,...`.
    pub fn peers_arg(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("{}={}", n.id, n.addr))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The `mariadb` command line that connects to node `id`'s MySQL port (with
    /// `--comments`: without it the client strips `/*+ ... */` hints before sending).
    pub fn mariadb_command(&self, id: NodeId) -> Option<String> {
        let addr = self.node(id)?.mysql_addr.as_deref()?;
        let (host, port) = addr.rsplit_once(':')?;
        Some(format!("mariadb --comments -h{host} -P{port} -uroot"))
    }

    /// The node `id`.
    pub fn node(&self, id: NodeId) -> Option<&ManifestNode> {
        self.nodes.iter().find(|n| n.id == id)
    }
}
