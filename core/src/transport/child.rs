//! A spawned child process: its stdin and stdout are the stream, its stderr goes to tracing, and
//! its life is bound to the connection's.

use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::connection::shared::Shared;
use crate::{Builder, ChildExit, CloseKind, CloseReason, Connection};

/// How a child process is bound to its connection.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
#[must_use = "a builder does nothing until it is used"]
pub struct ChildOptions {
    /// After the connection closes (and the child's stdin with it), how long the child may take
    /// to exit by itself before it is stopped (logged at WARN): on Unix it is sent `SIGTERM`
    /// first ([`ChildOptions::term_grace`]), then killed (the close reason then says
    /// [`ChildExit::Terminated`](crate::ChildExit::Terminated) or
    /// [`ChildExit::Killed`](crate::ChildExit::Killed)). Its stdout is still read meanwhile
    /// (and discarded, logged at DEBUG): a child that writes while it shuts down is not killed by
    /// `EPIPE`/`SIGPIPE`.
    pub exit_grace: Duration,
    /// On Unix, once [`ChildOptions::exit_grace`] has passed, the child is sent `SIGTERM` and
    /// given this long to exit before it is killed with `SIGKILL` (a server that finishes its
    /// shutdown on `SIGTERM`, as most do, is not cut off). Zero skips the step; elsewhere
    /// the child is killed at once.
    pub term_grace: Duration,
    /// After the child exits, how long its stdout may stay open (held by a grandchild) before the
    /// connection is closed anyway.
    pub stdout_grace: Duration,
    /// Forward the child's stderr lines to tracing (target `jsonrpc_duplex::child`, INFO).
    /// When `false`, stderr is inherited from this process.
    pub stderr_to_tracing: bool,
}

impl Default for ChildOptions {
    fn default() -> Self {
        ChildOptions {
            exit_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(1),
            stdout_grace: Duration::from_secs(2),
            stderr_to_tracing: true,
        }
    }
}

/// ```
/// use std::time::Duration;
/// use jsonrpc_duplex_core::transport::ChildOptions;
/// let options = ChildOptions::new().exit_grace(Duration::from_millis(500)).stderr_to_tracing(false);
/// assert_eq!(options.exit_grace, Duration::from_millis(500));
/// ```
impl ChildOptions {
    /// The defaults: 2 s for the exit and stdout graces, 1 s after `SIGTERM`, stderr to tracing.
    pub fn new() -> Self {
        ChildOptions::default()
    }
    /// Set [`ChildOptions::exit_grace`].
    pub fn exit_grace(mut self, grace: Duration) -> Self {
        self.exit_grace = grace;
        self
    }
    /// Set [`ChildOptions::term_grace`].
    pub fn term_grace(mut self, grace: Duration) -> Self {
        self.term_grace = grace;
        self
    }
    /// Set [`ChildOptions::stdout_grace`].
    pub fn stdout_grace(mut self, grace: Duration) -> Self {
        self.stdout_grace = grace;
        self
    }
    /// Set [`ChildOptions::stderr_to_tracing`].
    pub fn stderr_to_tracing(mut self, forward: bool) -> Self {
        self.stderr_to_tracing = forward;
        self
    }
}

impl Builder {
    /// Spawn `command` and talk to it over its stdin/stdout (with [`ChildOptions::default`]).
    ///
    /// Dropping or closing the connection closes the child's stdin; a child that has not
    /// exited within the grace period (logged at WARN) is sent `SIGTERM` on Unix and, if it is
    /// still running a moment later ([`ChildOptions::term_grace`]), killed. The child exiting
    /// ends the connection.
    /// Until the child has exited (or been killed), its stdout is still read once the connection
    /// has stopped reading messages, and what it writes is discarded (logged at DEBUG): a child
    /// that logs or answers while it shuts down exits as it means to, not of a broken pipe.
    /// [`Connection::close`] and [`Connection::closed`] resolve once the child has been reaped,
    /// with a reason that says how it ended ([`CloseReason::child`]: by itself, with its exit
    /// status, on `SIGTERM`, or killed).
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use jsonrpc_duplex_core::{ChildExit, Connection};
    /// let conn = Connection::builder().spawn_child(tokio::process::Command::new("my-language-server"))?;
    /// // … talk to it …
    /// let reason = conn.close().await;
    /// match reason.child() {
    ///     Some(ChildExit::Exited(status)) => println!("it exited by itself: {status}"),
    ///     Some(ChildExit::Terminated { status, .. }) => println!("it ignored EOF, then exited on SIGTERM: {status}"),
    ///     Some(ChildExit::Killed { grace, .. }) => println!("it ignored EOF for {grace:?} and was killed"),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn spawn_child(self, command: impl Into<Command>) -> io::Result<Connection> {
        self.spawn_child_with(command, ChildOptions::default())
    }

    /// [`Builder::spawn_child`] with explicit options.
    pub fn spawn_child_with(self, command: impl Into<Command>, options: ChildOptions) -> io::Result<Connection> {
        let mut command = command.into();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if options.stderr_to_tracing { Stdio::piped() } else { Stdio::inherit() })
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the child's stdio pipes were not created"));
        };
        let pid = child.id().unwrap_or(0);
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(forward_stderr(stderr, pid));
        }
        let (status_tx, status_rx) = oneshot::channel::<String>();
        let eof_reason = async move {
            // Stdout closed: the exit status usually follows at once.
            tokio::time::timeout(Duration::from_secs(2), status_rx).await.ok().and_then(Result::ok)
        }
        .boxed();
        let (handoff, handed) = oneshot::channel();
        let stdout = HandedBack { stdout: Some(stdout), handoff: Some(handoff) };
        let (mut conn, shared) = self.start(stdout, stdin, Some(eof_reason));
        let exited = CancellationToken::new();
        conn.set_transport_done(exited.clone());
        let reaped = CancellationToken::new();
        tokio::spawn(discard_stdout(handed, reaped.clone(), pid));
        tokio::spawn(async move {
            let exit = watch_child(child, &shared, status_tx, options).await;
            reaped.cancel();
            shared.note_child_exit(exit);
            exited.cancel();
        });
        Ok(conn)
    }
}

