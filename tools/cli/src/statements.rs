// SPDX-License-Identifier: Apache-2.0
//! Splitting SQL text into statements at `;`, as a shell reads a script or
//! a multi-line entry: a `;` inside a quoted string ('...'), a quoted
//! identifier ("..."), a `--` line comment or a `/* ... */` block comment
//! does not end a statement. Doubled quotes ('it''s') stay inside the string.

/// The complete statements of `text` (each trimmed, without its `;`; empty
/// ones dropped) and the text after the last `;` (an unfinished statement,
/// untrimmed: the shell keeps reading lines onto it).
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    #[derive(PartialEq)]
    enum In {
        Code,
        Single,
        Double,
        Line,
        Block,
    }
    let b = text.as_bytes();
    let (mut state, mut start, mut i) = (In::Code, 0usize, 0usize);
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match state {
            In::Code => match (c, next) {
                (b'\'', _) => state = In::Single,
                (b'"', _) => state = In::Double,
                (b'-', Some(b'-')) => {
                    state = In::Line;
                    i += 1;
                }
                (b'/', Some(b'*')) => {
                    state = In::Block;
                    i += 1;
                }
                (b';', _) => {
                    let stmt = text[start..i].trim();
                    if !is_blank(stmt) {
                        out.push(stmt.to_string());
                    }
                    start = i + 1;
                }
                _ => {}
            },
            In::Single if c == b'\'' => state = In::Code,
            In::Double if c == b'"' => state = In::Code,
            In::Line if c == b'\n' => state = In::Code,
            In::Block if c == b'*' && next == Some(b'/') => {
                state = In::Code;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    (out, text[start..].to_string())
}

/// Whether `s` holds nothing but white space and comments.
pub fn is_blank(s: &str) -> bool {
    let mut t = s.trim_start();
    loop {
        if let Some(r) = t.strip_prefix("--") {
            t = r.split_once('\n').map(|(_, x)| x).unwrap_or("").trim_start();
        } else if let Some(r) = t.strip_prefix("/*") {
            t = r.split_once("*/").map(|(_, x)| x).unwrap_or("").trim_start();
        } else {
            return t.is_empty();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_blank, split_statements};

    fn split(s: &str) -> (Vec<&'static str>, String) {
        let (v, r) = split_statements(s);
        (v.into_iter().map(|x| &*Box::leak(x.into_boxed_str())).collect(), r)
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        assert_eq!(split("SELECT 1; SELECT 2;"), (vec!["SELECT 1", "SELECT 2"], String::new()));
        assert_eq!(split("SELECT 1;\nSELECT 2"), (vec!["SELECT 1"], "\nSELECT 2".to_string()));
        assert_eq!(split("SELECT ';' AS s;"), (vec!["SELECT ';' AS s"], String::new()));
        assert_eq!(split("SELECT 'it''s;' AS s;"), (vec!["SELECT 'it''s;' AS s"], String::new()));
        assert_eq!(split("SELECT 1 AS \"a;b\";"), (vec!["SELECT 1 AS \"a;b\""], String::new()));
        assert_eq!(split("SELECT 1 -- a; comment\n;"), (vec!["SELECT 1 -- a; comment"], String::new()));
        assert_eq!(split("SELECT /* ; */ 1;"), (vec!["SELECT /* ; */ 1"], String::new()));
        assert_eq!(split(";;  ;"), (vec![], String::new()));
        assert_eq!(split("-- only a comment;\n"), (vec![], "-- only a comment;\n".to_string()));
        assert_eq!(split("SELECT 'open;"), (vec![], "SELECT 'open;".to_string()));
    }

    #[test]
    fn blank_text() {
        assert!(is_blank(""));
        assert!(is_blank("  \n -- c\n /* d */ "));
        assert!(!is_blank("-- c\nSELECT 1"));
    }
}
