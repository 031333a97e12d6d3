//! The outbound queue and the writer task: one ordered queue per connection.
//!
//! Requests and notifications take a share of a byte budget before they are queued, so a peer
//! that stops reading slows callers down instead of growing memory. Responses and cancellations
//! are queued without waiting (they are bounded by the in-flight request limit, and they must be
//! sendable from `Drop`). Everything leaves in the order it was queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::shared::Shared;
use super::trace;
use super::{CloseKind, CloseReason, Direction};
use crate::framing::FrameCodec;

/// How long a closing connection waits for running handlers and the peer to take queued bytes.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Bodies larger than this are written straight from their own buffer instead of being copied
/// into the batch buffer.
const DIRECT_WRITE: usize = 32 * 1024;
/// Several small queued messages are coalesced into one write up to this size.
const BATCH_BYTES: usize = 64 * 1024;

pub(crate) struct OutFrame {
    pub(crate) body: Vec<u8>,
    _permit: Option<OwnedSemaphorePermit>,
}

/// The queue is closed; the connection is ending.
#[derive(Debug)]
pub(crate) struct Closed;

pub(crate) struct Outbound {
    tx: mpsc::UnboundedSender<OutFrame>,
    budget: Arc<Semaphore>,
    budget_max: usize,
    /// Set when the connection starts closing: no new requests or notifications.
    closed: AtomicBool,
}

impl Outbound {
    pub(crate) fn new(budget_bytes: usize) -> (Self, mpsc::UnboundedReceiver<OutFrame>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let budget_max = budget_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let out =
            Outbound { tx, budget: Arc::new(Semaphore::new(budget_max)), budget_max, closed: AtomicBool::new(false) };
        (out, rx)
    }

    /// Queue a request or notification, waiting for room in the byte budget.
    pub(crate) async fn send(&self, body: Vec<u8>) -> Result<(), Closed> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Closed);
        }
        let want = body.len().clamp(1, self.budget_max) as u32;
        let permit = self.budget.clone().acquire_many_owned(want).await.map_err(|_| Closed)?;
        if self.closed.load(Ordering::Acquire) {
            return Err(Closed);
        }
        self.tx.send(OutFrame { body, _permit: Some(permit) }).map_err(|_| Closed)
    }

    /// Queue a response or a cancellation now (callable from `Drop`).
    pub(crate) fn send_now(&self, body: Vec<u8>) -> Result<(), Closed> {
        self.tx.send(OutFrame { body, _permit: None }).map_err(|_| Closed)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.budget.close();
    }
}

/// Write queued messages until the connection stops; then flush what is left (waiting for the
/// handlers still running, within [`FLUSH_TIMEOUT`]) and shut the write side down.
pub(crate) async fn run_writer<W: AsyncWrite + Unpin>(
    mut io: W,
    mut rx: mpsc::UnboundedReceiver<OutFrame>,
    codec: FrameCodec,
    shared: Arc<Shared>,
    handlers: TaskTracker,
    done: CancellationToken,
) {
    let mut buf = BytesMut::with_capacity(BATCH_BYTES);
    let stop = shared.shutdown.clone();
    let give_up = async {
        stop.cancelled().await;
        tokio::time::sleep(FLUSH_TIMEOUT).await;
    };
    tokio::pin!(give_up);
    let mut handlers_done = std::pin::pin!(async {
        stop.cancelled().await;
        handlers.close();
        handlers.wait().await;
    });
    let mut handlers_finished = false;

    'outer: loop {
        let first = tokio::select! {
            biased;
            frame = rx.recv() => match frame {
                Some(frame) => frame,
                None => break,
            },
            _ = &mut handlers_done, if !handlers_finished => {
                handlers_finished = true;
                if rx.is_empty() {
                    break;
                }
                continue;
            }
            _ = &mut give_up => break,
        };
        let mut next = Some(first);
        while let Some(frame) = next.take() {
            trace::message(&shared, Direction::Outgoing, &frame.body);
            if frame.body.len() >= DIRECT_WRITE {
                codec.encode_prefix(frame.body.len(), &mut buf);
                let res = tokio::select! {
                    biased;
                    res = write_parts(&mut io, &mut buf, &frame.body) => res,
                    _ = &mut give_up => break 'outer,
                };
                if let Err(e) = res {
                    return writer_failed(&shared, e, &done);
                }
                codec.encode_suffix(&mut buf);
            } else {
                codec.encode(&frame.body, &mut buf);
            }
            drop(frame);
            if buf.len() < BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        let res = tokio::select! {
            biased;
            res = flush(&mut io, &mut buf) => res,
            _ = &mut give_up => break,
        };
        if let Err(e) = res {
            return writer_failed(&shared, e, &done);
        }
        if handlers_finished && rx.is_empty() {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_millis(500), io.shutdown()).await;
    done.cancel();
}

async fn write_parts<W: AsyncWrite + Unpin>(io: &mut W, buf: &mut BytesMut, body: &[u8]) -> std::io::Result<()> {
    io.write_all(buf).await?;
    buf.clear();
    io.write_all(body).await
}

async fn flush<W: AsyncWrite + Unpin>(io: &mut W, buf: &mut BytesMut) -> std::io::Result<()> {
    if !buf.is_empty() {
        io.write_all(buf).await?;
        buf.clear();
    }
    io.flush().await
}

fn writer_failed(shared: &Shared, e: std::io::Error, done: &CancellationToken) {
    shared.close(CloseReason::new(CloseKind::StreamError, format!("writing to the peer failed: {e}")));
    done.cancel();
}
