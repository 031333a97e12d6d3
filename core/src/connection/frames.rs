//! Where the reader gets its frames: a byte stream cut in place by a [`FrameCodec`], or a
//! message transport's stream of [`Frame`]s.
//!
//! On a byte stream a frame is parsed where it lies in the read buffer and consumed afterwards:
//! no buffer is split off or shared per message. The read buffer is held only while there are
//! bytes to read or an incomplete frame to keep: once everything read is consumed and the
//! stream has nothing more at hand, it goes back to the worker thread
//! ([`crate::util::bufpool::take_read`]), so an idle connection holds no read buffer.

use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BytesMut};
use futures::{Stream, StreamExt};
use tokio::io::AsyncRead;

use crate::framing::{Found, Frame, FrameCodec, FrameError};

/// The read buffer's usual size, taken when the stream is read.
const READ_CHUNK: usize = 8 * 1024;

/// A read buffer that grew past this for a large message is freed once it is empty (smaller
/// ones go back to the thread's pool).
const KEEP_BUFFER: usize = 256 * 1024;

/// What the next frame is.
pub(crate) enum Next {
    /// A message: [`FrameSource::body`] until the next poll.
    Message,
    /// An over-long line was skipped (newline framing); the stream goes on.
    Discarded { limit: usize },
}

/// The reader's input.
pub(crate) trait FrameSource: Send + Unpin + 'static {
    /// The next frame; `None` at the end of the stream (and after an error).
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Next, FrameError>>>;
    /// The body of the message [`FrameSource::poll_frame`] last gave.
    fn body(&self) -> &[u8];
    /// After [`FrameSource::poll_frame`] returned `Pending`: whether part of a message has
    /// arrived (for the message read timeout; `false` when the source cannot tell).
    fn in_message(&self) -> bool;
}

/// Frames cut from a byte stream.
pub(crate) struct ByteFrames<R> {
    io: R,
    /// The read buffer while there is one (boxed: taken from the thread and given back, it
    /// moves as a pointer; moved by value, its 32 bytes were copied in loads the CPU cannot
    /// forward from the stores that had just written them, a stall at each take and give).
    buf: Option<Box<BytesMut>>,
    codec: FrameCodec,
    /// The current body, in `buf`.
    body: Range<usize>,
    /// Bytes to consume from `buf` before the next frame (the current one).
    consume: usize,
    eof: bool,
    done: bool,
}

