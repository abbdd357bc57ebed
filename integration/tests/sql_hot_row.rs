//! The AliSQL hot-row write-up (004) as SQL: `SET GLOBAL hotspot=ON`, the inventory hints
//! on single-row UPDATEs by primary key (grouped hot updates), `SELECT ... FROM UPDATE`,
//! `SHOW GLOBAL STATUS LIKE '%Group_update%'` with live counters, `SHOW TABLE t REGIONS`.

mod sql_support;

use std::collections::HashMap;

use sql_support::{Db, affected, err, lines, ok, rows};

fn status(s: &mut surgedb::sql::Session) -> HashMap<String, u64> {
    rows(s, "show global status like '%Group_update%'")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].parse().expect("a counter is a number")))
        .collect()
}

#[test]
fn the_write_up_transcript() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database s004; use s004;");
    ok(
        &mut s,
        "set global hotspot=ON; set global hotspot_lock_type=ON;",
    );
    ok(&mut s, "create table test (id int primary key, data int);");
    assert_eq!(affected(&mut s, "insert into test values (1, 1);"), 1);
    let before = status(&mut s);
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ test set data = data + 1 where id = 1;"
        ),
        1
    );
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 1;"
        ),
        1
    );
    assert_eq!(
        lines(
            &mut s,
            "select id, data from update /*+ commit_on_success */ test set data = data + 1 where id = 1;"
        ),
        ["1|4"]
    );
    assert_eq!(lines(&mut s, "select * from test;"), ["1|4"]);
    let after = status(&mut s);
    for name in [
        "Group_update_leader_count",
        "Group_update_follower_count",
        "Group_update_fail_count",
        "Group_update_max_group_size",
    ] {
        assert!(after.contains_key(name), "{name} missing: {after:?}");
    }
    // The three hinted updates went through the grouped hot-update path.
    assert_eq!(
        after["Group_update_total_count"] - before["Group_update_total_count"],
        3,
        "{after:?}"
    );
    let regions = rows(&mut s, "show table test regions;");
    assert!(!regions.is_empty());
    for r in &regions {
        assert_ne!(r[3], "NULL", "a region without a leader: {regions:?}");
        assert_eq!(r[3], r[4]);
    }
    // target_affect_row not met: 7532, nothing written.
    let e = err(
        &mut s,
        "update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 2",
    );
    assert_eq!(e.code, 7532, "{}", e.message);
    // A hint-less UPDATE of the same row keeps working (ordinary lock), inside a
    // transaction too.
    assert_eq!(
        affected(&mut s, "update test set data = data + 1 where id = 1"),
        1
    );
    ok(
        &mut s,
        "begin; update test set data = data + 10 where id = 1; commit",
    );
    assert_eq!(lines(&mut s, "select data from test where id = 1"), ["15"]);
    // Hints inside a transaction: commit_on_success commits it all.
    ok(
        &mut s,
        "insert into test values (2, 0); begin; update test set data = 100 where id = 2",
    );
    ok(
        &mut s,
        "update /*+ commit_on_success */ test set data = data + 1 where id = 1",
    );
    assert!(!surgedb::sql::SqlSession::in_transaction(&s));
    assert_eq!(
        lines(&mut s, "select data from test order by id"),
        ["16", "100"]
    );
    // rollback_on_fail rolls the whole transaction back.
    ok(&mut s, "begin; update test set data = 0 where id = 2");
    let e = err(
        &mut s,
        "update /*+ rollback_on_fail target_affect_row(2) */ test set data = data + 1 where id = 1",
    );
    assert_eq!(e.code, 7532);
    assert!(!surgedb::sql::SqlSession::in_transaction(&s));
    assert_eq!(
        lines(&mut s, "select data from test order by id"),
        ["16", "100"]
    );
}

#[test]
fn concurrent_hinted_updates_group_and_lose_nothing() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database h; use h; set global hotspot = ON");
    ok(
        &mut s,
        "create table inv (id int primary key, stock bigint not null)",
    );
    ok(&mut s, "insert into inv values (1, 100000)");
    let threads = 8;
    let per = 40;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let mut c = db.session();
            scope.spawn(move || {
                ok(&mut c, "use h");
                for _ in 0..per {
                    let n = affected(
                        &mut c,
                        "update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ inv set stock = stock - 1 where id = 1",
                    );
                    assert_eq!(n, 1);
                }
            });
        }
        // A plain UPDATE of the same row meanwhile.
        let mut p = db.session();
        ok(&mut p, "use h");
        for _ in 0..10 {
            assert_eq!(
                affected(&mut p, "update inv set stock = stock - 1 where id = 1"),
                1
            );
        }
    });
    assert_eq!(
        lines(&mut s, "select stock from inv"),
        [(100000 - threads * per - 10).to_string()]
    );
    let st = status(&mut s);
    assert_eq!(
        st["Group_update_total_count"],
        (threads * per) as u64,
        "{st:?}"
    );
    assert!(st["Group_update_leader_count"] <= st["Group_update_total_count"]);
}
