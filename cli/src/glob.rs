//! Method-name globs for `show --method`: `*` any run of characters (slashes included), `?` one
//! character, everything else itself.

/// Whether `name` matches `pattern`.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    // The classic two-pointer match with backtracking to the last `*`.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_method_names() {
        assert!(matches("textDocument/*", "textDocument/hover"));
        assert!(matches("*hover", "textDocument/hover"));
        assert!(matches("*/did*", "textDocument/didOpen"));
        assert!(matches("initialize", "initialize"));
        assert!(!matches("initialize", "initialized"));
        assert!(matches("initialize?", "initialized"));
        assert!(matches("*", ""));
        assert!(!matches("window/*", "textDocument/hover"));
        assert!(matches("a*b*c", "aXbYbZc"));
    }
}
