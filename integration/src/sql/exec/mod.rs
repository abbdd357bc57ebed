//! Statement execution: a [`Session`] parses each statement and runs it in the session's
//! transaction (or an autocommit one).

mod access;
mod binlog;
mod ddl;
mod hints;
mod hot;
mod insert;
mod modify;
mod parse_cache;
mod rows;
mod select;
mod session;
mod show;
mod special;
mod split;
mod subquery;
mod vars;

pub(crate) use binlog::{binlog_table, silence};
pub use session::Session;
pub(crate) use vars::default_variables;
