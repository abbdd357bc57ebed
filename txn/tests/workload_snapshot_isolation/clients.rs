//! The client threads' transactions: transfers, tuple writes, read-modify-writes, snapshot
//! and locking reads, in random optimistic and pessimistic transactions.

use std::sync::atomic::Ordering;
use std::time::Duration;

use surge_txn::{TxnClient, TxnMode};

use super::recorder::{ACCOUNTS, KEYS, REGISTERS, Run, TOTAL, Txn};
use crate::support::SplitMix64;

/// Two distinct keys among `n` from `base`: half the time the two of one pair (one region
/// while no split parts them), else any two.
pub(crate) fn two_keys(rng: &mut SplitMix64, base: u64, n: u64) -> (u64, u64) {
    if rng.chance(50) {
        let p = rng.below(n / 2);
        (base + 2 * p, base + 2 * p + 1)
    } else {
        let a = rng.below(n);
        let b = (a + 1 + rng.below(n - 1)) % n;
        (base + a, base + b)
    }
}

/// One client thread: random transactions until the run stops.
pub(crate) fn client_loop(run: &Run<'_>, client: &TxnClient, who: u64, mut rng: SplitMix64) {
    let mut seq = 0;
    while !run.stop.load(Ordering::Relaxed) {
        seq += 1;
        let id = who * 10_000_000 + seq;
        let mode = if rng.chance(50) {
            TxnMode::Optimistic
        } else {
            TxnMode::Pessimistic
        };
        let Some(mut tx) = Txn::begin(run, client, mode, id, who) else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        match rng.below(100) {
            0..=34 => {
                let (from, to) = two_keys(&mut rng, 0, ACCOUNTS);
                let amount = i64::try_from(rng.range(1, 20)).expect("small");
                let body = (|| {
                    let a = tx.get_for_update(from)?;
                    let b = tx.get_for_update(to)?;
                    tx.put(from, a - amount)?;
                    tx.put(to, b + amount)
                })();
                tx.finish("transfer", body);
            }
            35..=49 => {
                let (a, b) = two_keys(&mut rng, ACCOUNTS, REGISTERS);
                let third = ACCOUNTS + rng.below(REGISTERS);
                let body = (|| {
                    tx.put(a, 0)?;
                    tx.put(b, 0)?;
                    if rng.chance(30) && third != a && third != b {
                        tx.put(third, 0)?;
                    }
                    Ok(())
                })();
                tx.finish("tuple write", body);
            }
            50..=64 => {
                let (a, b) = two_keys(&mut rng, ACCOUNTS, REGISTERS);
                let both = rng.chance(50);
                let account = rng.below(ACCOUNTS);
                let body = (|| {
                    // A snapshot read of an account it does not write, beside the update.
                    tx.get(account)?;
                    tx.get_for_update(a)?;
                    tx.put(a, 0)?;
                    if both {
                        tx.get_for_update(b)?;
                        tx.put(b, 0)?;
                    }
                    Ok(())
                })();
                tx.finish("read-modify-write", body);
            }
            65..=79 => {
                // Every account in one snapshot: the total never changes.
                let keys: Vec<u64> = (0..ACCOUNTS).collect();
                let body = tx.batch_get(&keys).map(|balances| {
                    let sum: i64 = balances.iter().sum();
                    *run.totals_checked.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                    if sum != TOTAL {
                        tx.violation(format!(
                            "a snapshot's accounts add up to {sum}, not {TOTAL}: {balances:?}"
                        ));
                    }
                });
                tx.finish("read all accounts", body);
            }
            80..=91 => {
                let n = rng.range(2, 5);
                let mut keys: Vec<u64> = (0..n).map(|_| rng.below(KEYS)).collect();
                keys.sort_unstable();
                keys.dedup();
                let batch = rng.chance(50);
                let body = if batch {
                    tx.batch_get(&keys).map(|_| ())
                } else {
                    keys.iter().try_for_each(|&k| tx.get(k).map(|_| ()))
                };
                tx.finish("read keys", body);
            }
            _ => {
                let k = rng.below(KEYS);
                let body = tx.get_for_update(k).map(|_| ());
                tx.finish("locking read", body);
            }
        }
    }
}
