//! Why a connection ended.

use std::fmt;

/// The kind of event that ended a connection (mirrors StreamJsonRpc's `DisconnectedReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CloseKind {
    /// Reading or writing the transport failed.
    StreamError,
    /// The peer's bytes could not be parsed at the framing level.
    ParseError,
    /// This side closed the connection.
    LocallyClosed,
    /// The peer closed the stream (EOF between messages, or the child process exited). Pending
    /// calls fail at once; requests already read are still dispatched and answered (within the
    /// flush timeout) before this side shuts its write side.
    RemoteClosed,
    /// Something inside this process failed in a way the connection cannot survive.
    FatalError,
    /// This side broke the protocol (e.g. tried to send a message over the size limit).
    LocalContractViolation,
    /// The peer broke the protocol (a broken frame, a flood beyond the read-ahead limit, …).
    RemoteProtocolViolation,
}

/// Why a connection ended: a kind and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloseReason {
    /// What kind of event it was.
    pub kind: CloseKind,
    /// What happened, for people.
    pub message: String,
}

impl CloseReason {
    /// A reason of this kind.
    pub fn new(kind: CloseKind, message: impl Into<String>) -> Self {
        CloseReason { kind, message: message.into() }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}
