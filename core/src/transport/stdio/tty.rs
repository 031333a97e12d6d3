//! A terminal as stdin or stdout, on tokio's reactor: reopened as an open file description of
//! our own, non-blocking from the start, so the one the process shares with its shell is never
//! touched.
//!
//! `O_NONBLOCK` belongs to the open file description, and a terminal's is shared with the shell
//! that started us (and with every other program run from it): switching fd 0 to non-blocking
//! with `fcntl` would leave the shell reading a non-blocking terminal if we were killed, and
//! makes a sibling's blocking reads fail with `EAGAIN` while we run. Instead the terminal is
//! opened again through `/proc/self/fd/N` with `O_NONBLOCK | O_NOCTTY`: the same device, a new
//! description that only this connection holds, registered with the reactor
//! ([`tokio::io::unix::AsyncFd`]; terminals support `epoll`) and closed when the connection lets
//! go. Nothing is restored because nothing shared was changed: the terminal's modes (`termios`:
//! echo, line editing) belong to the device and are left as they are, and fd 0 and fd 1 keep
//! their flags.
//!
//! Linux and Android only: elsewhere the path of fd N is `ttyname(3)`, which std does not
//! offer and which needs FFI (the workspace forbids `unsafe`); `/dev/fd/N` on macOS and the BSDs
//! duplicates the descriptor (the shared description again) instead of reopening the device.
//! There, and whenever reopening fails (no `/proc`, a terminal we may not open again, as after
//! `su`), the terminal is served by a thread as before.

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// The terminal behind `fd` (stdin or stdout), opened again as a non-blocking description of
/// our own: `None` when `fd` is not a terminal or cannot be reopened.
fn reopen(fd: impl AsFd, write: bool) -> Option<AsyncFd<File>> {
    let fd = fd.as_fd();
    if !fd.is_terminal() {
        return None;
    }
    let device = File::from(fd.try_clone_to_owned().ok()?).metadata().ok()?.rdev();
    let file = OpenOptions::new()
        .read(!write)
        .write(write)
        // O_NOCTTY: a session leader without a terminal must not acquire this one by opening it.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()?;
    // The same terminal (fd N may have been replaced meanwhile by another thread's dup2).
    if !file.is_terminal() || file.metadata().ok()?.rdev() != device {
        return None;
    }
    let interest = if write { Interest::WRITABLE } else { Interest::READABLE };
    // Deprecated by tokio (1.54 here) for I/O safety: a generic `T` may close or change the
    // descriptor its `as_raw_fd` returns while registered. A `File` owns its descriptor and the
    // `AsyncFd` owns the `File`, so it stays open and the same until the `AsyncFd` is dropped:
    // the condition `register_with_interest` states, met without `unsafe` (forbidden here).
    #[allow(deprecated)]
    AsyncFd::with_interest(file, interest).ok()
}

/// Stdin when it is a terminal.
pub(super) struct TtyReader(AsyncFd<File>);

impl TtyReader {
    /// `None` when stdin is not a terminal or cannot be reopened: use a thread.
    pub(super) fn stdin() -> Option<Self> {
        reopen(io::stdin(), false).map(TtyReader)
    }
}

impl AsyncRead for TtyReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let fd = &self.get_mut().0;
        loop {
            let mut ready = ready!(fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|file| file.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Not readable after all: readiness was cleared, wait again.
                Err(_would_block) => {}
            }
        }
    }
}

/// Stdout when it is a terminal (also when stderr is the same terminal, as in an interactive
/// shell: stderr's description is not the one made non-blocking, so `eprintln!` still blocks).
pub(super) struct TtyWriter(AsyncFd<File>);

impl TtyWriter {
    /// `None` when stdout is not a terminal or cannot be reopened: use a thread.
    pub(super) fn stdout() -> Option<Self> {
        reopen(io::stdout(), true).map(TtyWriter)
    }
}

impl AsyncWrite for TtyWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let fd = &self.get_mut().0;
        loop {
            let mut ready = ready!(fd.poll_write_ready(cx))?;
            match ready.try_io(|file| file.get_ref().write(buf)) {
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(written) => return Poll::Ready(written),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: a write is in the terminal's queue once it returns.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The terminal stays open for the process (and its shell); our description closes when
        // the connection drops it.
        self.poll_flush(cx)
    }
}
