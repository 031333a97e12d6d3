//! The progress token: a number or a string on the wire.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ProgressState;
use crate::connection::{Extension, registry};
use crate::message::Id;
use crate::message::bind::{Found, serialize_bound};

/// A progress token: an integer or a string (LSP's `ProgressToken`), compared by value.
///
/// Tokens made by [`Handle::progress`](crate::Handle::progress) remember their receiver: the
/// first request whose params carry one owns it, and when that request is answered its receiver
/// ends (after the reports that came before the answer). That binding happens while the request
/// is encoded, so put the token itself in the params (a field or a tuple element), not a
/// `serde_json::Value` made from it beforehand (with `json!`): such a copy is just a number, and
/// the receiver then ends only when dropped or with the connection. A `null` token on the wire
/// means "no progress wanted": decode an `Option<ProgressToken>`.
///
/// ```
/// use jsonrpc_duplex_core::ProgressToken;
/// let a: ProgressToken = serde_json::from_str("7").unwrap();
/// assert_eq!(a, ProgressToken::from(7u64));
/// assert_eq!(serde_json::to_string(&ProgressToken::from("indexing")).unwrap(), r#""indexing""#);
/// assert!(serde_json::from_str::<ProgressToken>("null").is_err());
/// ```
#[derive(Clone)]
pub struct ProgressToken {
    id: Id,
    receiver: Option<Arc<Binding>>,
}

/// The receiver side of a token this connection issued.
pub(super) struct Binding {
    /// The progress of the connection that issued it (held: its address marks the token).
    pub(super) state: Arc<ProgressState>,
    pub(super) token: u64,
}

impl ProgressToken {
    pub(super) fn issued(state: Arc<ProgressState>, token: u64) -> Self {
        ProgressToken { id: Id::from(token), receiver: Some(Arc::new(Binding { state, token })) }
    }

    /// The connection that issued this token, if this side did.
    pub(super) fn binding(&self) -> Option<&Binding> {
        self.receiver.as_deref()
    }

    /// The token as an unsigned integer, when it is one (tokens this side issues always are).
    pub fn as_u64(&self) -> Option<u64> {
        self.id.as_u64()
    }

    /// The token as a JSON-RPC id-like value (a number or a string).
    pub fn as_id(&self) -> &Id {
        &self.id
    }
}

impl From<u64> for ProgressToken {
    fn from(n: u64) -> Self {
        ProgressToken { id: Id::from(n), receiver: None }
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken { id: Id::String(s), receiver: None }
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken { id: Id::from(s), receiver: None }
    }
}

impl PartialEq for ProgressToken {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for ProgressToken {}

impl Hash for ProgressToken {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl fmt::Debug for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProgressToken({})", self.id)
    }
}

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.id, f)
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.receiver {
            // The connection's encoder binds it to the message it travels in (see
            // `message::bind`): in a request's params, its receiver ends with that request.
            Some(b) => {
                let extension: Arc<dyn Extension> = b.state.clone();
                let found = Found { registry: registry(&extension), token: b.token, strict: false };
                serialize_bound(serializer, found, &self.id)
            }
            None => self.id.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Id::deserialize(deserializer)? {
            Id::Null => Err(D::Error::custom("a progress token is a number or a string, not null")),
            id => Ok(ProgressToken { id, receiver: None }),
        }
    }
}
