//! `surgedb stream positions` and `surgedb stream remove-position`: where each node's copy
//! of the replica stream stands and how far the cluster collected its stream records, for
//! an operator who must let collection pass a node that is gone for good.

use std::io::Write;

use surge_txn::TxnClient;
use surge_txn::codec::physical_ms;

use super::kv::KvError;

/// Prints the collected mark (`collected_below`, its age), then one line per node position:
/// `owner`, the record timestamp it still needs from (`lower_record_ts`), how far its copy
/// is complete (`done_ts`), the age of both and of the publication (seconds, on the
/// oracle's clock). Returns how many positions there are.
///
/// # Errors
/// [`KvError::Txn`] when the store cannot be read; [`KvError::Output`].
pub fn print_stream_positions(client: &TxnClient, out: &mut impl Write) -> Result<usize, KvError> {
    let positions = client.stream_positions()?;
    let mark = client.stream_collected_below()?;
    let now_ms = physical_ms(client.current_ts()?);
    let age = |ms: u64| now_ms.saturating_sub(ms) as f64 / 1000.0;
    if mark == 0 {
        writeln!(out, "collected_below\t0\t(nothing collected)")?;
    } else {
        writeln!(
            out,
            "collected_below\t{mark}\t{:.1} s ago",
            age(physical_ms(mark))
        )?;
    }
    writeln!(
        out,
        "owner\tlower_record_ts\tlower_age_s\tdone_ts\tdone_age_s\tpublished_age_s"
    )?;
    for p in &positions {
        writeln!(
            out,
            "{}\t{}\t{:.1}\t{}\t{:.1}\t{:.1}",
            p.owner,
            p.lower_record_ts,
            age(physical_ms(p.lower_record_ts)),
            p.done_ts,
            age(physical_ms(p.done_ts)),
            age(p.updated_ms),
        )?;
    }
    Ok(positions.len())
}

/// Removes `owner`'s stream position and says whether it had one. A running node publishes
/// its position again within seconds: this is for a node that is gone for good, which
/// otherwise holds the records back until its position's TTL runs out.
///
/// # Errors
/// As [`print_stream_positions`].
pub fn remove_stream_position(
    client: &TxnClient,
    owner: u64,
    out: &mut impl Write,
) -> Result<(), KvError> {
    if client.stream_remove_position(owner)? {
        writeln!(out, "removed the stream position of owner {owner}")?;
    } else {
        writeln!(out, "owner {owner} had no stream position")?;
    }
    Ok(())
}
