//! Right-aligned text tables for the scenario reports.

use std::fmt;

/// Writes one line of `cells`, each right-aligned to its width in `widths`, two spaces apart.
pub(crate) fn row(
    f: &mut fmt::Formatter<'_>,
    widths: &[usize],
    cells: &[&dyn fmt::Display],
) -> fmt::Result {
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        if i > 0 {
            f.write_str("  ")?;
        }
        write!(f, "{:>width$}", cell.to_string())?;
    }
    writeln!(f)
}
