//! The lag probe of `bench replica`: one row updated through a node, watched on the
//! replica.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use super::super::sysbench::{Endpoint, SysbenchError};

fn sql_err(what: &str, e: impl ToString) -> SysbenchError {
    SysbenchError::Setup {
        what: format!("the lag probe ({what})"),
        detail: e.to_string(),
    }
}

/// The sequence number of the last GTID of `pos` (`0-1000-42` → 42; several domains: the
/// largest; empty → 0).
pub fn gtid_seq(pos: &str) -> u64 {
    pos.split(',')
        .filter_map(|g| g.trim().rsplit('-').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

fn conn(host: &str, port: u16) -> Result<mysql::Conn, SysbenchError> {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false);
    mysql::Conn::new(opts).map_err(|e| sql_err("connect", e))
}

/// Connections to a node and to the replica, and the probe row.
pub(super) struct Probe {
    node: mysql::Conn,
    replica: mysql::Conn,
    seq: u64,
}

impl Probe {
    /// Creates `probe.p` through `ep` and connects to the replica on `replica_port`.
    pub(super) fn start(ep: &Endpoint, replica_port: u16) -> Result<Probe, SysbenchError> {
        ep.sql(
            "CREATE DATABASE IF NOT EXISTS probe; \
             CREATE TABLE IF NOT EXISTS probe.p (id INT PRIMARY KEY, v BIGINT); \
             REPLACE INTO probe.p VALUES (1, 0)",
        )?;
        Ok(Probe {
            node: conn(&ep.host, ep.port)?,
            replica: conn("127.0.0.1", replica_port)?,
            seq: 0,
        })
    }

    /// The replica's `gtid_slave_pos` sequence number.
    pub(super) fn replica_seq(&mut self) -> Result<u64, SysbenchError> {
        let pos: Option<String> = self
            .replica
            .query_first("SELECT @@GLOBAL.gtid_slave_pos")
            .map_err(|e| sql_err("gtid_slave_pos", e))?;
        Ok(gtid_seq(&pos.unwrap_or_default()))
    }

    /// Waits until the replica applied the stream up to the node's current end
    /// (`@@GLOBAL.gtid_binlog_pos` of the stream), at most `limit`.
    pub(super) fn wait_replica_at(
        &mut self,
        ep: &Endpoint,
        limit: Duration,
    ) -> Result<(), SysbenchError> {
        let want = gtid_seq(&ep.sql("SELECT @@GLOBAL.gtid_binlog_pos")?);
        let deadline = Instant::now() + limit;
        loop {
            if self.replica_seq()? >= want {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(sql_err(
                    "catch-up",
                    format!("the replica did not reach GTID seq {want} within {limit:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Probes every `every` until `stop`: each sample is the lag in microseconds, `None`
    /// when the value was not visible within 30 s.
    pub(super) fn run(
        &mut self,
        stop: &AtomicBool,
        every: Duration,
    ) -> Result<Vec<Option<u64>>, SysbenchError> {
        let mut out = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let next = Instant::now() + every;
            self.seq += 1;
            let seq = self.seq;
            // Autocommit: acknowledged when the statement returns.
            if let Err(e) = self
                .node
                .query_drop(format!("UPDATE probe.p SET v = {seq} WHERE id = 1"))
            {
                // A retryable abort under load: not a sample.
                if matches!(e, mysql::Error::MySqlError(_)) {
                    continue;
                }
                return Err(sql_err("update", e));
            }
            let acked = Instant::now();
            let deadline = acked + Duration::from_secs(30);
            let seen = loop {
                let v: Option<u64> = self
                    .replica
                    .query_first("SELECT v FROM probe.p WHERE id = 1")
                    .map_err(|e| sql_err("replica read", e))?;
                if v.is_some_and(|v| v >= seq) {
                    break Some(acked.elapsed().as_micros() as u64);
                }
                if Instant::now() > deadline {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            out.push(seen);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::gtid_seq;

    #[test]
    fn gtid_positions_parse() {
        assert_eq!(gtid_seq("0-1000-42"), 42);
        assert_eq!(gtid_seq(""), 0);
        assert_eq!(gtid_seq("0-1000-7,1-2-9"), 9);
        assert_eq!(gtid_seq("junk"), 0);
    }
}
