//! The writer task and the final drain when the connection stops.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio_util::task::TaskTracker;

use super::shared::Shared;
use super::{CloseKind, CloseReason};

/// The writer task's side, shared by the byte writer and the message writer: its turns while the
/// connection lives, then the final drain when it stops. After the peer's EOF the handlers still
/// running get `eof_grace` to answer, then their tokens fire; once they are done (or cancelled),
/// what is queued gets `flush_timeout` to be written (see the close sequence on
/// [`Connection`](crate::Connection)).
pub(crate) struct Drain {
    shared: Arc<Shared>,
    give_up: Pin<Box<dyn Future<Output = ()> + Send>>,
    handlers_done: Pin<Box<dyn Future<Output = ()> + Send>>,
    handlers_finished: bool,
}

impl Drain {
    pub(crate) fn new(shared: Arc<Shared>, handlers: TaskTracker) -> Self {
        let ending = shared.clone();
        let running = handlers.clone();
        let give_up = Box::pin(async move {
            ending.lifecycle.stopped().cancelled().await;
            // Handlers still allowed to run: the peer's EOF (any other ending cancels them at
            // once). The flush timeout starts when they are done, or cancelled.
            if !ending.handlers_cancelled() {
                let grace = ending.config.eof_grace;
                running.close();
                if tokio::time::timeout(grace, running.wait()).await.is_err() {
                    tracing::debug!(target: crate::LOG_TARGET, ?grace, "the grace after the peer's EOF is over: cancelling the handlers still running");
                    ending.lifecycle.grace_over();
                }
            }
            tokio::time::sleep(ending.config.flush_timeout).await;
            tracing::debug!(target: crate::LOG_TARGET, timeout = ?ending.config.flush_timeout, "the peer did not take what was queued in time: giving up on it");
        });
        let stop = shared.clone();
        let handlers_done = Box::pin(async move {
            stop.lifecycle.stopped().cancelled().await;
            handlers.close();
            handlers.wait().await;
        });
        Drain { shared, give_up, handlers_done, handlers_finished: false }
    }

    /// Wait for the writer task's turn (`true`: it owns the queue), or `false` when the writer
    /// should stop: the connection ended and everything was written, or the drain gave up.
    pub(crate) async fn turn(&mut self) -> bool {
        loop {
            let out = &self.shared.outbound;
            let ending = self.handlers_finished;
            tokio::select! {
                biased;
                owns = std::future::poll_fn(|cx| out.poll_turn(cx, ending)) => return owns,
                _ = &mut self.handlers_done, if !self.handlers_finished => self.handlers_finished = true,
                _ = &mut self.give_up => return false,
            }
        }
    }

    /// Run one write, unless the drain gives up first (`None`).
    pub(crate) async fn write<T>(&mut self, write: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            res = write => Some(res),
            _ = &mut self.give_up => None,
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// The writer task: write what inline writers could not and what is queued for it, until the
/// connection stops; then flush what is left (waiting for the handlers still running, within
/// the grace and the flush timeout, see [`Drain`]) and shut the write side down. A failed write ends the connection, and the
/// write side is still shut (a message transport may have a closing handshake to finish, say a
/// WebSocket whose peer closed first).
pub(crate) async fn run_writer(mut drain: Drain) {
    let shared = drain.shared().clone();
    let out = &shared.outbound;
    while drain.turn().await {
        let pumped =
            std::future::poll_fn(|cx| out.with_pump(|p| p.poll_pump(cx, out, None)).unwrap_or(Poll::Ready(Ok(()))));
        match drain.write(pumped).await {
            None => break,
            Some(Err(e)) => {
                shared.close(CloseReason::new(CloseKind::StreamError, format!("writing to the peer failed: {e}")));
                // Nothing a handler answers can reach the peer any more (after its EOF too, when
                // the close above changed nothing): cancel them now, not after the EOF grace or
                // the write side's shutdown.
                shared.lifecycle.close();
                break;
            }
            Some(Ok(())) => {}
        }
    }
    let shutdown = std::future::poll_fn(|cx| out.with_pump(|p| p.poll_shutdown(cx)).unwrap_or(Poll::Ready(Ok(()))));
    let _ = tokio::time::timeout(Duration::from_millis(500), shutdown).await;
    // The stream goes first (closing it, for pipes whose shutdown does not): whoever waits for
    // the end (`Connection::close`) finds it closed.
    out.drop_pump();
    shared.finish();
}
