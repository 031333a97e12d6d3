//! The pieces of the lazy hand-offs (made by the first waiter, see the outbound queue's `Waits`
//! and the pending table's `slot_freed`): a box made once, and the wake-ups in it.
//!
//! Built normally, [`OnceBox`] is std's `OnceLock<Box<T>>` and [`Notify`] and [`Semaphore`] are
//! tokio's. Built with `--cfg jsonrpc_duplex_loom`, the making and the look at a [`OnceBox`] are
//! steps loom schedules (so a model sees a waker look before or after a waiter makes it), and
//! [`Notify`] and [`Semaphore`] are small versions on loom's primitives with tokio's documented
//! semantics (below): loom explores every interleaving of their steps with ours, and fails a
//! model whose threads all wait (a lost wake-up).
//!
//! The tokio semantics the code relies on, and the loom versions keep:
//! - `notify_one` wakes one enabled waiter, or stores one permit for the next if none waits.
//! - `notify_waiters` wakes every waiter created (by `notified()`) before it, and stores nothing.
//! - `Notified::enable` registers the waiter (taking a stored permit) without waiting: a
//!   `notify_one` after it wakes it. A waiter woken by `notify_one` and dropped unwoken passes its
//!   wake-up on.
//! - A `Semaphore` hands out its permits to waiters; once closed, `acquire` fails.

#[cfg(not(jsonrpc_duplex_loom))]
pub(crate) use tokio::sync::{Notify, Semaphore};

#[cfg(jsonrpc_duplex_loom)]
pub(crate) use self::model::{Notify, Semaphore};

/// A value made once, on first use, boxed (so that an unused one costs a pointer).
pub(crate) struct OnceBox<T> {
    inner: std::sync::OnceLock<Box<T>>,
    /// Makes the look and the making steps of their own under loom.
    #[cfg(jsonrpc_duplex_loom)]
    step: loom::sync::Mutex<()>,
}

impl<T> OnceBox<T> {
    pub(crate) fn new() -> Self {
        OnceBox {
            inner: std::sync::OnceLock::new(),
            #[cfg(jsonrpc_duplex_loom)]
            step: loom::sync::Mutex::new(()),
        }
    }

    /// The value, if made.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        #[cfg(jsonrpc_duplex_loom)]
        let _step = self.step.lock().unwrap();
        self.inner.get().map(|b| &**b)
    }

    /// The value, made by `make` if nobody made it yet (one of two racing makers wins; the
    /// other's is dropped unused).
    #[inline]
    pub(crate) fn get_or_init(&self, make: impl FnOnce() -> Box<T>) -> &T {
        #[cfg(jsonrpc_duplex_loom)]
        let _step = self.step.lock().unwrap();
        self.inner.get_or_init(make)
    }
}

impl<T> Default for OnceBox<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`Notify::notified`] returns (tokio's, or the model's under loom).
#[cfg(not(jsonrpc_duplex_loom))]
pub(crate) type Notified<'a> = tokio::sync::futures::Notified<'a>;
#[cfg(jsonrpc_duplex_loom)]
pub(crate) type Notified<'a> = self::model::Notified<'a>;

/// A [`Notify`] made by its first waiter: a wake-up before that finds none and does nothing
/// (an unused one costs a [`OnceBox`], 16 bytes, where a `Notify` is 32).
///
/// Correct only where nothing is lost by that: every waiter creates its [`Notified`] (and
/// `enable`s it) before it checks what it waits for under a lock, and every change it waits for
/// is made under that lock before the wake-up looks. A waker that finds none made then ran its
/// critical section before the waiter's check, which sees the change.
pub(crate) struct LazyNotify(OnceBox<Notify>);

impl LazyNotify {
    pub(crate) fn new() -> Self {
        LazyNotify(OnceBox::new())
    }

    /// Made here if nobody waited before.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.0.get_or_init(|| Box::new(Notify::new())).notified()
    }

    /// Nothing if nobody ever waited (no permit is stored for a first waiter: it checks first).
    pub(crate) fn notify_one(&self) {
        if let Some(notify) = self.0.get() {
            notify.notify_one();
        }
    }
}

impl Default for LazyNotify {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(jsonrpc_duplex_loom)]
mod model {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use loom::sync::Mutex;

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Woken {
        No,
        /// By `notify_one`: passed on if dropped unconsumed.
        One,
        All,
    }

    struct Waiter {
        id: u64,
        woken: Woken,
        waker: Option<Waker>,
    }

    #[derive(Default)]
    struct State {
        permit: bool,
        /// `notify_waiters` calls so far: a waiter created before one is woken by it.
        round: u64,
        next_id: u64,
        waiters: Vec<Waiter>,
    }

