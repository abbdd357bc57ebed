//! [`ReplicaVars`]: what a replica told its master connection with `SET @var = ...`, kept
//! per connection (MariaDB keeps them as the connection's user variables, which the dump
//! thread reads).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::commands::BinlogDump;
use super::dump::DumpOptions;
use super::dump_start::Start;
use super::error::ReplicationError;
use super::gtid_pos::GtidPos;
use super::queries::SetValue;
use super::source::ReplicationSource;

/// The checksum this server's binlog uses (`@@global.binlog_checksum`).
pub(crate) const BINLOG_CHECKSUM: &str = "CRC32";

/// One connection's replication variables and the source it may serve.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplicaVars {
    /// The source; `None`: this server serves no binlog.
    pub(crate) source: Option<Arc<dyn ReplicationSource>>,
    values: BTreeMap<String, SetValue>,
}

impl ReplicaVars {
    /// No variables set yet.
    pub(crate) fn new(source: Option<Arc<dyn ReplicationSource>>) -> ReplicaVars {
        ReplicaVars {
            source,
            values: BTreeMap::new(),
        }
    }

    /// Forgets every variable (COM_RESET_CONNECTION clears user variables).
    pub(crate) fn reset(&mut self) {
        self.values.clear();
    }

    /// `SET @name = value` (the name lowercased). `@@global.binlog_checksum` is resolved
    /// now, as MariaDB evaluates the right side at `SET` time.
    pub(crate) fn set(&mut self, name: &str, value: SetValue) {
        let value = match value {
            SetValue::Global(g) if g == "binlog_checksum" => SetValue::Str(BINLOG_CHECKSUM.into()),
            other => other,
        };
        self.values.insert(name.to_string(), value);
    }

    /// The value of `@name` as text, `None` for NULL (never set).
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        match self.values.get(name)? {
            SetValue::Int(n) => Some(n.to_string()),
            SetValue::Str(s) => Some(s.clone()),
            // A global the connection does not know evaluates to NULL.
            SetValue::Global(_) => None,
        }
    }

    /// The dump's options from the variables and the request: a GTID start when
    /// `@slave_connect_state` was set, else the request's file and position; heartbeats
    /// every `@master_heartbeat_period` nanoseconds when it is set and not 0.
    ///
    /// # Errors
    /// [`ReplicationError::BadConnectState`] when `@slave_connect_state` does not parse.
    pub(crate) fn dump_options(&self, req: &BinlogDump) -> Result<DumpOptions, ReplicationError> {
        let start = match self.get("slave_connect_state") {
            Some(state) => Start::Gtid(GtidPos::parse(&state)?),
            None => Start::File(
                String::from_utf8_lossy(&req.file).into_owned(),
                u64::from(req.position),
            ),
        };
        let heartbeat = match self.values.get("master_heartbeat_period") {
            Some(SetValue::Int(ns)) if *ns > 0 => Some(Duration::from_nanos(*ns as u64)),
            // MariaDB sends the period as a decimal; a quoted one counts the same.
            Some(SetValue::Str(s)) => s
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&ns| ns > 0)
                .map(Duration::from_nanos),
            _ => None,
        };
        Ok(DumpOptions {
            start,
            heartbeat,
            non_blocking: req.non_blocking(),
            checksum_at_connect: self
                .get("master_binlog_checksum")
                .is_some_and(|v| v.eq_ignore_ascii_case("CRC32")),
            checksum_aware: self.values.contains_key("master_binlog_checksum"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_to_dump_options() {
        let mut v = ReplicaVars::new(None);
        let req = BinlogDump {
            position: 120,
            flags: 1,
            server_id: 9,
            file: b"surge-bin.000002".to_vec(),
        };
        let o = v.dump_options(&req).unwrap();
        assert_eq!(o.start, Start::File("surge-bin.000002".into(), 120));
        assert_eq!(o.heartbeat, None);
        assert!(o.non_blocking);
        assert!(!o.checksum_at_connect, "never set: MariaDB's UNDEF");
        assert!(!o.checksum_aware);
        v.set("master_binlog_checksum", SetValue::Str("NONE".into()));
        assert!(!v.dump_options(&req).unwrap().checksum_at_connect);
        assert!(v.dump_options(&req).unwrap().checksum_aware);
        v.set("master_heartbeat_period", SetValue::Int(1_500_000_000));
        v.set("slave_connect_state", SetValue::Str("0-1-7".into()));
        v.set(
            "master_binlog_checksum",
            SetValue::Global("binlog_checksum".into()),
        );
        let o = v.dump_options(&req).unwrap();
        assert_eq!(o.start, Start::Gtid(GtidPos::parse("0-1-7").unwrap()));
        assert_eq!(o.heartbeat, Some(Duration::from_millis(1500)));
        assert_eq!(v.get("master_binlog_checksum").as_deref(), Some("CRC32"));
        assert!(o.checksum_at_connect);
        assert_eq!(v.get("slave_gtid_strict_mode"), None);
        v.set("master_heartbeat_period", SetValue::Int(0));
        assert_eq!(v.dump_options(&req).unwrap().heartbeat, None);
        v.set("slave_connect_state", SetValue::Str("0-1".into()));
        let e = v.dump_options(&req).unwrap_err();
        assert!(e.to_string().contains("bad GTID position \"0-1\""), "{e}");
    }
}
