//! The statements a MariaDB replica sends before COM_BINLOG_DUMP, recognised by their
//! tokens (case and spacing do not matter), so that the connection answers them itself
//! instead of its SQL session. Anything else is `None` and goes to the session.
//!
//! The list is what MariaDB 10.11's `get_master_version_and_clock`, `request_dump` and the
//! client library send (<https://mariadb.com/kb/en/gtid/>,
//! <https://mariadb.com/kb/en/semisynchronous-replication/>), plus the operator's
//! `SHOW MASTER STATUS`, `SHOW BINARY LOGS`, `PURGE BINARY LOGS` and
//! `SELECT @@GLOBAL.gtid_binlog_pos`.

/// The user variables a replica sets on its master connection (MariaDB reads them in the
/// binlog dump thread). Any other `SET @var` goes to the SQL session.
pub const REPLICA_USER_VARIABLES: &[&str] = &[
    "master_heartbeat_period",
    "master_binlog_checksum",
    "mariadb_slave_capability",
    "slave_connect_state",
    "slave_gtid_strict_mode",
    "slave_gtid_ignore_duplicates",
    "slave_until_gtid",
    "rpl_semi_sync_slave",
];

/// The global variables answered from the replication source. Others go to the session.
pub const SOURCE_GLOBALS: &[&str] = &[
    "gtid_domain_id",
    "gtid_binlog_pos",
    "gtid_current_pos",
    "gtid_binlog_state",
    "server_id",
    "binlog_checksum",
    "log_bin",
];

/// A value on the right of `SET @var =`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetValue {
    /// An integer literal.
    Int(i64),
    /// A quoted string (escapes resolved).
    Str(String),
    /// `@@[global.]name` (lowercased, without the scope).
    Global(String),
}

/// A statement the connection answers itself when it serves a replication source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaQuery {
    /// `SELECT UNIX_TIMESTAMP()`.
    UnixTimestamp,
    /// `SHOW [GLOBAL|SESSION] VARIABLES LIKE 'pattern'` for `server_id` or a
    /// `rpl_semi_sync_%` variable (the pattern lowercased).
    ShowVariablesLike(String),
    /// `SET @name = value` for a name in [`REPLICA_USER_VARIABLES`] (lowercased).
    SetUserVariable {
        /// The variable, lowercased.
        name: String,
        /// Its new value.
        value: SetValue,
    },
    /// `SELECT @name` for a name in [`REPLICA_USER_VARIABLES`] (lowercased).
    SelectUserVariable(String),
    /// `SELECT @@[GLOBAL.]name` for a name in [`SOURCE_GLOBALS`] (lowercased).
    SelectGlobal(String),
    /// `SET NAMES charset [COLLATE collation]` (also given to the session, which may keep
    /// the character set; the answer is OK either way).
    SetNames,
    /// `SET [@@session.]skip_replication = n`.
    SetSkipReplication,
    /// `SHOW MASTER STATUS` / `SHOW BINLOG STATUS`.
    ShowMasterStatus,
    /// `SHOW BINARY LOGS` / `SHOW MASTER LOGS`.
    ShowBinaryLogs,
    /// `PURGE {BINARY|MASTER} LOGS TO 'name'`.
    PurgeTo(String),
    /// `PURGE {BINARY|MASTER} LOGS BEFORE 'datetime'` (the text as given).
    PurgeBefore(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// A bare word, lowercased.
    Word(String),
    /// `@name`, lowercased.
    User(String),
    /// `@@[scope.]name`, lowercased, scope dropped.
    Global(String),
    Str(String),
    Int(i64),
    Punct(char),
}

/// The most tokens a recognised statement has: five (`SET NAMES x COLLATE y`,
/// `PURGE BINARY LOGS TO 'f'`, `SHOW GLOBAL VARIABLES LIKE 'p'`) and up to two `;`.
/// Longer statements (every sysbench statement that gets this far) stop being split there.
const MAX_TOKENS: usize = 7;

/// Splits `sql` into tokens; `None` for anything the replica's statements never contain.
fn tokens(sql: &str) -> Option<Vec<Tok>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word_end = |mut j: usize| {
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
            j += 1;
        }
        j
    };
    while i < b.len() {
        if out.len() > MAX_TOKENS {
            return None;
        }
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'@' {
            let global = b.get(i + 1) == Some(&b'@');
            let start = i + if global { 2 } else { 1 };
            let end = word_end(start);
            if end == start {
                return None;
            }
            let name = sql[start..end].to_ascii_lowercase();
            if global {
                let name = ["global.", "session.", "local."]
                    .iter()
                    .find_map(|p| name.strip_prefix(p))
                    .unwrap_or(&name)
                    .to_string();
                out.push(Tok::Global(name));
            } else {
                out.push(Tok::User(name));
            }
            i = end;
        } else if c == b'\'' || c == b'"' {
            let (s, next) = quoted(sql, i)?;
            out.push(Tok::Str(s));
            i = next;
        } else if c.is_ascii_digit() || (c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            out.push(Tok::Int(sql[i..j].parse().ok()?));
            i = j;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = word_end(i);
            out.push(Tok::Word(sql[i..end].to_ascii_lowercase()));
            i = end;
        } else if matches!(c, b'=' | b'(' | b')' | b';' | b',') {
            out.push(Tok::Punct(char::from(c)));
            i += 1;
        } else {
            return None;
        }
    }
    while out.last() == Some(&Tok::Punct(';')) {
        out.pop();
    }
    Some(out)
}

