//! The multi-group driver: threads, clocks, storage and transport around [`crate::RawNode`].

mod group;
mod node;
mod proposal;
mod snapshot_stream;
mod snapshot_writer;
mod state_machine;
mod worker;

pub use node::{GroupStatus, Mailbox, Node, NodeOptions, NodeStatsSnapshot, SNAPSHOT_ENTRIES_CAP};
pub use proposal::Proposal;
pub use snapshot_stream::SNAPSHOT_CHUNK_BYTES;
pub use state_machine::{SnapshotSink, SnapshotStream, StateMachine};
