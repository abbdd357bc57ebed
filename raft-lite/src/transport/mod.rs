//! Transports: how a node's messages reach other nodes.

mod mem;
mod tcp;

pub use mem::{MemNetwork, NetFaults, NetStats};
pub use tcp::{TcpStats, TcpTransport};

use crate::Message;

/// Sends messages to other nodes, best effort (Raft tolerates loss, duplication and
/// reordering). `msg.to` names the destination node.
pub trait Transport: Send + Sync + 'static {
    /// Sends `msg` of `group`.
    fn send(&self, group: u64, msg: Message);
}
