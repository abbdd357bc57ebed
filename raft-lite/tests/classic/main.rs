//! The classic Raft bugs, one test each, named after their raft-rs counterparts
//! (harness/tests/integration_cases/*); one file per behaviour. The cases come from the
//! Raft paper (figure 8, §5.4.2), Ongaro's thesis (pre-vote §9.6, check-quorum §6.2,
//! leader transfer §3.10, ReadIndex §6.4) and etcd/raft-rs bug reports.
#![allow(clippy::unwrap_used, clippy::type_complexity)] // Tests: a failure is a test failure.

#[path = "../common/mod.rs"]
mod common;

mod commit_rule;
mod election_liveness;
mod follower_append;
mod leader_transfer;
mod membership;
mod persist_before_respond;
mod read_index;
mod restart_and_flow;
mod snapshots;
mod terms_and_votes;
