//! Stdin and stdout served by threads of their own, which the runtime does not wait for: a
//! blocking read or write in them cannot keep the process alive once `main` returns.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

/// Bytes read at most per read.
const CHUNK: usize = 64 * 1024;
/// Chunks read ahead of the connection (the thread waits beyond that).
const AHEAD: usize = 4;

/// What the reader thread hands over: bytes, an empty chunk for EOF, or the read's error.
type Chunk = io::Result<Bytes>;

/// Stdin read by a thread.
pub(super) struct ThreadReader {
    rx: mpsc::Receiver<Chunk>,
    chunk: Bytes,
    /// The thread could not be started.
    failed: Option<io::Error>,
}

impl ThreadReader {
    pub(super) fn stdin() -> Self {
        let (tx, rx) = mpsc::channel(AHEAD);
        let spawned = std::thread::Builder::new().name("jsonrpc-duplex stdin".into()).spawn(move || read_stdin(tx));
        ThreadReader { rx, chunk: Bytes::new(), failed: spawned.err() }
    }
}

fn read_stdin(tx: mpsc::Sender<Chunk>) {
    let mut stdin = io::stdin();
    let mut buf = vec![0; CHUNK];
    loop {
        let chunk = match stdin.read(&mut buf) {
            Ok(n) => Ok(Bytes::copy_from_slice(&buf[..n])),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let last = !matches!(&chunk, Ok(bytes) if !bytes.is_empty());
        // The connection is gone: stop.
        if tx.blocking_send(chunk).is_err() || last {
            return;
        }
    }
}

impl AsyncRead for ThreadReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.failed.take() {
            return Poll::Ready(Err(e));
        }
        if this.chunk.is_empty() {
            match ready!(this.rx.poll_recv(cx)) {
                Some(Ok(bytes)) => this.chunk = bytes,
                Some(Err(e)) => return Poll::Ready(Err(e)),
                // EOF (an empty chunk leaves `chunk` empty: nothing is read).
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = this.chunk.len().min(buf.remaining());
        buf.put_slice(&this.chunk.split_to(n));
        Poll::Ready(Ok(()))
    }
}

/// How far the writer thread has got.
#[derive(Default)]
struct Progress {
    /// Bytes written and flushed.
    written: AtomicU64,
    /// The write that failed (the thread has stopped): kept, so that every flush after it fails
    /// (the first flush of a closing connection may not be its last).
    error: Mutex<Option<(io::ErrorKind, String)>>,
    /// The connection's writer, waiting for a flush.
    waker: AtomicWaker,
}

impl Progress {
    fn fail(&self, e: &io::Error) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some((e.kind(), e.to_string()));
    }

    /// The failure, if the thread has stopped on one.
    fn failed(&self) -> Option<io::Error> {
        let kept = self.error.lock().unwrap_or_else(|p| p.into_inner());
        kept.as_ref().map(|(kind, message)| io::Error::new(*kind, message.clone()))
    }
}

/// Stdout written by a thread.
pub(super) struct ThreadWriter {
    tx: PollSender<Vec<u8>>,
    progress: Arc<Progress>,
    /// Bytes handed to the thread.
    sent: u64,
}

impl ThreadWriter {
    pub(super) fn stdout() -> Self {
        ThreadWriter::spawn(io::stdout())
    }

    /// `out` written by a thread of its own.
    fn spawn(out: impl Write + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel(AHEAD);
        let progress = Arc::new(Progress::default());
        let theirs = progress.clone();
        let spawned =
            std::thread::Builder::new().name("jsonrpc-duplex stdout".into()).spawn(move || write_to(rx, &theirs, out));
        if let Err(e) = spawned {
            progress.fail(&e);
        }
        ThreadWriter { tx: PollSender::new(tx), progress, sent: 0 }
    }

    fn error(&self) -> io::Error {
        self.progress.failed().unwrap_or_else(|| io::ErrorKind::BrokenPipe.into())
    }
}

fn write_to(mut rx: mpsc::Receiver<Vec<u8>>, progress: &Progress, mut out: impl Write) {
    while let Some(bytes) = rx.blocking_recv() {
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            // In this order: the channel is closed and the error kept before the writer is woken,
            // so that a flush, whenever it looks, finds the thread stopped (the error stays for
            // every flush after it, and `out`, which may take its time to drop, is not waited for).
            rx.close();
            progress.fail(&e);
            progress.waker.wake();
            return;
        }
        progress.written.fetch_add(bytes.len() as u64, Ordering::AcqRel);
        progress.waker.wake();
    }
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if ready!(this.tx.poll_reserve(cx)).is_err() || this.tx.send_item(buf.to_vec()).is_err() {
            return Poll::Ready(Err(this.error()));
        }
        this.sent += buf.len() as u64;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let done = |p: &Progress, sent| p.written.load(Ordering::Acquire) >= sent;
        if done(&this.progress, this.sent) {
            return Poll::Ready(Ok(()));
        }
        // Registered before the second look: a write finished in between wakes this task.
        this.progress.waker.register(cx.waker());
        if done(&this.progress, this.sent) {
            return Poll::Ready(Ok(()));
        }
        // The thread stopped on a failed write (it keeps the error before it wakes us), or
        // never started.
        match this.progress.failed() {
            Some(e) => Poll::Ready(Err(e)),
            None if this.tx.get_ref().is_none_or(mpsc::Sender::is_closed) => Poll::Ready(Err(this.error())),
            None => Poll::Pending,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A stdout whose writes fail, and whose drop waits until the test lets it go (as a thread
    /// may be descheduled between its last wake-up and the end of its function).
    struct Broken(Option<std_mpsc::Receiver<()>>);

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Drop for Broken {
        fn drop(&mut self) {
            if let Some(gate) = self.0.take() {
                let _ = gate.recv_timeout(Duration::from_secs(10));
            }
        }
    }

    async fn bounded<T>(what: impl Future<Output = T>) -> Result<T, tokio::time::error::Elapsed> {
        tokio::time::timeout(Duration::from_secs(2), what).await
    }

    #[tokio::test]
    async fn every_flush_after_a_failed_write_fails_at_once() {
        let (release, gate) = std_mpsc::channel();
        let mut writer = ThreadWriter::spawn(Broken(Some(gate)));
        writer.write_all(b"{}\n").await.unwrap();
        // The first flush (the writer's own) sees the failure …
        let first = bounded(writer.flush()).await.expect("the first flush returned");
        assert_eq!(first.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        // … and so does the shutdown's, while the thread has not finished yet: it did not wait
        // out a timeout for a wake-up that never comes.
        let second = bounded(writer.shutdown()).await.expect("the shutdown's flush returned");
        assert_eq!(second.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        let write = bounded(writer.write_all(b"more")).await.expect("a write after it returned");
        assert_eq!(write.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        release.send(()).unwrap();
    }
}
