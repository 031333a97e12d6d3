//! Rename conventions for method names and argument keys (serde's `rename_all` vocabulary).

/// How a Rust `snake_case` name is spelled on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenameRule {
    /// `read_text_file` (the Rust name as written).
    Snake,
    /// `readTextFile`.
    Camel,
    /// `ReadTextFile`.
    Pascal,
    /// `read-text-file`.
    Kebab,
    /// `READ_TEXT_FILE`.
    ScreamingSnake,
}

impl RenameRule {
    /// Every rule with its spelling in the attribute, in the order an error lists them.
    pub(crate) const ALL: &'static [(&'static str, RenameRule)] = &[
        ("camelCase", RenameRule::Camel),
        ("snake_case", RenameRule::Snake),
        ("PascalCase", RenameRule::Pascal),
        ("kebab-case", RenameRule::Kebab),
        ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ];

    pub(crate) fn from_str(s: &str) -> Option<Self> {
        RenameRule::ALL.iter().find(|(name, _)| *name == s).map(|(_, rule)| *rule)
    }

    /// Apply to a Rust identifier written in `snake_case` (a leading `r#` already removed).
    pub(crate) fn apply(self, snake: &str) -> String {
        let words = snake.split('_').filter(|w| !w.is_empty());
        match self {
            RenameRule::Snake => snake.to_owned(),
            RenameRule::Camel => {
                let mut out = String::with_capacity(snake.len());
                for (i, word) in words.enumerate() {
                    if i == 0 {
                        out.push_str(word);
                    } else {
                        capitalize_into(&mut out, word);
                    }
                }
                out
            }
            RenameRule::Pascal => {
                let mut out = String::with_capacity(snake.len());
                for word in words {
                    capitalize_into(&mut out, word);
                }
                out
            }
            RenameRule::Kebab => words.collect::<Vec<_>>().join("-"),
            RenameRule::ScreamingSnake => words.map(str::to_uppercase).collect::<Vec<_>>().join("_"),
        }
    }
}

fn capitalize_into(out: &mut String, word: &str) {
    let mut chars = word.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
}

/// The identifier as a name: without the `r#` of a raw identifier.
pub(crate) fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    match s.strip_prefix("r#") {
        Some(rest) => rest.to_owned(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;

    #[test]
    fn rules_spell_a_snake_case_name() {
        assert_eq!(Camel.apply("read_text_file"), "readTextFile");
        assert_eq!(Pascal.apply("read_text_file"), "ReadTextFile");
        assert_eq!(Kebab.apply("read_text_file"), "read-text-file");
        assert_eq!(ScreamingSnake.apply("read_text_file"), "READ_TEXT_FILE");
        assert_eq!(Snake.apply("read_text_file"), "read_text_file");
        assert_eq!(Camel.apply("ping"), "ping");
    }
}
