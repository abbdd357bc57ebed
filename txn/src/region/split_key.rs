//! Where a region splits: the engine's middle key, moved so that a table keeps its rows
//! beside its newest stream records.
//!
//! A table's stream records (`crate::stream`, module `keys`) sort right after its rows
//! and index entries, newest first, and a commit on the table is one phase only while its
//! keys and its record lie in one region. The middle key by count mostly falls among the
//! rows' and index entries' versions (each write leaves one, each record is one key): a
//! split there leaves the table's rows on both sides, or its rows on the left and all its
//! records on the right, and every later commit on it takes two phases. So a middle key
//! that is a table's row or index key, in a region that also holds that table's records,
//! is moved to the table's newest record: the rows and index entries stay on the left
//! with the records written from now on (a new record sorts before the newest one, unless
//! its transaction reused a timestamp of its own older than that record: such a record
//! lands on the right, and its transaction commits in two phases, a cost only while the
//! split is fresh), the records written so far go right. A middle key among records
//! already keeps the rows with the newest records; any other key is left as it is.
//!
//! Only a lane that holds at least [`MIN_LANE_SHARE`] of the region's write records moves
//! the split: a table whose rows alone outgrow the split size then splits among its rows
//! as any table, rather than again and again at the few records written since its last
//! split.

use crate::engine::{Cf, Engine, decode_key, split_ts};
use crate::stream::records_of_table_key;
use crate::{RegionInfo, encode_key};

/// The least share of the region's write records (one in this many) a table's lane must
/// hold for the split to move to it. A `oltp_write_only` transaction leaves about five row
/// and index versions and one record.
pub(super) const MIN_LANE_SHARE: usize = 16;

/// The key to split `region` at, given the engine's `middle` key (module docs).
pub(super) fn split_key(engine: &dyn Engine, region: &RegionInfo, middle: Vec<u8>) -> Vec<u8> {
    let Some((lane_start, lane_end)) = records_of_table_key(&middle) else {
        return middle;
    };
    if !region.contains(&lane_start) {
        return middle;
    }
    match newest_record(engine, region, &lane_start, &lane_end) {
        // Above `middle` (the lane sorts after the table's other keys), so inside the region.
        Some(newest) if newest > middle => newest,
        _ => middle,
    }
}

/// The first user key with a write record in the lane `[start, end)` (its newest record),
/// when the lane holds at least one in [`MIN_LANE_SHARE`] of `region`'s write records.
///
/// One more pass over the region's write records (values included: write records are
/// small, a long value is in the default column family), only for a region due to split.
fn newest_record(
    engine: &dyn Engine,
    region: &RegionInfo,
    start: &[u8],
    end: &[u8],
) -> Option<Vec<u8>> {
    let (start, end) = (encode_key(start), encode_key(end));
    let region_end = region.end_key().map(encode_key);
    let snap = engine.snapshot();
    let (mut first, mut in_lane, mut all) = (None, 0usize, 0usize);
    snap.scan(
        Cf::Write,
        &encode_key(&region.start),
        region_end.as_deref(),
        &mut |key, _| {
            all += 1;
            if key >= start.as_slice() && key < end.as_slice() {
                in_lane += 1;
                if first.is_none() {
                    first = Some(key.to_vec());
                }
            }
            true
        },
    );
    let first = first.filter(|_| in_lane.saturating_mul(MIN_LANE_SHARE) >= all)?;
    let (encoded, _) = split_ts(&first).ok()?;
    decode_key(encoded).ok().map(|(user_key, _)| user_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{MemEngine, Modify, WriteBatch, encode_key_with_ts};
    use crate::stream::record_key;
    use crate::{Write, WriteType};

    const TABLE: &[u8] = b"t\x80\x00\x00\x00\x00\x00\x00\x05";

    fn row(n: u8) -> Vec<u8> {
        [TABLE, b"_r", &[n]].concat()
    }

    fn engine_with(keys: &[Vec<u8>]) -> MemEngine {
        let engine = MemEngine::new();
        let mut batch = WriteBatch::default();
        for (i, k) in keys.iter().enumerate() {
            batch.modifies.push(Modify::Put {
                cf: Cf::Write,
                key: encode_key_with_ts(k, 10 + i as u64),
                value: Write::new(WriteType::Put, 5, Some(b"v".to_vec())).to_bytes(),
            });
        }
        engine.write(&batch).expect("write");
        engine
    }

    fn region(start: &[u8], end: &[u8]) -> RegionInfo {
        RegionInfo {
            start: start.to_vec(),
            end: end.to_vec(),
            id: 1,
            epoch: crate::RegionEpoch::default(),
            peers: vec![1],
        }
    }

    /// Rows 1..=`rows` and `n` records, the newest at record_ts 10,000.
    fn rows_and_records(rows: u8, n: u64) -> (MemEngine, Vec<u8>) {
        let mut keys: Vec<Vec<u8>> = (1..=rows).map(row).collect();
        keys.extend((0..n).map(|i| record_key(TABLE, 10_000 - i, i, 0)));
        (engine_with(&keys), record_key(TABLE, 10_000, 0, 0))
    }

    #[test]
    fn a_middle_among_rows_moves_to_the_newest_record() {
        // One record in sixteen write records: the least share that moves.
        let (e, newest) = rows_and_records(MIN_LANE_SHARE as u8 - 1, 1);
        let whole = region(b"", b"");
        assert_eq!(split_key(&e, &whole, row(2)), newest);
        // The share counts the region's keys only: here rows 33..=40 and the record.
        let (e, newest) = rows_and_records(40, 1);
        let part = region(&row(33), b"");
        assert_eq!(split_key(&e, &part, row(36)), newest);
        // A region that ends before the records keeps the middle.
        assert_eq!(
            split_key(&e, &region(b"", &[TABLE, b"_s"].concat()), row(2)),
            row(2)
        );
    }

    #[test]
    fn other_middles_stay() {
        let (e, _) = rows_and_records(3, 1);
        let rec = record_key(TABLE, 10_000, 0, 0);
        let whole = region(b"", b"");
        // Among records already.
        assert_eq!(split_key(&e, &whole, rec.clone()), rec);
        // Not a table key.
        assert_eq!(split_key(&e, &whole, b"kv/a".to_vec()), b"kv/a".to_vec());
        // A table without records, or with fewer than the bound (rows outgrew the size).
        let e = engine_with(&[row(1), row(2), row(3)]);
        assert_eq!(split_key(&e, &whole, row(2)), row(2));
        let (e, _) = rows_and_records(MIN_LANE_SHARE as u8, 1);
        assert_eq!(split_key(&e, &whole, row(2)), row(2));
    }
}
