//! This process's stdin and stdout, chosen so that the process exits when `main` returns,
//! whatever the peer does with the pipes.
//!
//! tokio's own `stdin()` and `stdout()` read and write with blocking calls on the runtime's
//! blocking pool, and a runtime waits for that pool when it shuts down. A read that waits for a
//! peer keeping the pipe open (an editor waiting for its language server to exit) or a write to
//! a peer that never reads would keep the process alive after `main` returned. Instead:
//!
//! - **A pipe or FIFO** (a shell pipeline, `printf … | server`, most editors) and **a socket**
//!   (a Unix socketpair: how Node's `child_process.spawn` hands a child its stdio, and so how VS
//!   Code, Electron apps and most agent hosts start one; a TCP socket from inetd) are made
//!   non-blocking and registered with tokio's reactor ([`tokio::net::unix::pipe`],
//!   [`tokio::net::UnixStream`], [`tokio::net::TcpStream`]): nothing ever blocks, and closing the
//!   connection really stops reading. `O_NONBLOCK` is a flag of the open file description, which
//!   every process holding the same pipe or socket shares (a sibling in `(server; other) < fifo`,
//!   a parent that keeps its copy): it is cleared again when the connection lets go of it (when
//!   it closes, or when the runtime drops it at shutdown, so also when `main` returns with the
//!   connection still open; a socket that is both stdin and stdout, when both have let go). Only
//!   a process that is killed or calls `std::process::exit` with the connection open leaves it
//!   set. Stdout stays blocking when stderr is the same pipe or socket (`2>&1`): a non-blocking
//!   stderr makes `eprintln!` panic when it is full.
//! - **A terminal** (Linux and Android) is opened again through `/proc/self/fd/N`, with
//!   `O_NONBLOCK`, as a new open file description that only the connection holds, and registered
//!   with the reactor ([`tokio::io::unix::AsyncFd`]). The description fd 0 and 1 share with the
//!   shell is never switched to non-blocking (a shell reading a non-blocking terminal after we
//!   were killed would see `EAGAIN`), and the terminal's modes are left alone, so there is
//!   nothing to restore; this holds when stderr is the same terminal too. On other Unix systems
//!   there is no path to reopen without FFI (`ttyname(3)`; `/dev/fd/N` there duplicates the
//!   shared description), and a terminal we may not open again (after `su`) or no `/proc` falls
//!   back to a thread, as below.
//! - **Anything else** (a file; `/dev/null`; a terminal that could not be reopened; every
//!   stream on Windows) is read and written by a thread of its own, a plain thread that the
//!   runtime does not wait for: when `main` returns, the process exits and takes the thread with
//!   it. Such a reader stays blocked in its last read after the connection has closed, and takes
//!   the next bytes of input: a process that serves stdio over such a stream and then goes on
//!   reading stdin itself should not do that.
//!
//! Which one was chosen is logged at DEBUG (target `jsonrpc_duplex`).

mod thread;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod tty;
#[cfg(unix)]
mod unix;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{Builder, Connection};

impl Builder {
    /// Start over this process's stdin and stdout (a server launched by its client, an agent
    /// launched by its editor). Nothing else may write to stdout: log to stderr, and not with
    /// `eprintln!`: it panics when the write fails, which it does once the parent holding our
    /// stderr has exited (`EPIPE`), so a last "connection ended" line turns a clean exit into
    /// exit code 101. Write with `let _ = writeln!(std::io::stderr(), ..)`, or a logger that
    /// ignores write errors (tracing-subscriber's `fmt` does).
    ///
    /// The process exits when `main` returns, whatever the peer does with the pipes: a peer
    /// that keeps our stdin open, or never reads our stdout, cannot keep it alive (see the close
    /// sequence on [`Connection`] for how long a closing connection waits for the peer). On
    /// Unix, pipes and sockets (Node's `child_process.spawn` gives a child socketpairs) are made
    /// non-blocking for the connection's life, served on the reactor, and restored afterwards; a
    /// terminal (on Linux) is reopened as a non-blocking description of the connection's own and
    /// served on the reactor, leaving the shell's untouched; files (and everything on Windows,
    /// and terminals elsewhere) are served by threads the runtime does not wait for. Needs a tokio runtime with I/O enabled (`#[tokio::main]`).
    ///
    /// ```no_run
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router};
    /// #[tokio::main]
    /// async fn main() {
    ///     let conn = Connection::builder()
    ///         .serve(Router::new().method("ping", |(): (), _ctx| async { Ok::<_, ErrorObject>("pong") }))
    ///         .stdio();
    ///     // Until the client closes our stdin (or a handler calls `close()` on LSP's `exit`).
    ///     conn.closed().await;
    ///     conn.close().await;
    ///     // Returning exits, even if the client still holds the pipes.
    /// }
    /// ```
    pub fn stdio(self) -> Connection {
        self.connect(Stdin::open(), Stdout::open())
    }
}

