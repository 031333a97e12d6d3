//! The caller's side: a token to send and the receiver of its reports.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::registry::Report;
use super::{ProgressState, ProgressToken};
use crate::connection::{Error, Handle};

/// The reports sent for one [`ProgressToken`] of ours, in the order they were read, each decoded
/// straight into `T`.
///
/// It ends when the request that carried the token is answered (every report read before the
/// answer is yielded first; later ones are dropped), or when the connection ends (one
/// `Err(ConnectionLost)` item, then the end). Dropping it forgets the token.
///
/// Its end comes after the answer is in the caller's hands: a caller that sees the receiver end
/// and then cancels the call (or lets it time out) still gets the answer, and no cancellation is
/// sent for it.
///
/// Reports it holds and nobody has taken count against the connection's read-ahead
/// ([`Limits::read_ahead_bytes`](crate::Limits::read_ahead_bytes)): drive it, or drop it, so
/// that a peer's reports never pile up (a connection whose peer floods reports nobody takes is
/// closed at [`Limits::max_buffered_inbound_bytes`](crate::Limits::max_buffered_inbound_bytes)).
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Progress, ProgressToken, Router, transport::memory};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Router::new().method("work", |(steps, token): (u32, Option<ProgressToken>), ctx| async move {
///     let progress = Progress::<u32>::for_request(&ctx, token);
///     for step in 1..=steps {
///         progress.report(step).await.map_err(ErrorObject::internal_error)?;
///     }
///     Ok::<_, ErrorObject>("done")
/// });
/// let (client, _server) = memory::pair(Connection::builder(), Connection::builder().serve(server));
///
/// let peer = client.handle();
/// let (token, receiver) = peer.progress::<u32>();
/// let mut seen = Vec::new();
/// let call = peer.request::<String>("work", (3, token));
/// let answer = receiver.drive(call, |step| seen.push(step)).await?;
/// assert_eq!((answer.as_str(), seen), ("done", vec![1, 2, 3]));
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ProgressReceiver<T> {
    handle: Handle,
    state: Arc<ProgressState>,
    token: u64,
    rx: mpsc::Receiver<Report>,
    _values: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for ProgressReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReceiver").field("token", &self.token).field("queued", &self.rx.len()).finish()
    }
}

impl Handle {
    /// A new progress token (an integer from this connection's counter) and the receiver of its
    /// reports. Put the token in a request's params where the callee expects it.
    pub fn progress<T: DeserializeOwned>(&self) -> (ProgressToken, ProgressReceiver<T>) {
        // As many reports as messages may be read ahead while a call waits; their bytes count
        // against the read-ahead until taken.
        let state = self.builtin::<ProgressState>();
        let (token, rx) = state.receivers.open(self.limits().max_buffered_inbound);
        let receiver = ProgressReceiver { handle: self.clone(), state: state.clone(), token, rx, _values: PhantomData };
        (ProgressToken::issued(state, token), receiver)
    }
}

impl<T: DeserializeOwned> ProgressReceiver<T> {
    /// Run `call` (the request that carries the token) while handing each report to
    /// `on_report`; return the call's output once every report read before its answer has been
    /// handed over. Reports that do not decode into `T` are logged (WARN) and skipped.
    pub async fn drive<F: Future>(mut self, call: F, mut on_report: impl FnMut(T)) -> F::Output {
        let mut call = std::pin::pin!(call);
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                report = self.rx.recv(), if open => match report {
                    Some(report) => {
                        let report = self.taken(report);
                        self.hand_over(report, &mut on_report)
                    }
                    None => open = false,
                },
                output = &mut call => {
                    // The reader delivered these before the answer that completed the call.
                    while let Ok(report) = self.rx.try_recv() {
                        let report = self.taken(report);
                        self.hand_over(report, &mut on_report);
                    }
                    return output;
                }
            }
        }
    }

    fn hand_over(&self, report: Report, on_report: &mut impl FnMut(T)) {
        match decode(report) {
            Ok(value) => on_report(value),
            // The call fails with the same reason.
            Err(Error::ConnectionLost(_)) => {}
            Err(e) => {
                tracing::warn!(
                    target: crate::LOG_TARGET,
                    token = self.token,
                    error = %self.handle.quote(&e),
                    "progress report dropped"
                )
            }
        }
    }
}

fn decode<T: DeserializeOwned>(report: Report) -> Result<T, Error> {
    report.and_then(|raw| serde_json::from_str(raw.get()).map_err(Error::Deserialize))
}

impl<T: DeserializeOwned> Stream for ProgressReceiver<T> {
    type Item = Result<T, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.rx.poll_recv(cx).map(|report| report.map(|r| decode(this.taken(r))))
    }
}

impl<T> ProgressReceiver<T> {
    /// A report is off the queue: it no longer counts against the read-ahead.
    fn taken(&self, report: Report) -> Report {
        if let Ok(value) = &report {
            self.handle.release_inbound(crate::progress::report_bytes(value));
        }
        report
    }
}

impl<T> Unpin for ProgressReceiver<T> {}

impl<T> Drop for ProgressReceiver<T> {
    fn drop(&mut self) {
        self.state.receivers.remove(self.token);
        // Nothing more arrives (the token is gone): what was not taken is not held any more.
        while let Ok(report) = self.rx.try_recv() {
            drop(self.taken(report));
        }
    }
}
