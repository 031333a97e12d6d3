//! The trace file: JSON Lines, one record per line, format version [`VERSION`] (documented in the
//! README's *Trace format* section, which other tools read it by).
//!
//! - [`Record`]: one line, read and written;
//! - [`split`]: per-direction framing detection and framing, on the library's codecs;
//! - [`write`](mod@write): records from what crossed the wire, written as they happen;
//! - [`read`]: reading a trace back, once or while it grows.

pub(crate) mod read;
pub(crate) mod split;
pub(crate) mod write;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `format` member of a trace's header record.
pub(crate) const FORMAT: &str = "jsonrpc-trace";
/// The trace format version this tool writes (and the highest it reads).
pub(crate) const VERSION: u32 = 1;

/// Which program sent a message: the one that started the conversation (the editor, the
/// `call`er) or the one it talks to (the server, the agent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    /// The program that started the conversation (reads the server's stdout).
    Client,
    /// The program it talks to.
    Server,
}

impl Side {
    /// The other side.
    pub(crate) fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// `C→S` or `S→C`.
    pub(crate) fn arrow(self) -> &'static str {
        match self {
            Side::Client => "C→S",
            Side::Server => "S→C",
        }
    }
}

/// How a message was delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum WireFraming {
    /// `Content-Length: N\r\n\r\n` headers.
    ContentLength,
    /// One message per line.
    Newline,
    /// One message per WebSocket text (or binary) frame.
    Websocket,
    /// Bytes outside any frame (junk between messages, a broken header).
    Unframed,
}

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// The first line: format, version, start time, the command.
    Header,
    /// One message (or batch, or unparsable frame).
    #[default]
    Message,
    /// One line the server wrote to its stderr (`tap --capture-stderr`).
    Stderr,
    /// Something about the conversation that is not a message (a side closed its stream, bytes
    /// the recorder could not keep up with).
    Note,
    /// The server exited: its exit code or the signal that ended it.
    Exit,
    /// A record of a newer format version; readers skip it.
    #[serde(other)]
    Unknown,
}

/// One line of a trace. Members that do not apply to a record's `type` are absent.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Record {
    /// What the record is.
    #[serde(rename = "type")]
    pub(crate) kind: Kind,
    /// Header: always [`FORMAT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) format: Option<String>,
    /// Header: the format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<u32>,
    /// Header: the wall-clock time of `t = 0`, RFC 3339 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) started: Option<String>,
    /// Header: the program that wrote the trace and its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool: Option<String>,
    /// Header: the server's command line (when the tool started it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<Vec<String>>,
    /// Header: the working directory the server was started in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// Seconds since `started` (microsecond resolution): when the message's last byte was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) t: Option<f64>,
    /// Message: who sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<Side>,
    /// Message: the body's size in bytes (without framing headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<u64>,
    /// Message: how it was delimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) framing: Option<WireFraming>,
    /// Message: the JSON exactly as sent (line breaks, which JSON allows only as whitespace
    /// between tokens, become spaces so that the record stays on one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Box<RawValue>>,
    /// Message that is not JSON: its bytes as text (invalid UTF-8 replaced by U+FFFD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) raw: Option<String>,
    /// Message that is not JSON, or could not be framed: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// Stderr: the line (without its line break). Note: what happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    /// Exit: the server's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<i32>,
    /// Exit: the signal that ended the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signal: Option<i32>,
}

impl Record {
    /// A header record for a trace starting now.
    pub(crate) fn header(started: std::time::SystemTime, command: Option<Vec<String>>) -> Record {
        Record {
            kind: Kind::Header,
            format: Some(FORMAT.to_owned()),
            version: Some(VERSION),
            started: Some(crate::time::rfc3339(started)),
            tool: Some(format!("jrpc {}", env!("CARGO_PKG_VERSION"))),
            cwd: std::env::current_dir().ok().map(|d| d.display().to_string()),
            command,
            ..Record::default()
        }
    }

    /// A note at time `t`.
    pub(crate) fn note(t: f64, from: Option<Side>, text: impl Into<String>) -> Record {
        Record { kind: Kind::Note, t: Some(t), from, text: Some(text.into()), ..Record::default() }
    }

    /// The record's time, 0 when it has none (the header).
    pub(crate) fn time(&self) -> f64 {
        self.t.unwrap_or(0.0)
    }
}

/// Seconds as a trace time: microsecond resolution, so that it prints short.
pub(crate) fn seconds(elapsed: std::time::Duration) -> f64 {
    elapsed.as_micros() as f64 / 1e6
}
