//! A key-value workload written with this crate replays into a real MariaDB server in its
//! default STRICT mode: `mariadb-binlog FILES | mariadb`, then the table equals the model.
//!
//! The server is a private one (`surge_testkit::mariadb_server`); the test is skipped with a
//! message when MariaDB is not installed, and fails then if `SURGE_REQUIRE_MARIADB_SERVER=1`.

use std::collections::BTreeMap;

use surge_binlog::{Binlog, CommitMethod, TxnCache};

use crate::common::test_config;
use surge_testkit::mariadb_server::MariadbServer;

/// The table the kv events describe (see the `surge_binlog` kv docs).
const CREATE_KV: &str = "CREATE DATABASE surgedb; \
     CREATE TABLE surgedb.kv (k VARBINARY(3072) NOT NULL PRIMARY KEY, v LONGBLOB) ENGINE=InnoDB";

/// A small deterministic generator (xorshift64*), so a failure replays the same workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Adds one statement on `key` to `cache`, choosing insert, update or delete from the
/// model's state, and applies it to the model. Returns which: 0 insert, 1 update, 2 delete.
fn random_statement(
    rng: &mut Rng,
    cache: &mut TxnCache,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    key: Vec<u8>,
    value_len: usize,
) -> usize {
    let value = rng.bytes(value_len);
    match (model.contains_key(&key), rng.below(4)) {
        (false, _) => {
            cache.put(&key, &value).unwrap();
            model.insert(key, value);
            0
        }
        (true, 0) => {
            cache.delete(&key).unwrap();
            model.remove(&key);
            2
        }
        (true, _) => {
            cache.update(&key, &value).unwrap();
            model.insert(key, value);
            1
        }
    }
}

/// Keys of every shape the column allows: empty, binary (quotes, NUL, backslash), 3072 bytes.
fn key_pool(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..120u32)
        .map(|i| format!("key-{i:04}").into_bytes())
        .collect();
    keys.push(Vec::new());
    keys.push(b"quote'\"\\\0nul".to_vec());
    keys.push(vec![b'x'; 3072]);
    keys.extend((0..20).map(|_| {
        let n = 1 + rng.below(40) as usize;
        rng.bytes(n)
    }));
    keys
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// `SELECT HEX(k), HEX(v) FROM surgedb.kv ORDER BY k` as (key hex, value hex) rows.
fn table_rows(server: &MariadbServer) -> Vec<(String, String)> {
    server
        .sql("SELECT HEX(k), HEX(v) FROM surgedb.kv ORDER BY k")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn a_kv_workload_with_overwrites_and_deletes_replays_in_strict_mode() {
    let Some(server) = MariadbServer::start() else {
        return;
    };
    let mode = server.sql("SELECT @@GLOBAL.sql_mode");
    assert!(
        mode.contains("STRICT_TRANS_TABLES"),
        "server sql_mode: {mode}"
    );
    server.sql(CREATE_KV);

    let dir = tempfile::tempdir().unwrap();
    // Small files so the workload spans several (rotation), 1 MiB rename threshold.
    let log = Binlog::open(test_config(dir.path()).with_max_binlog_size(256 << 10)).unwrap();
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let keys = key_pool(&mut rng);
    let mut model = BTreeMap::new();
    let mut methods = Vec::new();
    let mut counts = [0usize; 3];
    for txn in 0..60u64 {
        let mut cache = log.new_cache();
        // Every 20th transaction is large: it spills and commits by rename.
        let (statements, value_len) = if txn % 20 == 19 {
            (500, 8000)
        } else {
            (12, 300)
        };
        for _ in 0..statements {
            let key = keys[rng.below(keys.len() as u64) as usize].clone();
            let len = rng.below(value_len) as usize;
            counts[random_statement(&mut rng, &mut cache, &mut model, key, len)] += 1;
        }
        methods.push(log.commit(cache, 1000 + txn).unwrap().method);
    }
    assert!(
        methods.contains(&CommitMethod::Renamed),
        "a transaction spilled and renamed"
    );
    assert!(
        counts.iter().all(|&n| n > 100),
        "inserts, updates, deletes: {counts:?}"
    );
    let files = log.file_paths();
    assert!(files.len() >= 3, "{files:?}");
    log.close().unwrap();

    let (status, stderr) = server.replay_binlog(&files);
    assert!(
        status.success(),
        "replay failed: {stderr}\n{}",
        server.log_tail()
    );
    let want: Vec<(String, String)> = model.iter().map(|(k, v)| (hex(k), hex(v))).collect();
    let got = table_rows(&server);
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the table differs from the model");
}

/// The failure the update exists for: an INSERT of an existing key stops a STRICT server,
/// so the test above would catch `put` used for an overwrite.
#[test]
fn an_insert_of_an_existing_key_stops_a_strict_server() {
    let Some(server) = MariadbServer::start() else {
        return;
    };
    server.sql(CREATE_KV);
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    for xid in 1..=2 {
        let mut c = log.new_cache();
        c.put(b"k", b"v").unwrap();
        log.commit(c, xid).unwrap();
    }
    let files = log.file_paths();
    log.close().unwrap();
    let (status, stderr) = server.replay_binlog(&files);
    assert!(!status.success());
    assert!(
        stderr.contains("1062") || stderr.contains("Duplicate"),
        "{stderr}"
    );
}
