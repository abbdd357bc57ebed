//! Shared helpers of the binlog tests: a cluster with a binlog-writing coordinator, the
//! binlog replayed into a model with MariaDB STRICT-mode rules, and the store's table.

#![allow(dead_code)] // each test binary uses its own subset
#![allow(unreachable_pub)] // test helpers are `pub` for their sibling modules

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use surge_binlog::{EventBody, LogReader, RowsKind};
use surge_txn::{BinlogOptions, ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient};

/// The store's table as a map.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// A three-node cluster of 4 regions (keys are spread on their first byte) with durable
/// WALs in `dir`.
pub fn cluster(dir: &Path) -> LocalCluster {
    LocalCluster::start(
        ClusterConfig::new(dir)
            .with_regions(4)
            .with_lock_mode(LockMode::InMemory),
    )
    .expect("cluster")
}

/// A client config writing its binlog into `dir` (1 MiB rename threshold, so tests can
/// make a transaction large enough to rename).
pub fn binlog_config(dir: &Path) -> ClientConfig {
    ClientConfig::default().with_binlog(Some(
        BinlogOptions::new(dir).with_large_commit_threshold(1 << 20),
    ))
}

/// A coordinator writing its binlog into `dir`.
pub fn coordinator(cluster: &LocalCluster, dir: &Path) -> TxnClient {
    TxnClient::open(cluster.router(), binlog_config(dir)).expect("open the coordinator")
}

/// A key in region `r` (0..4) of [`cluster`]: first byte picks the region.
pub fn key(r: u8, name: &str) -> Vec<u8> {
    let mut k = vec![r * 0x40 + 0x10];
    k.extend_from_slice(name.as_bytes());
    k
}

/// The binlog in `dir` replayed as a STRICT MariaDB replica would: an insert of a present
/// key, or an update or delete of an absent one, fails with a message. Returns the table
/// and the xids of the groups in log order.
pub fn replay(dir: &Path) -> Result<(Table, Vec<u64>), String> {
    let reader = LogReader::open(dir, "surge-bin", None).map_err(|e| e.to_string())?;
    let mut table = Table::new();
    let mut xids = Vec::new();
    for t in reader.transactions() {
        let t = t.map_err(|e| e.to_string())?;
        let xid = t.xid.ok_or("a group without an xid")?;
        for (_, ev) in &t.events {
            let EventBody::Rows(rows) = &ev.body else {
                continue;
            };
            let kv = rows.kv_rows().map_err(|e| e.to_string())?;
            match rows.kind {
                RowsKind::Write => {
                    for r in kv {
                        if table.contains_key(&r.key) {
                            return Err(format!("txn {xid}: insert of present key {:?}", r.key));
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
                            return Err(format!("txn {xid}: update of absent key {:?}", after.key));
                        }
                        table.insert(after.key.clone(), after.value.clone().unwrap_or_default());
                    }
                }
                RowsKind::Delete => {
                    for r in kv {
                        if table.remove(&r.key).is_none() {
                            return Err(format!("txn {xid}: delete of absent key {:?}", r.key));
                        }
                    }
                }
            }
        }
        xids.push(xid);
    }
    Ok((table, xids))
}

/// The committed table at a fresh timestamp (resolving leftover locks).
pub fn store_table(client: &TxnClient) -> Table {
    client
        .scan(b"", None, usize::MAX)
        .expect("scan the store")
        .into_iter()
        .collect()
}

/// Checks the two properties: every acknowledged commit is in the binlog exactly once, and
/// the binlog replays (STRICT rules) to the store's table, so it holds no transaction that
/// did not commit (its rows would be there) and conflicting ones in a valid order.
pub fn check_binlog(dir: &Path, acked: &BTreeSet<u64>, store: &Table) -> Vec<u64> {
    let (table, xids) = replay(dir).unwrap_or_else(|e| panic!("binlog replay: {e}"));
    let unique: BTreeSet<u64> = xids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        xids.len(),
        "a transaction logged twice: {xids:?}"
    );
    let missing: Vec<_> = acked.difference(&unique).collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not logged: {missing:?}"
    );
    assert!(
        table == *store,
        "binlog replay differs from the store:\nbinlog {table:?}\nstore {store:?}"
    );
    xids
}
