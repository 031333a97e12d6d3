//! A spawned child process: its stdin and stdout are the stream, its stderr goes to tracing, and
//! its life is bound to the connection's.

use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::connection::shared::Shared;
use crate::{Builder, CloseKind, CloseReason, Connection};

/// How a child process is bound to its connection.
#[derive(Clone, Copy, Debug)]
pub struct ChildOptions {
    /// After the connection closes (and the child's stdin with it), how long the child may take
    /// to exit by itself before it is killed.
    pub exit_grace: Duration,
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
            stdout_grace: Duration::from_secs(2),
            stderr_to_tracing: true,
        }
    }
}

impl Builder {
    /// Spawn `command` and talk to it over its stdin/stdout (with [`ChildOptions::default`]).
    ///
    /// Dropping or closing the connection closes the child's stdin and kills it if it has not
    /// exited within the grace period; the child exiting ends the connection, and the close reason
    /// carries its exit status.
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
        let (mut conn, shared) = self.start(stdout, stdin, Some(eof_reason));
        let exited = CancellationToken::new();
        conn.set_transport_done(exited.clone());
        tokio::spawn(async move {
            watch_child(child, shared, status_tx, options).await;
            exited.cancel();
        });
        Ok(conn)
    }
}

async fn forward_stderr(stderr: ChildStderr, pid: u32) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "jsonrpc_duplex::child", pid, "{line}");
    }
}

/// Bind the child's life to the connection's; returns once the child has exited or been killed.
async fn watch_child(mut child: Child, shared: Arc<Shared>, status_tx: oneshot::Sender<String>, options: ChildOptions) {
    tokio::select! {
        status = child.wait() => {
            let why = match status {
                Ok(s) => format!("the child process exited ({s})"),
                Err(e) => format!("waiting for the child process failed: {e}"),
            };
            let _ = status_tx.send(why.clone());
            // The child is gone; its stdout may still be held open by a grandchild. Watch that
            // on a task of its own so that `close()` need not wait for it.
            tokio::spawn(async move {
                tokio::select! {
                    _ = shared.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(options.stdout_grace) => {
                        shared.close(CloseReason::new(CloseKind::RemoteClosed, format!("{why}, but its stdout stayed open")));
                    }
                }
            });
        }
        _ = shared.shutdown.cancelled() => {
            // The writer flushes and closes the child's stdin (within its own flush timeout); a
            // well-behaved child then exits on EOF within the grace period.
            let flushed = crate::connection::FLUSH_TIMEOUT + Duration::from_secs(1);
            let _ = tokio::time::timeout(flushed, shared.finished.cancelled()).await;
            if tokio::time::timeout(options.exit_grace, child.wait()).await.is_err() {
                tracing::debug!(target: crate::LOG_TARGET, pid = child.id(), "child did not exit in time: killing it");
                let _ = child.kill().await;
            }
        }
    }
}
