//! Request ids: numbers and strings from the peer, echoed back exactly as they were spelled.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON-RPC request id.
///
/// Ids the peer sends are kept exactly as they arrived, so that replies echo them unchanged: `1`
/// and `"1"` are different ids, and a number keeps its JSON spelling (`1.50`, `1e2` and
/// `18446744073709551617` come back as sent, and two ids are the same only when they are spelled
/// the same). Ids this side sends are always non-negative integers from a per-connection counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// A numeric id, as it was spelled (see [`IdNumber`]).
    Number(IdNumber),
    /// A string id.
    String(String),
    /// `"id": null` — legal but discouraged; also what error responses carry when the id of the
    /// offending message could not be determined.
    Null,
}

/// A numeric id as spelled on the wire.
///
/// An integer from 0 to `u64::MAX` written plainly (no sign, fraction or exponent) is held as a
/// `u64`: our own ids, and nearly every id a peer sends, cost no allocation. Any other JSON
/// number (`-1`, `1.50`, `1e2`, `18446744073709551617`) keeps its text. Comparison and hashing
/// follow the spelling, so `1.5` and `1.50` are different ids, as are `2^64` and `2^64 + 1`.
///
/// ```
/// use jsonrpc_duplex_core::{Id, IdNumber};
/// let big: IdNumber = "18446744073709551617".parse().unwrap();
/// assert_eq!(big.to_string(), "18446744073709551617");
/// assert_ne!(big, "18446744073709551616".parse().unwrap());
/// assert_eq!(Id::Number(IdNumber::from(7u64)).as_u64(), Some(7));
/// assert!("01".parse::<IdNumber>().is_err(), "not a JSON number");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdNumber(Repr);

#[derive(Clone)]
enum Repr {
    /// A plain integer that fits: the only form such a number takes, so equality stays exact.
    U64(u64),
    /// Any other JSON number, as raw JSON text (checked once, when it is made).
    Text(Box<RawValue>),
}

impl PartialEq for Repr {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Repr::U64(a), Repr::U64(b)) => a == b,
            (Repr::Text(a), Repr::Text(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

impl Eq for Repr {}

impl std::hash::Hash for Repr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Repr::U64(n) => state.write_u64(*n),
            Repr::Text(text) => text.get().hash(state),
        }
    }
}

/// Text that is not a JSON number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotANumber;

impl fmt::Display for NotANumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a JSON number")
    }
}

impl std::error::Error for NotANumber {}

impl IdNumber {
    /// The number as a `u64`, when it is a plain integer in range (our own ids always are).
    pub fn as_u64(&self) -> Option<u64> {
        match self.0 {
            Repr::U64(n) => Some(n),
            Repr::Text(_) => None,
        }
    }

    /// The number as an `i64`, when it is an integer written plainly that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match &self.0 {
            Repr::U64(n) => i64::try_from(*n).ok(),
            Repr::Text(text) => text.get().parse().ok(),
        }
    }

    /// Take `text`, known to be one JSON number, as it is spelled.
    fn from_json_number(text: &str) -> IdNumber {
        if is_plain_integer(text)
            && let Ok(n) = text.parse::<u64>()
        {
            return IdNumber(Repr::U64(n));
        }
        match RawValue::from_string(text.to_owned()) {
            Ok(raw) => IdNumber(Repr::Text(raw)),
            // Unreachable for a JSON number; a spelling that cannot be kept is never compared
            // equal to another (NaN-like), which is the safe side.
            Err(_) => IdNumber(Repr::Text(RawValue::NULL.to_owned())),
        }
    }
}

/// Digits only, and no leading zero unless it is `0` itself.
fn is_plain_integer(text: &str) -> bool {
    let b = text.as_bytes();
    !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1)
}

/// Whether `text` is exactly one JSON number (RFC 8259's grammar).
fn is_json_number(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}

impl std::str::FromStr for IdNumber {
    type Err = NotANumber;

    /// One JSON number, kept as spelled (no surrounding whitespace).
    fn from_str(text: &str) -> Result<IdNumber, NotANumber> {
        if is_json_number(text) { Ok(IdNumber::from_json_number(text)) } else { Err(NotANumber) }
    }
}

impl From<u64> for IdNumber {
    fn from(n: u64) -> Self {
        IdNumber(Repr::U64(n))
    }
}

impl From<i64> for IdNumber {
    fn from(n: i64) -> Self {
        match u64::try_from(n) {
            Ok(n) => IdNumber(Repr::U64(n)),
            Err(_) => IdNumber::from_json_number(&n.to_string()),
        }
    }
}

