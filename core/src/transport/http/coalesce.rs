//! Write coalescing for the server loop's connections: what hyper writes during one poll of a
//! connection's task goes to the socket in one `write` at the end of that poll, not one
//! `writev` per response.
//!
//! hyper flushes after every response. A client that pipelines (HTTP/1.1) sends many requests
//! at once, and hyper answers each with a `writev` of its own: a system call, and on loopback
//! the whole receive path of the peer, per response. hyper's own `pipeline_flush` would batch
//! them, but it holds the answers in a write buffer with no bound (a peer that pipelines and
//! never reads makes the server hold every answer) and it does not flush while part of the next
//! request waits in its read buffer (a peer that sends half a request and waits for the answers
//! before it, never gets them). This does neither:
//!
//! - [`Coalescing`] is the connection's I/O: reads go straight to the socket; a write is copied
//!   into a buffer shared with the task ([`Held`]), and `poll_flush` leaves it there;
//! - [`flushing`] wraps the connection's future: after every poll of it (whether it returned
//!   `Pending` or finished) the buffer goes to the socket. So whatever a poll produced, however
//!   many responses (a pipelined burst, hyper answers up to 16 requests per poll), leaves in one
//!   write before the task sleeps; nothing waits for a later event;
//! - **the bound**: the buffer holds at most [`MAX_PENDING`] bytes. A write that would pass it
//!   sends the buffer first, and if the socket takes no more, the write is `Pending` (hyper
//!   stops producing, and stops reading the peer's requests): a peer that does not read is held
//!   at that many bytes, as with no coalescing. A write larger than the bound goes to the socket
//!   itself (no copy of large bodies);
//! - shutting the write side down sends the buffer first; once sent, a buffer grown past 8 KiB
//!   (a burst's) is freed, so an idle connection keeps at most that much.
//!
//! The buffer is shared by the connection's I/O (inside hyper) and the future around it, which
//! are polled by the same task, one after the other, never at once: the mutex is there to make
//! the sharing `Send`, not to hand anything between tasks (it is never contended, and there is
//! no hand-off to model). (The waker [`flushing`] polls the connection with is a hand-off, with
//! other threads' wakes: [`InlineWake`], modelled in `sync/inline.rs`.) The buffer's states:
//!
//! | state | reached by | left by |
//! |---|---|---|
//! | empty | start, a flush that sent everything | a write (copied in) |
//! | holding `n ≤ MAX_PENDING` bytes | a write | the end of the task's poll (sent), a write that would pass the bound (sent first), shutdown (sent first) |
//! | holding, socket full | a send that wrote less than all | the socket's write readiness (the task is woken by it and sends the rest) |

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::sync::inline::InlineWake;

/// The most bytes held for the end of a poll (64 KiB).
pub(crate) const MAX_PENDING: usize = 64 * 1024;

/// The buffer kept once empty; a larger one (a pipelined burst's) is freed.
const KEPT_CAPACITY: usize = 8 * 1024;

/// The write side and the bytes waiting for it.
pub(crate) struct Held {
    write: OwnedWriteHalf,
    out: Vec<u8>,
}

impl Held {
    /// Send what is held; `Pending` (woken by the socket's write readiness) while the socket
    /// takes no more.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut sent = 0;
        let result = loop {
            if sent == self.out.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.write).poll_write(cx, &self.out[sent..]) {
                Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => sent += n,
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.out.drain(..sent);
        // A burst's buffer is not kept by an idle connection (a small one is, for the next
        // answer).
        if self.out.is_empty() && self.out.capacity() > KEPT_CAPACITY {
            self.out = Vec::new();
        }
        result
    }
}

type Shared = Arc<Mutex<Held>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Held> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection's socket whose writes are held until the end of the task's poll (see the
/// [module docs](self)); made by [`split`].
pub(crate) struct Coalescing {
    read: OwnedReadHalf,
    shared: Shared,
}

/// The I/O for hyper and the handle [`flushing`] sends the held bytes with.
pub(crate) fn split(stream: TcpStream) -> (Coalescing, Shared) {
    let (read, write) = stream.into_split();
    let shared = Arc::new(Mutex::new(Held { write, out: Vec::new() }));
    (Coalescing { read, shared: shared.clone() }, shared)
}

impl Coalescing {
    /// Hold `bufs` (their `total` bytes) for the end of the poll, sending what is held first if
    /// they would pass the bound; a write larger than the bound goes to the socket directly.
    fn hold(&mut self, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>], total: usize) -> Poll<io::Result<usize>> {
        let mut held = lock(&self.shared);
        if held.out.len() + total > MAX_PENDING {
            ready!(held.poll_send(cx))?;
            if total > MAX_PENDING {
                return Pin::new(&mut held.write).poll_write_vectored(cx, bufs);
            }
        }
        if held.out.capacity() == 0 {
            held.out.reserve(total.max(4096));
        }
        for buf in bufs {
            held.out.extend_from_slice(buf);
        }
        Poll::Ready(Ok(total))
    }
}

