//! The plain JSON values of a message read without serde_json: the `params` and `result` of the
//! common messages (numbers, `true`/`false`/`null`, ASCII strings without escapes, and arrays and
//! objects of those a few levels deep).
//!
//! serde_json reads a value into a `RawValue` by parsing it whole (`ignore_value`) and then
//! checking the bytes it spans are UTF-8: about 790 instructions for a small call's `params` and
//! `result` together (callgrind, row A), 540 this way. [`plain_value_len`] accepts only what
//! serde_json accepts, with the same extent; anything else (an escape, a byte outside ASCII, deep
//! nesting, a value longer than [`MAX_PLAIN_LEN`], an error) is `None`, and the caller lets
//! serde_json decide as before. The unit tests below check both agree on every value the plain
//! reader takes.
//!
//! [`skip_ws`] is the message parse's too (`parse.rs`).

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::value::RawValue;

/// How deep arrays and objects may nest in a plain value (serde_json's own limit is 128; deeper
/// values are rare in a message and go its way). One bit a level says which kind is open.
const MAX_DEPTH: u32 = 16;

/// The longest plain value: a longer one goes to serde_json, so a value that turns out not to be
/// plain near its end (an escape in the last string) is never read twice at length.
const MAX_PLAIN_LEN: usize = 4096;

/// The length of the JSON value `s` starts with, if it is plain: the bytes serde_json's raw value
/// of `s` would span (it starts at `s[0]`: no whitespace before it). All of them ASCII.
///
/// One loop, no recursion: `open` has a bit per open array or object (set for an object), the
/// innermost lowest.
pub(crate) fn plain_value_len(s: &[u8]) -> Option<usize> {
    // A value cut here has no end in what is left: `None`.
    let s = &s[..s.len().min(MAX_PLAIN_LEN)];
    let (mut at, mut open, mut depth) = (0, 0u32, 0);
    loop {
        // A value starts at `at`.
        match *s.get(at)? {
            b'[' | b'{' if depth == MAX_DEPTH => return None,
            b'[' => {
                (open, depth) = (open << 1, depth + 1);
                at = skip_ws(s, at + 1);
                if s.get(at) != Some(&b']') {
                    continue;
                }
                (open, depth, at) = (open >> 1, depth - 1, at + 1);
            }
            b'{' => {
                (open, depth) = (open << 1 | 1, depth + 1);
                at = skip_ws(s, at + 1);
                if s.get(at) != Some(&b'}') {
                    at = member_name(s, at)?;
                    continue;
                }
                (open, depth, at) = (open >> 1, depth - 1, at + 1);
            }
            b'"' => at = string(s, at)?,
            b'-' | b'0'..=b'9' => at = number(s, at)?,
            b't' => at = literal(s, at, b"true")?,
            b'f' => at = literal(s, at, b"false")?,
            b'n' => at = literal(s, at, b"null")?,
            _ => return None,
        }
        // A value ended at `at`: close what it ends, until another value is due.
        loop {
            if depth == 0 {
                return Some(at);
            }
            at = skip_ws(s, at);
            let in_object = open & 1 == 1;
            match (*s.get(at)?, in_object) {
                (b',', false) => {
                    at = skip_ws(s, at + 1);
                    break;
                }
                (b',', true) => {
                    at = member_name(s, skip_ws(s, at + 1))?;
                    break;
                }
                (b']', false) | (b'}', true) => {
                    (open, depth) = (open >> 1, depth - 1);
                    at += 1;
                }
                _ => return None,
            }
        }
    }
}

/// `json` (text [`plain_value_len`] accepted) as a `&RawValue`, without parsing it again.
///
/// serde_json has no public constructor that trusts its text, so this hands the text to
/// `RawValue`'s own `Deserialize` the way serde_json's deserializer does: as a one-entry map
/// under its (unexported, long-stable) token. Should a serde_json release change that, this is
/// `None` and the caller parses the text as before; the test
/// `a_plain_value_becomes_a_raw_value_without_a_parse` then fails, so the slower path is seen.
pub(crate) fn known_raw_value(json: &str) -> Option<&RawValue> {
    <&RawValue>::deserialize(Known(json)).ok()
}

