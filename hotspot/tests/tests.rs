//! Integration tests of the hot-row coordinator, one module per behaviour (one test binary).

// Test helpers outside #[test] fns: a poisoned lock or failed join is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod grouping;
mod lone_leader;
mod member_failure;
mod no_lost_update;
mod panic_safety;
mod serial_equivalence;
mod stress;
mod switch;