    pub(crate) struct Notify {
        state: Mutex<State>,
    }

    impl Notify {
        pub(crate) fn new() -> Self {
            Notify { state: Mutex::new(State::default()) }
        }

        pub(crate) fn notified(&self) -> Notified<'_> {
            let round = self.state.lock().unwrap().round;
            Notified { notify: self, round, id: None, done: false }
        }

        pub(crate) fn notify_one(&self) {
            let waker = {
                let mut s = self.state.lock().unwrap();
                match s.waiters.iter_mut().find(|w| w.woken == Woken::No) {
                    Some(w) => {
                        w.woken = Woken::One;
                        w.waker.take()
                    }
                    None => {
                        s.permit = true;
                        None
                    }
                }
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }

        pub(crate) fn notify_waiters(&self) {
            let wakers: Vec<Waker> = {
                let mut s = self.state.lock().unwrap();
                s.round += 1;
                s.waiters
                    .iter_mut()
                    .filter(|w| w.woken == Woken::No)
                    .filter_map(|w| {
                        w.woken = Woken::All;
                        w.waker.take()
                    })
                    .collect()
            };
            for waker in wakers {
                waker.wake();
            }
        }
    }

    impl Default for Notify {
        fn default() -> Self {
            Self::new()
        }
    }

    pub(crate) struct Notified<'a> {
        notify: &'a Notify,
        round: u64,
        id: Option<u64>,
        done: bool,
    }

    impl Notified<'_> {
        /// Register (or take a stored permit); `true` once woken.
        fn register(&mut self, waker: Option<&Waker>) -> bool {
            if self.done {
                return true;
            }
            let mut s = self.notify.state.lock().unwrap();
            if s.round != self.round {
                self.forget(&mut s);
                self.done = true;
                return true;
            }
            match self.id {
                None => {
                    if s.permit {
                        s.permit = false;
                        self.done = true;
                        return true;
                    }
                    let id = s.next_id;
                    s.next_id += 1;
                    s.waiters.push(Waiter { id, woken: Woken::No, waker: waker.cloned() });
                    self.id = Some(id);
                    false
                }
                Some(id) => {
                    let at = s.waiters.iter().position(|w| w.id == id).expect("registered");
                    if s.waiters[at].woken != Woken::No {
                        s.waiters.remove(at);
                        self.id = None;
                        self.done = true;
                        return true;
                    }
                    if let Some(waker) = waker {
                        s.waiters[at].waker = Some(waker.clone());
                    }
                    false
                }
            }
        }

        fn forget(&mut self, s: &mut State) -> Woken {
            let Some(id) = self.id.take() else { return Woken::No };
            let at = s.waiters.iter().position(|w| w.id == id).expect("registered");
            s.waiters.remove(at).woken
        }

        pub(crate) fn enable(self: Pin<&mut Self>) -> bool {
            self.get_mut().register(None)
        }
    }

    impl Future for Notified<'_> {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.get_mut().register(Some(cx.waker())) { Poll::Ready(()) } else { Poll::Pending }
        }
    }

    impl Drop for Notified<'_> {
        fn drop(&mut self) {
            let notify = self.notify;
            let woken = {
                let mut s = notify.state.lock().unwrap();
                self.forget(&mut s)
            };
            if woken == Woken::One {
                notify.notify_one();
            }
        }
    }

    /// A semaphore: permits handed to waiters, none once closed.
    pub(crate) struct Semaphore {
        state: Mutex<(usize, bool)>,
        released: Notify,
    }

    pub(crate) struct Permit<'a>(&'a Semaphore);

    impl Drop for Permit<'_> {
        fn drop(&mut self) {
            self.0.state.lock().unwrap().0 += 1;
            self.0.released.notify_one();
        }
    }

    /// The semaphore is closed.
    #[derive(Debug)]
    pub(crate) struct Closed;

    impl Semaphore {
        pub(crate) fn new(permits: usize) -> Self {
            Semaphore { state: Mutex::new((permits, false)), released: Notify::new() }
        }

        pub(crate) async fn acquire(&self) -> Result<Permit<'_>, Closed> {
            loop {
                let released = self.released.notified();
                let mut released = std::pin::pin!(released);
                released.as_mut().enable();
                {
                    let mut s = self.state.lock().unwrap();
                    if s.1 {
                        return Err(Closed);
                    }
                    if s.0 > 0 {
                        s.0 -= 1;
                        return Ok(Permit(self));
                    }
                }
                released.await;
            }
        }

        pub(crate) fn close(&self) {
            self.state.lock().unwrap().1 = true;
            self.released.notify_waiters();
        }
    }
}
