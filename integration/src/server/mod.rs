//! The node side: [`NodeProcess`] (what `surgedb node` runs), its [`KvServer`] and its
//! locked, stamped [`DataDir`].

mod data_dir;
mod kv_server;
mod node_process;
mod peer_spec;

pub use data_dir::{DataDir, DataDirError, IDENTITY_FILE, NodeIdentity, default_cluster_id};
pub use kv_server::{KvServer, ServerConfig};
pub use node_process::{INITIAL_REGIONS, NodeConfig, NodeError, NodeProcess};
pub use peer_spec::{PeerSpecError, parse_peers, raft_addr_of, resolve};

pub(crate) use data_dir::write_durably;