/// The child's stdout as the connection reads it: when the connection lets go of it (it stopped
/// reading: closing, or a broken message), it goes to [`discard_stdout`] rather than being
/// closed under a child that may still write.
struct HandedBack {
    stdout: Option<ChildStdout>,
    handoff: Option<oneshot::Sender<ChildStdout>>,
}

impl AsyncRead for HandedBack {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stdout {
            Some(stdout) => Pin::new(stdout).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for HandedBack {
    fn drop(&mut self) {
        if let (Some(stdout), Some(handoff)) = (self.stdout.take(), self.handoff.take()) {
            // No receiver: the child is reaped already, and the pipe may close.
            let _ = handoff.send(stdout);
        }
    }
}

/// Read what the child still writes after the connection stopped reading, until it closes its
/// stdout or has been reaped (a grandchild may hold the pipe: that is no reason to wait).
async fn discard_stdout(handed: oneshot::Receiver<ChildStdout>, reaped: CancellationToken, pid: u32) {
    let mut stdout = tokio::select! {
        stdout = handed => match stdout { Ok(stdout) => stdout, Err(_) => return },
        _ = reaped.cancelled() => return,
    };
    let mut buf = vec![0; 8 * 1024];
    let mut discarded = 0u64;
    loop {
        let n = tokio::select! {
            read = stdout.read(&mut buf) => read.unwrap_or(0),
            _ = reaped.cancelled() => 0,
        };
        if n == 0 {
            break;
        }
        discarded += n as u64;
        tracing::debug!(
            target: crate::LOG_TARGET,
            pid,
            bytes = n,
            start = %String::from_utf8_lossy(&buf[..n.min(120)]),
            "discarded what the child wrote to stdout after the connection stopped reading",
        );
    }
    if discarded > 0 {
        tracing::debug!(target: crate::LOG_TARGET, pid, discarded, "the child's stdout is no longer read");
    }
}

async fn forward_stderr(stderr: ChildStderr, pid: u32) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "jsonrpc_duplex::child", pid, "{line}");
    }
}

/// Send the child `SIGTERM` and wait [`ChildOptions::term_grace`] for it to exit; `None` when
/// the step is off, the signal could not be sent, or the child is still running after it.
#[cfg(unix)]
async fn terminate(child: &mut Child, pid: Option<u32>, options: &ChildOptions) -> Option<ChildExit> {
    if options.term_grace.is_zero() {
        return None;
    }
    let raw = i32::try_from(pid?).ok()?;
    tracing::warn!(target: crate::LOG_TARGET, pid = raw, grace = ?options.exit_grace, "the child process did not exit after its stdin was closed: sending SIGTERM");
    // `raw` is our own child, not yet reaped (we hold its `Child` and its `wait` has not
    // returned), so the pid cannot name another process.
    let target = nix::unistd::Pid::from_raw(raw);
    if nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGTERM).is_err() {
        return None;
    }
    match tokio::time::timeout(options.term_grace, child.wait()).await {
        Ok(Ok(status)) => Some(ChildExit::Terminated { grace: options.exit_grace, status }),
        Ok(Err(e)) => Some(ChildExit::Unknown(format!("waiting for it failed: {e}"))),
        Err(_) => None,
    }
}

/// Bind the child's life to the connection's; returns how it ended, once it has exited or been
/// killed.
async fn watch_child(
    mut child: Child,
    shared: &Arc<Shared>,
    status_tx: oneshot::Sender<String>,
    options: ChildOptions,
) -> ChildExit {
    let pid = child.id();
    tokio::select! {
        status = child.wait() => {
            let exit = match status {
                Ok(status) => ChildExit::Exited(status),
                Err(e) => ChildExit::Unknown(format!("waiting for it failed: {e}")),
            };
            let why = exit.to_string();
            let _ = status_tx.send(why.clone());
            // The child is gone; its stdout may still be held open by a grandchild. Watch that
            // on a task of its own so that `close()` need not wait for it.
            let shared = shared.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = shared.stopped_signal().cancelled() => {}
                    _ = tokio::time::sleep(options.stdout_grace) => {
                        shared.close(CloseReason::new(CloseKind::RemoteClosed, format!("{why}, but its stdout stayed open")));
                    }
                }
            });
            exit
        }
        _ = shared.stopped_signal().cancelled() => {
            // The writer closes the child's stdin once the connection's drain is over (bounded by
            // the EOF grace, the flush timeout and the write side's shutdown); a well-behaved
            // child then exits on EOF within its own grace.
            let drained = shared.drain_bound() + Duration::from_secs(1);
            let _ = tokio::time::timeout(drained, shared.finished_signal().cancelled()).await;
            match tokio::time::timeout(options.exit_grace, child.wait()).await {
                Ok(Ok(status)) => ChildExit::Exited(status),
                Ok(Err(e)) => ChildExit::Unknown(format!("waiting for it failed: {e}")),
                Err(_) => {
                    #[cfg(unix)]
                    if let Some(exit) = terminate(&mut child, pid, &options).await {
                        return exit;
                    }
                    tracing::warn!(target: crate::LOG_TARGET, pid, grace = ?options.exit_grace, "the child process did not exit after its stdin was closed: killing it");
                    let _ = child.kill().await;
                    ChildExit::Killed { grace: options.exit_grace, status: child.try_wait().ok().flatten() }
                }
            }
        }
    }
}
