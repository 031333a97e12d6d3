//! Command lines given as one string (`--spawn "node server.js --stdio"`), split into words.

/// Split a command line into words the way a POSIX shell does, without expansions: blanks
/// separate words, `'…'` is literal, `"…"` keeps blanks (a backslash escapes `"`, `\`, `$` and
/// `` ` `` in it), and a backslash outside quotes escapes the next character.
pub(crate) fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("unterminated ' in {line:?}")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(format!("unterminated \" in {line:?}")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(format!("unterminated \" in {line:?}")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("a trailing backslash in {line:?}")),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        return Err("an empty command".into());
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn commands_split_like_a_shell_splits_words() {
        assert_eq!(split_command("node server.js --stdio").unwrap(), ["node", "server.js", "--stdio"]);
        assert_eq!(
            split_command(r#"sh -c 'echo "a b"' "x\"y" a\ b ''"#).unwrap(),
            ["sh", "-c", r#"echo "a b""#, "x\"y", "a b", ""]
        );
        assert!(split_command("unterminated 'quote").is_err());
        assert!(split_command("   ").is_err());
    }
}
