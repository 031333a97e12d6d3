//! Where one message ends: the framing seam.
//!
//! A byte-stream transport is cut into frames by a [`FrameCodec`]: `Content-Length` headers (LSP,
//! StreamJsonRpc, vscode-jsonrpc) or newline-delimited JSON (ACP, MCP). Message-oriented transports
//! (WebSocket) bring their own frames and skip this layer: they hand the connection a stream of
//! [`Frame`]s and a sink of message bodies
//! ([`Builder::connect_messages`](crate::Builder::connect_messages)).
//!
//! The codecs are a supported API of their own, for code that reads or writes these framings
//! without a connection (a proxy, a recorder, a test peer): each is a `tokio_util` [`Decoder`]
//! with the bounds a connection uses ([`FrameLimits`]), and [`FrameCodec::encode`] writes a frame.
//!
//! ```
//! use futures::StreamExt;
//! use jsonrpc_duplex_core::framing::{Frame, FrameLimits, Framing};
//! use tokio_util::codec::FramedRead;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let wire: &[u8] = b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]";
//! let mut frames = FramedRead::new(wire, Framing::ContentLength.codec(FrameLimits::default()));
//! let Some(Ok(Frame::Message(body))) = frames.next().await else { panic!("one frame") };
//! assert_eq!(&body[..], b"{}");
//! # }
//! ```

mod content_length;
mod newline;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

pub use content_length::ContentLengthCodec;
pub use newline::NewlineCodec;
pub(crate) use newline::write_flat;

/// Default largest message accepted or sent: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;
/// Default largest `Content-Length` header block: 8 KiB.
pub const DEFAULT_MAX_HEADER_SIZE: usize = 8 * 1024;

/// How messages are delimited on a byte stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
///
/// ```
/// use jsonrpc_duplex_core::framing::FrameLimits;
/// const SMALL: FrameLimits = FrameLimits::new().max_message_size(4096).max_header_size(256);
/// assert_eq!(SMALL.max_message_size, 4096);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a builder does nothing until it is used"]
pub struct FrameLimits {
    /// Largest message body, in bytes ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub max_message_size: usize,
    /// Largest `Content-Length` header block, in bytes ([`DEFAULT_MAX_HEADER_SIZE`]).
    pub max_header_size: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits::new()
    }
}

impl FrameLimits {
    /// The defaults ([`DEFAULT_MAX_MESSAGE_SIZE`], [`DEFAULT_MAX_HEADER_SIZE`]); usable in a `const`.
    pub const fn new() -> Self {
        FrameLimits { max_message_size: DEFAULT_MAX_MESSAGE_SIZE, max_header_size: DEFAULT_MAX_HEADER_SIZE }
    }
    /// Set the largest message body, in bytes.
    pub const fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }
    /// Set the largest `Content-Length` header block, in bytes.
    pub const fn max_header_size(mut self, bytes: usize) -> Self {
        self.max_header_size = bytes;
        self
    }
}

/// What a decoder yields.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The body is `src[start..end]`; `src.advance(next)` consumes it (and what frames it: a
    /// `Content-Length` header before it, a line ending after it).
    Message { start: usize, end: usize, next: usize },
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
            Found::Message { start, end, next } => {
                let mut body = src.split_to(next);
                body.truncate(end);
                if start > 0 {
                    body.advance(start);
                }
                Frame::Message(body)
            }
            Found::Discarded { limit } => Frame::Discarded { limit },
        }
    }
}

/// A broken frame. Every variant but `Io` is the peer's fault; all of them end the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// The framing seam as one codec type: a [`Decoder`] of [`Frame`]s and an encoder of message
/// bodies, for the framing [`Framing::codec`] was given.
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameCodec {
    /// `Content-Length` headers.
    ContentLength(ContentLengthCodec),
    /// Newline-delimited.
    Newline(NewlineCodec),
}

impl FrameCodec {
    /// Append one framed message to `dst` (newline framing turns raw CR/LF whitespace in the body
    /// into spaces, so that the message stays on one line). The size limit is not checked here:
    /// a connection refuses an over-large message before it is encoded.
    pub fn encode(&self, body: &[u8], dst: &mut BytesMut) {
        match self {
            FrameCodec::ContentLength(_) => content_length::encode(body, dst),
            FrameCodec::Newline(_) => newline::encode(body, dst),
        }
    }

    /// The bytes written before a body (`Content-Length: N\r\n\r\n`, or nothing).
    pub(crate) fn encode_prefix(&self, body_len: usize, dst: &mut BytesMut) {
        if let FrameCodec::ContentLength(_) = self {
            content_length::encode_header(body_len, dst)
        }
    }

    /// Whether `body` can be written with [`FrameCodec::encode_one_line`] (newline framing: it
    /// holds no raw CR or LF).
    pub(crate) fn is_one_line(&self, body: &[u8]) -> bool {
        match self {
            FrameCodec::ContentLength(_) => true,
            FrameCodec::Newline(_) => newline::is_one_line(body),
        }
    }

    /// [`FrameCodec::encode`] for a body on one line already: the connection's own messages,
    /// whose encoder writes raw JSON on one line (`framing::write_flat`). Not scanned again.
    pub(crate) fn encode_one_line(&self, body: &[u8], dst: &mut BytesMut) {
        match self {
            FrameCodec::ContentLength(_) => content_length::encode(body, dst),
            FrameCodec::Newline(_) => newline::encode_one_line(body, dst),
        }
    }

    /// The bytes written after a body (`\n`, or nothing).
    pub(crate) fn encode_suffix(&self, dst: &mut BytesMut) {
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

    /// How many bytes the frame being read still lacks, when the framing knows (a
    /// `Content-Length` body, `buffered` bytes of it at hand); 0 when it does not.
    pub(crate) fn frame_rest(&self, buffered: usize) -> usize {
        match self {
            FrameCodec::ContentLength(c) => c.body_rest(buffered),
            FrameCodec::Newline(_) => 0,
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
