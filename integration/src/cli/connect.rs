//! Reaching the cluster a directory made by `surgedb cluster start` describes, with errors
//! that name its nodes and say how to start them.

use std::path::{Path, PathBuf};

use surge_raft_lite::NodeId;

use crate::local::{ClusterManifest, ManifestError};
use crate::{Client, ClientError, ClientOptions, Unreached};

/// Why the cluster of a directory could not be reached.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The directory's manifest could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// None of its nodes answered: the cluster is stopped (or unreachable).
    #[error(
        "no node of the cluster in {} answers ({}): is it stopped? run `surgedb cluster start \
         --data {}`",
        dir.display(),
        nodes_text(nodes),
        dir.display()
    )]
    NotRunning {
        /// The cluster directory.
        dir: PathBuf,
        /// Each node, with why its address did not answer.
        nodes: Vec<(NodeId, Unreached)>,
    },
    /// Connecting failed otherwise.
    #[error(transparent)]
    Client(ClientError),
}

/// `node N at ADDR: reason; ...`.
fn nodes_text(nodes: &[(NodeId, Unreached)]) -> String {
    nodes
        .iter()
        .map(|(id, u)| format!("node {id} at {u}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads `dir`'s manifest and connects to the first of its nodes that answers.
///
/// # Errors
/// [`ConnectError::Manifest`] if `dir` is not a cluster directory;
/// [`ConnectError::NotRunning`] if no node answers, naming each.
pub fn connect_dir(
    dir: &Path,
    options: ClientOptions,
) -> Result<(ClusterManifest, Client), ConnectError> {
    let manifest = ClusterManifest::load(dir)?;
    match Client::connect(&manifest.addrs(), options) {
        Ok(client) => Ok((manifest, client)),
        // `connect` tries the addresses in the manifest's order and records each one.
        Err(ClientError::NoNodeReachable { tried }) => Err(ConnectError::NotRunning {
            dir: dir.to_path_buf(),
            nodes: manifest.nodes.iter().map(|n| n.id).zip(tried).collect(),
        }),
        Err(e) => Err(ConnectError::Client(e)),
    }
}
