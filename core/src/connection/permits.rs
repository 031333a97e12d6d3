//! The request permits: how many inbound requests run at once, and how many bytes of params
//! they hold, in one word taken without a lock.
//!
//! The word packs two counts: the requests running (above [`KIB_BITS`]) and the KiB their
//! params held when they were read (below). A request may start while both are within their
//! limits, or when none runs (one always may, however large). Taking a permit is one
//! compare-and-swap loop, giving it back one `fetch_sub`. A request the reader starts on the
//! spot and that finishes in its first poll costs none: the reader only looks at the word, and
//! takes the permit if the handler goes on ([`Admitted::Deferred`]).
//!
//! Only the dispatcher task ever waits for a permit, so one registered waker is enough, and the
//! announcement that it waits is a bit of the same word ([`WAITING`]): the waiter's last check
//! and its announcement are one read-modify-write, and so is a release and its look at the
//! announcement, so the two are ordered by the word itself (no fence, no second atomic):
//!
//! | state | event | next |
//! |---|---|---|
//! | not waiting | [`Permits::try_take`] fits | not waiting (a permit is out) |
//! | not waiting | `take` finds no room: registers its waker, then in one step takes a permit if one fits now, or sets `WAITING` | not waiting with a permit, or waiting |
//! | waiting | a permit is given back ([`Permits::give`]: `fetch_sub`, which returns `WAITING`) | woken: `take` checks again |
//! | waiting | a permit is taken (the waiter's check, or the lane's next owner) | not waiting |
//!
//! What this guarantees (checked by `loom_permits_*` below, on `crate::sync`'s primitives): the
//! counts never go over their limits except for a lone request, and a waiting dispatcher is
//! always woken once room is made.
//!
//! The permits are the connection's own [`Admission`], made as it starts only when no
//! feature's [`Extension::admission`](super::seam::Extension::admission) replaces them: the
//! dispatcher knows only the trait. A request's permit ([`Permit`], [`OwnedPermit`]) gives its
//! weight back to whichever admission made it.
//!
//! A server's drain gate keeps a connection's permits itself and counts its running handlers
//! by them (`server::gate`): one more bit of the word ([`MARKED`]) is the gate's mark, set once
//! it drains. A permit taken learns from its own read-modify-write whether the word was marked,
//! and one given back whether to tell the gate: the mark and the count are one word, as the
//! waiting bit and the count are.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::seam::Admission;
use crate::sync::{AtomicU64, AtomicWaker, Ordering};

/// Bits of the word that count KiB (up to 1 PiB); the count of requests is above them.
const KIB_BITS: u32 = 40;
const ONE_REQUEST: u64 = 1 << KIB_BITS;
const KIB_MASK: u64 = ONE_REQUEST - 1;
/// The top bit: the dispatcher task waits for a permit.
const WAITING: u64 = 1 << 63;
/// The next: the server these permits count for drains (see the module).
const MARKED: u64 = 1 << 62;
/// The two flags; the counts are below them.
const FLAGS: u64 = WAITING | MARKED;
/// Most requests counted (the count stays below [`MARKED`]).
const MAX_REQUESTS: u64 = 1 << 21;

/// The in-flight request limit, in requests and in the KiB of their params (see the module).
pub(crate) struct Permits {
    in_use: AtomicU64,
    max: u64,
    max_kib: u64,
    /// The dispatcher task, while it waits.
    waker: AtomicWaker,
}

impl Permits {
    pub(crate) fn new(max: usize, max_bytes: usize) -> Self {
        Permits {
            in_use: AtomicU64::new(0),
            max: (max as u64).clamp(1, MAX_REQUESTS),
            max_kib: (max_bytes as u64).div_ceil(1024).clamp(1, KIB_MASK),
            waker: AtomicWaker::new(),
        }
    }

    /// What a request whose params take `bytes` counts (its KiB, at least one).
    fn weight(&self, bytes: usize) -> u64 {
        ONE_REQUEST + (bytes as u64).div_ceil(1024).clamp(1, self.max_kib)
    }

