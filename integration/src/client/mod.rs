//! The TCP client side: [`RemoteService`] (one node), [`TcpRouter`] (all nodes),
//! [`Client`] (a cluster: transactions on its nodes' coordinators, [`RemoteTxn`], or in
//! process with the txn crate's transactional client).

mod cluster_client;
mod deadline_read;
mod move_leaders;
mod remote_service;
mod remote_txn;
mod tcp_router;
mod unreached;

pub use cluster_client::{Client, ClientError, ClientOptions};
pub use move_leaders::{LeaderMoves, MovedRegion};
pub use remote_service::{RemoteConfig, RemoteService, Welcome};
pub use remote_txn::RemoteTxn;
pub use tcp_router::TcpRouter;
pub use unreached::{Unreached, reason as unreached_reason};
