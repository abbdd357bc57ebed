//! The dump loop: every event of the input, one line each, until the end or the first damage.

use surge_binlog::FileEvents;

use super::{DumpError, Input, describe};

/// What the columns mean, printed before the first event.
///
/// The end position 0 needs saying: `surge-binlog` writes a transaction's events into its
/// binlog cache before it knows where they will land, and copies or renames them into the
/// file unchanged, so those events record no end position (MariaDB's own files have one on
/// every event).
pub const LEGEND: &str = "\
# columns: byte offset, event type, size in bytes, end = the position after the event as its header records it (mariadb-binlog's end_log_pos), then what the event holds
# end 0 = not recorded: a transaction's table-map and row events are written to its binlog cache before their place in the file is known, and reach the file unchanged (copied or renamed)
# rows, as mariadb-binlog -v shows them: WHERE = the row before, SET = the row after, @1 @2 = the table's columns (k, v in surgedb.kv)
";

/// Writes [`LEGEND`], then one line per event of `input` to `out`: offset, type, size, end
/// position and a summary (rows of the `surgedb`.`kv` table with their values). Every
/// checksum is verified.
///
/// Returns the number of events written (the legend comes with the first, so an input with
/// none that decodes prints nothing).
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
        if written == 0 {
            out.write_all(LEGEND.as_bytes())
                .map_err(DumpError::Output)?;
        }
        writeln!(out, "{}", describe(offset, &event)).map_err(DumpError::Output)?;
        written += 1;
    }
    out.flush().map_err(DumpError::Output)?;
    Ok(written)
}
