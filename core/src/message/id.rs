//! Request ids: numbers and strings from the peer, echoed back with the same JSON type.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A JSON-RPC request id.
///
/// Ids the peer sends are kept exactly as they arrived (`1` and `"1"` are different ids, and a
/// number keeps its JSON spelling), so that replies echo them unchanged. Ids this side sends are
/// always non-negative integers from a per-connection counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// A numeric id (an integer in practice; any JSON number is kept verbatim).
    Number(serde_json::Number),
    /// A string id.
    String(String),
    /// `"id": null` — legal but discouraged; also what error responses carry when the id of the
    /// offending message could not be determined.
    Null,
}

impl Id {
    /// The id as an unsigned integer, when it is one. Our own outbound ids always are.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
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
pub(crate) struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, a number or null")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id::Number(v.into()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
        serde_json::Number::from_f64(v).map(Id::Number).ok_or_else(|| E::custom("a non-finite number cannot be an id"))
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
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn objects_are_not_ids() {
        assert!(serde_json::from_str::<Id>("{}").is_err());
        assert!(serde_json::from_str::<Id>("[1]").is_err());
        assert!(serde_json::from_str::<Id>("true").is_err());
    }
}
