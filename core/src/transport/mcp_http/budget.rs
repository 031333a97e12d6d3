//! The server-wide byte budget of the POST bodies that belong to no session yet: an
//! `initialize`, a stateless (2026-07-28) request, a POST naming a session we do not know.
//! A session's own POSTs are bounded by its inbound budget instead (`max_inbound`); these had
//! only the connection bound times the body limit.
//!
//! A body with a declared length is charged in full before a byte of it is read; one of unknown
//! length (chunked) as its bytes arrive. The charge is held until the POST is answered (its
//! response head is built: the connection has taken the message). When nothing is held one body
//! is always taken, whatever its size, so a budget below the body limit refuses nothing for ever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};

use crate::transport::http::BoxError;

/// The bytes held and their limit.
#[derive(Debug)]
pub(super) struct ByteBudget {
    limit: usize,
    held: AtomicUsize,
}

impl ByteBudget {
    pub(super) fn new(limit: usize) -> Arc<Self> {
        Arc::new(ByteBudget { limit, held: AtomicUsize::new(0) })
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub(super) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// A charge of `bytes`, if they fit (or nothing is held).
    pub(super) fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        let taken = self.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held == 0 || held.saturating_add(bytes) <= self.limit).then(|| held.saturating_add(bytes))
        });
        // (Built only once taken: a dropped charge gives back what it holds.)
        taken.is_ok().then(|| Charge { budget: self.clone(), bytes })
    }
}

/// One body's share of the budget, given back on drop.
#[derive(Debug)]
pub(super) struct Charge {
    budget: Arc<ByteBudget>,
    bytes: usize,
}

impl Charge {
    /// Grow by `n` bytes if they fit, or if this charge is all that is held (one body is
    /// always taken).
    fn grow(&mut self, n: usize) -> bool {
        let mine = self.bytes;
        let limit = self.budget.limit;
        let grown = self.budget.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held == mine || held.saturating_add(n) <= limit).then(|| held.saturating_add(n))
        });
        if grown.is_ok() {
            self.bytes += n;
        }
        grown.is_ok()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The budget is spent: the body read fails with this (answered `503`, `Retry-After: 1`).
#[derive(Debug)]
pub(super) struct OverBudget(pub(super) usize);

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Service Unavailable: the server holds as many bytes of requests outside a session as it may \
             ({} bytes); retry shortly",
            self.0
        )
    }
}

impl std::error::Error for OverBudget {}

/// A body of unknown length whose bytes are charged as they arrive.
pub(super) struct Charged<'a, B> {
    pub(super) body: Pin<Box<B>>,
    pub(super) charge: &'a mut Charge,
}

impl<B> Body for Charged<'_, B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let this = &mut *self;
        match this.body.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, bytes::Buf::remaining);
                if n > 0 && !this.charge.grow(n) {
                    return Poll::Ready(Some(Err(Box::new(OverBudget(this.charge.budget.limit)))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_body_always_fits_and_charges_come_back() {
        let budget = ByteBudget::new(10);
        let big = budget.charge(100).expect("nothing held: one body always fits");
        assert!(budget.charge(1).is_none(), "over the limit while the big one is held");
        drop(big);
        assert_eq!(budget.held(), 0);
        let a = budget.charge(6).expect("fits");
        let b = budget.charge(4).expect("fits exactly");
        assert!(budget.charge(1).is_none());
        drop(a);
        assert_eq!(budget.held(), 4);
        drop(b);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_charge_grows_alone_past_the_limit_but_not_beside_another() {
        let budget = ByteBudget::new(10);
        let mut alone = budget.charge(0).expect("empty");
        assert!(alone.grow(50), "the only body held grows as it must");
        drop(alone);
        let mut a = budget.charge(0).expect("empty");
        let _b = budget.charge(5).expect("fits");
        assert!(a.grow(5));
        assert!(!a.grow(1), "past the limit beside another");
        assert_eq!(budget.held(), 10);
    }
}
