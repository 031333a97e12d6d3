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

impl Error {
    /// The peer's error object, when the peer answered with one.
    pub fn as_remote(&self) -> Option<&ErrorObject> {
        match self {
            Error::Remote(e) => Some(e),
            _ => None,
        }
    }
}
