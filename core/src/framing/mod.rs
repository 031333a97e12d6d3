//! Where one message ends: the framing seam.
//!
//! A byte-stream transport is cut into frames by a [`FrameCodec`]: `Content-Length` headers (LSP,
//! StreamJsonRpc, vscode-jsonrpc) or newline-delimited JSON (ACP, MCP). Message-oriented transports
//! (WebSocket) bring their own frames and skip this layer: they hand the connection a stream of
//! [`Frame`]s and a sink of message bodies
//! ([`Builder::connect_messages`](crate::Builder::connect_messages)).

mod content_length;
mod newline;

use bytes::BytesMut;
use tokio_util::codec::Decoder;

pub use content_length::ContentLengthCodec;
pub use newline::NewlineCodec;
pub(crate) use newline::flatten;

/// Default largest message accepted or sent: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;
/// Default largest `Content-Length` header block: 8 KiB.
pub const DEFAULT_MAX_HEADER_SIZE: usize = 8 * 1024;

/// How messages are delimited on a byte stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: N\r\n\r\n` then N bytes of UTF-8 JSON (LSP, StreamJsonRpc's default).
    #[default]
    ContentLength,
    /// One JSON message per line, `\n`-terminated (ACP, MCP stdio).
    NewlineDelimited,
}

impl Framing {
    /// A codec for this framing with the given size limits.
    pub fn codec(self, limits: FrameLimits) -> FrameCodec {
        match self {
            Framing::ContentLength => FrameCodec::ContentLength(ContentLengthCodec::new(limits)),
            Framing::NewlineDelimited => FrameCodec::Newline(NewlineCodec::new(limits)),
        }
    }
}

impl std::str::FromStr for Framing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "content-length" => Ok(Framing::ContentLength),
            "newline" => Ok(Framing::NewlineDelimited),
            other => Err(format!("unknown framing {other:?}: expected \"content-length\" or \"newline\"")),
        }
    }
}

/// Size limits a decoder enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest message body, in bytes ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub max_message_size: usize,
    /// Largest `Content-Length` header block, in bytes ([`DEFAULT_MAX_HEADER_SIZE`]).
    pub max_header_size: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits { max_message_size: DEFAULT_MAX_MESSAGE_SIZE, max_header_size: DEFAULT_MAX_HEADER_SIZE }
    }
}

/// What a decoder yields.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// One complete message body.
    Message(BytesMut),
    /// A newline-delimited line longer than the limit was skipped; the stream goes on.
    Discarded {
        /// The limit that was exceeded.
        limit: usize,
    },
}

/// A frame found in place at the front of the decode buffer: the reader parses it where it lies
/// (no copy, no shared buffer) and then consumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The body is `src[..end]`; `src.advance(next)` consumes it (and its line ending).
    Message { end: usize, next: usize },
    /// An over-long line was skipped (already consumed).
    Discarded { limit: usize },
}

/// What a [`Decoder`] yields for what a codec found in place: the frame split off `src`.
fn split_found(found: Result<Option<Found>, FrameError>, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
    Ok(found?.map(|f| f.split_off(src)))
}

impl Found {
    /// The frame as an owned [`Frame`], split off the front of `src`.
    fn split_off(self, src: &mut BytesMut) -> Frame {
        match self {
            Found::Message { end, next } => {
                let mut body = src.split_to(next);
                body.truncate(end);
                Frame::Message(body)
            }
            Found::Discarded { limit } => Frame::Discarded { limit },
        }
    }
}

/// A broken frame. Every variant but `Io` is the peer's fault; all of them end the connection.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The transport failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A `Content-Length` header announced more than the limit.
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// What the header announced.
        size: u64,
        /// The configured limit.
        limit: usize,
    },
    /// The header block grew past its limit without ending.
    #[error("header block exceeds {limit} bytes without a terminating blank line")]
    HeaderTooLong {
        /// The configured limit.
        limit: usize,
    },
    /// The header block is malformed.
    #[error("bad header: {0}")]
    BadHeader(String),
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame: {0}")]
    Truncated(String),
    /// A message-oriented transport's own protocol was broken by the peer (say an invalid
    /// WebSocket frame or a text frame that is not UTF-8).
    #[error("{0}")]
    Protocol(String),
}

/// The framing seam as one codec type.
#[derive(Debug)]
pub enum FrameCodec {
    /// `Content-Length` headers.
    ContentLength(ContentLengthCodec),
    /// Newline-delimited.
    Newline(NewlineCodec),
}

impl FrameCodec {
    /// Append one framed message to `dst`.
    pub fn encode(&self, body: &[u8], dst: &mut BytesMut) {
        match self {
            FrameCodec::ContentLength(_) => content_length::encode(body, dst),
            FrameCodec::Newline(_) => newline::encode(body, dst),
        }
    }

    /// The bytes written before a body (`Content-Length: N\r\n\r\n`, or nothing).
    pub fn encode_prefix(&self, body_len: usize, dst: &mut BytesMut) {
        if let FrameCodec::ContentLength(_) = self {
            content_length::encode_header(body_len, dst)
        }
    }

    /// Make a body fit the framing before it is written with [`FrameCodec::encode_prefix`] and
    /// [`FrameCodec::encode_suffix`] (newline framing: raw CR/LF whitespace becomes spaces;
    /// [`FrameCodec::encode`] does this itself).
    pub(crate) fn prepare_body(&self, body: &mut [u8]) {
        if let FrameCodec::Newline(_) = self {
            newline::flatten(body)
        }
    }

    /// The bytes written after a body (`\n`, or nothing).
    pub fn encode_suffix(&self, dst: &mut BytesMut) {
        if let FrameCodec::Newline(_) = self {
            dst.extend_from_slice(b"\n")
        }
    }
}

impl FrameCodec {
    /// The next frame, found in place (see [`Found`]).
    pub(crate) fn decode_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        match self {
            FrameCodec::ContentLength(c) => c.decode_at(src),
            FrameCodec::Newline(c) => c.decode_at(src),
        }
    }

    /// Whether a frame has begun that the bytes left in the buffer do not show (a header read,
    /// its body not begun; an over-long line being skipped).
    pub(crate) fn in_frame(&self) -> bool {
        match self {
            FrameCodec::ContentLength(c) => c.in_body(),
            FrameCodec::Newline(c) => c.is_discarding(),
        }
    }

    /// The next frame once the stream has ended.
    pub(crate) fn decode_eof_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        match self {
            FrameCodec::ContentLength(c) => c.decode_eof_at(src),
            FrameCodec::Newline(c) => c.decode_eof_at(src),
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        match self {
            FrameCodec::ContentLength(c) => c.decode(src),
            FrameCodec::Newline(c) => c.decode(src),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        match self {
            FrameCodec::ContentLength(c) => c.decode_eof(src),
            FrameCodec::Newline(c) => c.decode_eof(src),
        }
    }
}
