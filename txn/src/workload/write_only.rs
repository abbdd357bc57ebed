//! The table and the event of sysbench `oltp_write_only` in key-value form.
//!
//! One event, on a table of `rows` rows:
//! 1. update an indexed column: lock and rewrite row `a`, and write its index entry;
//! 2. update a non-indexed column: rewrite row `b`;
//! 3. delete row `c`, then insert it back.
//!
//! In a pessimistic transaction every write first takes a pessimistic lock on its key (where
//! the lock modes differ); an optimistic one buffers them and finds conflicts at prewrite.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::rng::Rng;
use crate::{Transaction, TxnClient, TxnError, TxnMode};

/// Rows per loading transaction.
const LOAD_BATCH: usize = 250;

/// Row `id`'s key. The first byte spreads the rows over the regions (split on it).
fn row_key(id: u64) -> Vec<u8> {
    let mut k = vec![spread(id), b'r'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The index entry of value `k` for row `id`.
fn index_key(k: u64, id: u64) -> Vec<u8> {
    let mut key = vec![spread(k ^ 0x5555), b'i'];
    key.extend_from_slice(&k.to_be_bytes());
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// A first key byte from a Fibonacci hash, so consecutive ids land in different regions.
fn spread(x: u64) -> u8 {
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// A row: its indexed value `k`, then sysbench's `c` (120 bytes) and `pad` (60 bytes).
fn row_value(k: u64, salt: u64) -> Vec<u8> {
    let mut v = k.to_be_bytes().to_vec();
    v.extend(std::iter::repeat_n(b'a' + (salt % 26) as u8, 180));
    v
}

/// Loads rows `1..=rows` with their index entries, `threads` loaders at once.
///
/// # Errors
/// The first loading transaction that failed.
///
/// # Panics
/// When a loader thread panicked (the panic goes on here).
pub fn load(client: &TxnClient, rows: u64, threads: usize) -> Result<(), TxnError> {
    let ids: Vec<u64> = (1..=rows).collect();
    let chunks: Vec<&[u64]> = ids.chunks(LOAD_BATCH).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let loaders: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| -> Result<(), TxnError> {
                    while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut t = client.begin(TxnMode::Optimistic)?;
                        for id in *chunk {
                            t.put(&row_key(*id), &row_value(*id, *id))?;
                            t.put(&index_key(*id, *id), b"")?;
                        }
                        t.commit()?;
                    }
                    Ok(())
                })
            })
            .collect();
        loaders.into_iter().try_for_each(|l| {
            l.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// One `oltp_write_only` event in a transaction of `mode` on a table of `rows` rows;
/// returns the commit timestamp. Rolled back if a statement fails.
///
/// # Errors
/// The transaction's error (a conflict, a lock wait timeout, ...).
pub fn event(client: &TxnClient, mode: TxnMode, rng: &mut Rng, rows: u64) -> Result<u64, TxnError> {
    let rows = rows.max(1);
    let mut t = client.begin(mode)?;
    let (a, b, c) = (
        1 + rng.next_u64() % rows,
        1 + rng.next_u64() % rows,
        1 + rng.next_u64() % rows,
    );
    match statements(&mut t, rng, a, b, c) {
        Ok(()) => t.commit(),
        Err(e) => {
            t.rollback();
            Err(e)
        }
    }
}

/// The event's writes on rows `a`, `b` and `c`.
fn statements(t: &mut Transaction, rng: &mut Rng, a: u64, b: u64, c: u64) -> Result<(), TxnError> {
    let row = t.get_for_update(&row_key(a))?;
    let k = row
        .as_deref()
        .and_then(|v| v.get(..8))
        .and_then(|b| b.try_into().ok())
        .map_or(a, u64::from_be_bytes);
    t.put(&row_key(a), &row_value(k + 1, rng.next_u64()))?;
    t.put(&index_key(k + 1, a), b"")?;
    t.put(&row_key(b), &row_value(b, rng.next_u64()))?;
    t.delete(&row_key(c))?;
    t.put(&row_key(c), &row_value(c, rng.next_u64()))
}