/// serde_json's name for the member that carries a raw value's text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A member name at `at`, its colon and the whitespace around: where its value starts.
fn member_name(s: &[u8], at: usize) -> Option<usize> {
    if s.get(at) != Some(&b'"') {
        return None;
    }
    let at = skip_ws(s, string(s, at)?);
    (s.get(at) == Some(&b':')).then(|| skip_ws(s, at + 1))
}

#[inline]
fn literal(s: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    s[at..].starts_with(word).then_some(at + word.len())
}

/// The longest string read here: serde_json skips through a longer one eight bytes at a time,
/// faster than this loop's byte at a time (a 1 MiB string took this loop 20M instructions more).
const MAX_STRING: usize = 128;

/// A string of printable ASCII without escapes at `at`, at most [`MAX_STRING`] bytes: its end,
/// after the closing quote.
#[inline]
fn string(s: &[u8], at: usize) -> Option<usize> {
    let mut end = at + 1;
    let s = &s[..s.len().min(at + 2 + MAX_STRING)];
    loop {
        match *s.get(end)? {
            b'"' => return Some(end + 1),
            b'\\' => return None,
            b' '..=b'~' => end += 1,
            _ => return None,
        }
    }
}

/// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; the integer
/// part here, a fraction or exponent out of line.
#[inline]
fn number(s: &[u8], mut at: usize) -> Option<usize> {
    if s[at] == b'-' {
        at += 1;
    }
    match *s.get(at)? {
        // serde_json refuses a digit right after a leading zero ("01"), as JSON does.
        b'0' => at += 1,
        b'1'..=b'9' => {
            at += 1;
            while s.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
        }
        _ => return None,
    }
    match s.get(at) {
        Some(b'0'..=b'9') => None,
        Some(b'.' | b'e' | b'E') => fraction_and_exponent(s, at),
        _ => Some(at),
    }
}

