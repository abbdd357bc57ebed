//! A concurrent bank over SQL: transfers in pessimistic and optimistic transactions from
//! several sessions at once, retried on 1213/1205; the total is preserved.

mod sql_support;

use sql_support::{Db, lines, ok};
use surgedb::sql::SqlSession;

#[test]
fn transfers_preserve_the_total() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database bank; use bank");
    ok(
        &mut s,
        "create table acct (id int primary key, balance bigint not null)",
    );
    let accounts = 8;
    let values: Vec<String> = (1..=accounts).map(|i| format!("({i}, 1000)")).collect();
    ok(
        &mut s,
        &format!("insert into acct values {}", values.join(",")),
    );
    let threads = 6;
    let transfers = 30;
    let aborts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let mut c = db.session();
            let aborts = &aborts;
            scope.spawn(move || {
                c.use_database("bank").unwrap();
                if t % 3 == 2 {
                    ok(&mut c, "set tidb_txn_mode = 'optimistic'");
                }
                let mut seed = t as u64 * 7 + 3;
                for _ in 0..transfers {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let from = (seed >> 33) % accounts + 1;
                    let to = (from + (seed >> 40) % (accounts - 1)) % accounts + 1;
                    let amount = (seed >> 50) % 50 + 1;
                    loop {
                        let script = [
                            "begin".to_owned(),
                            format!("select balance from acct where id = {from} for update"),
                            format!(
                                "update acct set balance = balance - {amount} where id = {from}"
                            ),
                            format!("update acct set balance = balance + {amount} where id = {to}"),
                            "commit".to_owned(),
                        ];
                        let mut retry = false;
                        for stmt in &script {
                            match c.query(stmt).pop().unwrap() {
                                Ok(_) => {}
                                Err(e) if matches!(e.code, 1213 | 1205) => {
                                    assert!(!c.in_transaction(), "1213/1205 rolls back: {e}");
                                    retry = true;
                                    break;
                                }
                                Err(e) => panic!("{stmt}: {e}"),
                            }
                        }
                        if !retry {
                            break;
                        }
                        aborts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    eprintln!(
        "aborted and retried: {}",
        aborts.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert_eq!(
        lines(&mut s, "select sum(balance), count(*) from acct"),
        [format!("{}|{accounts}", accounts * 1000)]
    );
}