    /// The word with a request of `weight` more, if it may start now (and the waiting bit
    /// cleared: whoever takes a permit is the lane's owner, who is not waiting any more).
    fn with(&self, n: u64, weight: u64) -> Option<u64> {
        let (running, kib) = ((n & !FLAGS) >> KIB_BITS, n & KIB_MASK);
        let fits = running < self.max && kib + (weight & KIB_MASK) <= self.max_kib;
        (running == 0 || fits).then_some((n & !WAITING) + weight)
    }

    /// The weight of a request whose params take `bytes`, taken if it may start now, and
    /// whether the word was marked when it was taken.
    pub(crate) fn try_weigh_marked(&self, bytes: usize) -> Option<(u64, bool)> {
        let weight = self.weight(bytes);
        let was = self.in_use.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| self.with(n, weight)).ok()?;
        Some((weight, was & MARKED != 0))
    }

    /// [`Permits::try_weigh_marked`], or once there is room (the dispatcher's waker registered).
    pub(crate) fn poll_weigh_marked(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<(u64, bool)> {
        if let Some(taken) = self.try_weigh_marked(bytes) {
            return Poll::Ready(taken);
        }
        // Registered before the last check, which is one step with the announcement: a permit
        // given back after it sees `WAITING` and wakes this task.
        self.waker.register(cx.waker());
        let weight = self.weight(bytes);
        let mut took = false;
        let was = self.in_use.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            let next = self.with(n, weight);
            took = next.is_some();
            Some(next.unwrap_or(n | WAITING))
        });
        let was = was.unwrap_or_else(|n| n);
        if took { Poll::Ready((weight, was & MARKED != 0)) } else { Poll::Pending }
    }

    /// Whether a request whose params take `bytes` may start now: a look, nothing taken.
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.with(self.in_use.load(Ordering::Acquire), self.weight(bytes)).is_some()
    }

    /// Take the permit of a request that [`Permits::fits`] let start while nothing could take
    /// one since (see [`Admitted::Deferred`]): it still fits, so one `fetch_add`, no check.
    fn take_deferred(&self, bytes: usize) -> u64 {
        let weight = self.weight(bytes);
        let was = self.in_use.fetch_add(weight, Ordering::AcqRel);
        debug_assert!(self.with(was, weight).is_some(), "a deferred permit no longer fits");
        weight
    }

    /// Give a permit of `weight` back; whether the word was marked.
    pub(crate) fn give(&self, weight: u64) -> bool {
        let was = self.in_use.fetch_sub(weight, Ordering::AcqRel);
        if was & WAITING != 0 {
            self.waker.wake();
        }
        was & MARKED != 0
    }

    /// Mark the word (the server drains): every permit taken or given back from now on learns
    /// it.
    pub(crate) fn mark(&self) {
        self.in_use.fetch_or(MARKED, Ordering::AcqRel);
    }

    /// The requests holding a permit now.
    pub(crate) fn running(&self) -> u64 {
        (self.in_use.load(Ordering::Acquire) & !FLAGS) >> KIB_BITS
    }

    /// The requests running and the KiB they hold (for the models).
    #[cfg(all(test, jsonrpc_duplex_loom))]
    fn counts(&self) -> (u64, u64) {
        let n = self.in_use.load(Ordering::SeqCst) & !FLAGS;
        (n >> KIB_BITS, n & KIB_MASK)
    }
}

/// The connection's own request permits, as the seam knows them.
impl Admission for Permits {
    fn try_admit(&self, bytes: usize) -> Option<u64> {
        self.try_weigh_marked(bytes).map(|(weight, _)| weight)
    }

    fn poll_admit(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<u64> {
        self.poll_weigh_marked(bytes, cx).map(|(weight, _)| weight)
    }

    fn release(&self, weight: u64) {
        self.give(weight);
    }
}

/// A permit for a request whose params take `bytes`, if `admission` lets it start now.
pub(crate) fn try_take(admission: &Arc<dyn Admission>, bytes: usize) -> Option<Permit<'_>> {
    admission.try_admit(bytes).map(|weight| Permit(admission, weight))
}

