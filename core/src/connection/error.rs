//! The error of an outbound call.

use std::time::Duration;

use super::CloseReason;
use crate::message::ErrorObject;

/// Why an outbound call (or notification) did not produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with an error object.
    #[error("the peer answered with an error: {0}")]
    Remote(ErrorObject),
    /// The connection ended before the answer arrived (or before the message could be queued).
    #[error("connection lost: {0}")]
    ConnectionLost(CloseReason),
    /// The call was cancelled by its cancellation token (and the peer confirmed, or the protocol
    /// does not answer cancelled requests).
    #[error("the call was cancelled")]
    Cancelled,
    /// No answer arrived within the call's timeout; the peer was sent a cancellation.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The parameters could not be serialized.
    #[error("the parameters could not be serialized: {0}")]
    Serialize(serde_json::Error),
    /// The answer did not decode into the expected type.
    #[error("the answer could not be decoded: {0}")]
    Deserialize(serde_json::Error),
    /// The peer broke the protocol in its answer (say a stream batch with no items that is not
    /// the last one).
    #[error("the peer broke the protocol: {0}")]
    Protocol(String),
    /// The message is larger than the connection's message size limit.
    #[error("the message of {size} bytes exceeds the limit of {limit} bytes")]
    MessageTooLarge {
        /// The encoded size.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
}

/// What a handler answers when a call it made to a peer failed and it passed the failure on with
/// `?`: the peer's own error object unchanged (code, message, data); `-32800` when the call was
/// cancelled; `-32001` ([`codes::REQUEST_TIMEOUT`](crate::codes::REQUEST_TIMEOUT)) when it timed
/// out; `-32000` when the connection was lost; `-32603` for the rest (this side could not encode
/// the call or decode its answer).
///
/// ```
/// use std::time::Duration;
/// use jsonrpc_duplex_core::{Error, ErrorObject, codes};
///
/// let peer = ErrorObject::new(-32002, "no such file").with_data(serde_json::json!({"path": "a.txt"}));
/// assert_eq!(ErrorObject::from(Error::Remote(peer.clone())), peer);
/// assert_eq!(ErrorObject::from(Error::Cancelled).code, codes::REQUEST_CANCELLED);
/// assert_eq!(ErrorObject::from(Error::Timeout(Duration::from_secs(5))).code, codes::REQUEST_TIMEOUT);
/// ```
impl From<Error> for ErrorObject {
    fn from(error: Error) -> Self {
        match error {
            Error::Remote(object) => object,
            Error::Cancelled => ErrorObject::request_cancelled(),
            Error::Timeout(after) => {
                ErrorObject::request_timeout(format_args!("no answer from the peer within {after:?}"))
            }
            Error::ConnectionLost(reason) => {
                ErrorObject::new(crate::codes::CONNECTION_CLOSED, format!("Connection lost: {reason}"))
            }
            other => ErrorObject::internal_error(other),
        }
    }
}

impl Error {
    /// The peer's error object, when the peer answered with one.
    pub fn as_remote(&self) -> Option<&ErrorObject> {
        match self {
            Error::Remote(e) => Some(e),
            _ => None,
        }
    }
}
