//! The outbound queue and who writes it: one ordered queue per connection.
//!
//! Requests and notifications take a share of a byte budget before they are queued, so a peer
//! that stops reading slows callers down instead of growing memory. Responses and cancellations
//! are queued without waiting (they are bounded by the in-flight request limit, and they must be
//! sendable from `Drop`). Everything leaves in the order it was queued.
//!
//! Nobody is the writer by default. On a byte stream, whoever queues a request or an answer while
//! nobody writes becomes the writer on the spot: it writes from its own task, without waiting —
//! one poll of the stream — and keeps writing what others queue meanwhile. What cannot be
//! written at once (the peer is slow, the pipe is full) is handed to the writer task, which also
//! writes notifications (so a burst leaves in a few writes) and everything of a message
//! transport. A lone call thus costs no task hop on the way out, and a write is never left
//! half done by a caller that goes away: one poll either writes bytes or writes none.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use bytes::BytesMut;
use futures::task::AtomicWaker;
use tokio::io::AsyncWrite;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::shared::Shared;
use super::trace::Tracer;
use super::{CloseKind, CloseReason, Direction};
use crate::framing::FrameCodec;

/// How long a closing connection waits for running handlers and the peer to take queued bytes.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Bodies larger than this are written straight from their own buffer instead of being copied
/// into the batch buffer.
const DIRECT_WRITE: usize = 32 * 1024;
/// Several small queued messages are coalesced into one write up to this size.
const BATCH_BYTES: usize = 64 * 1024;
/// A write buffer larger than this is freed once written (a burst is over): an idle connection
/// holds no write buffer at all.
const KEEP_BUFFER: usize = 2 * BATCH_BYTES;

/// One message's body, queued.
pub(crate) type OutFrame = Vec<u8>;

/// The queue is closed; the connection is ending.
#[derive(Debug)]
pub(crate) struct Closed;

/// Who writes the queue now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Nobody: the next to queue something decides.
    Idle,
    /// A task that queued something is writing it from its own poll.
    Inline,
    /// The writer task.
    Task,
    /// The reader, which holds what is queued while it reads more (it writes all of it before
    /// it waits for input).
    Held,
}

struct Queue {
    frames: VecDeque<OutFrame>,
    owner: Owner,
    /// The connection is ending: the writer task takes everything from here on, and an inline
    /// writer that lets go wakes it (it waits for the queue to be empty and unowned).
    ending: bool,
    /// The writer is gone: nothing can be queued any more.
    dead: bool,
    /// The reader is working through messages it has read: what would be written inline is
    /// held for it to write in one go (see [`Outbound::hold`]).
    held: bool,
    /// Bytes of queued requests and notifications: their share of the budget, given back when
    /// the writer takes them.
    budgeted: usize,
    /// Bytes of queued responses and cancellations (see [`Outbound::unbudgeted`]).
    unbudgeted: usize,
    /// A sender waits for room (it is first in line: the others wait for the turnstile).
    waiting: bool,
}

