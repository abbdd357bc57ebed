//! [`Mysql`]: one client connection over the MySQL protocol whose statements are written
//! out as the `mysql` command-line client prints them (`mysql> ...`, bordered result
//! tables, `Query OK, N rows affected`, `ERROR code (state): message`).

use std::fmt::Write as _;

use mysql::prelude::Queryable;

use super::error::ScenarioError;

/// What one statement answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlAnswer {
    /// No result set: rows affected.
    Done {
        /// Rows affected.
        affected: u64,
    },
    /// A result set: the column names and the rows as text (`None`: NULL).
    Rows {
        /// Column names.
        columns: Vec<String>,
        /// Rows.
        rows: Vec<Vec<Option<String>>>,
    },
    /// An error.
    Error {
        /// The MySQL error code.
        code: u16,
        /// The message.
        message: String,
    },
}

impl SqlAnswer {
    /// The value of `column` in the first row, for a result set that has both.
    pub fn first(&self, column: &str) -> Option<String> {
        match self {
            SqlAnswer::Rows { columns, rows } => {
                let i = columns
                    .iter()
                    .position(|c| c.eq_ignore_ascii_case(column))?;
                rows.first()?.get(i)?.clone()
            }
            _ => None,
        }
    }
}

/// A connection and the transcript of what it ran.
pub struct Mysql {
    conn: mysql::Conn,
    /// Who the transcript says is typing (`T1`, `T2`, or empty).
    who: String,
}

impl std::fmt::Debug for Mysql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mysql").field("who", &self.who).finish()
    }
}

impl Mysql {
    /// Connects to `url` (`mysql://user@host:port`).
    ///
    /// # Errors
    /// [`ScenarioError::Setup`] when the connection fails.
    pub fn connect(url: &str, who: &str) -> Result<Mysql, ScenarioError> {
        let opts = mysql::Opts::from_url(url).map_err(|e| ScenarioError::Setup {
            detail: format!("{url}: {e}"),
        })?;
        // The node serves TCP only: no `SELECT @@socket` probe for a Unix socket.
        let opts = mysql::OptsBuilder::from_opts(opts).prefer_socket(false);
        let conn = mysql::Conn::new(opts).map_err(|e| ScenarioError::Setup {
            detail: format!("cannot connect to {url}: {e}"),
        })?;
        Ok(Mysql {
            conn,
            who: who.to_string(),
        })
    }

    /// Runs `sql` and appends it and its answer to `out` as the `mysql` client shows them.
    ///
    /// # Errors
    /// [`ScenarioError::Sql`] only when the connection itself fails; a statement's error is
    /// an answer ([`SqlAnswer::Error`]).
    pub fn run(&mut self, sql: &str, out: &mut String) -> Result<SqlAnswer, ScenarioError> {
        let answer = self.answer(sql)?;
        let prompt = if self.who.is_empty() {
            "mysql>".to_string()
        } else {
            format!("{} mysql>", self.who)
        };
        let _ = writeln!(out, "{prompt} {sql}");
        out.push_str(&render(&answer));
        Ok(answer)
    }

    fn answer(&mut self, sql: &str) -> Result<SqlAnswer, ScenarioError> {
        let failed = |e: mysql::Error| ScenarioError::Sql {
            statement: sql.to_string(),
            detail: e.to_string(),
        };
        let mut result = match self.conn.query_iter(sql) {
            Ok(r) => r,
            Err(mysql::Error::MySqlError(e)) => {
                return Ok(SqlAnswer::Error {
                    code: e.code,
                    message: e.message,
                });
            }
            Err(e) => return Err(failed(e)),
        };
        let columns: Vec<String> = result
            .columns()
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        // Read before the set is consumed: afterwards it describes the next one.
        let affected = result.affected_rows();
        let mut rows = Vec::new();
        if let Some(set) = result.iter() {
            for row in set {
                let row = match row {
                    Ok(r) => r,
                    Err(mysql::Error::MySqlError(e)) => {
                        return Ok(SqlAnswer::Error {
                            code: e.code,
                            message: e.message,
                        });
                    }
                    Err(e) => return Err(failed(e)),
                };
                rows.push(row.unwrap().into_iter().map(text_of).collect::<Vec<_>>());
            }
        }
        if columns.is_empty() {
            Ok(SqlAnswer::Done { affected })
        } else {
            Ok(SqlAnswer::Rows { columns, rows })
        }
    }
}

/// A text-protocol value as text.
fn text_of(v: mysql::Value) -> Option<String> {
    match v {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

/// An answer as the `mysql` client prints it.
pub fn render(answer: &SqlAnswer) -> String {
    let mut out = String::new();
    match answer {
        SqlAnswer::Done { affected } => {
            let rows = if *affected == 1 { "row" } else { "rows" };
            let _ = writeln!(out, "Query OK, {affected} {rows} affected");
        }
        SqlAnswer::Error { code, message } => {
            let _ = writeln!(out, "ERROR {code}: {message}");
        }
        SqlAnswer::Rows { columns, rows } => {
            let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
            let widths: Vec<usize> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    rows.iter()
                        .map(|r| r.get(i).map_or(0, |v| cell(v).chars().count()))
                        .chain([c.chars().count()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let border: String = widths
                .iter()
                .map(|w| format!("+{}", "-".repeat(w + 2)))
                .collect::<String>()
                + "+";
            let line = |cells: Vec<String>| {
                cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("| {c:<w$} "))
                    .collect::<String>()
                    + "|"
            };
            let _ = writeln!(out, "{border}");
            let _ = writeln!(out, "{}", line(columns.clone()));
            let _ = writeln!(out, "{border}");
            for r in rows {
                let _ = writeln!(out, "{}", line(r.iter().map(cell).collect()));
            }
            let _ = writeln!(out, "{border}");
            let n = rows.len();
            let _ = writeln!(out, "{n} {} in set", if n == 1 { "row" } else { "rows" });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_render_as_the_mysql_client_prints_them() {
        let rows = SqlAnswer::Rows {
            columns: vec!["id".into(), "data".into()],
            rows: vec![vec![Some("1".into()), None]],
        };
        assert_eq!(
            render(&rows),
            "+----+------+\n| id | data |\n+----+------+\n| 1  | NULL |\n+----+------+\n1 row in set\n"
        );
        assert_eq!(rows.first("DATA"), None);
        assert_eq!(rows.first("id").as_deref(), Some("1"));
        assert_eq!(
            render(&SqlAnswer::Done { affected: 2 }),
            "Query OK, 2 rows affected\n"
        );
        assert_eq!(
            render(&SqlAnswer::Error {
                code: 1213,
                message: "x".into()
            }),
            "ERROR 1213: x\n"
        );
    }
}
