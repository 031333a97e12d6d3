//! The outbound queue and who writes it: one ordered queue per connection.
//!
//! Requests and notifications take a share of a byte budget before they are queued, so a peer
//! that stops reading slows callers down instead of growing memory. Responses and cancellations
//! are queued without waiting (they are bounded by the in-flight request limit, and they must be
//! sendable from `Drop`). Everything leaves in the order it was queued.
//!
//! Nobody is the writer by default. Whoever queues a request or an answer while nobody writes
//! becomes the writer on the spot: it writes from its own task, without waiting — one poll of
//! the stream (or sink) with a no-op waker — and keeps writing what others queue meanwhile. What
//! cannot be written at once (the peer is slow, the pipe is full) is handed to the writer task,
//! which also writes notifications (so a burst leaves in a few writes). A lone call thus costs
//! no task hop on the way out, and a write is never left half done by a caller that goes away:
//! one poll either takes bytes or takes none. The reader holds what its handlers answer while
//! it works through what it has read, and writes it in one go before it waits.
//!
//! On a byte stream, small messages are framed straight into the queue's tail buffer, which the
//! writer swaps with its own emptied one: nothing is allocated per message. Once everything is
//! written and the writer lets go, those buffers go back to the thread's pool
//! ([`crate::util::bufpool::take_bytes`]): an idle connection holds no write buffer.

mod pump;
mod turns;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};

use self::turns::{Content, OutQueue, OutTurns, Writer};
use super::Direction;
use super::trace::Tracer;
use crate::framing::FrameCodec;
use crate::sync::lazy::{self, OnceBox};
use crate::sync::turns::Locked;

pub(crate) use pump::{ByteWriter, Pump, SinkWriter};

/// Bodies larger than this are written straight from their own buffer instead of being copied
/// into the batch buffer.
const DIRECT_WRITE: usize = 32 * 1024;

/// A write buffer larger than this is freed once written (a burst is over): an idle connection
/// holds no write buffer at all.
const KEEP_BUFFER: usize = 128 * 1024;

/// What is queued, in order.
pub(crate) enum Chunk {
    /// Small messages framed back to back (a byte stream's queue tail, sealed when a large body
    /// is queued after it).
    Encoded(Box<BytesMut>),
    /// One message's body: a large one on a byte stream (framed as it is written, not copied),
    /// every message on a message transport.
    Body(Vec<u8>),
    /// A body shared with other connections (a broadcast), framed as it is written.
    Shared(Bytes),
}

impl Chunk {
    /// A body chunk's message (empty for encoded bytes, which carry their framing).
    fn body(&self) -> &[u8] {
        match self {
            Chunk::Body(body) => body,
            Chunk::Shared(body) => body,
            Chunk::Encoded(_) => &[],
        }
    }
}

/// What a take freed (see [`Outbound::took_locked`]).
struct Taken {
    /// A sender waits for budget.
    room: bool,
    /// Answers held back new work and fewer do now.
    drained: bool,
    /// The queue was over its budget (a broadcast backlog): a watcher waits for this take.
    caught_up: bool,
}

/// The queue is closed; the connection is ending.
#[derive(Debug)]
pub(crate) struct Closed;

/// Why a shared body was not queued.
#[derive(Debug)]
pub(crate) enum SharedRefused {
    /// The queue is closed.
    Closed,
    /// The peer has this many bytes queued already: the body would take it past the limit.
    Backlog { queued: usize },
}

/// A body that will wait behind others holds no more than it needs: one that grew by doubling
/// as it was encoded may hold twice its length, and a peer that does not read makes it wait. (One
/// written at once keeps its buffer: shrinking may copy it.)
fn shrunk_if_waiting(q: &Queue, mut body: Vec<u8>) -> Vec<u8> {
    let waits = q.in_writer > 0 || q.chunks.len() > 1;
    if waits && body.capacity() - body.len() > body.len() / 4 {
        body.shrink_to_fit();
    }
    body
}

/// A chunk list longer than this that a burst left empty is freed when the writer lets go.
const KEEP_CHUNKS: usize = 8;

/// Free an emptied chunk list that a burst grew (an idle connection keeps a short one at most).
pub(super) fn shrink_idle(chunks: &mut VecDeque<Chunk>) {
    if chunks.is_empty() && chunks.capacity() > KEEP_CHUNKS {
        *chunks = VecDeque::new();
    }
}