/// The quoted string starting at `start` (its quote character), with `\x` and doubled
/// quotes resolved; and the offset after it.
fn quoted(sql: &str, start: usize) -> Option<(String, usize)> {
    let b = sql.as_bytes();
    let q = b[start];
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let e = *b.get(i + 1)?;
                out.push(match e {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'0' => 0,
                    other => other,
                });
                i += 2;
            }
            c if c == q => {
                if b.get(i + 1) == Some(&q) {
                    out.push(q);
                    i += 2;
                } else {
                    return Some((String::from_utf8(out).ok()?, i + 1));
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

fn word(t: &Tok, w: &str) -> bool {
    matches!(t, Tok::Word(x) if x == w)
}

impl ReplicaQuery {
    /// Recognises `sql`; `None` when it is not one of the statements above.
    pub fn parse(sql: &str) -> Option<ReplicaQuery> {
        use Tok::{Global, Int, Punct, Str, User, Word};
        let t = tokens(sql)?;
        let w = |i: usize, s: &str| t.get(i).is_some_and(|x| word(x, s));
        match t.as_slice() {
            [Word(s), Word(f), Punct('('), Punct(')')]
                if s == "select" && f == "unix_timestamp" =>
            {
                Some(ReplicaQuery::UnixTimestamp)
            }
            [Word(s), User(v)] if s == "select" && REPLICA_USER_VARIABLES.contains(&v.as_str()) => {
                Some(ReplicaQuery::SelectUserVariable(v.clone()))
            }
            [Word(s), Global(v)] if s == "select" && SOURCE_GLOBALS.contains(&v.as_str()) => {
                Some(ReplicaQuery::SelectGlobal(v.clone()))
            }
            [Word(s), User(v), Punct('='), value]
                if s == "set" && REPLICA_USER_VARIABLES.contains(&v.as_str()) =>
            {
                let value = match value {
                    Int(n) => SetValue::Int(*n),
                    Str(s) => SetValue::Str(s.clone()),
                    Global(g) => SetValue::Global(g.clone()),
                    _ => return None,
                };
                Some(ReplicaQuery::SetUserVariable {
                    name: v.clone(),
                    value,
                })
            }
            [Word(s), Word(n), _] if s == "set" && n == "names" => Some(ReplicaQuery::SetNames),
            [Word(s), Word(n), _, Word(c), _] if s == "set" && n == "names" && c == "collate" => {
                Some(ReplicaQuery::SetNames)
            }
            [Word(s), var, Punct('='), Int(_)]
                if s == "set"
                    && (word(var, "skip_replication")
                        || matches!(var, Global(g) if g == "skip_replication")) =>
            {
                Some(ReplicaQuery::SetSkipReplication)
            }
            [Word(p), Word(b), Word(l), Word(how), Str(arg)]
                if p == "purge" && (b == "binary" || b == "master") && l == "logs" =>
            {
                match how.as_str() {
                    "to" => Some(ReplicaQuery::PurgeTo(arg.clone())),
                    "before" => Some(ReplicaQuery::PurgeBefore(arg.clone())),
                    _ => None,
                }
            }
            _ if w(0, "show") => {
                let rest = &t[1..];
                let rest = match rest.first() {
                    Some(x) if word(x, "global") || word(x, "session") => &rest[1..],
                    _ => rest,
                };
                match rest {
                    [Word(v), Word(l), Str(p)] if v == "variables" && l == "like" => {
                        let p = p.to_ascii_lowercase();
                        (p == "server_id" || p.starts_with("rpl_semi_sync_"))
                            .then_some(ReplicaQuery::ShowVariablesLike(p))
                    }
                    [Word(m), Word(s)] if (m == "master" || m == "binlog") && s == "status" => {
                        Some(ReplicaQuery::ShowMasterStatus)
                    }
                    [Word(m), Word(l)] if (m == "binary" || m == "master") && l == "logs" => {
                        Some(ReplicaQuery::ShowBinaryLogs)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_replica_sends() {
        use ReplicaQuery as Q;
        let cases: Vec<(&str, Option<ReplicaQuery>)> = vec![
            ("SELECT UNIX_TIMESTAMP()", Some(Q::UnixTimestamp)),
            ("select  unix_timestamp ( ) ;", Some(Q::UnixTimestamp)),
            (
                "SHOW VARIABLES LIKE 'SERVER_ID'",
                Some(Q::ShowVariablesLike("server_id".into())),
            ),
            (
                "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'",
                Some(Q::ShowVariablesLike("rpl_semi_sync_master_enabled".into())),
            ),
            ("SHOW VARIABLES LIKE 'version'", None),
            (
                "SET @master_heartbeat_period= 1000000000",
                Some(Q::SetUserVariable {
                    name: "master_heartbeat_period".into(),
                    value: SetValue::Int(1_000_000_000),
                }),
            ),
            (
                "SET @master_binlog_checksum= @@global.binlog_checksum",
                Some(Q::SetUserVariable {
                    name: "master_binlog_checksum".into(),
                    value: SetValue::Global("binlog_checksum".into()),
                }),
            ),
            (
                "SELECT @master_binlog_checksum",
                Some(Q::SelectUserVariable("master_binlog_checksum".into())),
            ),
            (
                "SET @mariadb_slave_capability=4",
                Some(Q::SetUserVariable {
                    name: "mariadb_slave_capability".into(),
                    value: SetValue::Int(4),
                }),
            ),
            (
                "SELECT @@GLOBAL.gtid_domain_id",
                Some(Q::SelectGlobal("gtid_domain_id".into())),
            ),
            (
                "SET @slave_connect_state='0-1-5,1-2-3'",
                Some(Q::SetUserVariable {
                    name: "slave_connect_state".into(),
                    value: SetValue::Str("0-1-5,1-2-3".into()),
                }),
            ),
            (
                "SET @slave_connect_state=''",
                Some(Q::SetUserVariable {
                    name: "slave_connect_state".into(),
                    value: SetValue::Str(String::new()),
                }),
            ),
            (
                "SET @slave_gtid_strict_mode=1",
                Some(Q::SetUserVariable {
                    name: "slave_gtid_strict_mode".into(),
                    value: SetValue::Int(1),
                }),
            ),
            (
                "SET @slave_gtid_ignore_duplicates=0",
                Some(Q::SetUserVariable {
                    name: "slave_gtid_ignore_duplicates".into(),
                    value: SetValue::Int(0),
                }),
            ),
            (
                "SET @slave_until_gtid='0-1-9'",
                Some(Q::SetUserVariable {
                    name: "slave_until_gtid".into(),
                    value: SetValue::Str("0-1-9".into()),
                }),
            ),
            ("SET NAMES latin1", Some(Q::SetNames)),
            (
                "set names utf8mb4 collate utf8mb4_general_ci",
                Some(Q::SetNames),
            ),
            ("SET skip_replication=1", Some(Q::SetSkipReplication)),
            (
                "SET @rpl_semi_sync_slave= 1",
                Some(Q::SetUserVariable {
                    name: "rpl_semi_sync_slave".into(),
                    value: SetValue::Int(1),
                }),
            ),
            ("SHOW MASTER STATUS", Some(Q::ShowMasterStatus)),
            ("show binary logs", Some(Q::ShowBinaryLogs)),
            ("SHOW MASTER LOGS", Some(Q::ShowBinaryLogs)),
            (
                "purge binary logs to 'surge-stream-bin.000003'",
                Some(Q::PurgeTo("surge-stream-bin.000003".into())),
            ),
            (
                "PURGE MASTER LOGS BEFORE '2026-12-05 10:00:00';",
                Some(Q::PurgeBefore("2026-12-05 10:00:00".into())),
            ),
            ("PURGE BINARY LOGS AFTER 'x'", None),
            (
                "SELECT @@global.gtid_binlog_pos",
                Some(Q::SelectGlobal("gtid_binlog_pos".into())),
            ),
            (
                "select @@gtid_current_pos",
                Some(Q::SelectGlobal("gtid_current_pos".into())),
            ),
            // The session's business: other variables, other statements, bad quoting.
            ("SET @x = 1", None),
            ("SELECT @x", None),
            ("SELECT @@version", None),
            ("SELECT 1", None),
            ("SET @slave_connect_state='0-1-5", None),
            ("SET @slave_connect_state= 'a' 'b'", None),
            ("INSERT INTO t VALUES (1)", None),
            ("", None),
        ];
        for (sql, want) in cases {
            assert_eq!(ReplicaQuery::parse(sql), want, "{sql}");
        }
    }

    #[test]
    fn quoting() {
        let q = ReplicaQuery::parse(r"SET @slave_until_gtid='a\'b''c\\'").unwrap();
        assert_eq!(
            q,
            ReplicaQuery::SetUserVariable {
                name: "slave_until_gtid".into(),
                value: SetValue::Str("a'b'c\\".into())
            }
        );
    }
}
