//! Expressions with MySQL's semantics: NULL propagates, integers stay exact (overflow is an
//! error), decimals stay decimal, and comparisons of numbers with strings compare numbers.

mod agg;
mod eval;
mod ops;

pub(crate) use agg::{Accumulator, collect_aggregates};
pub(crate) use eval::{Env, SessionView, check_columns, eval, literal, truthy, window_functions};
pub(crate) use ops::{compare, exact_integer, like};
