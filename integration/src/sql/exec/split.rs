//! Splits a COM_QUERY text into statements at `;` outside quotes and comments.

/// The statements of `sql`, trimmed, empty ones dropped.
pub(crate) fn split_statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' && q != b'`' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b';' => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < sql.len() {
        out.push(&sql[start..]);
    }
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `stmt` holds only comments and blanks (`-- `, `#` and `/* */` comments; a
/// `/*!` or `/*+` comment is content): what MariaDB's grammar accepts after a last `;`.
pub(crate) fn is_comment_only(stmt: &str) -> bool {
    let mut rest = stmt.trim_start();
    while !rest.is_empty() {
        if rest.starts_with("/*!") || rest.starts_with("/*+") {
            return false;
        }
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
        } else if rest.starts_with("--") || rest.starts_with('#') {
            rest = rest.find('\n').map_or("", |e| &rest[e..]);
        } else {
            return false;
        }
        rest = rest.trim_start();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_only_pieces_are_told_apart() {
        for only in ["-- note", "# x\n", "/* a */ /* b */", " -- a\n# b"] {
            assert!(is_comment_only(only), "{only}");
        }
        for content in [
            "select 1",
            "/*!40101 set names utf8 */",
            "/*+ hint */ x",
            "-- a\nselect 1",
        ] {
            assert!(!is_comment_only(content), "{content}");
        }
    }

    #[test]
    fn splits_outside_quotes_and_comments() {
        assert_eq!(
            split_statements("create database s004; use s004;"),
            vec!["create database s004", "use s004"]
        );
        assert_eq!(
            split_statements("select ';' /* ; */; select 2 -- ;\n"),
            vec!["select ';' /* ; */", "select 2 -- ;"]
        );
        assert_eq!(split_statements("select 'a\\';'"), vec!["select 'a\\';'"]);
    }
}
