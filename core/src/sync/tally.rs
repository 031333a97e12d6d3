//! A count of things running (a server's request handlers) that many threads change at once,
//! and a wait for it to reach zero once it is closed: a shutdown's drain.
//!
//! One counter shared by every connection of a server would be one cache line written by every
//! worker thread for every request, twice (in and out): the line moves between the cores each
//! time. The count is kept in shards instead, a cache line each, and a thread counts on its own
//! shard (see [`this_thread_shard`]); whoever counts a thing in notes the shard and counts it out
//! on the same one, so no shard ever counts below zero and a sum of the shards read one after
//! the other counts everything that runs all along the reading.
//!
//! The close marks every shard (a bit of the shard's word), and an enter learns whether its
//! shard was marked from the very read-modify-write that counts it in: the two are ordered by
//! that word alone, so no stronger ordering than acquire-release is needed anywhere.
//!
//! | step | who | what |
//! |---|---|---|
//! | enter | a thread starting a thing | add one to its shard's word; if the word was marked, take the one back and refuse |
//! | leave | whoever ends it | take one from the thing's shard's word; if it was marked, wake the waiters |
//! | close | the shutdown | set `closed` (the router's refusal), mark every shard, wake the waiters |
//! | wait | the shutdown, after the close | register for a wake-up, *then* sum the shards: done at zero, else wait and sum again |
//!
//! Of an enter racing the close on its shard, either the enter comes second and sees the mark
//! (and refuses), or it comes first and the wait's sum, read after the mark, counts it: the wait
//! never ends while a thing it let in still runs. A leave that comes after the mark wakes the
//! wait (registered before it sums), one before it is in the sum. Checked by the `loom_tally_*`
//! models below; they fail if an enter refuses on `closed` alone (a flag it reads, not the word
//! it writes).

use std::pin::pin;

use super::lazy::Notify;
use super::{AtomicBool, AtomicU64, Ordering};

/// Shards: threads beyond this many share them (still correct, just contended).
pub(crate) const SHARDS: usize = 16;

/// A shard's count on a cache line of its own (128 bytes: the line and the one the CPU fetches
/// with it), the top bit the close's mark.
#[repr(align(128))]
struct Shard(AtomicU64);

/// The close's mark on a shard's word.
const MARKED: u64 = 1 << 63;

pub(crate) struct Tally {
    shards: [Shard; SHARDS],
    closed: AtomicBool,
    /// Wakes a waiter when something leaves after the close (and at the close).
    changed: Notify,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            shards: std::array::from_fn(|_| Shard(AtomicU64::new(0))),
            closed: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }
}

impl Tally {
    /// Count one in on `shard` (`< SHARDS`); `false` (nothing counted) once closed.
    pub(crate) fn enter(&self, shard: usize) -> bool {
        if self.shards[shard].0.fetch_add(1, Ordering::AcqRel) & MARKED != 0 {
            self.leave(shard);
            return false;
        }
        true
    }

    /// Count out one that [`Tally::enter`] counted in on `shard`.
    pub(crate) fn leave(&self, shard: usize) {
        if self.shards[shard].0.fetch_sub(1, Ordering::AcqRel) & MARKED != 0 {
            self.changed.notify_waiters();
        }
    }

    /// Refuse every enter from now on.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for shard in &self.shards {
            shard.0.fetch_or(MARKED, Ordering::AcqRel);
        }
        self.changed.notify_waiters();
    }

    /// Closed: a thing that enters from now on is refused (one that entered may still run).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// How many are counted in now.
    pub(crate) fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.0.load(Ordering::Acquire) & !MARKED).fold(0, u64::wrapping_add)
    }

    /// Resolves once nothing is counted in after [`Tally::close`] (then nothing can be any
    /// more); call it after the close.
    pub(crate) async fn wait(&self) {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            if self.is_closed() && self.len() == 0 {
                return;
            }
            changed.await;
        }
    }
}

/// The calling thread's shard: threads are given shards in turn as they first ask.
pub(crate) fn this_thread_shard() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SHARD.with(|shard| match shard.get() {
        usize::MAX => {
            let given = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            shard.set(given);
            given
        }
        given => given,
    })
}

#[cfg(all(test, not(jsonrpc_duplex_loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_in_and_out_across_shards_and_refuses_once_closed() {
        let tally = Tally::default();
        assert!(tally.enter(0));
        assert!(tally.enter(3));
        assert!(tally.enter(3));
        assert_eq!(tally.len(), 3);
        tally.leave(3);
        tally.close();
        assert!(!tally.enter(5), "an enter after the close is refused");
        assert_eq!(tally.len(), 2);
        let mut wait = Box::pin(tally.wait());
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        tally.leave(0);
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        tally.leave(3);
        assert!(wait.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_thread_keeps_its_shard() {
        let first = this_thread_shard();
        assert!(first < SHARDS);
        assert_eq!(this_thread_shard(), first);
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// Handlers on `shards` enter (and, if let in, run and leave) while the shutdown closes and
    /// waits: when the wait ends, no handler it let in is running, and none starts after.
    fn model(shards: &'static [usize]) {
        loom::model(move || {
            let tally = Arc::new(Tally::default());
            let running = Arc::new(AtomicUsize::new(0));
            let handlers: Vec<_> = shards
                .iter()
                .map(|&shard| {
                    let (tally, running) = (tally.clone(), running.clone());
                    loom::thread::spawn(move || {
                        if tally.enter(shard) {
                            running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                            tally.leave(shard);
                        }
                    })
                })
                .collect();
            tally.close();
            loom::future::block_on(tally.wait());
            assert_eq!(running.load(std::sync::atomic::Ordering::SeqCst), 0, "the wait ended with a handler running");
            for handler in handlers {
                handler.join().unwrap();
            }
            assert_eq!(tally.len(), 0);
        });
    }

    #[test]
    fn loom_tally_a_handler_racing_the_close() {
        model(&[0]);
    }

    #[test]
    fn loom_tally_two_handlers_on_two_shards() {
        model(&[0, 1]);
    }

    #[test]
    fn loom_tally_two_handlers_on_one_shard() {
        model(&[1, 1]);
    }
}