/// A body queued as a chunk of its own: a large one on a byte stream (after the tail), every one
/// on a message transport. Out of line: [`Outbound::push_locked`]'s common case, a small body
/// copied into the tail, stays a short stretch of code.
#[inline(never)]
fn queue_body(q: &mut Queue, body: Vec<u8>, codec: Option<&FrameCodec>) {
    if let Some(codec) = codec {
        debug_assert!(codec.is_one_line(&body), "a raw CR or LF in a message encoded on one line");
        seal_tail(q);
    }
    let body = shrunk_if_waiting(q, body);
    q.chunks.push_back(Chunk::Body(body));
}

/// The queue's tail buffer, with room to frame a small message into: an emptied one from this
/// thread's pool when it has none (it gave its buffer back when it went idle).
fn tail_room(q: &mut Queue) -> &mut BytesMut {
    q.tail.get_or_insert_with(|| crate::util::bufpool::take_bytes(TAIL_CHUNK))
}

/// The room a fresh tail buffer starts with.
const TAIL_CHUNK: usize = 1024;

/// Close the tail buffer of small messages into a chunk of its own (a body queued next must
/// follow it).
fn seal_tail(q: &mut Queue) {
    if let Some(sealed) = q.tail.take_if(|tail| !tail.is_empty()) {
        q.chunks.push_back(Chunk::Encoded(sealed));
    }
}

/// What is queued (the content of the queue's [`OutTurns`], under its lock).
struct Queue {
    chunks: VecDeque<Chunk>,
    /// Small messages framed since the last chunk, written after the chunks (byte streams).
    /// Senders frame their messages straight into it, so nothing is allocated per message and
    /// the writer swaps it with its own emptied buffer. `None` while idle; boxed, so that it
    /// moves between the queue, the writer and the thread's pool as a pointer (see
    /// [`crate::util::bufpool::take_bytes`]).
    tail: Option<Box<BytesMut>>,
    /// Bytes of queued requests and notifications: their share of the budget, given back when
    /// the writer takes them.
    budgeted: usize,
    /// Bytes of queued responses and cancellations (see [`Outbound::unbudgeted`]).
    unbudgeted: usize,
    /// Bytes the writer has taken and not finished writing (its batch): they no longer count
    /// against the budget of senders, but a broadcast backlog counts them (a peer that does not
    /// read keeps them here).
    in_writer: usize,
    /// Of those, bytes of responses and cancellations: they still hold back new work (see
    /// [`Outbound::unbudgeted`]).
    answers_in_writer: usize,
    /// A sender waits for room (it is first in line: the others wait for the turnstile).
    waiting: bool,
}

impl Content for Queue {
    fn is_empty(&self) -> bool {
        self.chunks.is_empty() && self.tail.as_ref().is_none_or(|tail| tail.is_empty())
    }
}

type QueueGuard<'a> = Locked<'a, OutQueue<Queue>>;

pub(crate) struct Outbound {
    /// The queue and whose turn it is to write it (see [`turns`]).
    queue: OutTurns<Queue>,
    /// The writer (`None` once the writer task ended, so that the stream or sink is closed).
    pump: Mutex<Option<Box<dyn Pump>>>,
    /// The framing of a byte stream (`None`: a message transport, one body per message).
    codec: Option<FrameCodec>,
    pub(crate) tracer: Tracer,
    budget_max: usize,
    /// What senders wait on when the budget is full: made by the first that waits (or by the
    /// close), so a connection whose sends always found room holds none of it.
    waits: OnceBox<Waits>,
    /// Set when the connection starts closing: no new requests or notifications.
    closed: AtomicBool,
    /// Bytes of responses and cancellations queued without waiting for the budget, or taken by
    /// the writer and not written yet. They cannot wait (they are sent from `Drop`), so instead
    /// nothing that produces more of them (a new inbound request, an error answer to garbage)
    /// starts while they exceed the budget. Whoever waits for them to drain waits on
    /// [`Waits::drained`].
    unbudgeted: AtomicUsize,
}

