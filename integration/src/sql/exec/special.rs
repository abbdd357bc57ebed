//! Statements sqlparser does not parse, recognized from their text first:
//! - `set config tikv pessimistic-txn.pipelined='true'` and `pessimistic-txn.in-memory`
//!   (TiDB's online config change, <https://docs.pingcap.com/tidb/stable/dynamic-config>),
//!   and `set config surgedb lock_mode='sync'|'pipelined'|'in-memory'`;
//! - `show config [like '...']`;
//! - `SHOW TABLE t REGIONS` (TiDB, <https://docs.pingcap.com/tidb/stable/sql-statement-show-table-regions>);
//! - `SELECT cols FROM UPDATE ...` (PolarDB-X's returning form for hot-row updates);
//! - `SELECT ... LOCK IN SHARE MODE` (MySQL's older spelling of `FOR SHARE`).

use sqlparser::ast::{SetExpr, Statement};
use surge_txn::LockMode;

use super::hints::Hints;
use super::session::{Session, parse_one};
use super::show::string_rows;
use crate::sql::codec::{row_prefix, table_prefix};
use crate::sql::engine::LockSwitches;
use crate::sql::expr::like;
use crate::sql::output::{Output, SqlError};
use crate::sql::value::Value;

fn words(sql: &str) -> Vec<String> {
    sql.split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether `s` starts with the ASCII word `prefix`, ignoring case (no allocation: every
/// statement of every session passes through [`form`]).
fn starts_with_ci(s: &(impl AsRef<[u8]> + ?Sized), prefix: &str) -> bool {
    s.as_ref()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// One of the forms above, recognized from the text.
enum Form {
    SetConfig,
    ShowConfig,
    /// `SHOW TABLE name REGIONS`.
    ShowRegions,
    /// `SELECT cols FROM UPDATE ...`, with the offset of that `FROM`.
    FromUpdate(usize),
    /// `SELECT ... LOCK IN SHARE MODE`, with the offset of that `LOCK`.
    LockInShareMode(usize),
}

/// Which form `sql` is, if any. Statements that start with anything but `SET`, `SHOW` or
/// `SELECT` (sysbench's `UPDATE`, `INSERT`, `DELETE`, `BEGIN`, `COMMIT`) are turned away
/// by a prefix compare, and only `SET` / `SHOW` statements are split into words.
fn form(sql: &str) -> Option<Form> {
    let head = sql.trim_start();
    if starts_with_ci(head, "select") {
        return from_update_at(sql)
            .map(Form::FromUpdate)
            .or_else(|| lock_in_share_mode_at(sql).map(Form::LockInShareMode));
    }
    if !starts_with_ci(head, "set") && !starts_with_ci(head, "show") {
        return None;
    }
    match words(sql).as_slice() {
        [a, b, ..] if a == "set" && b == "config" => Some(Form::SetConfig),
        [a, b, ..] if a == "show" && b == "config" => Some(Form::ShowConfig),
        [a, b, _, d] if a == "show" && b == "table" && d == "regions" => Some(Form::ShowRegions),
        _ => None,
    }
}

fn from_update_at(sql: &str) -> Option<usize> {
    if !starts_with_ci(sql, "select") {
        return None;
    }
    // Matched on bytes: an offset where ASCII "from" starts is a char boundary (no
    // continuation byte is ASCII), and so is the end of an ASCII "update" after it.
    let bytes = sql.as_bytes();
    (0..bytes.len()).find(|&at| {
        starts_with_ci(&bytes[at..], "from") && {
            let rest = sql[at + 4..].trim_start();
            starts_with_ci(rest, "update")
                && rest[6..].starts_with(|c: char| c.is_whitespace() || c == '/')
        }
    })
}

/// Whether the statement's last four tokens (comments, spaces and a final `;` aside) are
/// `LOCK IN SHARE MODE`: not in a comment (`... -- lock in share mode`) or a string.
fn ends_with_lock_in_share_mode_tokens(sql: &str) -> bool {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::MySqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return false;
    };
    let mut words = tokens
        .iter()
        .rev()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .take(4);
    ["mode", "share", "in", "lock"].iter().all(|want| {
        matches!(words.next(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(want))
    })
}

/// Where a trailing `LOCK IN SHARE MODE` (any case and spacing, a `;` after it) starts.
fn lock_in_share_mode_at(sql: &str) -> Option<usize> {
    let mut end = sql.trim_end().trim_end_matches(';').len();
    for word in ["mode", "share", "in", "lock"] {
        let rest = sql[..end].trim_end();
        let start = rest.len().checked_sub(word.len())?;
        // `get` refuses an offset inside a character; a match is ASCII, so `start` is one.
        if !rest.get(start..)?.eq_ignore_ascii_case(word)
            || !sql[..start].ends_with(char::is_whitespace)
        {
            return None;
        }
        end = start;
    }
    // The text matched (cheap, and false for nearly every statement); the tokens decide.
    ends_with_lock_in_share_mode_tokens(sql).then_some(end)
}

/// `sql` with a trailing `LOCK IN SHARE MODE` spelled `FOR SHARE` (which the parser takes),
/// for a statement prepared with `?` placeholders: the text forms above run unprepared.
pub(crate) fn lock_in_share_mode_as_for_share(sql: &str) -> Option<String> {
    match form(sql) {
        Some(Form::LockInShareMode(at)) => Some(for_share(sql, at)),
        _ => None,
    }
}

/// `sql` with its `LOCK IN SHARE MODE` (from `at`) spelled `FOR SHARE`: one spelling for the
/// text and the prepared paths.
fn for_share(sql: &str, at: usize) -> String {
    format!("{} FOR SHARE", sql[..at].trim_end())
}

/// Whether `sql` is one of the forms above.
pub(crate) fn is_special(sql: &str) -> bool {
    form(sql).is_some()
}

fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

fn unquote(v: &str) -> String {
    v.trim()
        .trim_matches(|c| c == '\'' || c == '"')
        .to_ascii_lowercase()
}

fn truth(name: &str, v: &str) -> Result<bool, SqlError> {
    match v {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        other => Err(SqlError::new(
            1231,
            "42000",
            format!("config '{name}' can't be set to '{other}': true or false"),
        )),
    }
}

fn set_config(s: &Session, sql: &str) -> Result<Output, SqlError> {
    // set config <component> <name> = <value>
    let rest = sql.trim_start()[3..].trim_start()[6..].trim_start();
    let (component, assignment) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| SqlError::parse("set config needs a component and name = value"))?;
    let (name, value) = assignment
        .split_once('=')
        .ok_or_else(|| SqlError::parse("set config needs name = value"))?;
    let name = unquote(name);
    let name = name.trim_matches('`');
    let value = unquote(value);
    let admin =
        s.shared.config.admin.clone().ok_or_else(|| {
            SqlError::unsupported("set config on a node without cluster controls")
        })?;
    let mut switches = *s.shared.lock.lock();
    match (component.to_ascii_lowercase().as_str(), name) {
        ("tikv", "pessimistic-txn.pipelined") => {
            switches.pipelined = truth(name, &value)?;
            if !switches.pipelined {
                switches.in_memory = false;
            }
        }
        ("tikv", "pessimistic-txn.in-memory") => {
            switches.in_memory = truth(name, &value)?;
            if switches.in_memory {
                // In-memory locks fall back to pipelined ones: TiKV needs both on.
                switches.pipelined = true;
            }
        }
        ("surgedb", "lock_mode" | "lock-mode") => {
            let mode = match value.as_str() {
                "sync" => LockMode::Sync,
                "pipelined" => LockMode::Pipelined,
                "in-memory" | "in_memory" | "inmemory" => LockMode::InMemory,
                other => {
                    return Err(SqlError::new(
                        1231,
                        "42000",
                        format!("lock_mode can't be '{other}': sync, pipelined or in-memory"),
                    ));
                }
            };
            switches = LockSwitches::of(mode);
        }
        (c, n) => return Err(SqlError::unsupported(format!("set config {c} {n}"))),
    }
    admin
        .set_lock_mode(switches.mode())
        .map_err(|e| SqlError::internal(format!("set config: {e}")))?;
    *s.shared.lock.lock() = switches;
    Ok(Output::done(0))
}

fn show_config(s: &Session, sql: &str) -> Result<Output, SqlError> {
    let w = words(sql);
    let pattern = match w.as_slice() {
        [_, _] => None,
        [_, _, l, p] if l == "like" => Some(unquote(p)),
        _ => {
            return Err(SqlError::unsupported(
                "SHOW CONFIG with a filter other than LIKE",
            ));
        }
    };
    let sw = *s.shared.lock.lock();
    let instance = format!("node-{}", s.shared.config.node_id);
    let on = |b: bool| if b { "true" } else { "false" };
    let all = [
        (
            "tikv",
            "pessimistic-txn.pipelined",
            on(sw.pipelined).to_owned(),
        ),
        (
            "tikv",
            "pessimistic-txn.in-memory",
            on(sw.in_memory).to_owned(),
        ),
        ("surgedb", "lock_mode", sw.mode().as_str().to_owned()),
    ];
    let rows = all
        .into_iter()
        .filter(|(_, n, _)| {
            pattern
                .as_ref()
                .is_none_or(|p| like(n.as_bytes(), p.as_bytes()))
        })
        .map(|(t, n, v)| vec![text(t), text(instance.clone()), text(n), text(v)])
        .collect();
    Ok(string_rows(&["Type", "Instance", "Name", "Value"], rows))
}

fn printable(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02X}")).collect()
}

fn show_regions(s: &Session, table: &str) -> Result<Output, SqlError> {
    let schema = s.schema()?;
    let name = sqlparser::ast::ObjectName::from(
        table
            .split('.')
            .map(|p| sqlparser::ast::Ident::new(p.trim_matches('`')))
            .collect::<Vec<_>>(),
    );
    let t = s.table(&schema, &name)?;
    let admin = s.shared.config.admin.clone().ok_or_else(|| {
        SqlError::unsupported("SHOW TABLE .. REGIONS on a node without cluster controls")
    })?;
    let regions = admin
        .regions()
        .map_err(|e| SqlError::internal(format!("region map: {e}")))?;
    let start = table_prefix(t.id);
    let mut end = table_prefix(t.id);
    end.push(0xFF);
    let _ = row_prefix;
    let mut rows = Vec::new();
    for r in regions {
        let overlaps = (r.end.is_empty() || r.end.as_slice() > start.as_slice())
            && r.start.as_slice() < end.as_slice();
        if !overlaps {
            continue;
        }
        let peers: Vec<String> = r.peers.iter().map(u64::to_string).collect();
        rows.push(vec![
            Value::UInt(r.id),
            text(printable(&r.start)),
            text(printable(&r.end)),
            r.leader.map_or(Value::Null, Value::UInt),
            r.leader.map_or(Value::Null, Value::UInt),
            text(peers.join(", ")),
            Value::UInt(0),
            Value::UInt(0),
            Value::UInt(0),
            Value::UInt(0),
            Value::UInt(0),
        ]);
    }
    Ok(string_rows(
        &[
            "REGION_ID",
            "START_KEY",
            "END_KEY",
            "LEADER_ID",
            "LEADER_STORE_ID",
            "PEERS",
            "SCATTERING",
            "WRITTEN_BYTES",
            "READ_BYTES",
            "APPROXIMATE_SIZE(MB)",
            "APPROXIMATE_KEYS",
        ],
        rows,
    ))
}

fn select_from_update(s: &mut Session, sql: &str, at: usize) -> Result<Output, SqlError> {
    let projection = &sql[..at];
    let update = sql[at + 4..].trim_start();
    let Statement::Update(u) = parse_one(update)? else {
        return Err(SqlError::parse("SELECT ... FROM UPDATE needs an UPDATE"));
    };
    let Statement::Query(q) = parse_one(projection)? else {
        return Err(SqlError::parse(
            "SELECT ... FROM UPDATE needs a select list",
        ));
    };
    let SetExpr::Select(select) = q.body.as_ref() else {
        return Err(SqlError::parse(
            "SELECT ... FROM UPDATE needs a select list",
        ));
    };
    let (hints, _) = Hints::parse(&u.optimizer_hints);
    super::modify::update_with_hints(s, &u, hints, Some(select)).map(|(out, _)| out)
}

fn select_lock_in_share_mode(s: &mut Session, sql: &str, at: usize) -> Result<Output, SqlError> {
    let stmt @ Statement::Query(_) = parse_one(&for_share(sql, at))? else {
        return Err(SqlError::parse("LOCK IN SHARE MODE needs a SELECT"));
    };
    s.run(&stmt)
}

/// Runs `sql` if it is one of the forms above.
///
/// # Errors
/// As the form fails.
pub(crate) fn try_run(s: &mut Session, sql: &str) -> Result<Option<Output>, SqlError> {
    match form(sql) {
        None => Ok(None),
        Some(Form::SetConfig) => set_config(s, sql).map(Some),
        Some(Form::ShowConfig) => show_config(s, sql).map(Some),
        Some(Form::ShowRegions) => {
            let name = sql.split_whitespace().nth(2).unwrap_or("");
            show_regions(s, name).map(Some)
        }
        Some(Form::FromUpdate(at)) => select_from_update(s, sql, at).map(Some),
        Some(Form::LockInShareMode(at)) => select_lock_in_share_mode(s, sql, at).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_recognized_whatever_the_case_and_others_pass_through() {
        let kind = |sql: &str| match form(sql) {
            None => "none".to_string(),
            Some(Form::SetConfig) => "set config".into(),
            Some(Form::ShowConfig) => "show config".into(),
            Some(Form::ShowRegions) => "regions".into(),
            Some(Form::FromUpdate(at)) => format!("from update at {at}"),
            Some(Form::LockInShareMode(at)) => format!("share mode at {at}"),
        };
        let cases = [
            (
                "set config tikv pessimistic-txn.in-memory='true'",
                "set config",
            ),
            ("  SET   Config surgedb lock_mode='sync'", "set config"),
            ("show config like 'pessimistic%'", "show config"),
            ("SHOW TABLE sbtest1 REGIONS", "regions"),
            ("show table t regions extra", "none"),
            (
                "select id, data from update t set data=data+1 where id=1",
                "from update at 16",
            ),
            ("SELECT data FROM/**/UPDATE t SET data=1", "none"),
            (
                "SELECT data FROM   Update/*+ commit_on_success */ t set data=1",
                "from update at 12",
            ),
            ("select c from sbtest1 where id=1", "none"),
            ("select 'é€' from updates", "none"),
            (
                "select 'é€', x from update t set x=1 where id=2",
                "from update at 18",
            ),
            ("update t set data=data+1 where id=1", "none"),
            (
                "select v from t where id = 1 lock in share mode",
                "share mode at 29",
            ),
            ("SELECT 1\tLOCK  IN\nSHARE Mode ; ", "share mode at 9"),
            ("select 'lock in share mode'", "none"),
            ("select 1 block in share mode", "none"),
            ("select 'é' lock in share mode", "share mode at 12"),
            // In a comment: not a lock clause, whatever the text ends with.
            ("select * from t -- lock in share mode", "none"),
            ("select * from t # lock in share mode", "none"),
            ("select * from t /* lock in share mode */", "none"),
            ("select * from t where c = 'x lock in share mode'", "none"),
            ("SET autocommit=1", "none"),
            ("showconfig", "none"),
            ("", "none"),
            ("sel", "none"),
        ];
        for (sql, want) in cases {
            assert_eq!(kind(sql), want, "{sql}");
        }
    }
}