impl From<serde_json::Number> for IdNumber {
    /// The number as serde_json writes it (a float that was read from text may have lost its
    /// spelling already).
    fn from(n: serde_json::Number) -> Self {
        match n.as_u64() {
            Some(n) => IdNumber(Repr::U64(n)),
            None => IdNumber::from_json_number(&n.to_string()),
        }
    }
}

impl fmt::Display for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::U64(n) => fmt::Display::fmt(n, f),
            Repr::Text(text) => f.write_str(text.get()),
        }
    }
}

impl fmt::Debug for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for IdNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::U64(n) => serializer.serialize_u64(*n),
            // serde_json writes raw JSON as it is: the spelling goes out unchanged.
            Repr::Text(text) => text.serialize(serializer),
        }
    }
}

impl Id {
    /// The id as an unsigned integer, when it is one written plainly. Our own outbound ids
    /// always are.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// An id from its raw JSON text, keeping a number's spelling: `None` for anything but a
    /// number, a string or `null`.
    pub(crate) fn from_raw(raw: &RawValue) -> Option<Id> {
        let text = raw.get();
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str(text).ok().map(Id::String),
            b'n' => Some(Id::Null),
            b'-' | b'0'..=b'9' => Some(Id::Number(IdNumber::from_json_number(text))),
            _ => None,
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n.into())
    }
}

impl From<IdNumber> for Id {
    fn from(n: IdNumber) -> Self {
        Id::Number(n)
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(s)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
            Id::Null => f.write_str("null"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => n.serialize(serializer),
            Id::String(s) => serializer.serialize_str(s),
            Id::Null => serializer.serialize_unit(),
        }
    }
}

/// What a JSON value may be as an id: a number, a string or null.
struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, a number or null")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id::from(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
        serde_json::Number::from_f64(v)
            .map(|n| Id::Number(n.into()))
            .ok_or_else(|| E::custom("a non-finite number cannot be an id"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        Ok(Id::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Id, E> {
        Ok(Id::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id::Null)
    }
}

impl<'de> Deserialize<'de> for Id {
    /// Integers (and strings and `null`) are read exactly. serde hands other numbers over as an
    /// `f64`, so a fraction or an integer beyond the 64-bit range takes the spelling of that
    /// `f64` here; the connection itself reads ids from the raw text and keeps every spelling.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Option<Id> {
        Id::from_raw(&RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn ids_keep_their_json_type() {
        for text in ["1", "\"1\"", "null", "0", "-7", "\"a-uuid\"", "18446744073709551615"] {
            let id: Id = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
        }
        let n: Id = serde_json::from_str("1").unwrap();
        let s: Id = serde_json::from_str("\"1\"").unwrap();
        assert_ne!(n, s);
    }

    #[test]
    fn raw_ids_keep_their_spelling_and_compare_as_spelled() {
        for text in ["18446744073709551617", "18446744073709551616", "1.50", "1.5", "1e2", "100", "-0", "0", "-12"] {
            let id = raw(text).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
            assert_eq!(id.to_string(), text);
        }
        assert_ne!(raw("18446744073709551616"), raw("18446744073709551617"));
        assert_ne!(raw("1.5"), raw("1.50"));
        assert_ne!(raw("1e2"), raw("100"));
        assert_eq!(raw("100"), Some(Id::from(100u64)), "a plain integer is the u64 form");
        assert_eq!(raw("-12"), Some(Id::from(-12i64)));
        assert_eq!(raw("-12").unwrap().as_u64(), None);
        assert_eq!(raw("\"a\\u0041\""), Some(Id::from("aA")));
        assert_eq!(raw("true"), None);
        assert_eq!(raw("[1]"), None);
    }

    #[test]
    fn parsing_takes_json_numbers_only() {
        for good in ["0", "-0", "1", "1.5", "1e2", "1E+2", "-1.0e-3", "18446744073709551617"] {
            assert_eq!(good.parse::<IdNumber>().map(|n| n.to_string()), Ok(good.to_owned()));
        }
        for bad in ["", "-", "01", "1.", ".5", "1e", "+1", " 1", "1 ", "0x1", "NaN", "1.5.2"] {
            assert_eq!(bad.parse::<IdNumber>(), Err(NotANumber), "{bad:?}");
        }
        assert_eq!("7".parse::<IdNumber>().unwrap().as_u64(), Some(7));
        assert_eq!("-7".parse::<IdNumber>().unwrap().as_i64(), Some(-7));
    }

    #[test]
    fn objects_are_not_ids() {
        assert!(serde_json::from_str::<Id>("{}").is_err());
        assert!(serde_json::from_str::<Id>("[1]").is_err());
        assert!(serde_json::from_str::<Id>("true").is_err());
    }
}
