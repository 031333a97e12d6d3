//! Why a connection ended.

use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

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
    /// calls fail at once; requests already read are still dispatched and answered within the
    /// EOF grace (see the close sequence on [`Connection`](super::Connection)) before this side
    /// shuts its write side.
    RemoteClosed,
    /// Something inside this process failed in a way the connection cannot survive.
    FatalError,
    /// This side broke the protocol (e.g. tried to send a message over the size limit).
    LocalContractViolation,
    /// The peer broke the protocol (a broken frame, a flood beyond the read-ahead limit, …).
    RemoteProtocolViolation,
}

/// How the child process of a [`Builder::spawn_child`](super::Builder) connection ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildExit {
    /// It exited by itself (on its own, or on seeing EOF on its stdin), with this status.
    Exited(ExitStatus),
    /// It had not exited `grace` after its stdin was closed and was killed; `status` is what
    /// the kill left (`None` if it could not be read).
    Killed {
        /// The grace it was given ([`ChildOptions::exit_grace`](crate::transport::ChildOptions)).
        grace: Duration,
        /// Its status after the kill.
        status: Option<ExitStatus>,
    },
    /// It had not exited `grace` after its stdin was closed, was sent `SIGTERM` (Unix) and
    /// exited within [`ChildOptions::term_grace`](crate::transport::ChildOptions) of it.
    Terminated {
        /// The grace it was given before `SIGTERM`
        /// ([`ChildOptions::exit_grace`](crate::transport::ChildOptions)).
        grace: Duration,
        /// Its status: its own exit code when it handled the signal, else the signal.
        status: ExitStatus,
    },
    /// Its status could not be read.
    Unknown(String),
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildExit::Exited(status) => write!(f, "the child process exited by itself ({status})"),
            ChildExit::Killed { grace, status: Some(status) } => {
                write!(f, "the child process was killed after a grace of {grace:?} ({status})")
            }
            ChildExit::Killed { grace, status: None } => {
                write!(f, "the child process was killed after a grace of {grace:?}")
            }
            ChildExit::Terminated { grace, status } => {
                write!(f, "the child process exited on SIGTERM sent after a grace of {grace:?} ({status})")
            }
            ChildExit::Unknown(why) => write!(f, "the child process's end is unknown: {why}"),
        }
    }
}

/// Why a connection ended: a kind and a sentence; over a child process, also how the child
/// ended ([`CloseReason::child`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloseReason {
    /// What kind of event it was.
    pub kind: CloseKind,
    /// What happened, for people.
    pub message: String,
    child: Option<ChildExit>,
}

impl CloseReason {
    /// A reason of this kind.
    pub fn new(kind: CloseKind, message: impl Into<String>) -> Self {
        CloseReason { kind, message: message.into(), child: None }
    }

    /// How the child process ended, for a connection made by
    /// [`Builder::spawn_child`](super::Builder::spawn_child): whether it exited by itself (and
    /// its status) or was killed after its grace. Known once it has been reaped: always in the
    /// reason [`Connection::close`](super::Connection::close) and
    /// [`Connection::closed`](super::Connection::closed) return; `None` for other transports.
    pub fn child(&self) -> Option<&ChildExit> {
        self.child.as_ref()
    }

    /// Add how the child ended (once; the message says it too, unless it did already).
    pub(crate) fn with_child(mut self, exit: ChildExit) -> Self {
        if self.child.is_none() {
            let said = exit.to_string();
            if !self.message.contains(&said) {
                self.message = format!("{}; {said}", self.message);
            }
            self.child = Some(exit);
        }
        self
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}
