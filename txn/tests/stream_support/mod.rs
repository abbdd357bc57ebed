//! Shared helpers of the stream record tests: coordinators with binlogs, a stream reader
//! that follows the watermark and checks what it sees, and the stream replayed into a
//! table with MariaDB STRICT-mode rules.

#![allow(dead_code)] // each test binary uses its own subset
#![allow(unreachable_pub)] // test helpers are `pub` for their sibling modules

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use surge_binlog::{EventBody, RowsKind};
use surge_txn::{
    BinlogOptions, ClientConfig, LocalCluster, StreamGroupKind, StreamOptions, StreamTxn, TxnClient,
};

/// The store's table as a map.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// A coordinator of `cluster` with its own binlog in `dir` and server id `server_id`.
pub fn coordinator(
    cluster: &LocalCluster,
    dir: &Path,
    server_id: u32,
    config: ClientConfig,
) -> TxnClient {
    let mut opts = BinlogOptions::new(dir);
    opts.server_id = server_id;
    opts.gtid_domain = server_id;
    TxnClient::open(cluster.router(), config.with_binlog(Some(opts))).expect("open the coordinator")
}

/// A client config with `ttl_ms` locks, fast heartbeats and `stream` options.
pub fn config(ttl_ms: u64, stream: StreamOptions) -> ClientConfig {
    ClientConfig::default()
        .with_lock_ttl_ms(ttl_ms)
        .with_heartbeat_interval(std::time::Duration::from_millis(100))
        .with_stream(stream)
}

/// A stream follower: takes a watermark, scans up to it from the last one, and checks that
/// every record it receives is above the last watermark it consumed (the watermark never
/// passes a record that commits later).
#[derive(Debug, Default)]
pub struct Follower {
    /// The last watermark consumed (records up to it delivered).
    pub resolved: u64,
    /// The lower record_ts bound that came with it.
    pub lower: u64,
    /// Everything delivered, in delivery order.
    pub delivered: Vec<StreamTxn>,
    /// Rounds run.
    pub rounds: usize,
}

impl Follower {
    /// One round; returns how many records it delivered.
    pub fn round(&mut self, reader: &TxnClient) -> usize {
        let wm = reader.stream_resolved_ts().expect("watermark");
        assert!(
            wm.resolved_ts >= self.resolved,
            "the watermark went back: {} after {}",
            wm.resolved_ts,
            self.resolved
        );
        let txns = reader
            .stream_scan(self.resolved, wm.resolved_ts, self.lower)
            .expect("stream scan");
        for t in &txns {
            assert!(
                t.commit_ts > self.resolved && t.commit_ts <= wm.resolved_ts,
                "record of txn {} at commit_ts {} outside ({}, {}]",
                t.start_ts,
                t.commit_ts,
                self.resolved,
                wm.resolved_ts
            );
        }
        let n = txns.len();
        self.delivered.extend(txns);
        self.resolved = wm.resolved_ts;
        self.lower = wm.lower_record_ts;
        self.rounds += 1;
        n
    }

    /// Checks the whole delivery against a fresh scan from the beginning up to the last
    /// watermark: the same records, in the same order (none appeared late below a consumed
    /// watermark, none was delivered twice), in strictly rising (commit_ts, start_ts): one
    /// region's one-phase commits of disjoint keys may share a commit_ts.
    pub fn check_against_full_scan(&self, reader: &TxnClient) {
        let full = reader
            .stream_scan(0, self.resolved, 0)
            .expect("full stream scan");
        let ids = |v: &[StreamTxn]| {
            v.iter()
                .map(|t| (t.commit_ts, t.start_ts))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&self.delivered),
            ids(&full),
            "delivered records differ from a full scan"
        );
        assert!(
            self.delivered
                .windows(2)
                .all(|w| (w[0].commit_ts, w[0].start_ts) < (w[1].commit_ts, w[1].start_ts)),
            "(commit_ts, start_ts) not strictly rising"
        );
    }

    /// The start timestamps delivered (each once).
    pub fn start_set(&self) -> BTreeSet<u64> {
        let set: BTreeSet<u64> = self.delivered.iter().map(|t| t.start_ts).collect();
        assert_eq!(
            set.len(),
            self.delivered.len(),
            "a transaction delivered twice"
        );
        set
    }
}

/// Applies `txns` (in their order) to `table` as a STRICT replica applies the kv rows of
/// `surgedb`.`kv`: an insert of a present key, an update or delete of an absent one fails.
pub fn replay(table: &mut Table, txns: &[StreamTxn]) -> Result<(), String> {
    for t in txns {
        for g in &t.groups {
            let events = g.decode_events().map_err(|e| e.to_string())?;
            if g.kind == StreamGroupKind::Standalone {
                continue;
            }
            for ev in events {
                let EventBody::Rows(rows) = &ev.body else {
                    continue;
                };
                let kv = rows.kv_rows().map_err(|e| e.to_string())?;
                match rows.kind {
                    RowsKind::Write => {
                        for r in kv {
                            if table.contains_key(&r.key) {
                                return Err(format!(
                                    "txn {}: insert of present {:?}",
                                    t.start_ts, r.key
                                ));
                            }
                            table.insert(r.key, r.value.unwrap_or_default());
                        }
                    }
                    RowsKind::Update => {
                        for pair in kv.chunks(2) {
                            let [_, after] = pair else {
                                return Err("odd update images".into());
                            };
                            if !table.contains_key(&after.key) {
                                return Err(format!(
                                    "txn {}: update of absent {:?}",
                                    t.start_ts, after.key
                                ));
                            }
                            table
                                .insert(after.key.clone(), after.value.clone().unwrap_or_default());
                        }
                    }
                    RowsKind::Delete => {
                        for r in kv {
                            if table.remove(&r.key).is_none() {
                                return Err(format!(
                                    "txn {}: delete of absent {:?}",
                                    t.start_ts, r.key
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The committed table (user keys only: scans skip the stream records).
pub fn store_table(client: &TxnClient) -> Table {
    client
        .scan(b"", None, usize::MAX)
        .expect("scan the store")
        .into_iter()
        .collect()
}