/// A byte stream's write side, written by whoever owns the queue.
pub(crate) trait Pump: Send {
    /// Write what is queued, taking more from `out` until the queue is empty; then flush and
    /// give up ownership (`Ready(Ok)`). `Pending` leaves ownership with the caller.
    fn poll_pump(&mut self, cx: &mut Context<'_>, out: &Outbound) -> Poll<io::Result<()>>;
    /// Keep an error met by an inline writer for the writer task to report.
    fn keep_error(&mut self, e: io::Error);
    /// Shut the write side down.
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

pub(crate) struct Outbound {
    queue: Mutex<Queue>,
    /// The writer task, waiting for its turn.
    task: AtomicWaker,
    /// The byte writer (`None` on a message transport: only the writer task writes there; and
    /// once the writer task ended, so that the stream is closed).
    pump: Mutex<Option<Box<dyn Pump>>>,
    /// Whether callers may write inline (a byte stream).
    inline: bool,
    pub(crate) tracer: Tracer,
    budget_max: usize,
    /// Senders that found no room wait here in line, first come first served.
    turnstile: Semaphore,
    /// Signalled when the writer takes budgeted bytes while a sender waits.
    room: Notify,
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
    pub(crate) fn new(budget_bytes: usize, tracer: Tracer, pump: Option<Box<dyn Pump>>) -> Self {
        let budget_max = budget_bytes.max(1);
        Outbound {
            queue: Mutex::new(Queue {
                frames: VecDeque::new(),
                owner: Owner::Idle,
                ending: false,
                dead: false,
                held: false,
                budgeted: 0,
                unbudgeted: 0,
                waiting: false,
            }),
            task: AtomicWaker::new(),
            inline: pump.is_some(),
            pump: Mutex::new(pump),
            tracer,
            budget_max,
            turnstile: Semaphore::new(1),
            room: Notify::new(),
            closed: AtomicBool::new(false),
            unbudgeted: AtomicUsize::new(0),
            drained: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Every critical section leaves the queue consistent; a panic elsewhere cannot break it.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a notification (or progress report), waiting for room in the byte budget. The
    /// writer task writes it, batched with what else is queued.
    pub(crate) async fn send(&self, body: Vec<u8>) -> Result<(), Closed> {
        self.send_budgeted(body, false).await
    }

    /// Queue a request, waiting for room in the byte budget, and write it from the calling task
    /// if nobody is writing.
    pub(crate) async fn send_inline(&self, body: Vec<u8>) -> Result<(), Closed> {
        self.send_budgeted(body, true).await
    }

    async fn send_budgeted(&self, body: Vec<u8>, inline: bool) -> Result<(), Closed> {
        // A body larger than the whole budget takes all of it.
        let n = body.len().clamp(1, self.budget_max);
        {
            let mut q = self.lock();
            if self.closed.load(Ordering::Acquire) {
                return Err(Closed);
            }
            if !q.waiting && q.budgeted + n <= self.budget_max {
                q.budgeted += n;
                return self.push_locked(q, body, inline);
            }
        }
        // No room: wait in line, then (first in line) until the writer has taken enough.
        let _turn = self.turnstile.acquire().await.map_err(|_| Closed)?;
        struct Waiting<'a>(&'a Outbound);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.lock().waiting = false;
            }
        }
        self.lock().waiting = true;
        let _waiting = Waiting(self);
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut q = self.lock();
                if self.closed.load(Ordering::Acquire) {
                    return Err(Closed);
                }
                if q.budgeted + n <= self.budget_max {
                    q.budgeted += n;
                    q.waiting = false;
                    return self.push_locked(q, body, inline);
                }
            }
            room.await;
        }
    }

    /// Queue a response or a cancellation now (callable from `Drop`), and write it from here if
    /// nobody is writing.
    pub(crate) fn send_now(&self, body: Vec<u8>) -> Result<(), Closed> {
        let mut q = self.lock();
        if q.dead {
            return Err(Closed);
        }
        q.unbudgeted += body.len();
        self.unbudgeted.fetch_add(body.len(), Ordering::AcqRel);
        self.push_locked(q, body, true)
    }

    fn push_locked(&self, mut q: MutexGuard<'_, Queue>, frame: OutFrame, inline: bool) -> Result<(), Closed> {
        if q.dead {
            return Err(Closed);
        }
        q.frames.push_back(frame);
        match q.owner {
            Owner::Idle if inline && !q.ending && self.inline => {
                if q.held {
                    q.owner = Owner::Held;
                } else {
                    q.owner = Owner::Inline;
                    drop(q);
                    self.write_inline();
                }
            }
            Owner::Idle => {
                q.owner = Owner::Task;
                drop(q);
                self.task.wake();
            }
            Owner::Inline | Owner::Task | Owner::Held => {}
        }
        Ok(())
    }

    /// Write as the inline owner: one poll with a no-op waker, then hand whatever is left (and
    /// any error, for the writer task to report) to the writer task.
    fn write_inline(&self) {
        let handed = {
            let mut guard = self.pump.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut() {
                None => true,
                Some(pump) => match pump.poll_pump(&mut Context::from_waker(Waker::noop()), self) {
                    Poll::Ready(Ok(())) => false,
                    Poll::Ready(Err(e)) => {
                        pump.keep_error(e);
                        true
                    }
                    Poll::Pending => true,
                },
            }
        };
        if handed {
            self.hand_to_task();
        }
    }

    /// The reader starts on messages it has read: answers its handlers give right away are held
    /// and written together by [`Outbound::release`] (one write for a whole read's worth of
    /// requests), instead of one write each.
    pub(crate) fn hold(&self) {
        self.lock().held = true;
    }

    /// The reader is about to wait (or has read a batch's worth): write what was held.
    pub(crate) fn release(&self) {
        let write_here = {
            let mut q = self.lock();
            q.held = false;
            if q.owner == Owner::Held {
                q.owner = Owner::Inline;
                true
            } else {
                false
            }
        };
        if write_here {
            self.write_inline();
        }
    }

    fn hand_to_task(&self) {
        self.lock().owner = Owner::Task;
        self.task.wake();
    }

    /// The owner's next batch: swap the queued frames into `into` (which must be empty), or,
    /// if nothing is queued, give up ownership (`false`).
    pub(crate) fn take_or_release(&self, into: &mut VecDeque<OutFrame>) -> bool {
        let mut q = self.lock();
        if q.frames.is_empty() {
            let was = std::mem::replace(&mut q.owner, Owner::Idle);
            if was == Owner::Inline && q.ending {
                drop(q);
                self.task.wake();
            }
            return false;
        }
        std::mem::swap(&mut q.frames, into);
        // The taken frames no longer count against the budget.
        let waiting = q.waiting && q.budgeted > 0;
        q.budgeted = 0;
        let answers = std::mem::take(&mut q.unbudgeted);
        drop(q);
        if waiting {
            self.room.notify_waiters();
        }
        if answers > 0 {
            let before = self.unbudgeted.fetch_sub(answers, Ordering::AcqRel);
            if before > self.budget_max && before - answers <= self.budget_max {
                self.drained.notify_waiters();
            }
        }
        true
    }

    /// The writer took `frame` to write it now.
    pub(crate) fn took(&self, frame: &[u8]) {
        self.tracer.message(Direction::Outgoing, frame);
    }

    /// The writer task's turn: `Ready(true)` once it owns the queue; with `ending`, `Ready(false)`
    /// once the queue is empty and nobody writes.
    fn poll_turn(&self, cx: &mut Context<'_>, ending: bool) -> Poll<bool> {
        self.task.register(cx.waker());
        let mut q = self.lock();
        if ending {
            q.ending = true;
        }
        match q.owner {
            Owner::Task => Poll::Ready(true),
            Owner::Idle if q.ending && q.frames.is_empty() => Poll::Ready(false),
            _ => Poll::Pending,
        }
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

    pub(crate) fn has_room(&self) -> bool {
        self.unbudgeted.load(Ordering::Acquire) <= self.budget_max || self.closed.load(Ordering::Acquire)
    }

    /// No new requests or notifications (answers are still written until the writer stops).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.turnstile.close();
        self.room.notify_waiters();
        self.drained.notify_waiters();
    }

    /// The writer is gone: refuse everything and drop what is left.
    pub(crate) fn finish(&self) {
        self.close();
        let left = {
            let mut q = self.lock();
            q.dead = true;
            std::mem::take(&mut q.frames)
        };
        drop(left);
    }

    fn with_pump<T>(&self, f: impl FnOnce(&mut dyn Pump) -> T) -> Option<T> {
        let mut pump = self.pump.lock().unwrap_or_else(|p| p.into_inner());
        Some(f(&mut **pump.as_mut()?))
    }

    /// Drop the byte writer (closing the stream, for pipes and sockets whose shutdown does not).
    fn drop_pump(&self) {
        let pump = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(pump);
    }
}

