//! The README's code blocks, and the copies of them other files build (between a
//! `README: begin` and a `README: end` marker), for the tests that check the two agree.

use std::path::Path;

/// README.md's text.
pub(crate) fn text() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("README.md")
}

/// The lines of each fenced block of `readme` whose opening line is `fence` (such as
/// "```rust,ignore"), in order.
pub(crate) fn blocks<'a>(readme: &'a str, fence: &str) -> Vec<Vec<&'a str>> {
    let mut lines = readme.lines();
    let mut blocks = Vec::new();
    while lines.by_ref().any(|line| line == fence) {
        blocks.push(lines.by_ref().take_while(|line| !line.starts_with("```")).collect());
    }
    blocks
}

/// The lines between each `{comment} README: begin` and `{comment} README: end` line of
/// `text`, in order, each without `indent` at its start (where it has it).
pub(crate) fn marked<'a>(text: &'a str, comment: &str, indent: &str) -> Vec<Vec<&'a str>> {
    let (begin, end) = (format!("{comment} README: begin"), format!("{comment} README: end"));
    let mut lines = text.lines();
    let mut blocks = Vec::new();
    while lines.by_ref().any(|line| line.trim() == begin) {
        blocks.push(
            lines.by_ref().take_while(|line| line.trim() != end).map(|l| l.strip_prefix(indent).unwrap_or(l)).collect(),
        );
    }
    blocks
}
