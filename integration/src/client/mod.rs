//! The TCP client side: [`RemoteService`] (one node), [`TcpRouter`] (all nodes) and
//! [`Client`] (a cluster, with the txn crate's transactional client on top).

mod cluster_client;
mod remote_service;
mod tcp_router;

pub use cluster_client::{Client, ClientError, ClientOptions};
pub use remote_service::{RemoteConfig, RemoteService, Welcome};
pub use tcp_router::TcpRouter;