/// This process's stdin: a non-blocking pipe, or a reader thread.
enum Stdin {
    #[cfg(unix)]
    Pipe(unix::PipeReader),
    #[cfg(unix)]
    Socket(unix::SocketReader),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Tty(tty::TtyReader),
    Thread(thread::ThreadReader),
}

impl Stdin {
    fn open() -> Self {
        #[cfg(unix)]
        if let Some(pipe) = unix::PipeReader::stdin() {
            tracing::debug!(target: crate::LOG_TARGET, "stdin is a pipe: served on the reactor");
            return Stdin::Pipe(pipe);
        }
        #[cfg(unix)]
        if let Some(socket) = unix::SocketReader::stdin() {
            tracing::debug!(target: crate::LOG_TARGET, "stdin is a socket: served on the reactor");
            return Stdin::Socket(socket);
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(tty) = tty::TtyReader::stdin() {
            tracing::debug!(target: crate::LOG_TARGET, "stdin is a terminal: reopened, served on the reactor");
            return Stdin::Tty(tty);
        }
        tracing::debug!(target: crate::LOG_TARGET, "stdin is served by a thread");
        Stdin::Thread(thread::ThreadReader::stdin())
    }
}

impl AsyncRead for Stdin {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Stdin::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            #[cfg(unix)]
            Stdin::Socket(socket) => Pin::new(socket).poll_read(cx, buf),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Stdin::Tty(tty) => Pin::new(tty).poll_read(cx, buf),
            Stdin::Thread(thread) => Pin::new(thread).poll_read(cx, buf),
        }
    }
}

/// This process's stdout: a non-blocking pipe, or a writer thread.
enum Stdout {
    #[cfg(unix)]
    Pipe(unix::PipeWriter),
    #[cfg(unix)]
    Socket(unix::SocketWriter),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Tty(tty::TtyWriter),
    Thread(thread::ThreadWriter),
}

impl Stdout {
    fn open() -> Self {
        #[cfg(unix)]
        if let Some(pipe) = unix::PipeWriter::stdout() {
            tracing::debug!(target: crate::LOG_TARGET, "stdout is a pipe: served on the reactor");
            return Stdout::Pipe(pipe);
        }
        #[cfg(unix)]
        if let Some(socket) = unix::SocketWriter::stdout() {
            tracing::debug!(target: crate::LOG_TARGET, "stdout is a socket: served on the reactor");
            return Stdout::Socket(socket);
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(tty) = tty::TtyWriter::stdout() {
            tracing::debug!(target: crate::LOG_TARGET, "stdout is a terminal: reopened, served on the reactor");
            return Stdout::Tty(tty);
        }
        tracing::debug!(target: crate::LOG_TARGET, "stdout is served by a thread");
        Stdout::Thread(thread::ThreadWriter::stdout())
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            #[cfg(unix)]
            Stdout::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            #[cfg(unix)]
            Stdout::Socket(socket) => Pin::new(socket).poll_write(cx, buf),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Stdout::Tty(tty) => Pin::new(tty).poll_write(cx, buf),
            Stdout::Thread(thread) => Pin::new(thread).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Stdout::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            #[cfg(unix)]
            Stdout::Socket(socket) => Pin::new(socket).poll_flush(cx),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Stdout::Tty(tty) => Pin::new(tty).poll_flush(cx),
            Stdout::Thread(thread) => Pin::new(thread).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            Stdout::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            #[cfg(unix)]
            Stdout::Socket(socket) => Pin::new(socket).poll_shutdown(cx),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Stdout::Tty(tty) => Pin::new(tty).poll_shutdown(cx),
            Stdout::Thread(thread) => Pin::new(thread).poll_shutdown(cx),
        }
    }
}
