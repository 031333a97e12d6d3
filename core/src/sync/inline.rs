//! A waker that tells a wake made during a poll from one made outside it, so that a future that
//! wakes itself while it is polled is polled again in place instead of being rescheduled by the
//! runtime ([`InlineWake`]; the HTTP server loop's connections use it, `transport::http`).
//!
//! A tokio task that wakes itself while it runs counts as yielding: it is put at the back of the
//! run queue and another worker is woken (a `futex`) to steal it. hyper's body channel does that
//! once per request (the connection hands the body's bytes to the service's future, polled by the
//! same task), so each request cost a thread's wake-up for nothing.
//!
//! The hand-off is between the poller (the task polling the future with this waker) and whoever
//! wakes it: the future itself, during the poll, or another thread (the I/O driver, a timer, a
//! channel's sender), at any time. One atomic, `state`, two bits (`POLLING`, `WOKEN`); the
//! waker's and the end of the poll's operations on it are read-modify-writes, so they are
//! ordered one after the other:
//!
//! | who | operation | then |
//! |---|---|---|
//! | poller, [`begin_poll`](InlineWake::begin_poll) | `state = POLLING` | polls the future |
//! | waker | `fetch_or(WOKEN)` | `POLLING` was clear: wakes the task's own waker; set: nothing more |
//! | poller, [`end_poll`](InlineWake::end_poll) | `swap(0)` | `WOKEN` was set: polls again |
//!
//! A wake is never lost (whoever wakes has changed what the future waits for first): a waker's
//! `fetch_or` after `begin_poll` and before `end_poll`'s `swap` is seen by that swap (the poller
//! polls again); one after the swap finds `POLLING` clear and wakes the task; one before
//! `begin_poll` finds `POLLING` clear too (and its change came before the poll, which sees it).
//! The `loom_inline_*` models check it.

use std::sync::Arc;
use std::task::Waker;

use super::{AtomicU8, Mutex, Ordering, lock};

const POLLING: u8 = 1;
const WOKEN: u8 = 2;

/// See the [module docs](self).
pub(crate) struct InlineWake {
    /// `POLLING | WOKEN` bits.
    state: AtomicU8,
    /// The task's own waker, for wakes outside a poll.
    task: Mutex<Option<Waker>>,
}

impl InlineWake {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(InlineWake { state: AtomicU8::new(0), task: Mutex::new(None) })
    }

    /// Keep `task` (the poller's waker) for wakes outside a poll; cloned only when it changed.
    pub(crate) fn set_task(&self, task: &Waker) {
        let mut kept = lock(&self.task);
        if !kept.as_ref().is_some_and(|k| k.will_wake(task)) {
            *kept = Some(task.clone());
        }
    }

    /// A poll with this waker begins.
    pub(crate) fn begin_poll(&self) {
        self.state.store(POLLING, Ordering::SeqCst);
    }

    /// The poll ended: whether the future was woken meanwhile (poll it again).
    pub(crate) fn end_poll(&self) -> bool {
        self.state.swap(0, Ordering::SeqCst) & WOKEN != 0
    }
}

impl std::task::Wake for InlineWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.fetch_or(WOKEN, Ordering::SeqCst) & POLLING == 0
            && let Some(task) = lock(&self.task).as_ref()
        {
            task.wake_by_ref();
        }
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;

    /// The task's own waker: counts its wakes.
    struct Counted(loom::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A task's waker behind an `InlineWake`: the task, the inline wake and its waker.
    fn for_task() -> (Arc<Counted>, Arc<InlineWake>, Waker) {
        let task = Arc::new(Counted(loom::sync::atomic::AtomicUsize::new(0)));
        let inline = InlineWake::new();
        inline.set_task(&Waker::from(task.clone()));
        let waker = Waker::from(inline.clone());
        (task, inline, waker)
    }

    #[test]
    fn loom_inline_a_wake_from_another_thread_is_never_lost() {
        loom::model(|| {
            let (task, inline, waker) = for_task();
            // What the future waits for: the other thread changes it, then wakes.
            let event = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            let set = event.clone();
            let other = loom::thread::spawn(move || {
                set.store(true, loom::sync::atomic::Ordering::SeqCst);
                waker.wake_by_ref();
            });
            inline.begin_poll();
            // The poll: it sees the change, or it does not and waits.
            let seen = event.load(loom::sync::atomic::Ordering::SeqCst);
            let again = inline.end_poll();
            other.join().unwrap();
            let woken = task.0.load(loom::sync::atomic::Ordering::SeqCst);
            assert!(seen || again || woken > 0, "the change was neither seen by the poll nor followed by a poll");
        });
    }

    #[test]
    fn loom_inline_a_wake_during_the_poll_is_a_poll_again_not_a_wake_of_the_task() {
        loom::model(|| {
            let (_task, inline, waker) = for_task();
            // Another thread may also wake it, at any time.
            let other_waker = waker.clone();
            let other = loom::thread::spawn(move || other_waker.wake_by_ref());
            inline.begin_poll();
            waker.wake_by_ref();
            let again = inline.end_poll();
            other.join().unwrap();
            assert!(again, "a wake during the poll must be seen by the poller");
        });
    }
}

#[cfg(all(test, not(jsonrpc_duplex_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counted(AtomicUsize);

    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_wake_during_a_poll_is_a_poll_again_and_one_outside_wakes_the_task() {
        let task = Arc::new(Counted(AtomicUsize::new(0)));
        let inline = InlineWake::new();
        inline.set_task(&Waker::from(task.clone()));
        let waker = Waker::from(inline.clone());
        inline.begin_poll();
        waker.wake_by_ref();
        assert!(inline.end_poll());
        assert_eq!(
            task.0.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the task was woken for a wake during its poll"
        );
        inline.begin_poll();
        assert!(!inline.end_poll(), "nobody woke the second poll");
        waker.wake_by_ref();
        assert_eq!(task.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
