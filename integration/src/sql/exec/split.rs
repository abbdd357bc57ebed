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

#[cfg(test)]
mod tests {
    use super::*;

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
