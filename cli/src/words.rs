//! Command lines given as one string (`--spawn "node server.js --stdio"`), split into words.
//!
//! The splitting is `shlex`'s (POSIX shell words, as Python's `shlex` and C's `wordexp` split
//! them).

use crate::error::CliError;

/// Split a command line into words the way a POSIX shell does, without expansions: blanks
/// separate words, `'…'` is literal, `"…"` keeps blanks (a backslash escapes `"`, `\`, `$` and
/// `` ` `` in it), a backslash outside quotes escapes the next character, and a word that starts
/// with `#` starts a comment.
pub(crate) fn split_command(line: &str) -> Result<Vec<String>, CliError> {
    let words = shlex::split(line).ok_or_else(|| CliError::CommandLine { line: line.to_owned() })?;
    if words.is_empty() {
        return Err(CliError::EmptyCommand);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell_splits_words() {
        assert_eq!(split_command("node server.js --stdio").unwrap(), ["node", "server.js", "--stdio"]);
        assert_eq!(
            split_command(r#"sh -c 'echo "a b"' "x\"y" a\ b ''"#).unwrap(),
            ["sh", "-c", r#"echo "a b""#, "x\"y", "a b", ""]
        );
        assert!(matches!(split_command("unterminated 'quote"), Err(CliError::CommandLine { .. })));
        assert!(matches!(split_command("trailing \\"), Err(CliError::CommandLine { .. })));
        assert!(matches!(split_command("   "), Err(CliError::EmptyCommand)));
    }
}