impl<R> ByteFrames<R> {
    pub(crate) fn new(io: R, codec: FrameCodec) -> Self {
        ByteFrames {
            io,
            // Nothing until there is something to read (an idle connection holds no buffer).
            buf: None,
            codec,
            body: 0..0,
            consume: 0,
            eof: false,
            done: false,
        }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> FrameSource for ByteFrames<R> {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Next, FrameError>>> {
        if self.consume > 0 {
            let consumed = std::mem::take(&mut self.consume);
            if let Some(buf) = self.buf.as_deref_mut() {
                if consumed == buf.len() {
                    // The usual case (a read brought whole frames): emptied for the price of a
                    // length store, its room kept from the front (an advance costs ~75
                    // instructions and leaves the consumed front unused until a reserve).
                    buf.clear();
                } else {
                    buf.advance(consumed);
                }
            }
            self.body = 0..0;
        }
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            let found = match self.buf.as_deref_mut() {
                Some(buf) if self.eof => self.codec.decode_eof_at(buf),
                None if self.eof => self.codec.decode_eof_at(&mut BytesMut::new()),
                // Everything read is consumed: nothing to look for until more arrives.
                None => Ok(None),
                Some(buf) if buf.is_empty() => Ok(None),
                Some(buf) => self.codec.decode_at(buf),
            };
            match found {
                Ok(Some(Found::Message { start, end, next })) => {
                    // `max` (a no-op: a body never ends before it starts) keeps the bounds from
                    // being copied as one 16-byte load of the two 8-byte stores the codec just
                    // made, which the CPU cannot forward (a quarter of this function's time).
                    self.body = start..end.max(start);
                    self.consume = next;
                    return Poll::Ready(Some(Ok(Next::Message)));
                }
                Ok(Some(Found::Discarded { limit })) => return Poll::Ready(Some(Ok(Next::Discarded { limit }))),
                Ok(None) if self.eof => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(e) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let buf = match &mut self.buf {
                // Something read is kept, or an empty buffer of a size to read into.
                Some(buf) if !buf.is_empty() || (READ_CHUNK / 8..=KEEP_BUFFER).contains(&buf.capacity()) => buf,
                // Everything read is consumed and no buffer is at hand (or a large message is
                // over, and its buffer is not kept): the one this thread's last reader gave
                // back, if it has room for a read (its consumed front is reclaimed only once it
                // runs short, below), else one from the thread's pool.
                slot => slot.insert(crate::util::bufpool::take_read(READ_CHUNK / 8, READ_CHUNK)),
            };
            let spare = buf.capacity() - buf.len();
            // The rest of a body whose length the header gave fits the room reserved for it
            // then: reserving more here would double a large message's buffer (copying the
            // megabyte read so far) for its last few hundred bytes.
            let rest = self.codec.frame_rest(buf.len());
            if spare < READ_CHUNK / 8 && !(rest > 0 && rest <= spare) {
                // Reclaims the consumed front of the buffer when it can instead of growing it.
                // The rest of a body whose length is known gets its room at once: the room the
                // header reserved is not kept while the body has not begun to arrive (the
                // buffer goes back when a read finds nothing, or is replaced while empty), and
                // growing by reads doubled it over and over, copying what was read each time
                // (under callgrind, row D's 1 MiB echo with Content-Length: ~1.1 million
                // instructions an echo).
                buf.reserve(READ_CHUNK.max(rest));
            }
            let read = tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut **buf);
            if read.is_pending()
                && buf.is_empty()
                && let Some(buf) = self.buf.take()
            {
                // Nothing at hand and nothing kept: the buffer goes back until the stream is
                // readable again.
                crate::util::bufpool::give_read(buf);
            }
            match ready!(read) {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(FrameError::Io(e))));
                }
            }
        }
    }

    fn body(&self) -> &[u8] {
        self.buf.as_deref().map_or(&[][..], |buf| &buf[self.body.clone()])
    }

    fn in_message(&self) -> bool {
        // Whatever is buffered when no frame can be cut is the start of the next one; the codec
        // may have taken a header already, or be skipping an over-long line.
        self.buf.as_deref().is_some_and(|buf| !buf.is_empty()) || self.codec.in_frame()
    }
}

/// Whether part of a message has arrived on a message transport that can tell (WebSocket).
pub(crate) type InMessage = Box<dyn Fn() -> bool + Send>;

/// Frames from a message transport, one [`Frame`] per message.
pub(crate) struct MessageFrames<S> {
    stream: S,
    current: BytesMut,
    in_message: Option<InMessage>,
}

impl<S> MessageFrames<S> {
    pub(crate) fn new(stream: S, in_message: Option<InMessage>) -> Self {
        MessageFrames { stream, current: BytesMut::new(), in_message }
    }
}

