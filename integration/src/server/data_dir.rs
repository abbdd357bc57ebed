//! [`DataDir`]: a node's data directory, locked for one process and stamped with the
//! cluster it belongs to.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use surge_raft_lite::{DirLock, NodeId, StdFs, WalFs};

/// The name of the identity file in a node's data directory.
pub const IDENTITY_FILE: &str = "cluster.json";

/// Who a data directory belongs to: written on first start, checked on every later one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdentity {
    /// The cluster's id.
    pub cluster_id: String,
    /// This node's id.
    pub node_id: NodeId,
    /// Every node of the cluster (this one included) with its client address.
    pub peers: BTreeMap<NodeId, String>,
}

/// Why a data directory could not be opened.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// Another process holds the directory's lock.
    #[error(
        "data directory {} is in use by another process (its LOCK file is held): stop that node first",
        dir.display()
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory belongs to another cluster.
    #[error(
        "data directory {} belongs to cluster {found:?}, not {ours:?}: use another directory",
        dir.display()
    )]
    OtherCluster {
        /// The directory.
        dir: PathBuf,
        /// The cluster it holds.
        found: String,
        /// The cluster asked for.
        ours: String,
    },
    /// The directory holds another node of the cluster, or another membership.
    #[error(
        "data directory {} holds node {found_node} of peers {found_peers:?}, not node {node} of {peers:?}",
        dir.display()
    )]
    OtherNode {
        /// The directory.
        dir: PathBuf,
        /// The node it holds.
        found_node: NodeId,
        /// Its membership.
        found_peers: BTreeMap<NodeId, String>,
        /// The node asked for.
        node: NodeId,
        /// The membership asked for.
        peers: BTreeMap<NodeId, String>,
    },
    /// The identity file is not readable JSON.
    #[error("data directory {}: {IDENTITY_FILE} is damaged: {detail}", dir.display())]
    BadIdentity {
        /// The directory.
        dir: PathBuf,
        /// What the parser said.
        detail: String,
    },
    /// A file operation failed.
    #[error("data directory {}: {what}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The cause.
        source: std::io::Error,
    },
}

/// An open, locked data directory. The lock (an exclusive `flock` on `DIR/LOCK`, the same
/// kind `raft-lite`'s WAL takes on its own directory) is released when this is dropped or
/// the process dies, `kill -9` included.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    identity: NodeIdentity,
    _lock: Box<dyn DirLock>,
}

impl DataDir {
    /// Opens (creating it if needed) and locks `path` for node `node_id` of `peers`.
    /// `cluster_id`: the cluster asked for; `None` takes the one the directory holds, or
    /// [`default_cluster_id`] for a new directory.
    ///
    /// # Errors
    /// [`DataDirError::Locked`], [`DataDirError::OtherCluster`],
    /// [`DataDirError::OtherNode`], [`DataDirError::BadIdentity`], [`DataDirError::Io`].
    pub fn open(
        path: &Path,
        cluster_id: Option<&str>,
        node_id: NodeId,
        peers: &BTreeMap<NodeId, String>,
    ) -> Result<DataDir, DataDirError> {
        let io = |what: &'static str| {
            move |source| DataDirError::Io {
                dir: path.to_path_buf(),
                what,
                source,
            }
        };
        std::fs::create_dir_all(path).map_err(io("create"))?;
        let lock = StdFs
            .lock(path)
            .map_err(io("lock"))?
            .ok_or_else(|| DataDirError::Locked {
                dir: path.to_path_buf(),
            })?;
        let file = path.join(IDENTITY_FILE);
        let found = match std::fs::read(&file) {
            Ok(bytes) => Some(serde_json::from_slice::<NodeIdentity>(&bytes).map_err(|e| {
                DataDirError::BadIdentity {
                    dir: path.to_path_buf(),
                    detail: e.to_string(),
                }
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("read identity")(e)),
        };
        let identity = match found {
            Some(found) => {
                if let Some(ours) = cluster_id.filter(|c| *c != found.cluster_id) {
                    return Err(DataDirError::OtherCluster {
                        dir: path.to_path_buf(),
                        found: found.cluster_id,
                        ours: ours.to_string(),
                    });
                }
                if found.node_id != node_id || &found.peers != peers {
                    return Err(DataDirError::OtherNode {
                        dir: path.to_path_buf(),
                        found_node: found.node_id,
                        found_peers: found.peers,
                        node: node_id,
                        peers: peers.clone(),
                    });
                }
                found
            }
            None => {
                let identity = NodeIdentity {
                    cluster_id: cluster_id
                        .map_or_else(|| default_cluster_id(peers), str::to_string),
                    node_id,
                    peers: peers.clone(),
                };
                write_durably(path, &file, &identity).map_err(io("write identity"))?;
                identity
            }
        };
        Ok(DataDir {
            path: path.to_path_buf(),
            identity,
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whom it belongs to.
    pub fn identity(&self) -> &NodeIdentity {
        &self.identity
    }
}

/// The cluster id of nodes started without `--cluster-id`: derived from the membership
/// (ids and addresses), so that nodes started by hand with the same `--peers` agree.
pub fn default_cluster_id(peers: &BTreeMap<NodeId, String>) -> String {
    // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (id, addr) in peers {
        for b in id.to_le_bytes().iter().chain(addr.as_bytes()).chain(b"\n") {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("peers-{h:016x}")
}

/// Writes `value` as JSON to `file` so that a crash leaves the old file or the new one:
/// temporary file, fsync, rename, fsync of the directory.
pub(crate) fn write_durably<T: Serialize>(
    dir: &Path,
    file: &Path,
    value: &T,
) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let tmp = file.with_extension("json.tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, file)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers() -> BTreeMap<NodeId, String> {
        (1..=3)
            .map(|i| (i, format!("127.0.0.1:{}", 7000 + i)))
            .collect()
    }

    #[test]
    fn a_directory_is_stamped_then_refused_to_another_cluster_node_or_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("n1");
        let first = DataDir::open(&dir, Some("alpha"), 1, &peers()).unwrap();
        assert_eq!(first.identity().cluster_id, "alpha");
        assert!(matches!(
            DataDir::open(&dir, Some("alpha"), 1, &peers()),
            Err(DataDirError::Locked { .. })
        ));
        drop(first);
        assert!(matches!(
            DataDir::open(&dir, Some("beta"), 1, &peers()),
            Err(DataDirError::OtherCluster { found, .. }) if found == "alpha"
        ));
        assert!(matches!(
            DataDir::open(&dir, None, 2, &peers()),
            Err(DataDirError::OtherNode { found_node: 1, .. })
        ));
        let again = DataDir::open(&dir, None, 1, &peers()).unwrap();
        assert_eq!(again.identity().cluster_id, "alpha");
    }

    #[test]
    fn the_default_cluster_id_depends_on_the_membership_only() {
        let mut other = peers();
        other.insert(4, "127.0.0.1:7004".into());
        assert_eq!(default_cluster_id(&peers()), default_cluster_id(&peers()));
        assert_ne!(default_cluster_id(&peers()), default_cluster_id(&other));
    }

    #[test]
    fn a_damaged_identity_file_is_reported_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(IDENTITY_FILE), b"{not json").unwrap();
        assert!(matches!(
            DataDir::open(tmp.path(), None, 1, &peers()),
            Err(DataDirError::BadIdentity { .. })
        ));
        assert_eq!(
            std::fs::read(tmp.path().join(IDENTITY_FILE)).unwrap(),
            b"{not json"
        );
    }
}
