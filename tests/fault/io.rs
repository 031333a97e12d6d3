//! The transport fails under us: writes that fail after N bytes (at every kind of place: before
//! anything, mid-header, mid-body, between messages), a writer that accepts nothing, a flush
//! that fails, reads that fail after N bytes, and a writer that never completes. Every call ends
//! (answered, or failed with the reason), the connection ends with a reason naming the failure,
//! and the peer sees a clean end or a truncated frame, never a hang.

use crate::support;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use jsonrpc_duplex::{CloseKind, Connection, Error, ErrorObject, Framing, Router};
use support::time::within;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

fn injected() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "injected write failure")
}

/// How a [`FaultyWriter`] fails once its byte budget is spent.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `write` returns an error.
    WriteError,
    /// `write` returns `Ok(0)` (the writer accepts nothing).
    WriteZero,
    /// Writes succeed, `flush` fails.
    FlushError,
    /// `write` never completes (and never wakes its task).
    Stall,
}

/// Passes `budget` bytes through (the last write may be cut short), then fails as `fault` says.
struct FaultyWriter<W> {
    inner: W,
    budget: usize,
    fault: Fault,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for FaultyWriter<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.budget == 0 {
            return match this.fault {
                Fault::WriteError => Poll::Ready(Err(injected())),
                Fault::WriteZero => Poll::Ready(Ok(0)),
                Fault::FlushError => Pin::new(&mut this.inner).poll_write(cx, buf),
                Fault::Stall => Poll::Pending,
            };
        }
        let n = buf.len().min(this.budget);
        let written = std::task::ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..n]))?;
        this.budget -= written;
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match this.fault {
            Fault::FlushError if this.budget == 0 => Poll::Ready(Err(injected())),
            Fault::Stall if this.budget == 0 => Poll::Pending,
            _ => Pin::new(&mut this.inner).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.fault {
            Fault::Stall if self.budget == 0 => Poll::Pending,
            _ => Pin::new(&mut self.inner).poll_shutdown(cx),
        }
    }
}

/// Passes `budget` bytes through, then fails every read.
struct FaultyReader<R> {
    inner: R,
    budget: usize,
}

impl<R: AsyncRead + Unpin> AsyncRead for FaultyReader<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.budget == 0 {
            return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected read failure")));
        }
        let mut tmp = vec![0u8; buf.remaining().min(this.budget)];
        let mut limited = ReadBuf::new(&mut tmp);
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
        this.budget -= limited.filled().len();
        buf.put_slice(limited.filled());
        Poll::Ready(Ok(()))
    }
}

fn adder() -> jsonrpc_duplex::Builder {
    Connection::builder().serve(Router::new().method("add", |(a, b): (i64, i64), _cx| async move {
        tokio::task::yield_now().await;
        Ok::<_, ErrorObject>(a + b)
    }))
}

/// Our connection writes through a [`FaultyWriter`] to a peer (another of our connections).
/// 40 calls and 40 notifications go out at once: each call is answered correctly or fails with
/// the write failure; then the connection is closed by it, and later calls fail at once.
async fn calls_through_a_failing_writer(framing: Framing, budget: usize, fault: Fault) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = Connection::builder().framing(framing).connect(r, FaultyWriter { inner: w, budget, fault });
    let peer = adder().framing(framing).connect_io(theirs);
    let calls: Vec<_> = (0..40i64)
        .map(|i| {
            let h = conn.handle();
            tokio::spawn(async move {
                let _ = h.notify("note", [i]).await;
                h.request::<i64>("add", (i, 1)).await.map(|sum| (i, sum))
            })
        })
        .collect();
    let mut failed = 0;
    for call in calls {
        match within(call).await.unwrap() {
            Ok((i, sum)) => assert_eq!(sum, i + 1),
            Err(Error::ConnectionLost(reason)) => {
                assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");
                assert!(reason.message.contains("writing to the peer failed"), "{reason}");
                failed += 1;
            }
            Err(e) => panic!("budget {budget}, {fault:?}: unexpected {e}"),
        }
    }
    assert!(failed > 0, "budget {budget}, {fault:?}: no call failed, yet 40 calls cannot fit in {budget} bytes");
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");
    let late = within(conn.handle().request::<i64>("add", (1, 1))).await.unwrap_err();
    assert!(matches!(late, Error::ConnectionLost(_)), "{late:?}");
    within(conn.close()).await;
    // The peer saw our stream end (cleanly between messages, or inside a cut frame).
    let theirs = within(peer.closed()).await;
    assert!(matches!(theirs.kind, CloseKind::RemoteClosed | CloseKind::StreamError), "{theirs}");
}