/// See [`Outbound::waits`]. Every waiter checks what it waits for under the queue lock after
/// making these, and every change it waits for is made under that lock before the wake-up looks
/// for them: a wake-up that finds none has no waiter to wake.
///
/// | state | event | next |
/// |---|---|---|
/// | not made | a sender finds no room ([`Outbound::send_waiting`]) or a broadcaster waits for the peer ([`Outbound::wait_within_budget`]): makes them (or finds those a racing waiter made) | made |
/// | not made | the writer takes (room freed, a backlog written): looks, finds none | not made (nobody waits: see below) |
/// | not made | [`Outbound::close`] | made, the turnstile closed |
/// | made | a sender takes the turnstile, sets `waiting` under the lock, registers for `room`, then checks the budget under the lock | queued, or waits for `room` |
/// | made | the writer takes budgeted bytes while `waiting` (set under the same lock) | `room` woken: the first in line checks again |
/// | made | a broadcaster registers for `caught_up`, then checks the backlog under the lock | returns, or waits |
/// | made | the writer takes (or finishes writing) a batch over the budget | `caught_up` woken |
/// | made | `close` | turnstile closed, `room` and `caught_up` woken: every waiter sees `closed` |
/// | not made | the writer takes answers that held back new work: looks, finds none | not made (nobody waits) |
/// | made | [`Outbound::wait_room`] registers for `drained`, then checks the unbudgeted bytes under the lock | returns, or waits |
/// | made | the writer takes (or finishes writing) answers that held back new work | `drained` woken |
/// | made | `close` | `drained` woken too |
///
/// `room` is woken only when `waiting` was set, which its sender does after making these, so
/// that wake-up never looks for them in vain; `caught_up`'s may (a broadcaster that has not made
/// them yet), and then the broadcaster's check after making them sees the backlog gone (so may
/// `drained`'s, and then `wait_room`'s check under the lock sees the answers taken). Checked
/// by the `loom_outbound_waits_*` models, which fail if either check after making is left out.
/// Once made they stay made for the connection's life (one allocation, behind one pointer).
struct Waits {
    /// Senders that found no room wait here in line, first come first served.
    turnstile: lazy::Semaphore,
    /// Signalled when the writer takes budgeted bytes while a sender waits.
    room: lazy::Notify,
    /// Signalled when the writer takes a queue that was over its budget (or the queue closes).
    caught_up: lazy::Notify,
    /// Signalled when fewer unbudgeted bytes wait (or the queue closes): a reader that stopped
    /// taking on work because its peer does not read the answers waits here.
    drained: lazy::Notify,
}

impl Waits {
    fn new() -> Box<Self> {
        Box::new(Waits {
            turnstile: lazy::Semaphore::new(1),
            room: lazy::Notify::new(),
            caught_up: lazy::Notify::new(),
            drained: lazy::Notify::new(),
        })
    }
}

