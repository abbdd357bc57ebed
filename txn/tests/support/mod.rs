//! Shared helpers of the workload and scenario tests: a seeded generator, a three-node test
//! cluster, a fault schedule, a lossy client link, random region changes, and (from
//! `surge-testkit`) history recorders with a register linearizability checker and a
//! snapshot-isolation checker.

#![allow(dead_code, unused_imports)] // each test binary uses its own subset
#![allow(unreachable_pub)] // test helpers are `pub` for their sibling modules

mod cluster_env;
mod fault_schedule;
mod lossy_router;
mod raw_requests;
mod region_churn;
mod rng;

pub use cluster_env::{Layout, TestCluster, fault_tolerant_client};
pub use fault_schedule::{Fault, FaultSchedule};
pub use lossy_router::{LinkFaults, LinkStats, LossyRouter};
pub use raw_requests::{
    commit_keys, get_at, leader_and_ctx, lock_pessimistic, locks_in_region_of, one_region_cluster,
    prewrite_request, timestamp, txn_props,
};
pub use region_churn::{ChangeKind, region_change};
pub use rng::{SplitMix64, long_run, seed_for};
pub use surge_testkit::{
    History, KeyRead, Op, OpKind, ReadKind, SiSummary, TxnHistory, TxnOutcome, TxnRecord,
    check_registers, check_snapshot_isolation,
};
