//! JSON on the command line and on the terminal: arguments read from text, a file or stdin, and
//! indentation that keeps members in the order the peer wrote them.
//!
//! The indenter stays ours, on the text: it must show a message exactly as the peer wrote it.
//! `serde_json`'s pretty printer re-encodes parsed values, which rewrites numbers (`1.10` becomes
//! `1.1`, `1e3` becomes `1000.0`, an integer past 64 bits becomes a float), and keeps members in
//! order only with `preserve_order`, a feature that cargo would switch on for every crate of the
//! workspace built with the cli (changing the library's own output order in those builds).

use std::io::Read;

use serde_json::value::RawValue;

use crate::error::CliError;

/// JSON from an argument: the text itself, `@FILE` for a file's contents, `-` for stdin.
pub(crate) fn argument(arg: &str, what: &'static str) -> Result<Box<RawValue>, CliError> {
    let unreadable = |from: &str| {
        let from = from.to_owned();
        move |source| CliError::ReadArgument { what, from, source }
    };
    let text = if arg == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(unreadable("stdin"))?;
        text
    } else if let Some(path) = arg.strip_prefix('@') {
        std::fs::read_to_string(path).map_err(unreadable(path))?
    } else {
        arg.to_owned()
    };
    let json: &RawValue = serde_json::from_str(&text).map_err(|source| CliError::NotJson { what, source })?;
    Ok(json.to_owned())
}

/// `json` indented by two spaces, members in their original order (valid JSON in, or the text
/// unchanged).
pub(crate) fn pretty(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut i = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', depth * 2));
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                out.push('"');
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match (chars[i], chars.get(i + 1)) {
                        // `\/` is `/`, written so by some peers; shown plain.
                        ('\\', Some('/')) => out.push('/'),
                        ('\\', Some(&next)) => {
                            out.push('\\');
                            out.push(next);
                        }
                        (c, _) => {
                            out.push(c);
                            i += 1;
                            continue;
                        }
                    }
                    i += 2;
                }
                if i < chars.len() {
                    out.push('"');
                }
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                let next = chars[i + 1..].iter().position(|c| !c.is_whitespace()).map(|p| p + i + 1);
                if next.is_some_and(|n| chars[n] == close) {
                    out.push(c);
                    out.push(close);
                    i = next.unwrap_or(i);
                } else {
                    out.push(c);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_keeps_member_order_and_strings() {
        let json = r#"{"z":1,"a":[true,{"q":"a \"quoted\", [tricky] {string}"}],"e":{},"l":[ ]}"#;
        assert_eq!(
            pretty(json),
            "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    {\n      \"q\": \"a \\\"quoted\\\", [tricky] {string}\"\n    }\n  ],\n  \"e\": {},\n  \"l\": []\n}"
        );
        assert_eq!(pretty("null"), "null");
        assert_eq!(pretty(r#"{"uri":"file:\/\/\/a"}"#), "{\n  \"uri\": \"file:///a\"\n}");
        assert_eq!(pretty(r#""\\""#), r#""\\""#);
    }

    #[test]
    fn arguments_must_be_json() {
        assert_eq!(argument(r#" {"a": 1} "#, "params").unwrap().get(), r#"{"a": 1}"#);
        assert!(argument("{oops", "params").unwrap_err().to_string().starts_with("params is not JSON"));
        let missing = argument("@/nonexistent/file.json", "params").unwrap_err();
        assert!(matches!(missing, CliError::ReadArgument { .. }), "{missing}");
        assert!(missing.to_string().contains("/nonexistent/file.json"));
    }
}
