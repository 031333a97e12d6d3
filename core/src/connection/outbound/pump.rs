//! The writers a queue owner drives: a byte stream's ([`ByteWriter`]) and a message sink's
//! ([`SinkWriter`]).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use tokio::io::AsyncWrite;

use super::{Chunk, KEEP_BUFFER, Outbound};
use crate::framing::FrameCodec;

/// A byte stream's write side, written by whoever owns the queue.
pub(crate) trait Pump: Send {
    /// Write what is queued, taking more from `out` until the queue is empty; then flush and
    /// give up ownership (`Ready(Ok)`). `Pending` leaves ownership with the caller. `first` is
    /// a queue tail its new owner took already, under the lock it queued its message with.
    fn poll_pump(&mut self, cx: &mut Context<'_>, out: &Outbound, first: Option<Box<BytesMut>>)
    -> Poll<io::Result<()>>;
    /// Keep an error met by an inline writer for the writer task to report.
    fn keep_error(&mut self, e: io::Error);
    /// Shut the write side down.
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A byte stream's writer: writes the chunks and the tail it takes from the queue, in order.
///
/// Laid out in this order, and on a line of its own (`align(64)`: the writer lives as long as
/// its connection, so this costs an allocation's alignment once): what every pass reads and
/// writes first, in the first 128 bytes (two lines, for a socket's write half), and the framing
/// of large bodies after it. A server of many connections finds each one's writer gone from the
/// core's cache by the time its next batch of answers is written: the lines it touches are fetched
/// again, one by one (three and a half of them a batch with the compiler's own order, which spread
/// these fields over the whole struct).
#[repr(C, align(64))]
pub(crate) struct ByteWriter<W> {
    error: Option<io::Error>,
    /// The tail taken from the queue, written after the chunks; swapped back in emptied.
    tail: Option<Box<BytesMut>>,
    /// This writer's emptied buffer, replaced by a tail its inline owner took: given back to
    /// the queue when the writer lets go.
    spare: Option<Box<BytesMut>>,
    /// How much of the current piece is written.
    pos: usize,
    /// Written to since the last flush.
    dirty: bool,
    /// `W`'s flush does something ([`flush_is_noop`]).
    flushes: bool,
    /// 0: head, 1: body, 2: foot (for a body chunk).
    stage: u8,
    /// `large` holds buffers (a body was framed since the writer was last idle).
    framed: bool,
    io: W,
    /// Chunks taken from the queue, not written yet.
    chunks: VecDeque<Chunk>,
    /// The chunk being written; for a body, `large.head` (its prefix) goes first and
    /// `large.foot` after.
    current: Option<Chunk>,
    large: Framer,
}

/// The framing a body chunk gets as it is written (small messages come framed in the tail).
struct Framer {
    codec: FrameCodec,
    head: BytesMut,
    foot: BytesMut,
}

/// Whether `W` is one of tokio's streams whose `poll_flush` does nothing: they keep no buffer of
/// their own (a socket writes to the kernel, a duplex pipe to the other end), so there is
/// nothing to flush, and the writer does not call it. Called through a split half, a flush
/// still took the half's lock and the pipe's (two atomic read-modify-writes each) per message.
fn flush_is_noop<W: 'static>() -> bool {
    use std::any::TypeId;
    use tokio::io::{DuplexStream, WriteHalf};
    let w = TypeId::of::<W>();
    #[allow(unused_mut)]
    let mut noop = [TypeId::of::<DuplexStream>(), TypeId::of::<WriteHalf<DuplexStream>>()].contains(&w);
    #[cfg(feature = "tcp")]
    {
        use tokio::net::{TcpStream, tcp::OwnedWriteHalf};
        noop |= [TypeId::of::<TcpStream>(), TypeId::of::<WriteHalf<TcpStream>>(), TypeId::of::<OwnedWriteHalf>()]
            .contains(&w);
    }
    #[cfg(all(unix, feature = "unix"))]
    {
        use tokio::net::{UnixStream, unix::OwnedWriteHalf};
        noop |= [TypeId::of::<UnixStream>(), TypeId::of::<WriteHalf<UnixStream>>(), TypeId::of::<OwnedWriteHalf>()]
            .contains(&w);
    }
    noop
}

impl<W: AsyncWrite + Send + Unpin + 'static> ByteWriter<W> {
    pub(crate) fn new(io: W, codec: FrameCodec) -> Self {
        ByteWriter {
            error: None,
            // None until the first message (an idle connection should cost little).
            tail: None,
            spare: None,
            pos: 0,
            dirty: false,
            flushes: !flush_is_noop::<W>(),
            stage: 0,
            framed: false,
            io,
            chunks: VecDeque::new(),
            current: None,
            large: Framer { codec, head: BytesMut::new(), foot: BytesMut::new() },
        }
    }

