//! Stdin and stdout as non-blocking pipes or sockets on tokio's reactor, made blocking again when
//! dropped.

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

/// A socket as stdin or stdout: a Unix socketpair (how Node's `child_process.spawn`, and so VS
/// Code and most agent hosts, hand a child its stdio) or a TCP socket (inetd), on tokio's reactor
/// like a pipe. Non-blocking while the connection holds it, blocking again when dropped.
enum Socket {
    Unix(tokio::net::UnixStream, Held),
    Tcp(tokio::net::TcpStream, Held),
}

/// The stdio sockets made non-blocking, by `(device, inode)`: stdin and stdout may be one socket
/// (inetd; `server <>socket`), and the first to go must not make it blocking under the other.
static HELD: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// One hold on a socket's non-blocking mode.
struct Held(Option<(u64, u64)>);

impl Held {
    fn take(fd: &OwnedFd) -> Self {
        let id = identity(fd);
        if let Some(id) = id {
            HELD.lock().unwrap_or_else(|p| p.into_inner()).push(id);
        }
        Held(id)
    }

    /// Let go; `true` when nobody else holds the socket.
    fn release(self) -> bool {
        let Some(id) = self.0 else { return true };
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = held.iter().position(|h| *h == id) {
            held.swap_remove(at);
        }
        !held.contains(&id)
    }
}

impl Socket {
    /// `None` when `fd` is not a stream socket (or cannot be registered).
    fn open(fd: OwnedFd) -> Option<Self> {
        use std::os::unix::fs::FileTypeExt;
        let metadata = File::from(fd.try_clone().ok()?).metadata().ok()?;
        if !metadata.file_type().is_socket() {
            return None;
        }
        let held = Held::take(&fd);
        let unix = std::os::unix::net::UnixStream::from(fd);
        if unix.local_addr().is_ok() {
            let kept = unix.try_clone().ok()?;
            kept.set_nonblocking(true).ok()?;
            return match tokio::net::UnixStream::from_std(unix) {
                Ok(stream) => Some(Socket::Unix(stream, held)),
                Err(_) => {
                    if held.release() {
                        let _ = kept.set_nonblocking(false);
                    }
                    None
                }
            };
        }
        let tcp = std::net::TcpStream::from(OwnedFd::from(unix));
        if tcp.local_addr().is_err() {
            held.release();
            return None;
        }
        let kept = tcp.try_clone().ok()?;
        kept.set_nonblocking(true).ok()?;
        match tokio::net::TcpStream::from_std(tcp) {
            Ok(stream) => Some(Socket::Tcp(stream, held)),
            Err(_) => {
                if held.release() {
                    let _ = kept.set_nonblocking(false);
                }
                None
            }
        }
    }

    /// Off the reactor, and blocking again (the open file description is shared with whoever
    /// else holds the socket: the parent, a sibling).
    fn release(self) {
        let blocking = match self {
            Socket::Unix(stream, held) => {
                stream.into_std().and_then(|s| if held.release() { s.set_nonblocking(false) } else { Ok(()) })
            }
            Socket::Tcp(stream, held) => {
                stream.into_std().and_then(|s| if held.release() { s.set_nonblocking(false) } else { Ok(()) })
            }
        };
        if let Err(e) = blocking {
            tracing::debug!(target: crate::LOG_TARGET, error = %e, "a stdio socket could not be made blocking again");
        }
    }
}

/// Stdin when it is a socket.
pub(super) struct SocketReader(Option<Socket>);

impl SocketReader {
    /// `None` when stdin is not a socket (or cannot be registered).
    pub(super) fn stdin() -> Option<Self> {
        Socket::open(duplicate(io::stdin())?).map(|s| SocketReader(Some(s)))
    }
}

impl Drop for SocketReader {
    fn drop(&mut self) {
        if let Some(socket) = self.0.take() {
            socket.release();
        }
    }
}

impl AsyncRead for SocketReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Some(Socket::Unix(s, _)) => Pin::new(s).poll_read(cx, buf),
            Some(Socket::Tcp(s, _)) => Pin::new(s).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

/// Stdout when it is a socket (other than stderr's).
pub(super) struct SocketWriter(Option<Socket>);

impl SocketWriter {
    /// `None` when stdout is not a socket, is stderr's socket too (a non-blocking stderr makes
    /// `eprintln!` panic when the socket is full), or cannot be registered.
    pub(super) fn stdout() -> Option<Self> {
        let fd = duplicate(io::stdout())?;
        let stderr = duplicate(io::stderr()).and_then(|e| identity(&e));
        if stderr.is_some() && identity(&fd) == stderr {
            return None;
        }
        Socket::open(fd).map(|s| SocketWriter(Some(s)))
    }
}

impl Drop for SocketWriter {
    fn drop(&mut self) {
        if let Some(socket) = self.0.take() {
            socket.release();
        }
    }
}

impl AsyncWrite for SocketWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Some(Socket::Unix(s, _)) => Pin::new(s).poll_write(cx, buf),
            Some(Socket::Tcp(s, _)) => Pin::new(s).poll_write(cx, buf),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A socket's writes are not buffered here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Not `shutdown(2)`: stdout stays open (the process may print after the connection, and a
        // socket's shutdown would end it for every holder); the peer sees EOF when the process
        // exits.
        self.poll_flush(cx)
    }
}