/// The writer task's side, shared by the byte writer and the message writer: its turns while the
/// connection lives, then the final drain when it stops (wait for the handlers still running,
/// write what they answered, give up after [`FLUSH_TIMEOUT`]).
pub(crate) struct Drain {
    shared: Arc<Shared>,
    give_up: Pin<Box<dyn Future<Output = ()> + Send>>,
    handlers_done: Pin<Box<dyn Future<Output = ()> + Send>>,
    handlers_finished: bool,
}

impl Drain {
    pub(crate) fn new(shared: Arc<Shared>, handlers: TaskTracker) -> Self {
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

/// A byte stream's writer: frames are encoded into one buffer (several per write under load),
/// large bodies written from their own buffer.
pub(crate) struct ByteWriter<W> {
    io: W,
    codec: FrameCodec,
    buf: BytesMut,
    /// How much of `buf` is written.
    pos: usize,
    /// A large body being written on its own, and how much of it is written.
    large: Option<OutFrame>,
    large_pos: usize,
    /// Frames taken from the queue, not yet encoded.
    batch: VecDeque<OutFrame>,
    /// Written to since the last flush.
    dirty: bool,
    error: Option<io::Error>,
}

impl<W: AsyncWrite + Send + Unpin> ByteWriter<W> {
    pub(crate) fn new(io: W, codec: FrameCodec) -> Self {
        ByteWriter {
            io,
            codec,
            // Empty until the first message (an idle connection should cost little); it grows to
            // a batch under load.
            buf: BytesMut::new(),
            pos: 0,
            large: None,
            large_pos: 0,
            batch: VecDeque::new(),
            dirty: false,
            error: None,
        }
    }

    fn poll_write_all(io: &mut W, cx: &mut Context<'_>, bytes: &[u8], pos: &mut usize) -> Poll<io::Result<()>> {
        while *pos < bytes.len() {
            let n = ready!(Pin::new(&mut *io).poll_write(cx, &bytes[*pos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *pos += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Send + Unpin> Pump for ByteWriter<W> {
    fn poll_pump(&mut self, cx: &mut Context<'_>, out: &Outbound) -> Poll<io::Result<()>> {
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        loop {
            if self.pos < self.buf.len() {
                self.dirty = true;
                ready!(Self::poll_write_all(&mut self.io, cx, &self.buf, &mut self.pos))?;
            }
            self.buf.clear();
            self.pos = 0;
            if let Some(frame) = &self.large {
                self.dirty = true;
                ready!(Self::poll_write_all(&mut self.io, cx, frame, &mut self.large_pos))?;
                self.large = None;
                self.large_pos = 0;
                self.codec.encode_suffix(&mut self.buf);
                continue;
            }
            if self.batch.is_empty() {
                if self.dirty {
                    ready!(Pin::new(&mut self.io).poll_flush(cx))?;
                    self.dirty = false;
                }
                if !out.take_or_release(&mut self.batch) {
                    if self.buf.capacity() > KEEP_BUFFER {
                        self.buf = BytesMut::new();
                    }
                    return Poll::Ready(Ok(()));
                }
            }
            while let Some(mut frame) = self.batch.pop_front() {
                out.took(&frame);
                if frame.len() >= DIRECT_WRITE {
                    self.codec.prepare_body(&mut frame);
                    self.codec.encode_prefix(frame.len(), &mut self.buf);
                    self.large = Some(frame);
                    break;
                }
                self.codec.encode(&frame, &mut self.buf);
                super::bufpool::give(frame);
                if self.buf.len() >= BATCH_BYTES {
                    break;
                }
            }
        }
    }

    fn keep_error(&mut self, e: io::Error) {
        self.error = Some(e);
    }

    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The writer task of a byte stream: write what inline writers could not and what is queued for
/// it, until the connection stops; then flush what is left (waiting for the handlers still
/// running, within [`FLUSH_TIMEOUT`]) and shut the write side down.
pub(crate) async fn run_writer(mut drain: Drain, done: CancellationToken) {
    let shared = drain.shared().clone();
    let out = &shared.outbound;
    while drain.turn().await {
        let pumped = std::future::poll_fn(|cx| out.with_pump(|p| p.poll_pump(cx, out)).unwrap_or(Poll::Ready(Ok(()))));
        match drain.write(pumped).await {
            None => break,
            Some(Err(e)) => return writer_failed(&shared, e, &done),
            Some(Ok(())) => {}
        }
    }
    let shutdown = std::future::poll_fn(|cx| out.with_pump(|p| p.poll_shutdown(cx)).unwrap_or(Poll::Ready(Ok(()))));
    let _ = tokio::time::timeout(Duration::from_millis(500), shutdown).await;
    shared.finish();
    out.drop_pump();
    done.cancel();
}

fn writer_failed(shared: &Shared, e: io::Error, done: &CancellationToken) {
    shared.close(CloseReason::new(CloseKind::StreamError, format!("writing to the peer failed: {e}")));
    shared.finish();
    shared.outbound.drop_pump();
    done.cancel();
}
