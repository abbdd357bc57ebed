//! sysbench 1.0.20's exact statements (oltp_common.lua): prepare (CREATE TABLE with the
//! `/*! ENGINE = innodb */` comment, multi-row INSERTs, CREATE INDEX with backfill), then
//! oltp_write_only's transaction as prepared statements from several threads at once,
//! retried on 1213/1205 the way sysbench does (from BEGIN, without ROLLBACK), then the
//! read_write selects; row count and index consistency checked.

mod sql_support;

use sql_support::{Db, lines, ok};
use surgedb::sql::{Output, SqlSession, Value};

const TABLE_SIZE: i64 = 3000;
const THREADS: usize = 4;
const EVENTS: usize = 25;

fn c_value(seed: u64) -> String {
    // sysbench's c: 10 groups of 11 digits joined by '-' (119 characters).
    (0..10)
        .map(|g| {
            format!(
                "{:011}",
                (seed.wrapping_mul(2654435761).wrapping_add(g * 7919)) % 100_000_000_000
            )
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn pad_value(seed: u64) -> String {
    (0..5)
        .map(|g| {
            format!(
                "{:011}",
                (seed.wrapping_mul(40503).wrapping_add(g)) % 100_000_000_000
            )
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[test]
fn prepare_run_write_only_and_check() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database sbtest; use sbtest");
    ok(
        &mut s,
        "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */",
    );
    // Multi-row INSERTs as sysbench's bulk insert sends them (about 2.7k rows each).
    let mut next = 1i64;
    while next <= TABLE_SIZE {
        let end = (next + 2699).min(TABLE_SIZE);
        let values: Vec<String> = (next..=end)
            .map(|i| {
                format!(
                    "({}, '{}', '{}')",
                    i * 7 % 5000,
                    c_value(i as u64),
                    pad_value(i as u64)
                )
            })
            .collect();
        let out = ok(
            &mut s,
            &format!("INSERT INTO sbtest1(k, c, pad) VALUES {}", values.join(",")),
        );
        let Output::Done {
            affected_rows,
            last_insert_id,
            ..
        } = out
        else {
            panic!()
        };
        assert_eq!(affected_rows, (end - next + 1) as u64);
        assert_eq!(
            last_insert_id, next as u64,
            "ids 1..table_size, as sysbench's run assumes"
        );
        next = end + 1;
    }
    ok(&mut s, "CREATE INDEX k_1 ON sbtest1(k)");
    assert_eq!(
        lines(&mut s, "SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1"),
        [format!("{TABLE_SIZE}|1|{TABLE_SIZE}")]
    );

    let retried = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let mut c = db.session();
            let retried = &retried;
            scope.spawn(move || {
                c.use_database("sbtest").unwrap();
                let begin = c.prepare("BEGIN").unwrap().id;
                let commit = c.prepare("COMMIT").unwrap().id;
                let idx = c.prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?").unwrap().id;
                let non_idx = c.prepare("UPDATE sbtest1 SET c=? WHERE id=?").unwrap().id;
                let del = c.prepare("DELETE FROM sbtest1 WHERE id=?").unwrap().id;
                let ins = c
                    .prepare("INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)")
                    .unwrap()
                    .id;
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut rand_id = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    // A small hot set so that threads collide.
                    Value::Int((rng % 50) as i64 + 1)
                };
                for e in 0..EVENTS {
                    let (a, b, d) = (rand_id(), rand_id(), rand_id());
                    let cval = Value::Bytes(c_value(e as u64 * 31 + t as u64).into_bytes());
                    'event: loop {
                        let steps: Vec<(u32, Vec<Value>)> = vec![
                            (begin, vec![]),
                            (idx, vec![a.clone()]),
                            (non_idx, vec![cval.clone(), b.clone()]),
                            (del, vec![d.clone()]),
                            (
                                ins,
                                vec![
                                    d.clone(),
                                    Value::Int(e as i64),
                                    cval.clone(),
                                    Value::Bytes(pad_value(e as u64).into_bytes()),
                                ],
                            ),
                            (commit, vec![]),
                        ];
                        for (id, params) in steps {
                            match c.execute(id, &params) {
                                Ok(_) => {}
                                Err(err) if matches!(err.code, 1213 | 1205) => {
                                    retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    continue 'event;
                                }
                                Err(err) => panic!("FATAL (sysbench would stop): {err}"),
                            }
                        }
                        break;
                    }
                }
            });
        }
    });
    eprintln!(
        "retried events: {}",
        retried.load(std::sync::atomic::Ordering::Relaxed)
    );
    // Every DELETE was followed by an INSERT of the same id: the row count is unchanged.
    assert_eq!(
        lines(&mut s, "SELECT COUNT(*) FROM sbtest1"),
        [TABLE_SIZE.to_string()]
    );
    // The index agrees with the rows: reading through it finds every row once, with its k.
    let by_rows = lines(
        &mut s,
        "SELECT COUNT(*), SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 1000000",
    );
    let by_index = lines(
        &mut s,
        "SELECT COUNT(*), SUM(k) FROM sbtest1 WHERE k BETWEEN -1000000 AND 1000000000",
    );
    assert_eq!(by_rows, by_index);
    for row in lines(&mut s, "SELECT id, k FROM sbtest1 WHERE id <= 60") {
        let (id, k) = row.split_once('|').unwrap();
        let ids = lines(&mut s, &format!("SELECT id FROM sbtest1 WHERE k = {k}"));
        assert!(
            ids.contains(&id.to_owned()),
            "row {id} with k={k} not found through k_1: {ids:?}"
        );
    }

    // The read_write selects, prepared.
    let point = s.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    let range = s
        .prepare("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?")
        .unwrap();
    let sum = s
        .prepare("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?")
        .unwrap();
    let order = s
        .prepare("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c")
        .unwrap();
    let distinct = s
        .prepare("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c")
        .unwrap();
    let rows_of = |o: Output| match o {
        Output::Rows { rows, .. } => rows,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        rows_of(s.execute(point.id, &[Value::Int(1000)]).unwrap()).len(),
        1
    );
    let r = rows_of(
        s.execute(range.id, &[Value::Int(100), Value::Int(199)])
            .unwrap(),
    );
    assert_eq!(r.len(), 100);
    let total = rows_of(
        s.execute(sum.id, &[Value::Int(100), Value::Int(199)])
            .unwrap(),
    );
    assert!(
        matches!(total[0][0], Value::Decimal(_)),
        "SUM of INTEGER is DECIMAL: {total:?}"
    );
    let sorted = rows_of(
        s.execute(order.id, &[Value::Int(100), Value::Int(199)])
            .unwrap(),
    );
    assert!(
        sorted
            .windows(2)
            .all(|w| w[0][0].to_text() <= w[1][0].to_text())
    );
    let d = rows_of(
        s.execute(distinct.id, &[Value::Int(100), Value::Int(199)])
            .unwrap(),
    );
    assert!(d.len() <= 100 && !d.is_empty());
    ok(&mut s, "DROP TABLE IF EXISTS sbtest1");
    assert_eq!(lines(&mut s, "SHOW TABLES"), Vec::<String>::new());
}
