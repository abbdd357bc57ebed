//! `surgedb binlog dump FILE`: one line per event of a binlog file (or of standard input).

mod describe;
mod error;
mod hex;
mod input;
mod run;

pub use describe::describe;
pub use error::DumpError;
pub use hex::HexBytes;
pub use input::Input;
pub use run::dump;