#[cold]
fn fraction_and_exponent(s: &[u8], mut at: usize) -> Option<usize> {
    let digits = |at: usize| at + s[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if s.get(at) == Some(&b'.') {
        let end = digits(at + 1);
        if end == at + 1 {
            return None;
        }
        at = end;
    }
    if matches!(s.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(s.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let end = digits(at);
        if end == at {
            return None;
        }
        at = end;
    }
    Some(at)
}

/// Where the JSON whitespace from `at` ends.
#[inline]
pub(crate) fn skip_ws(s: &[u8], mut at: usize) -> usize {
    while matches!(s.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// A deserializer that gives `RawValue` its text as serde_json's does.
struct Known<'a>(&'a str);

impl<'de> Deserializer<'de> for Known<'de> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a raw value"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Self::Error> {
        v.visit_map(KnownEntry(Some(self.0)))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The one entry: the token, then the text (taken once).
struct KnownEntry<'a>(Option<&'a str>);

impl<'de> MapAccess<'de> for KnownEntry<'de> {
    type Error = de::value::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        match self.0 {
            Some(_) => seed.deserialize(BorrowedStrDeserializer::new(RAW_VALUE_TOKEN)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let text = self.0.take().ok_or_else(|| de::Error::custom("no value"))?;
        seed.deserialize(BorrowedStrDeserializer::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's own reading: the raw value's length, if the text starts with a valid value.
    fn serde_len(s: &[u8]) -> Option<usize> {
        let mut de = serde_json::Deserializer::from_slice(s);
        let value = <&RawValue>::deserialize(&mut de).ok()?;
        Some(value.get().as_ptr() as usize - s.as_ptr() as usize + value.get().len())
    }

    fn agree(text: &[u8]) {
        if let Some(len) = plain_value_len(text) {
            assert_eq!(serde_len(text), Some(len), "plain read {:?} as {len} bytes", String::from_utf8_lossy(text));
            assert!(text[..len].is_ascii());
        }
    }

    #[test]
    fn a_plain_value_becomes_a_raw_value_without_a_parse() {
        let raw = known_raw_value("[1,2]").expect("serde_json's raw value protocol changed: see known_raw_value");
        assert_eq!(raw.get(), "[1,2]");
        let boxed: Box<RawValue> = raw.to_owned();
        assert_eq!(serde_json::from_str::<(i64, i64)>(boxed.get()).unwrap(), (1, 2));
    }

    #[test]
    fn the_common_values_are_plain_and_agree_with_serde_json() {
        for (text, len) in [
            (&b"[1,2]"[..], 5),
            (b"3}", 1),
            (b"-12.5e+3,", 8),
            (b"0]", 1),
            (b"\"hello world\",", 13),
            (b"true}", 4),
            (b"null", 4),
            (b"[ ]", 3),
            (b"{ }x", 3),
            (br#"{"a" : [1, {"b":false}], "c":"d"}  "#, 33),
            (br#"[{"uri":"file:///a.rs","line":3}]"#, 33),
        ] {
            assert_eq!(plain_value_len(text), Some(len), "{}", String::from_utf8_lossy(text));
            agree(text);
        }
    }

    #[test]
    fn anything_else_goes_to_serde_json() {
        for text in [
            &b"01"[..],
            b"-",
            b"1.",
            b"1.e3",
            b"1e",
            b"1e+",
            b"-x",
            b"+1",
            b".5",
            b"tru",
            b"nul",
            b"\"a\\nb\"",
            "\"é\"".as_bytes(),
            b"\"a\tb\"",
            b"\"abc",
            b"[1,]",
            b"[1 2]",
            b"[,1]",
            b"{\"a\"}",
            b"{\"a\":}",
            b"{1:2}",
            b"{\"a\":1,}",
            format!("\"{}\"", "a".repeat(MAX_STRING + 1)).as_bytes(),
            b"[1}",
            b"{\"a\":1]",
            b"[{]}",
            b"",
            b" 1",
        ] {
            assert_eq!(plain_value_len(text), None, "{}", String::from_utf8_lossy(text));
        }
        // As long and as deep as the bounds allow, still plain; one past, not.
        let longest = format!("\"{}\"", "a".repeat(MAX_STRING));
        assert_eq!(plain_value_len(longest.as_bytes()), Some(MAX_STRING + 2));
        let longest = format!("[{}10]", "1,".repeat((MAX_PLAIN_LEN - 4) / 2));
        assert_eq!(longest.len(), MAX_PLAIN_LEN);
        assert_eq!(plain_value_len(longest.as_bytes()), Some(MAX_PLAIN_LEN));
        agree(longest.as_bytes());
        let too_long = format!("[{}100]", "1,".repeat((MAX_PLAIN_LEN - 4) / 2));
        assert_eq!(plain_value_len(too_long.as_bytes()), None);
        let too_deep = format!("{}1{}", "[".repeat(17), "]".repeat(17));
        assert_eq!(plain_value_len(too_deep.as_bytes()), None);
        let deepest = format!("{}1{}", "[".repeat(16), "]".repeat(16));
        assert_eq!(plain_value_len(deepest.as_bytes()), Some(33));
        let deepest = format!("{}1{}", "[{\"a\":".repeat(8), "}]".repeat(8));
        assert_eq!(plain_value_len(deepest.as_bytes()), Some(deepest.len()));
        agree(deepest.as_bytes());
    }

    /// Values built from JSON's pieces at random (xorshift, fixed seed), then cut or given a wrong
    /// byte: whatever the plain reader accepts, serde_json reads as the same span.
    #[test]
    fn random_texts_agree_with_serde_json() {
        const PIECES: &[&str] = &[
            "[",
            "]",
            "{",
            "}",
            ",",
            ":",
            " ",
            "\n",
            "\"k\"",
            "\"\"",
            "\"a b\"",
            "\"\\u0041\"",
            "0",
            "-0",
            "1",
            "23",
            "-4",
            "0.5",
            "1e9",
            "2E-3",
            "1.25e+2",
            "01",
            "1.",
            "-",
            "e",
            "true",
            "false",
            "null",
            "nul",
            "é",
            "\t",
            "x",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut plain = 0;
        for _ in 0..200_000 {
            let mut text = String::new();
            for _ in 0..(next() % 12) {
                text.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            agree(text.as_bytes());
            plain += usize::from(plain_value_len(text.as_bytes()).is_some());
        }
        // The generator reaches the plain path often enough for the comparison to mean something.
        assert!(plain > 10_000, "only {plain} plain values");
    }
}
