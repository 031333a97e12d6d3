//! The outbound queue and the writer task: one ordered queue per connection.
//!
//! Requests and notifications take a share of a byte budget before they are queued, so a peer
//! that stops reading slows callers down instead of growing memory. Responses and cancellations
//! are queued without waiting (they are bounded by the in-flight request limit, and they must be
//! sendable from `Drop`). Everything leaves in the order it was queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
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
/// The write buffer's size when a connection starts, and what it shrinks back to after a burst.
pub(crate) const IDLE_BUFFER: usize = 4 * 1024;

pub(crate) struct OutFrame {
    pub(crate) body: Vec<u8>,
    _permit: Option<OwnedSemaphorePermit>,
    /// Bytes counted in [`Outbound::unbudgeted`] (responses and cancellations).
    unbudgeted: usize,
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
    /// Bytes of responses and cancellations queued without waiting for the budget. They cannot
    /// wait (they are sent from `Drop`), so instead nothing that produces more of them (a new
    /// inbound request, an error answer to garbage) starts while they exceed the budget.
    unbudgeted: AtomicUsize,
    /// Signalled when the writer takes unbudgeted bytes (or the queue closes).
    drained: Notify,
}

impl Outbound {
    pub(crate) fn new(budget_bytes: usize) -> (Self, mpsc::UnboundedReceiver<OutFrame>) {
        let (tx, rx) = mpsc::unbounded_channel();
        // `acquire_many` takes a u32.
        let budget_max = budget_bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let out = Outbound {
            tx,
            budget: Arc::new(Semaphore::new(budget_max)),
            budget_max,
            closed: AtomicBool::new(false),
            unbudgeted: AtomicUsize::new(0),
            drained: Notify::new(),
        };
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
        self.tx.send(OutFrame { body, _permit: Some(permit), unbudgeted: 0 }).map_err(|_| Closed)
    }

    /// Queue a response or a cancellation now (callable from `Drop`).
    pub(crate) fn send_now(&self, body: Vec<u8>) -> Result<(), Closed> {
        let n = body.len();
        self.unbudgeted.fetch_add(n, Ordering::AcqRel);
        self.tx.send(OutFrame { body, _permit: None, unbudgeted: n }).map_err(|_| {
            self.unbudgeted.fetch_sub(n, Ordering::AcqRel);
            Closed
        })
    }

    /// Wait until the responses queued without budget fit in the budget again (or the queue
    /// closes): a peer that does not read our answers stops us from taking on more work.
    pub(crate) async fn wait_room(&self) {
        if self.has_room() {
            return;
        }
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.has_room() {
                return;
            }
            drained.await;
        }
    }

    fn has_room(&self) -> bool {
        self.unbudgeted.load(Ordering::Acquire) <= self.budget_max || self.closed.load(Ordering::Acquire)
    }

    /// The writer took `frame` off the queue.
    pub(crate) fn taken(&self, frame: &OutFrame) {
        if frame.unbudgeted > 0 {
            let before = self.unbudgeted.fetch_sub(frame.unbudgeted, Ordering::AcqRel);
            if before > self.budget_max && before - frame.unbudgeted <= self.budget_max {
                self.drained.notify_waiters();
            }
        }
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.budget.close();
        self.drained.notify_waiters();
    }
}

/// The writer's side of the queue, shared by the byte writer and the message writer: frames in
/// order while the connection lives, then the final drain when it stops (wait for the handlers
/// still running, write what they answered, give up after [`FLUSH_TIMEOUT`]).
pub(crate) struct Drain {
    rx: mpsc::UnboundedReceiver<OutFrame>,
    shared: Arc<Shared>,
    give_up: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    handlers_done: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    handlers_finished: bool,
}

impl Drain {
    pub(crate) fn new(rx: mpsc::UnboundedReceiver<OutFrame>, shared: Arc<Shared>, handlers: TaskTracker) -> Self {
        let stop = shared.shutdown.clone();
        let give_up = Box::pin(async move {
            stop.cancelled().await;
            tokio::time::sleep(FLUSH_TIMEOUT).await;
        });
        let stop = shared.shutdown.clone();
        let handlers_done = Box::pin(async move {
            stop.cancelled().await;
            handlers.close();
            handlers.wait().await;
        });
        Drain { rx, shared, give_up, handlers_done, handlers_finished: false }
    }

    /// The next frame to write (waiting for one), or `None` when the writer should stop: the
    /// connection ended and everything was drained, or the drain gave up.
    pub(crate) async fn next(&mut self) -> Option<OutFrame> {
        loop {
            let frame = tokio::select! {
                biased;
                frame = self.rx.recv() => frame,
                _ = &mut self.handlers_done, if !self.handlers_finished => {
                    self.handlers_finished = true;
                    if self.rx.is_empty() {
                        return None;
                    }
                    continue;
                }
                _ = &mut self.give_up => None,
            };
            return frame.map(|frame| self.took(frame));
        }
    }

    /// Another frame that is already queued, to batch with the last one.
    pub(crate) fn try_next(&mut self) -> Option<OutFrame> {
        self.rx.try_recv().ok().map(|frame| self.took(frame))
    }

    fn took(&self, frame: OutFrame) -> OutFrame {
        trace::message(&self.shared, Direction::Outgoing, &frame.body);
        self.shared.outbound.taken(&frame);
        frame
    }

    /// Run one write, unless the drain gives up first (`None`).
    pub(crate) async fn write<T>(&mut self, write: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            res = write => Some(res),
            _ = &mut self.give_up => None,
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The connection ended and nothing is left to write.
    pub(crate) fn finished(&self) -> bool {
        self.handlers_finished && self.rx.is_empty()
    }
}

/// Write queued messages until the connection stops; then flush what is left (waiting for the
/// handlers still running, within [`FLUSH_TIMEOUT`]) and shut the write side down.
pub(crate) async fn run_writer<W: AsyncWrite + Unpin>(
    mut io: W,
    mut drain: Drain,
    codec: FrameCodec,
    done: CancellationToken,
) {
    // Small while idle (an idle connection should cost little); it grows to a batch under load.
    let mut buf = BytesMut::with_capacity(IDLE_BUFFER);
    'outer: while let Some(first) = drain.next().await {
        let mut next = Some(first);
        while let Some(mut frame) = next.take() {
            if frame.body.len() >= DIRECT_WRITE {
                codec.prepare_body(&mut frame.body);
                codec.encode_prefix(frame.body.len(), &mut buf);
                match drain.write(write_parts(&mut io, &mut buf, &frame.body)).await {
                    None => break 'outer,
                    Some(Err(e)) => return writer_failed(drain.shared(), e, &done),
                    Some(Ok(())) => {}
                }
                codec.encode_suffix(&mut buf);
            } else {
                codec.encode(&frame.body, &mut buf);
            }
            drop(frame);
            if buf.len() < BATCH_BYTES {
                next = drain.try_next();
            }
        }
        match drain.write(flush(&mut io, &mut buf)).await {
            None => break,
            Some(Err(e)) => return writer_failed(drain.shared(), e, &done),
            Some(Ok(())) => {}
        }
        if drain.finished() {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_millis(500), io.shutdown()).await;
    drain.shared().finish();
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
    shared.finish();
    done.cancel();
}