impl<S> FrameSource for MessageFrames<S>
where
    S: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
{
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Next, FrameError>>> {
        self.current = BytesMut::new();
        Poll::Ready(match ready!(self.stream.poll_next_unpin(cx)) {
            Some(Ok(Frame::Message(body))) => {
                self.current = body;
                Some(Ok(Next::Message))
            }
            Some(Ok(Frame::Discarded { limit })) => Some(Ok(Next::Discarded { limit })),
            Some(Err(e)) => Some(Err(e)),
            None => None,
        })
    }

    fn body(&self) -> &[u8] {
        &self.current
    }

    fn in_message(&self) -> bool {
        self.in_message.as_ref().is_some_and(|f| f())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{FrameLimits, Framing};
    use tokio::io::AsyncWriteExt;

    /// Everything `input` holds, written in pieces of `piece` bytes, as (body, has_more) pairs
    /// and the ending.
    async fn read_all(framing: Framing, input: &[u8], piece: usize) -> (Vec<String>, Option<String>, usize) {
        let (mut tx, rx) = tokio::io::duplex(64);
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            for chunk in input.chunks(piece) {
                tx.write_all(chunk).await.unwrap();
            }
        });
        let mut frames = ByteFrames::new(rx, framing.codec(FrameLimits::default()));
        let mut bodies = Vec::new();
        let end = loop {
            match std::future::poll_fn(|cx| frames.poll_frame(cx)).await {
                Some(Ok(Next::Message)) => bodies.push(String::from_utf8(frames.body().to_vec()).unwrap()),
                Some(Ok(Next::Discarded { limit })) => bodies.push(format!("discarded {limit}")),
                Some(Err(e)) => break Some(e.to_string()),
                None => break None,
            }
        };
        writer.await.unwrap();
        let after = std::future::poll_fn(|cx| frames.poll_frame(cx)).await;
        assert!(after.is_none(), "nothing after the end");
        (bodies, end, frames.buf.as_deref().map_or(0, BytesMut::capacity))
    }

    #[tokio::test]
    async fn frames_are_cut_in_place_however_the_bytes_arrive() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Length: 7\r\n\r\n[1,2,3]";
        for piece in [1, 3, 7, 64] {
            let (bodies, end, _) = read_all(Framing::ContentLength, input, piece).await;
            assert_eq!(bodies, ["{}", "[1,2,3]"], "pieces of {piece}");
            assert!(end.is_none());
        }
        let input = b"{\"a\":1}\r\n\n  \n[2]\n[3]";
        for piece in [1, 2, 64] {
            let (bodies, end, _) = read_all(Framing::NewlineDelimited, input, piece).await;
            assert_eq!(bodies, ["{\"a\":1}", "[2]", "[3]"], "pieces of {piece}");
            assert!(end.is_none());
        }
    }

    #[tokio::test]
    async fn a_stream_that_ends_inside_a_frame_is_an_error() {
        let (bodies, end, _) =
            read_all(Framing::ContentLength, b"Content-Length: 2\r\n\r\n{}Content-Length: 9\r\n\r\n{", 5).await;
        assert_eq!(bodies, ["{}"]);
        assert!(end.unwrap().contains("expected a body of 9 bytes, got 1"));
    }

    #[tokio::test]
    async fn a_large_message_does_not_keep_its_buffer() {
        let body = format!("[\"{}\"]", "x".repeat(KEEP_BUFFER * 2));
        let mut input = format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let (bodies, _, capacity) = read_all(Framing::ContentLength, &input, 4096).await;
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0], body);
        assert!(capacity <= KEEP_BUFFER, "the read buffer kept {capacity} bytes");
    }

    #[tokio::test]
    async fn a_body_of_known_length_is_read_into_the_room_its_header_reserved() {
        let body = format!("[\"{}\"]", "x".repeat(300 * 1024));
        let input = format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
        let (mut tx, rx) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move { tx.write_all(&input).await.unwrap() });
        let mut frames = ByteFrames::new(rx, Framing::ContentLength.codec(FrameLimits::default()));
        let next = std::future::poll_fn(|cx| frames.poll_frame(cx)).await;
        assert!(matches!(next, Some(Ok(Next::Message))));
        assert_eq!(frames.body(), body.as_bytes());
        // Not doubled for its last bytes (the buffer held the whole body and the first read).
        let capacity = frames.buf.as_deref().map_or(0, BytesMut::capacity);
        assert!(capacity < body.len() + READ_CHUNK, "{capacity} for {}", body.len());
        writer.await.unwrap();
    }
}
