//! `surgedb binlog dump FILE`: one line per event of a binlog file (or of standard input).

mod describe;
mod error;
mod escaped;
mod hex;
mod input;
mod rows_text;
mod run;

pub use describe::describe;
pub use error::DumpError;
pub use escaped::escaped;
pub use hex::HexBytes;
pub use input::Input;
pub use run::{LEGEND, dump};