impl Outbound {
    pub(crate) fn new(budget_bytes: usize, tracer: Tracer, codec: Option<FrameCodec>) -> Self {
        let budget_max = budget_bytes.max(1);
        Outbound {
            queue: OutTurns::new(Queue {
                chunks: VecDeque::new(),
                tail: None,
                budgeted: 0,
                unbudgeted: 0,
                in_writer: 0,
                answers_in_writer: 0,
                waiting: false,
            }),
            codec,
            pump: Mutex::new(None),
            tracer,
            budget_max,
            waits: OnceBox::new(),
            closed: AtomicBool::new(false),
            unbudgeted: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> QueueGuard<'_> {
        self.queue.lock()
    }

    fn waits(&self) -> &Waits {
        self.waits.get_or_init(Waits::new)
    }

    /// Queue a notification (or progress report), waiting for room in the byte budget. The
    /// writer task writes it, batched with what else is queued.
    ///
    /// It first spends a unit of the task's cooperative budget (tokio's `coop`, as its channels
    /// do when they send): a task sending a burst yields every so often, so the writer task
    /// (woken on the sender's own worker) and the peer's reader get to run. Without it a burst
    /// queued the whole budget (8 MiB by default) before the writer ran: a working set far
    /// larger than the caches, and nothing written meanwhile. Spent before queuing, as tokio's
    /// channels do, so that a send that yields has queued nothing (dropped then, it sends
    /// nothing).
    pub(crate) async fn send(&self, body: Vec<u8>) -> Result<(), Closed> {
        tokio::task::coop::consume_budget().await;
        match self.try_send_budgeted(body, false) {
            Ok(sent) => sent,
            Err(body) => Box::pin(self.send_waiting(body, false)).await,
        }
    }

    /// Queue `body` if its share of the budget is free and nobody waits in line; `Err` gives it
    /// back for [`Outbound::send_waiting`]. The waiting lives in a future of its own (boxed when
    /// needed), so that a caller's future stays small.
    pub(crate) fn try_send_budgeted(&self, body: Vec<u8>, inline: bool) -> Result<Result<(), Closed>, Vec<u8>> {
        // Traced before the lock: the redactor is user code.
        self.tracer.message(Direction::Outgoing, &body);
        // A body larger than the whole budget takes all of it.
        let n = body.len().clamp(1, self.budget_max);
        let mut q = self.lock();
        if self.closed.load(Ordering::Acquire) {
            return Ok(Err(Closed));
        }
        if !q.waiting && q.budgeted + n <= self.budget_max {
            q.budgeted += n;
            return Ok(self.push_locked(q, body, inline));
        }
        Err(body)
    }

    pub(crate) async fn send_waiting(&self, body: Vec<u8>, inline: bool) -> Result<(), Closed> {
        let n = body.len().clamp(1, self.budget_max);
        // No room: wait in line, then (first in line) until the writer has taken enough.
        let waits = self.waits();
        let _turn = waits.turnstile.acquire().await.map_err(|_| Closed)?;
        struct Waiting<'a>(&'a Outbound);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.lock().waiting = false;
            }
        }
        self.lock().waiting = true;
        let _waiting = Waiting(self);
        loop {
            let room = waits.room.notified();
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

    /// Queue a response or a cancellation now, and write it from here if nobody is writing.
    pub(crate) fn send_now(&self, body: Vec<u8>) -> Result<(), Closed> {
        // Traced before the lock: the redactor is user code.
        self.tracer.message(Direction::Outgoing, &body);
        self.push_unbudgeted(body, true)
    }

    /// Queue a response or a cancellation from `Drop`: no I/O, no user code here (the writer
    /// task writes it; a redactor traces it on a task of its own).
    pub(crate) fn send_later(&self, body: Vec<u8>) -> Result<(), Closed> {
        self.tracer.message_later(Direction::Outgoing, &body);
        self.push_unbudgeted(body, false)
    }

    fn push_unbudgeted(&self, body: Vec<u8>, inline: bool) -> Result<(), Closed> {
        let mut q = self.lock();
        if q.dead {
            return Err(Closed);
        }
        q.unbudgeted += body.len();
        // Only ever changed under the queue lock: a plain store keeps the mirror exact.
        self.unbudgeted.store(q.unbudgeted + q.answers_in_writer, Ordering::Release);
        self.push_locked(q, body, inline)
    }

    fn push_locked(&self, mut q: QueueGuard<'_>, body: Vec<u8>, inline: bool) -> Result<(), Closed> {
        if q.dead {
            return Err(Closed);
        }
        let mut spent = None;
        match &self.codec {
            // Every body is on one line already: the message encoder writes raw JSON that way.
            Some(codec) if body.len() < DIRECT_WRITE => {
                codec.encode_one_line(&body, tail_room(&mut q));
                spent = Some(body);
            }
            codec => queue_body(&mut q, body, codec.as_ref()),
        }
        self.schedule_locked(q, inline, spent);
        Ok(())
    }

    /// Queue a body shared with other connections (a broadcast): never waits, and its bytes
    /// count against the budget like a notification's, even past it. `Ok(true)`: queued, and
    /// what waits for the peer (queued, or taken by the writer and not written yet) is over the
    /// budget now (the peer is lagging). Refused (not queued) when it would take that past
    /// `hard_max` (unless nothing waits: one message always gets in).
    /// `body` must be on one line already, as the message encoder writes it (see `framing::write_flat`).
    pub(crate) fn send_shared(&self, body: &Bytes, hard_max: usize) -> Result<bool, SharedRefused> {
        let n = body.len().max(1);
        self.tracer.message(Direction::Outgoing, body);
        let mut q = self.lock();
        if self.closed.load(Ordering::Acquire) || q.dead {
            return Err(SharedRefused::Closed);
        }
        let queued = q.budgeted + q.unbudgeted + q.in_writer;
        if queued > 0 && queued + n > hard_max {
            return Err(SharedRefused::Backlog { queued });
        }
        q.budgeted += n;
        let over = queued + n > self.budget_max;
        match &self.codec {
            Some(codec) if body.len() < DIRECT_WRITE => codec.encode_one_line(body, tail_room(&mut q)),
            Some(_) => {
                seal_tail(&mut q);
                q.chunks.push_back(Chunk::Shared(body.clone()));
            }
            None => q.chunks.push_back(Chunk::Shared(body.clone())),
        }
        self.schedule_locked(q, false, None);
        Ok(over)
    }

    /// Wait until what waits for the peer (queued, or taken by the writer and not written yet)
    /// is within the budget again, or the queue closes.
    pub(crate) async fn wait_within_budget(&self) {
        let waits = self.waits();
        loop {
            let caught_up = waits.caught_up.notified();
            tokio::pin!(caught_up);
            caught_up.as_mut().enable();
            {
                let q = self.lock();
                if q.budgeted + q.unbudgeted + q.in_writer <= self.budget_max || self.closed.load(Ordering::Acquire) {
                    return;
                }
            }
            caught_up.await;
        }
    }

    /// Decide who writes what was just queued (and write it here, after the lock, if it is this
    /// caller): this task now, the reader before it waits, the writer task, or whoever writes
    /// already. `spent` is a body copied into the tail, given back to this thread's pool.
    #[inline(always)]
    fn schedule_locked(&self, mut q: QueueGuard<'_>, inline: bool, spent: Option<Vec<u8>>) {
        // Who writes it: this task (now), the reader (before it waits), the writer task (woken
        // here), or whoever writes already.
        let writer = self.queue.after_push(&mut q, inline);
        let (write_here, wake_task) = (writer == Writer::Here, writer == Writer::Task);
        let (first, taken) = if write_here { self.first_batch_locked(&mut q) } else { (None, None) };
        drop(q);
        if let Some(taken) = taken {
            self.after_take(taken);
        }
        if wake_task {
            self.queue.wake_task();
        }
        // Back to this thread's pool (it was taken on this thread when the message was encoded).
        if let Some(body) = spent {
            crate::util::bufpool::give(body);
        }
        if write_here {
            self.write_inline(first);
        }
    }

    /// The new inline owner of a byte stream takes the tail now, under the lock it became the
    /// owner under, instead of locking again to take it (unless large bodies are queued: they go
    /// first). (The next message framed here takes a buffer from this thread's pool.) Call
    /// [`Outbound::after_take`] with the second once the lock is let go.
    fn first_batch_locked(&self, q: &mut Queue) -> (Option<Box<BytesMut>>, Option<Taken>) {
        if self.codec.is_some() && q.chunks.is_empty() {
            (q.tail.take(), Some(self.took_locked(q)))
        } else {
            (None, None)
        }
    }

    /// Write as the inline owner: one poll with a no-op waker, then hand whatever is left (and
    /// any error, for the writer task to report) to the writer task.
    fn write_inline(&self, first: Option<Box<BytesMut>>) {
        let handed = {
            let mut guard = self.pump.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut() {
                None => true,
                Some(pump) => match pump.poll_pump(&mut Context::from_waker(Waker::noop()), self, first) {
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
        self.queue.hold();
    }

    /// The reader is about to wait (or has read a batch's worth): write what was held.
    pub(crate) fn release(&self) {
        if let Some((first, taken)) = self.queue.release(|q| self.first_batch_locked(q)) {
            if let Some(taken) = taken {
                self.after_take(taken);
            }
            self.write_inline(first);
        }
    }

    /// The reader goes away: what it held is left to the writer task.
    pub(crate) fn release_to_task(&self) {
        self.queue.release_to_task();
    }

    fn hand_to_task(&self) {
        self.queue.hand_to_task();
    }

    /// The owner's next batch: swap the queued chunks into `chunks` and the tail into `tail`
    /// (both must be empty), or, if nothing is queued, give up ownership (`false`); then `spare`,
    /// an emptied buffer of the writer's, and the queue's own emptied tail go back to this
    /// thread's pool.
    pub(crate) fn take_or_release(
        &self,
        chunks: &mut VecDeque<Chunk>,
        tail: &mut Option<Box<BytesMut>>,
        spare: &mut Option<Box<BytesMut>>,
    ) -> bool {
        let (took, taken) = self.queue.take_or_release(
            |q| {
                std::mem::swap(&mut q.chunks, chunks);
                std::mem::swap(&mut q.tail, tail);
                self.took_locked(q)
            },
            |q| {
                // The batch taken before is written.
                let caught_up = std::mem::take(&mut q.in_writer) > self.budget_max;
                let answers = std::mem::take(&mut q.answers_in_writer);
                if answers > 0 {
                    self.unbudgeted.store(q.unbudgeted, Ordering::Release);
                }
                // Nothing is queued: an idle connection holds no write buffer. The buffers go
                // back to this thread's pool (the next message encoded here takes one).
                if let Some(spare) = spare.take() {
                    crate::util::bufpool::give_bytes(spare);
                }
                if let Some(tail) = q.tail.take() {
                    crate::util::bufpool::give_bytes(tail);
                }
                shrink_idle(&mut q.chunks);
                Taken { room: false, drained: answers + q.unbudgeted > self.budget_max, caught_up }
            },
        );
        self.after_take(taken);
        took
    }

    /// Everything queued was just taken (under the lock): it no longer counts against the
    /// budget. Returns what [`Outbound::after_take`] needs once the lock is let go.
    fn took_locked(&self, q: &mut Queue) -> Taken {
        let room = q.waiting && q.budgeted > 0;
        let caught_up = q.budgeted + q.unbudgeted + q.in_writer > self.budget_max;
        // The batch taken before (if any) is written: the writer takes only when it is done.
        q.in_writer = q.budgeted + q.unbudgeted;
        q.budgeted = 0;
        // Answers taken still hold back new work until they are written: the mirror drops by
        // those of the batch before.
        let before = q.unbudgeted + q.answers_in_writer;
        q.answers_in_writer = std::mem::take(&mut q.unbudgeted);
        if q.answers_in_writer != before {
            self.unbudgeted.store(q.answers_in_writer, Ordering::Release);
        }
        let drained = before > self.budget_max && q.answers_in_writer < before;
        Taken { room, drained, caught_up }
    }

    /// Wake who waits for what a take freed.
    fn after_take(&self, taken: Taken) {
        if taken.room || taken.caught_up || taken.drained {
            // None made yet: nobody waits (see `Waits`).
            if let Some(waits) = self.waits.get() {
                if taken.room {
                    waits.room.notify_waiters();
                }
                if taken.caught_up {
                    waits.caught_up.notify_waiters();
                }
                if taken.drained {
                    waits.drained.notify_waiters();
                }
            }
        }
    }

    /// The writer task's turn: `Ready(true)` once it owns the queue; with `ending`, `Ready(false)`
    /// once the queue is empty and nobody writes.
    pub(crate) fn poll_turn(&self, cx: &mut Context<'_>, ending: bool) -> Poll<bool> {
        self.queue.poll_turn(cx, ending)
    }

    /// Wait until the responses queued without budget fit in the budget again (or the queue
    /// closes): a peer that does not read our answers stops us from taking on more work.
    pub(crate) async fn wait_room(&self) {
        if self.has_room() {
            return;
        }
        let waits = self.waits();
        loop {
            let drained = waits.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            {
                // Under the lock (the mirror is stored under it, before the wake-up looks for
                // `waits`): a take that found no `waits` is seen here.
                let _q = self.lock();
                if self.has_room() {
                    return;
                }
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
        // Made here if no sender made them (the flag is set outside the queue lock, so a waiter
        // that made them meanwhile must be found): a later waiter finds the turnstile closed.
        let waits = self.waits();
        waits.turnstile.close();
        waits.room.notify_waiters();
        waits.drained.notify_waiters();
        waits.caught_up.notify_waiters();
    }

    /// The writer is gone: refuse everything and drop what is left.
    pub(crate) fn finish(&self) {
        self.close();
        let left = {
            let mut q = self.lock();
            q.dead = true;
            q.content.tail = None;
            std::mem::take(&mut q.content.chunks)
        };
        drop(left);
    }

    /// How to start the writer task (once, before anything is queued): it starts at the first
    /// turn handed to it or when the connection ends ([`Outbound::start_writer`]), not before.
    pub(crate) fn set_writer_start(&self, start: turns::Start) {
        self.queue.set_starter(start);
    }

    /// The connection ends: the writer task must run (to flush and shut the write side).
    pub(crate) fn start_writer(&self) {
        self.queue.start_task();
    }

    /// Set the writer (once, before anything is queued).
    pub(crate) fn install(&self, pump: Box<dyn Pump>) {
        *self.pump.lock().unwrap_or_else(|p| p.into_inner()) = Some(pump);
    }

    pub(crate) fn with_pump<T>(&self, f: impl FnOnce(&mut dyn Pump) -> T) -> Option<T> {
        let mut pump = self.pump.lock().unwrap_or_else(|p| p.into_inner());
        Some(f(&mut **pump.as_mut()?))
    }

    /// Drop the byte writer (closing the stream, for pipes and sockets whose shutdown does not).
    pub(crate) fn drop_pump(&self) {
        let pump = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(pump);
    }
}

/// The lazy [`Waits`], every interleaving (the `loom_outbound_waits_*` models,
/// `scripts/loom.sh`): a sender that finds no room makes them while the writer takes what frees
/// the room, two senders race to make them, a broadcaster waits for a lagging peer to catch up,
/// and the close races a sender making them. Each sender or waiter must get through (loom fails
/// a model whose threads all wait: a lost wake-up), and the budget must hold.
#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::collections::VecDeque;

    use loom::sync::Arc;

    use super::*;
    use crate::connection::config::Config;

    /// A budget of 8 bytes: one 8-byte message fills it.
    fn outbound() -> Arc<Outbound> {
        Arc::new(Outbound::new(8, Tracer::new(&Config::default()), None))
    }

    fn body(tag: u8) -> Vec<u8> {
        vec![tag; 8]
    }

    /// What the writer does: take everything queued (its budget is free again once taken).
    fn take(out: &Outbound) -> Vec<Vec<u8>> {
        let (mut chunks, mut tail, mut spare) = (VecDeque::new(), None, None);
        out.take_or_release(&mut chunks, &mut tail, &mut spare);
        chunks.into_iter().map(|c| c.body().to_vec()).collect()
    }

    fn budgeted(out: &Outbound) -> usize {
        out.lock().budgeted
    }

    #[test]
    fn loom_outbound_waits_made_by_a_sender_as_the_writer_frees_room() {
        loom::model(|| {
            let out = outbound();
            out.try_send_budgeted(body(0), false).expect("room for the first").unwrap();
            let writer = {
                let out = out.clone();
                loom::thread::spawn(move || take(&out))
            };
            // No room until the writer takes message 0: this sender makes the waits.
            loom::future::block_on(out.send(body(1))).expect("sent once there is room");
            let mut written = writer.join().unwrap();
            written.extend(take(&out));
            assert!(budgeted(&out) <= 8);
            assert_eq!(written, [body(0), body(1)], "each message once, in order");
        });
    }

    #[test]
    fn loom_outbound_waits_two_senders_race_to_make_them() {
        loom::model(|| {
            let out = outbound();
            out.try_send_budgeted(body(0), false).expect("room for the first").unwrap();
            let senders: Vec<_> = [1, 2]
                .into_iter()
                .map(|tag| {
                    let out = out.clone();
                    loom::thread::spawn(move || {
                        loom::future::block_on(out.send(body(tag))).expect("sent once there is room");
                        assert!(budgeted(&out) <= 8, "over the budget");
                        // Written (as the writer would): room for the other.
                        take(&out)
                    })
                })
                .collect();
            let mut written = take(&out);
            for sender in senders {
                written.extend(sender.join().unwrap());
            }
            written.extend(take(&out));
            written.sort();
            assert_eq!(written, [body(0), body(1), body(2)], "each message once");
        });
    }

    #[test]
    fn loom_outbound_waits_a_broadcaster_waits_for_the_peer_to_catch_up() {
        loom::model(|| {
            let out = outbound();
            // Twice the budget queued: the peer lags until the writer has written it.
            let shared = Bytes::from(vec![7u8; 16]);
            assert!(out.send_shared(&shared, 64).expect("queued"), "over the budget");
            let writer = {
                let out = out.clone();
                loom::thread::spawn(move || {
                    // Takes it, then (written) finds the queue empty and lets go.
                    assert_eq!(take(&out).len(), 1);
                    assert!(take(&out).is_empty());
                })
            };
            loom::future::block_on(out.wait_within_budget());
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_outbound_waits_the_close_races_a_sender_making_them() {
        loom::model(|| {
            let out = outbound();
            out.try_send_budgeted(body(0), false).expect("room for the first").unwrap();
            let closer = {
                let out = out.clone();
                loom::thread::spawn(move || out.close())
            };
            // Nothing frees room: only the close ends the wait.
            assert!(loom::future::block_on(out.send(body(1))).is_err(), "refused once closed");
            closer.join().unwrap();
        });
    }
}