#[tokio::test]
async fn writes_failing_after_n_bytes_fail_the_calls_and_end_the_connection() {
    // 0: nothing gets out; 10: mid-header; 30: mid-body of the first message; then later on.
    for budget in [0, 1, 10, 30, 61, 200, 777, 1500] {
        for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
            calls_through_a_failing_writer(framing, budget, Fault::WriteError).await;
        }
    }
}

#[tokio::test]
async fn a_writer_that_accepts_nothing_or_cannot_flush_ends_the_connection() {
    for budget in [0, 45, 400] {
        calls_through_a_failing_writer(Framing::ContentLength, budget, Fault::WriteZero).await;
        calls_through_a_failing_writer(Framing::NewlineDelimited, budget, Fault::FlushError).await;
    }
}

#[tokio::test]
async fn reads_failing_after_n_bytes_fail_the_pending_calls_with_the_reason() {
    for budget in [0, 7, 40, 90, 300] {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (r, w) = tokio::io::split(ours);
        let conn = Connection::builder().connect(FaultyReader { inner: r, budget }, w);
        let _peer = adder().connect_io(theirs);
        let calls: Vec<_> = (0..20i64)
            .map(|i| {
                let h = conn.handle();
                tokio::spawn(async move { h.request::<i64>("add", (i, 1)).await.map(|sum| (i, sum)) })
            })
            .collect();
        let mut failed = 0;
        for call in calls {
            match within(call).await.unwrap() {
                Ok((i, sum)) => assert_eq!(sum, i + 1),
                Err(Error::ConnectionLost(reason)) => {
                    assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");
                    assert!(reason.message.contains("injected read failure"), "{reason}");
                    failed += 1;
                }
                Err(e) => panic!("budget {budget}: unexpected {e}"),
            }
        }
        assert!(failed > 0, "budget {budget}: 20 answers cannot fit in {budget} bytes");
        within(conn.close()).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_writer_that_never_completes_does_not_stop_calls_failing_or_the_close() {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = Connection::builder().connect(r, FaultyWriter { inner: w, budget: 30, fault: Fault::Stall });
    let _peer = adder().connect_io(theirs);
    let calls: Vec<_> = (0..10i64)
        .map(|i| {
            let h = conn.handle();
            tokio::spawn(async move { h.request::<i64>("add", (i, 1)).await.map(|sum| (i, sum)) })
        })
        .collect();
    // The writer is stuck for good: the calls wait (the peer never got them) ...
    let h = conn.handle();
    let stuck = tokio::time::timeout(Duration::from_secs(60), h.request::<i64>("add", (1, 1))).await;
    assert!(stuck.is_err(), "a call went through a writer that never completes: {stuck:?}");
    // ... until the connection is closed: then they fail at once, and the close itself ends
    // within the flush timeout (on this test's paused clock).
    let closing = tokio::spawn(conn.close());
    for call in calls {
        match within(call).await.unwrap() {
            Ok((i, sum)) => assert_eq!(sum, i + 1),
            Err(Error::ConnectionLost(reason)) => assert_eq!(reason.kind, CloseKind::LocallyClosed, "{reason}"),
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let reason = within(closing).await.unwrap();
    assert_eq!(reason.kind, CloseKind::LocallyClosed, "{reason}");
}
