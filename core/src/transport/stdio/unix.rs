//! Stdin and stdout as non-blocking pipes on tokio's reactor, made blocking again when dropped.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// A copy of one of this process's descriptors (the same open file description).
fn duplicate(fd: impl AsFd) -> Option<OwnedFd> {
    fd.as_fd().try_clone_to_owned().ok()
}

/// `(device, inode)` of what `fd` refers to.
fn identity(fd: &OwnedFd) -> Option<(u64, u64)> {
    let metadata = File::from(fd.try_clone().ok()?).metadata().ok()?;
    Some((metadata.dev(), metadata.ino()))
}

/// Stdin when it is a pipe or FIFO.
pub(super) struct PipeReader(Option<pipe::Receiver>);

impl PipeReader {
    /// `None` when stdin is not a pipe (or cannot be registered): use a thread.
    pub(super) fn stdin() -> Option<Self> {
        // `from_owned_fd` refuses anything but a readable pipe, and only then sets O_NONBLOCK.
        pipe::Receiver::from_owned_fd(duplicate(io::stdin())?).ok().map(|rx| PipeReader(Some(rx)))
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        if let Some(rx) = self.0.take()
            && let Err(e) = rx.into_blocking_fd()
        {
            tracing::debug!(target: crate::LOG_TARGET, error = %e, "stdin could not be made blocking again");
        }
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Some(rx) => Pin::new(rx).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

/// Stdout when it is a pipe or FIFO (other than stderr's).
pub(super) struct PipeWriter(Option<pipe::Sender>);

impl PipeWriter {
    /// `None` when stdout is not a pipe, is stderr's pipe too, or cannot be registered: use a
    /// thread.
    pub(super) fn stdout() -> Option<Self> {
        let fd = duplicate(io::stdout())?;
        let stderr = duplicate(io::stderr()).and_then(|e| identity(&e));
        if stderr.is_some() && identity(&fd) == stderr {
            return None;
        }
        pipe::Sender::from_owned_fd(fd).ok().map(|tx| PipeWriter(Some(tx)))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take()
            && let Err(e) = tx.into_blocking_fd()
        {
            tracing::debug!(target: crate::LOG_TARGET, error = %e, "stdout could not be made blocking again");
        }
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Some(tx) => Pin::new(tx).poll_write(cx, buf),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Some(tx) => Pin::new(tx).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Stdout itself stays open (the process may print after the connection); the peer sees
        // EOF when the process exits.
        self.poll_flush(cx)
    }
}
