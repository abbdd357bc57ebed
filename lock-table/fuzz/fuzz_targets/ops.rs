//! Fuzz target: any byte string is a program of lock-table operations; the interpreter
//! asserts the memory accounting and range invariants after every step.
//!
//! Run with `cargo fuzz run ops` from `lock-table/fuzz`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/ops_interpreter.rs"]
mod ops_interpreter;

fuzz_target!(|data: &[u8]| {
    ops_interpreter::run(data);
});
