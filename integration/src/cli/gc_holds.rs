//! `surgedb gc holds` and `surgedb gc remove-hold`: the GC holds in the meta group (one per
//! node coordinator while garbage collection is on), for an operator who must let the
//! safe point pass a node that is gone for good.

use std::io::Write;

use surge_txn::TxnClient;

use super::kv::KvError;

/// Prints one line per GC hold in force: `owner`, the timestamp it holds the safe point
/// at, that timestamp's wall-clock age, and how long until the hold expires (at the
/// oracle's time, which follows the clocks).
///
/// # Errors
/// [`KvError::Txn`] when the meta group cannot be reached; [`KvError::Output`].
pub fn print_gc_holds(client: &TxnClient, out: &mut impl Write) -> Result<usize, KvError> {
    let holds = client.gc_holds()?;
    let now_ms = surge_txn::codec::physical_ms(client.current_ts()?);
    writeln!(out, "owner\tts\tage_s\texpires_in_s")?;
    for h in &holds {
        let held_ms = surge_txn::codec::physical_ms(h.ts);
        writeln!(
            out,
            "{}\t{}\t{:.1}\t{:.0}",
            h.owner,
            h.ts,
            now_ms.saturating_sub(held_ms) as f64 / 1000.0,
            h.expires_ms.saturating_sub(now_ms) as f64 / 1000.0,
        )?;
    }
    Ok(holds.len())
}

/// Removes `owner`'s GC hold and says whether it had one. A running node's coordinator sets
/// its hold again at its next refresh: this is for a node that is gone for good (a node
/// that comes back with a transaction in doubt may find its records collected).
///
/// # Errors
/// As [`print_gc_holds`].
pub fn remove_gc_hold(client: &TxnClient, owner: u64, out: &mut impl Write) -> Result<(), KvError> {
    let had = client.gc_holds()?.iter().any(|h| h.owner == owner);
    client.remove_gc_hold(owner)?;
    if had {
        writeln!(out, "removed the GC hold of owner {owner}")?;
    } else {
        writeln!(out, "owner {owner} had no GC hold")?;
    }
    Ok(())
}