    fn poll_write_all(io: &mut W, cx: &mut Context<'_>, bytes: &[u8], pos: &mut usize) -> Poll<io::Result<()>> {
        while *pos < bytes.len() {
            let n = ready!(Pin::new(&mut *io).poll_write(cx, &bytes[*pos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *pos += n;
        }
        Poll::Ready(Ok(()))
    }

    /// Write the current chunk to its end.
    fn poll_current(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(chunk) = &self.current else { return Poll::Ready(Ok(())) };
        self.dirty = true;
        match chunk {
            Chunk::Encoded(bytes) => ready!(Self::poll_write_all(&mut self.io, cx, bytes, &mut self.pos))?,
            Chunk::Body(_) | Chunk::Shared(_) => {
                let body = chunk.body();
                while self.stage < 3 {
                    let piece: &[u8] = match self.stage {
                        0 => &self.large.head,
                        1 => body,
                        _ => &self.large.foot,
                    };
                    ready!(Self::poll_write_all(&mut self.io, cx, piece, &mut self.pos))?;
                    self.stage += 1;
                    self.pos = 0;
                }
            }
        }
        self.current = None;
        self.pos = 0;
        self.stage = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Pump for ByteWriter<W> {
    fn poll_pump(
        &mut self,
        cx: &mut Context<'_>,
        out: &Outbound,
        first: Option<Box<BytesMut>>,
    ) -> Poll<io::Result<()>> {
        if let Some(first) = first {
            match &mut self.tail {
                // Cannot happen (an idle writer has written its tail), but never lose bytes.
                Some(tail) if !tail.is_empty() => tail.extend_from_slice(&first),
                slot => {
                    if let Some(emptied) = slot.replace(first) {
                        self.spare = Some(emptied);
                    }
                }
            }
        }
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        loop {
            ready!(self.poll_current(cx))?;
            if let Some(chunk) = self.chunks.pop_front() {
                if let Chunk::Body(_) | Chunk::Shared(_) = &chunk {
                    let large = &mut self.large;
                    large.head.clear();
                    large.codec.encode_prefix(chunk.body().len(), &mut large.head);
                    large.foot.clear();
                    large.codec.encode_suffix(&mut large.foot);
                    self.framed = true;
                }
                self.current = Some(chunk);
                continue;
            }
            if let Some(tail) = &mut self.tail
                && !tail.is_empty()
            {
                self.dirty = true;
                ready!(Self::poll_write_all(&mut self.io, cx, tail, &mut self.pos))?;
                tail.clear();
                self.pos = 0;
            }
            if self.dirty {
                if self.flushes {
                    ready!(Pin::new(&mut self.io).poll_flush(cx))?;
                }
                self.dirty = false;
            }
            if self.tail.as_ref().is_some_and(|tail| tail.capacity() > KEEP_BUFFER) {
                // A burst is over: do not keep its buffer.
                self.tail = None;
            }
            if !out.take_or_release(&mut self.chunks, &mut self.tail, &mut self.spare) {
                // Idle: the emptied buffers go back to this thread's pool.
                if let Some(tail) = self.tail.take() {
                    crate::util::bufpool::give_bytes(tail);
                }
                // (Most often they were never used: nothing to drop, nor a line to fetch.)
                if std::mem::take(&mut self.framed) {
                    self.large.head = BytesMut::new();
                    self.large.foot = BytesMut::new();
                }
                super::shrink_idle(&mut self.chunks);
                return Poll::Ready(Ok(()));
            }
        }
    }

    fn keep_error(&mut self, e: io::Error) {
        self.error = Some(e);
    }

    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A message transport's writer: one sink item per queued body, flushed once per batch.
pub(crate) struct SinkWriter<Si> {
    sink: Si,
    chunks: VecDeque<Chunk>,
    /// Always `None`: a message transport's queue has no tail.
    tail: Option<Box<BytesMut>>,
    /// A body waiting for the sink to be ready.
    next: Option<Vec<u8>>,
    /// Fed since the last flush.
    dirty: bool,
    error: Option<io::Error>,
}

impl<Si> SinkWriter<Si> {
    pub(crate) fn new(sink: Si) -> Self {
        SinkWriter { sink, chunks: VecDeque::new(), tail: None, next: None, dirty: false, error: None }
    }
}

impl<Si> Pump for SinkWriter<Si>
where
    Si: futures::Sink<Vec<u8>, Error = io::Error> + Send + Unpin,
{
    fn poll_pump(
        &mut self,
        cx: &mut Context<'_>,
        out: &Outbound,
        _first: Option<Box<BytesMut>>,
    ) -> Poll<io::Result<()>> {
        // A message transport queues chunks only: no tail is ever taken for it.
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        loop {
            if self.next.is_some() {
                ready!(Pin::new(&mut self.sink).poll_ready(cx))?;
                if let Some(body) = self.next.take() {
                    Pin::new(&mut self.sink).start_send(body)?;
                    self.dirty = true;
                }
                continue;
            }
            if let Some(chunk) = self.chunks.pop_front() {
                match chunk {
                    Chunk::Body(body) => self.next = Some(body),
                    // The sink takes its own copy: made as it is sent, not while it waits.
                    Chunk::Shared(body) => self.next = Some(body.to_vec()),
                    Chunk::Encoded(_) => {}
                }
                continue;
            }
            if self.dirty {
                ready!(Pin::new(&mut self.sink).poll_flush(cx))?;
                self.dirty = false;
            }
            if !out.take_or_release(&mut self.chunks, &mut self.tail, &mut None) {
                super::shrink_idle(&mut self.chunks);
                return Poll::Ready(Ok(()));
            }
        }
    }

    fn keep_error(&mut self, e: io::Error) {
        self.error = Some(e);
    }

    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.sink).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::flush_is_noop;

    /// What every pass touches is in the first two lines of a socket's writer, and the writer
    /// starts a line (see [`ByteWriter`]).
    #[cfg(feature = "tcp")]
    #[test]
    fn a_sockets_writer_touches_two_lines_a_pass() {
        use std::mem::{align_of, offset_of};
        type Socket = super::ByteWriter<tokio::net::tcp::OwnedWriteHalf>;
        assert_eq!(align_of::<Socket>(), 64);
        assert!(offset_of!(Socket, large) <= 128, "{}", offset_of!(Socket, large));
    }

    #[test]
    fn only_the_streams_without_a_buffer_skip_the_flush() {
        use tokio::io::{BufWriter, DuplexStream, WriteHalf};
        assert!(flush_is_noop::<DuplexStream>());
        assert!(flush_is_noop::<WriteHalf<DuplexStream>>());
        #[cfg(feature = "tcp")]
        assert!(flush_is_noop::<tokio::net::tcp::OwnedWriteHalf>());
        #[cfg(all(unix, feature = "unix"))]
        assert!(flush_is_noop::<WriteHalf<tokio::net::UnixStream>>());
        // A buffer of its own, or a type it does not know: flushed.
        assert!(!flush_is_noop::<BufWriter<DuplexStream>>());
        assert!(!flush_is_noop::<WriteHalf<BufWriter<DuplexStream>>>());
        assert!(!flush_is_noop::<tokio::io::Stdout>());
    }
}
