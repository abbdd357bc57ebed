//! A minimal, crash-safe Raft for replicating the regions of SurgeDB.
//!
//! "Minimal" means a small API and code base, not missing safety. The crate has four
//! layers, each usable alone:
//!
//! - [`RawNode`]: a sans-IO Raft core in the shape of raft-rs's `RawNode` (no threads,
//!   clocks or files): [`RawNode::tick`], [`RawNode::step`], [`RawNode::propose`],
//!   [`RawNode::transfer_leader`], [`RawNode::read_index`],
//!   [`RawNode::propose_conf_change`] and the [`Ready`] / [`RawNode::advance`] cycle.
//!   Pre-vote and check-quorum are on by default; a new leader appends a no-op; only
//!   entries of the current term commit by counting (figure 8); flow control by an
//!   in-flight window and bytes per message; leader transfer catches the target up first,
//!   refuses proposals meanwhile and times out; single-server membership changes with
//!   learners, one pending at a time, only after the leader committed an entry of its term.
//! - [`LogStore`]: durable storage behind a trait, with [`MemLogStore`] and [`Wal`], one
//!   write-ahead log per node shared by all its groups (one `fdatasync` per batch of many
//!   groups), with checksummed segments, torn-tail truncation, corruption refused at open,
//!   compaction after durable snapshots and a locked data directory. Its file system is a
//!   trait ([`WalFs`]): [`StdFs`], or [`MemFs`], a simulated disk for crash tests.
//! - [`Node`]: a driver thread that hosts many groups, persists with group commit, applies
//!   to a user [`StateMachine`] and lets a proposer wait for each stage ([`Proposal`]).
//! - [`Transport`]: [`MemNetwork`] (in process, with drop, delay, reorder, duplicate and
//!   partition) and [`TcpTransport`] (length-prefixed frames, reconnect with backoff, one
//!   connection per node pair). The wire codec ([`encode_message`], [`decode_message`])
//!   refuses malformed input with an error naming what and where.
//!
//! It is **not**: joint consensus (only single-server changes), a lease-read
//! implementation (ReadIndex only, on the leader; followers answer `NotLeader`), a
//! snapshot streamer (a snapshot travels as one message), or an async API.
//!
//! Hard limits: a byte string (entry or snapshot data) is at most [`MAX_BYTES_LEN`]
//! (256 MiB); a WAL record at most [`WalOptions::max_record_bytes`] (1 GiB; larger
//! writes are split, larger entries refused); a TCP frame at most 64 MiB; a group's log since its last snapshot is kept
//! in memory (by the core and by the WAL's index), so snapshot often enough
//! ([`NodeOptions::snapshot_every`]); node id 0 is reserved.
//!
//! # Example
//!
//! A single-node group driven by hand through the Ready cycle:
//!
//! ```
//! use bytes::Bytes;
//! use surge_raft_lite::{Config, EntryKind, GroupWrite, LogStore, MemLogStore, RaftState, RawNode, Role};
//!
//! let mut store = MemLogStore::new();
//! let mut node = RawNode::new(Config::new(1), RaftState::bootstrap([1]))?;
//! node.campaign_now()?;
//! let mut applied = Vec::new();
//! for _ in 0..3 {
//!     if node.role() == Role::Leader && node.last_index() == 1 {
//!         node.propose(Bytes::from_static(b"hello"))?;
//!     }
//!     while node.has_ready() {
//!         let rd = node.ready()?;
//!         // 1. send rd.messages (none for one node); 2. persist; 3. send persisted_messages
//!         if let Some(w) = GroupWrite::from_ready(1, &rd) {
//!             store.write(&[w])?;
//!         }
//!         // 4. apply
//!         for e in rd.committed_entries.iter().filter(|e| e.kind == EntryKind::Normal) {
//!             applied.push(e.data.clone());
//!         }
//!         node.advance();
//!     }
//! }
//! assert_eq!(applied, vec![Bytes::from_static(b"hello")]);
//! # Ok::<_, surge_raft_lite::Error>(())
//! ```
//!
//! # Crate features
//!
//! None: everything is always built.
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
mod ready_cycle;
mod replication;
mod requests;
mod snapshot_persister;
mod storage;
mod transport;
mod types;
mod wal;

pub use codec::{
    MAX_BYTES_LEN, decode_conf_state, decode_message, encode_conf_state, encode_message,
};
pub use config::Config;
pub use driver::{
    GroupStatus, Mailbox, Node, NodeOptions, NodeStatsSnapshot, Proposal, SNAPSHOT_CHUNK_BYTES,
    SNAPSHOT_ENTRIES_CAP, SnapshotSink, SnapshotStream, StateMachine,
};
pub use error::{Error, Result};
pub use message::{MAX_TERM_OR_INDEX, Message, MessageKind};
pub use node::{NodeStats, RawNode};
pub use ready::{ReadState, Ready, Role, SoftState};
pub use snapshot_persister::{SnapshotFile, SnapshotPersister};
pub use storage::{GroupWrite, LogStore, MemLogStore, RaftState};
pub use transport::{MemNetwork, NetFaults, NetStats, TcpStats, TcpTransport, Transport};
pub use types::{ConfChange, ConfState, Entry, EntryId, EntryKind, HardState, NodeId};
pub use types::{Snapshot, SnapshotMeta};
pub use wal::{DirLock, MemFs, StdFs, Wal, WalFile, WalFs, WalOptions, WalStats};

/// The README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
