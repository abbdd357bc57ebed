//! A minimal, crash-safe Raft.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod codec;
mod config;
mod driver;
mod election;
mod error;
mod message;
mod node;
mod progress;
mod raft_log;
mod ready;
mod replication;
mod storage;
mod transport;
mod types;
mod wal;

pub use codec::{
    MAX_BYTES_LEN, decode_conf_state, decode_message, encode_conf_state, encode_message,
};
pub use config::Config;
pub use driver::{
    GroupStatus, Mailbox, Node, NodeOptions, NodeStatsSnapshot, Proposal, StateMachine,
};
pub use error::{Error, Result};
pub use message::{Message, MessageKind};
pub use node::{NodeStats, RawNode};
pub use ready::{ReadState, Ready, Role, SoftState};
pub use storage::{GroupWrite, LogStore, MemLogStore, RaftState};
pub use transport::{MemNetwork, NetFaults, NetStats, TcpStats, TcpTransport, Transport};
pub use types::{ConfChange, ConfState, Entry, EntryId, EntryKind, HardState, NodeId};
pub use types::{Snapshot, SnapshotMeta};
pub use wal::{Wal, WalOptions, WalStats};
