//! The primitives the hand-offs between tasks are built on, in one place so that a model checker
//! can stand in for them.
//!
//! Built normally they are std's (and `futures`'); built with `--cfg jsonrpc_duplex_loom` they
//! are [loom](https://docs.rs/loom)'s, and the `loom_` tests explore every interleaving of the
//! hand-offs written on them ([`turns`], the lane's and the outbound queue's turns; [`baton`], a
//! hook's state for one request). The command is in `ARCHITECTURE.md` ("Checking the
//! hand-offs"); CI runs it.

pub(crate) mod baton;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) mod inline;
pub(crate) mod lazy;
pub(crate) mod turns;

#[cfg(not(jsonrpc_duplex_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
#[cfg(not(jsonrpc_duplex_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(jsonrpc_duplex_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
#[cfg(jsonrpc_duplex_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Lock `mutex`, ignoring poisoning: every critical section built on these primitives leaves its
/// state consistent, so a panic elsewhere cannot break it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A task's waker, registered by the task and woken by whoever hands it work.
pub(crate) struct AtomicWaker {
    #[cfg(not(jsonrpc_duplex_loom))]
    inner: futures::task::AtomicWaker,
    #[cfg(jsonrpc_duplex_loom)]
    inner: loom::future::AtomicWaker,
}

impl AtomicWaker {
    pub(crate) fn new() -> Self {
        AtomicWaker { inner: Default::default() }
    }

    pub(crate) fn register(&self, waker: &std::task::Waker) {
        #[cfg(not(jsonrpc_duplex_loom))]
        self.inner.register(waker);
        #[cfg(jsonrpc_duplex_loom)]
        self.inner.register_by_ref(waker);
    }

    pub(crate) fn wake(&self) {
        self.inner.wake();
    }
}

impl Default for AtomicWaker {
    fn default() -> Self {
        Self::new()
    }
}
