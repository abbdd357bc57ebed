//! The node side: [`NodeProcess`] (what `surgedb node` runs), its [`KvServer`], its
//! transaction coordinator ([`NodeCoordinator`]) and its locked, stamped [`DataDir`].

mod binlog_expiry;
mod coordinator;
mod data_dir;
mod gc_worker;
mod join_by;
mod kv_server;
mod local_first_router;
mod mysql_front;
mod node_process;
mod peer_spec;
mod txn_session;

pub use coordinator::NodeCoordinator;
pub use data_dir::{DataDir, DataDirError, IDENTITY_FILE, NodeIdentity, default_cluster_id};
pub use gc_worker::GcConfig;
pub use kv_server::{KvServer, ServerConfig};
pub use mysql_front::MysqlFront;
pub use node_process::{
    BINLOG_SUBDIR, DEFAULT_EVICT_LEADERS_ON_STOP, INITIAL_REGIONS, MYSQL_MAX_CONNECTIONS,
    NodeConfig, NodeError, NodeProcess, SHUTDOWN_WAIT, STOP_WITH_HANDOVER, STOP_WITHOUT_HANDOVER,
    STREAM_SUBDIR,
};
pub use peer_spec::{PeerSpecError, parse_peers, raft_addr_of, resolve};
pub use txn_session::MAX_OPEN_TXNS;

pub(crate) use data_dir::write_durably;
