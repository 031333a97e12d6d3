//! Peer input quoted in log lines and error messages, cut to a bound.
//!
//! A peer chooses its ids, method names and params, and a megabyte of any of them must not
//! become a megabyte log line: every line that quotes peer input goes through
//! the connection's `Tracer::quote` (cut at the trace limit, then redacted),
//! and an error message that quotes it through [`cut`].

use std::borrow::Cow;
use std::fmt::{self, Write};

/// `text` cut to at most `max` bytes (at a character boundary), noting how much was left out.
pub(crate) fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…({} more bytes)", &text[..end], text.len() - end))
}

/// Formats `value` keeping its first `max` bytes and counting the rest: the whole text is never
/// held, however long it is.
pub(crate) fn bounded(value: &dyn fmt::Display, max: usize) -> (String, usize) {
    let mut out = Bounded { text: String::new(), max, more: 0 };
    // `Bounded` never fails; a `Display` impl that does leaves what it wrote.
    let _ = write!(out, "{value}");
    (out.text, out.more)
}

struct Bounded {
    text: String,
    max: usize,
    more: usize,
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.max - self.text.len();
        if s.len() <= room && self.more == 0 {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room.min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        if self.more == 0 {
            self.text.push_str(&s[..end]);
        } else {
            end = 0;
        }
        self.more += s.len() - end;
        // The rest of `s` is only counted: once something was left out, nothing more is kept
        // (a later short piece would read as if it followed on).
        if self.more > 0 {
            self.max = self.text.len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_is_cut_at_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcdef", 3), "abc…(3 more bytes)");
        assert_eq!(cut("ééé", 3), "é…(4 more bytes)");
        let (text, more) = bounded(&format_args!("{}{}", "a".repeat(10), "é".repeat(10)), 11);
        assert_eq!((text.as_str(), more), ("aaaaaaaaaa", 20));
        let (text, more) = bounded(&"short", 100);
        assert_eq!((text.as_str(), more), ("short", 0));
    }
}