impl AsyncRead for Coalescing {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl AsyncWrite for Coalescing {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.hold(cx, &[io::IoSlice::new(buf)], buf.len())
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let total = bufs.iter().map(|b| b.len()).sum();
        self.hold(cx, bufs, total)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Held for the end of the poll ([`flushing`] sends it).
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut held = lock(&self.shared);
        ready!(held.poll_send(cx))?;
        Pin::new(&mut held.write).poll_shutdown(cx)
    }
}

/// How many times in a row [`flushing`] polls the connection again at once because it woke
/// itself; past that it yields to the runtime.
const MAX_INLINE: usize = 8;

/// `connection`, sending what its I/O holds after every poll of it (see the [module docs](self)).
/// A send that fails is left to the connection to find (its next read or write fails too). A
/// connection that ends sends its last bytes as it shuts the socket's write side down (hyper
/// does when it ends a connection); what is still held after an error is dropped with it.
///
/// A connection that wakes itself while it is polled (hyper's body channel does, once per
/// request: it hands the body's bytes to the service's future in the same task) is polled
/// again here, at once, up to [`MAX_INLINE`] times in a row, instead of being rescheduled by
/// the runtime (a yielded task is put at the back of the queue and another worker is woken to
/// steal it: a `futex` and a thread's wake-up per request, for nothing); see
/// [`InlineWake`](crate::sync::inline::InlineWake).
pub(crate) async fn flushing<F: Future>(connection: F, shared: Shared) -> F::Output {
    let mut connection = std::pin::pin!(connection);
    let inline = InlineWake::new();
    let waker = std::task::Waker::from(inline.clone());
    std::future::poll_fn(move |cx| {
        inline.set_task(cx.waker());
        for _ in 0..MAX_INLINE {
            inline.begin_poll();
            let polled = connection.as_mut().poll(&mut Context::from_waker(&waker));
            let again = inline.end_poll();
            let mut held = lock(&shared);
            if !held.out.is_empty() {
                // `Pending`: the socket's write readiness wakes the task, and this poll sends
                // the rest. An error: the bytes are dropped, the connection's next I/O fails.
                if let Poll::Ready(Err(_)) = held.poll_send(cx) {
                    held.out.clear();
                }
            }
            drop(held);
            if polled.is_ready() || !again {
                return polled;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (server, client)
    }

    #[tokio::test]
    async fn writes_in_one_poll_leave_at_its_end_and_flush_holds_them() {
        let (server, mut client) = pair().await;
        let (mut io, shared) = split(server);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(flushing(
            async move {
                io.write_all(b"one ").await.unwrap();
                io.flush().await.unwrap();
                io.write_all(b"two").await.unwrap();
                // Held across the flush, sent when this future waits.
                assert_eq!(lock(&io.shared).out, b"one two");
                let _ = rx.await;
                io
            },
            shared,
        ));
        let mut got = [0u8; 7];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"one two");
        tx.send(()).unwrap();
        let io = task.await.unwrap();
        assert!(lock(&io.shared).out.is_empty());
    }

    #[tokio::test]
    async fn what_is_held_stays_within_the_bound_and_arrives_in_order() {
        let (server, mut client) = pair().await;
        let (mut io, shared) = split(server);
        // More than the sockets buffer, in small writes (held, sent at the bound) and large
        // ones (past the bound: straight to the socket), each byte its offset's low byte.
        let sizes = [1000usize, 70_000, 3, 65_536, 20_000];
        let total: usize = (0..400).map(|i| sizes[i % sizes.len()]).sum();
        let writer = tokio::spawn(flushing(
            async move {
                let mut at = 0usize;
                for i in 0..400 {
                    let chunk: Vec<u8> = (at..at + sizes[i % sizes.len()]).map(|n| n as u8).collect();
                    io.write_all(&chunk).await.unwrap();
                    at += chunk.len();
                    assert!(lock(&io.shared).out.len() <= MAX_PENDING);
                }
                io.shutdown().await.unwrap();
            },
            shared,
        ));
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(got.len(), total);
        assert!(got.iter().enumerate().all(|(n, &b)| b == n as u8), "the bytes arrived out of order");
    }

    #[tokio::test]
    async fn shutdown_sends_what_is_held_first() {
        let (server, mut client) = pair().await;
        let (mut io, _shared) = split(server);
        io.write_all(b"last words").await.unwrap();
        io.shutdown().await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
    }
}
