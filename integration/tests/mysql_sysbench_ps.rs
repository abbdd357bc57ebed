//! sysbench's Lua SQL API (MariaDB Connector/C underneath) drives prepared statements the way
//! its OLTP scripts do: bind once, execute many times. Connector/C sends the parameter types
//! only on the first execution after binding, so every later execution arrives with
//! new-params-bound = 0; the rows inserted must carry exactly the values set before each
//! execution. Prepared SELECTs return binary rows Connector/C must accept (`select types`
//! covers every column kind). The full OLTP run needs the SQL layer and is not here.
//!
//! Without `sysbench` the test prints `SKIPPED: sysbench not installed` and passes, unless
//! `SURGE_REQUIRE_SYSBENCH` is set.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;

use std::process::Command;

use mysql_backend::{required, start};
use surgedb::mysql::MysqlConfig;

const SCRIPT: &str = r#"
function event()
  local t = sysbench.sql.type
  local con = sysbench.sql.driver():connect()
  local begin = con:prepare("BEGIN")
  local commit = con:prepare("COMMIT")
  local ins = con:prepare("insert into t values (?, ?)")
  local id = ins:bind_create(t.INT)
  local name = ins:bind_create(t.VARCHAR, 32)
  ins:bind_param(id, name)
  begin:execute()
  for i = 1, 50 do
    id:set(i * 3)
    name:set("row-" .. i)
    ins:execute()
  end
  commit:execute()
  local sel = con:prepare("select id, name from t where id = ?")
  local key = sel:bind_create(t.INT)
  sel:bind_param(key)
  for i = 1, 50 do
    key:set(i * 3)
    sel:execute()
  end
  local types = con:prepare("select types")
  for i = 1, 3 do types:execute() end
  local row = con:query_row("select id, name from t where id = 150")
  if row ~= "150" then error("query_row gave " .. tostring(row)) end
  con:disconnect()
  print("SYSBENCH PS OK")
end
"#;

#[test]
fn sysbench_prepared_statements_reexecute() {
    let sysbench = "sysbench";
    if Command::new(sysbench).arg("--version").output().is_err() {
        if required(&["SURGE_REQUIRE_SYSBENCH"]) {
            panic!("sysbench not installed, and SURGE_REQUIRE_SYSBENCH is set");
        }
        println!("SKIPPED: sysbench not installed");
        return;
    }
    let (server, backend) = start(MysqlConfig::default().with_user("sb", "sbpw"));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ps.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = Command::new(sysbench)
        .arg(&script)
        .args([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={}", server.local_addr().port()),
            "--mysql-user=sb",
            "--mysql-password=sbpw",
            "--mysql-db=sbtest",
            "--threads=1",
            "--events=1",
            "--time=0",
            "run",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("SYSBENCH PS OK"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let table = backend.shared.table.lock().unwrap().clone();
    let want: std::collections::BTreeMap<i64, String> =
        (1..=50).map(|i| (i * 3, format!("row-{i}"))).collect();
    assert_eq!(table, want);
    server.shutdown();
}
