//! The dump loop: every event of the input, one line each, until the end or the first damage.

use surge_binlog::FileEvents;

use super::{DumpError, Input, describe};

/// Writes one line per event of `input` to `out`: offset, type, size, end position and a
/// summary (rows of the `surgedb`.`kv` table are decoded key by key). Every checksum is
/// verified.
///
/// Returns the number of events written.
///
/// # Errors
/// [`DumpError::Empty`], [`DumpError::TruncatedMagic`] or [`DumpError::NotBinlog`] before
/// any event; [`DumpError::Truncated`] or [`DumpError::Damaged`] for the first event that
/// does not decode, naming the input and the byte offset (the lines before it are written);
/// [`DumpError::Open`] / [`DumpError::Read`] for I/O; [`DumpError::Output`] if `out` fails.
pub fn dump(input: &Input, out: &mut impl std::io::Write) -> Result<u64, DumpError> {
    let name = input.name();
    let opened = input.open()?;
    let events = FileEvents::open(opened.path()).map_err(|e| DumpError::from_binlog(&name, e))?;
    let mut written = 0;
    for item in events {
        let (offset, event) = item.map_err(|e| DumpError::from_binlog(&name, e))?;
        writeln!(out, "{}", describe(offset, &event)).map_err(DumpError::Output)?;
        written += 1;
    }
    out.flush().map_err(DumpError::Output)?;
    Ok(written)
}
