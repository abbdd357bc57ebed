//! The workload's keys and values, and the recorder every client transaction goes through:
//! each read notes the writer it saw, each commit its outcome, into the run's history.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use surge_txn::{LocalCluster, Transaction, TxnClient, TxnError, TxnMode};

use crate::support::{KeyRead, ReadKind, TxnHistory, TxnOutcome, TxnRecord};

pub(crate) const ACCOUNTS: u64 = 8;
pub(crate) const REGISTERS: u64 = 8;
pub(crate) const KEYS: u64 = ACCOUNTS + REGISTERS;
pub(crate) const INITIAL: i64 = 1000;
pub(crate) const TOTAL: i64 = INITIAL * ACCOUNTS as i64;
/// Key `k`'s bytes: accounts 0..8, then registers. Accounts `2p` and `2p + 1` share a first
/// byte in region `p` of four, as do registers `2p` and `2p + 1` (a little further on).
pub(crate) fn key_bytes(k: u64) -> Vec<u8> {
    let (i, base, tag) = if k < ACCOUNTS {
        (k, 8, b'a')
    } else {
        (k - ACCOUNTS, 40, b'r')
    };
    let first = u8::try_from((i / 2) * 64 + base).expect("four pairs");
    vec![first, tag, u8::try_from(i).expect("few keys")]
}

pub(crate) fn is_account(k: u64) -> bool {
    k < ACCOUNTS
}

/// A value: the writing transaction, the key it is for, a balance (0 for registers).
pub(crate) fn encode(txn: u64, key: u64, balance: i64) -> Vec<u8> {
    format!("{txn}.{key}.{balance}").into_bytes()
}

/// `(writer, balance)` of key `k`'s value; `(0, INITIAL or 0)` for no value.
pub(crate) fn decode(k: u64, v: Option<&[u8]>) -> Result<(u64, i64), String> {
    let Some(v) = v else {
        return if is_account(k) {
            Err(format!("account {k} has no value"))
        } else {
            Ok((0, 0))
        };
    };
    let s = std::str::from_utf8(v).map_err(|e| format!("key {k}: {e}"))?;
    let parts: Vec<&str> = s.split('.').collect();
    let bad = || format!("key {k} holds {s:?}");
    let [txn, key, balance] = parts[..] else {
        return Err(bad());
    };
    let (txn, key, balance): (u64, u64, i64) = (
        txn.parse().map_err(|_| bad())?,
        key.parse().map_err(|_| bad())?,
        balance.parse().map_err(|_| bad())?,
    );
    if key != k {
        return Err(format!(
            "key {k} holds a value written for key {key}: {s:?}"
        ));
    }
    Ok((txn, balance))
}

/// Everything a run shares between its threads.
pub(crate) struct Run<'a> {
    pub(crate) history: TxnHistory,
    /// Corrupt values and snapshots whose accounts do not add up.
    pub(crate) violations: Mutex<Vec<String>>,
    /// Transactions by kind and outcome.
    pub(crate) tally: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Snapshot reads of every account.
    pub(crate) totals_checked: Mutex<u64>,
    /// Why each commit that failed or whose outcome is unknown did so, for the report.
    pub(crate) commit_errors: Mutex<BTreeMap<u64, String>>,
    pub(crate) stop: AtomicBool,
    pub(crate) cluster: &'a LocalCluster,
}

/// One transaction being run: its record, filled in as it goes.
pub(crate) struct Txn<'r, 'a> {
    pub(crate) run: &'r Run<'a>,
    pub(crate) t: Transaction,
    pub(crate) rec: TxnRecord,
    pub(crate) invoke: u64,
}

impl<'r, 'a> Txn<'r, 'a> {
    pub(crate) fn begin(
        run: &'r Run<'a>,
        client: &TxnClient,
        mode: TxnMode,
        id: u64,
        who: u64,
    ) -> Option<Self> {
        let invoke = run.history.now();
        let t = client.begin(mode).ok()?;
        let rec = TxnRecord {
            id,
            client: who,
            start_ts: t.start_ts(),
            reads: Vec::new(),
            writes: Vec::new(),
            outcome: TxnOutcome::Aborted,
            complete: 0,
        };
        Some(Txn {
            run,
            t,
            rec,
            invoke,
        })
    }