/// Wait for a permit (the dispatcher task only: one waiter at a time).
pub(crate) async fn take(admission: &Arc<dyn Admission>, bytes: usize) -> Permit<'_> {
    let weight = poll_fn(|cx| admission.poll_admit(bytes, cx)).await;
    Permit(admission, weight)
}

/// One in-flight request's permit (and its weight), given back when dropped.
pub(crate) struct Permit<'a>(&'a Arc<dyn Admission>, u64);

impl Permit<'_> {
    /// For a handler that goes on as its own task.
    pub(crate) fn owned(self) -> OwnedPermit {
        let owned = OwnedPermit(self.0.clone(), self.1);
        std::mem::forget(self);
        owned
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

/// A request's admission as its handler starts.
pub(crate) enum Admitted<'a> {
    /// A permit taken.
    Taken(Permit<'a>),
    /// None taken yet, for a request the reader starts on the spot under the connection's own
    /// permits, which had room for it when it looked ([`Permits::fits`]). Only the lane's owner
    /// takes permits, and the reader owns the lane while it polls the handler, so their count
    /// can only go down meanwhile: the handler's first poll runs within the limits. A handler
    /// that finishes in that poll (most do) never takes its permit, and costs the word nothing;
    /// one that goes on takes it then ([`Admitted::owned`]), which still fits.
    Deferred(&'a Arc<Permits>, usize),
}

impl Admitted<'_> {
    /// The permit for a handler that goes on as its own task.
    pub(crate) fn owned(self) -> OwnedPermit {
        match self {
            Admitted::Taken(permit) => permit.owned(),
            Admitted::Deferred(permits, bytes) => OwnedPermit(permits.clone(), permits.take_deferred(bytes)),
        }
    }
}

/// A [`Permit`] that keeps its admission alive (a handler running as its own task holds it).
pub(crate) struct OwnedPermit(Arc<dyn Admission>, u64);

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;

    /// `handlers` requests (of `kib` KiB each) already run, each on a thread of its own that ends
    /// it; the dispatcher waits for a permit for one more of `next_kib` KiB. It always gets one
    /// (loom fails a model whose threads all block: a lost wake-up), and while the limits hold
    /// nobody sees them passed.
    fn model(max: usize, max_kib: usize, handlers: usize, kib: usize, next_kib: usize) {
        loom::model(move || {
            let permits = Arc::new(Permits::new(max, max_kib * 1024));
            // Through the seam's trait, as the dispatcher takes them.
            let admission: Arc<dyn Admission> = permits.clone();
            let mut threads = Vec::new();
            for _ in 0..handlers {
                let permit = try_take(&admission, kib * 1024).expect("room for the first ones").owned();
                let check = permits.clone();
                threads.push(loom::thread::spawn(move || {
                    let (running, held) = check.counts();
                    assert!(running <= max as u64, "{running} requests run, at most {max}");
                    assert!(running == 1 || held <= max_kib as u64, "{held} KiB held, at most {max_kib}");
                    drop(permit);
                }));
            }
            let permit = loom::future::block_on(take(&admission, next_kib * 1024));
            let (running, held) = permits.counts();
            assert!(running <= max as u64 && (running == 1 || held <= max_kib as u64), "({running}, {held}) over");
            drop(permit);
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(permits.counts(), (0, 0), "every permit was given back");
        });
    }

    #[test]
    fn loom_permits_count_limit_wakes_the_dispatcher() {
        // One request at a time: the dispatcher waits for the running one to end.
        model(1, 1024, 1, 1, 1);
    }

    #[test]
    fn loom_permits_kib_limit_wakes_the_dispatcher() {
        // Room for 3 KiB: two requests of 1 KiB run, the next of 2 KiB waits for one to end.
        model(8, 3, 2, 1, 2);
    }

    #[test]
    fn loom_permits_a_lone_large_request_always_runs() {
        // Over the KiB limit on its own: it waits until nothing runs, then runs alone.
        model(8, 2, 2, 1, 64);
    }
}