    pub(crate) fn violation(&self, what: String) {
        self.run
            .violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!(
                "txn {} (start_ts {}): {what}",
                self.rec.id, self.rec.start_ts
            ));
    }

    pub(crate) fn note(
        &mut self,
        k: u64,
        v: Option<&[u8]>,
        kind: ReadKind,
        invoke: u64,
    ) -> Result<i64, TxnError> {
        match decode(k, v) {
            Ok((saw, balance)) => {
                self.rec.reads.push(KeyRead {
                    key: k,
                    saw,
                    kind,
                    invoke,
                });
                Ok(balance)
            }
            Err(e) => {
                self.violation(e.clone());
                Err(TxnError::Protocol { detail: e })
            }
        }
    }

    /// A snapshot read of `k`.
    pub(crate) fn get(&mut self, k: u64) -> Result<i64, TxnError> {
        let v = self.t.get(&key_bytes(k))?;
        self.note(k, v.as_deref(), ReadKind::Snapshot, self.invoke)
    }

    /// A snapshot read of `keys` in one batch; the balances in the order of `keys`.
    pub(crate) fn batch_get(&mut self, keys: &[u64]) -> Result<Vec<i64>, TxnError> {
        let bytes: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
        let pairs = self.t.batch_get(&bytes)?;
        let mut out = Vec::with_capacity(keys.len());
        for (&k, kb) in keys.iter().zip(&bytes) {
            let v = pairs
                .iter()
                .find(|(pk, _)| pk == kb)
                .map(|(_, v)| v.as_slice());
            out.push(self.note(k, v, ReadKind::Snapshot, self.invoke)?);
        }
        Ok(out)
    }

    /// A read of `k` for update: a locking read in a pessimistic transaction, a snapshot
    /// read in an optimistic one (checked at prewrite).
    pub(crate) fn get_for_update(&mut self, k: u64) -> Result<i64, TxnError> {
        let invoke = self.run.history.now();
        let v = self.t.get_for_update(&key_bytes(k))?;
        let kind = match self.t.mode() {
            TxnMode::Pessimistic => ReadKind::Latest,
            // Optimistic, and any mode added later: read at the snapshot, checked at prewrite.
            _ => ReadKind::Snapshot,
        };
        let invoke = if kind == ReadKind::Snapshot {
            self.invoke
        } else {
            invoke
        };
        self.note(k, v.as_deref(), kind, invoke)
    }

    pub(crate) fn put(&mut self, k: u64, balance: i64) -> Result<(), TxnError> {
        if !self.rec.writes.contains(&k) {
            self.rec.writes.push(k);
        }
        self.t.put(&key_bytes(k), &encode(self.rec.id, k, balance))
    }

    /// Commits after `body` succeeded, rolls back after it failed; records the transaction.
    pub(crate) fn finish(mut self, kind: &'static str, body: Result<(), TxnError>) {
        let outcome = match body {
            Ok(()) => {
                let result = self.t.commit();
                if let Err(e) = &result {
                    self.run
                        .commit_errors
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(self.rec.id, e.to_string());
                }
                match result {
                    Ok(commit_ts) => TxnOutcome::Committed { commit_ts },
                    // The reply to a request that ran was lost or garbled: it may have
                    // committed. (A protocol error is not among the errors `commit`
                    // documents as "did not commit".)
                    Err(TxnError::Undetermined { .. } | TxnError::Protocol { .. }) => {
                        TxnOutcome::Unknown
                    }
                    Err(_) => TxnOutcome::Aborted,
                }
            }
            Err(_) => {
                self.t.rollback();
                TxnOutcome::Aborted
            }
        };
        self.rec.outcome = outcome;
        self.rec.complete = self.run.history.now();
        let label = match outcome {
            TxnOutcome::Committed { .. } => "committed",
            TxnOutcome::Unknown => "unknown",
            TxnOutcome::Aborted => "aborted",
        };
        *self
            .run
            .tally
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((kind, label))
            .or_default() += 1;
        self.run.history.record(self.rec);
    }
}
