//! A byte budget shared by the requests of one server: the bodies it holds (read, not answered
//! yet) counted against one limit. The plain HTTP server charges every body to it
//! (`HttpService::max_held_bytes`); the MCP server the bodies that belong to no session yet (an
//! `initialize`, a stateless 2026-07-28 request, a POST naming a session it does not know;
//! `McpHttpServer::max_pre_session_bytes`), a session's own being bounded by its inbound budget.
//!
//! A body with a declared length is charged in full before a byte of it is read; one of unknown
//! length (chunked) as its bytes arrive ([`Charged`]). The charge is held until the request is
//! answered. When nothing is held one body is always taken, whatever its size, so a budget below
//! the body limit refuses nothing for ever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};

use super::BoxError;

/// The bytes held and their limit.
#[derive(Debug)]
pub(crate) struct ByteBudget {
    limit: usize,
    held: AtomicUsize,
}

impl ByteBudget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(ByteBudget { limit, held: AtomicUsize::new(0) })
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))] // read by `McpHttpServer::pre_session_bytes`
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// A charge of `bytes`, if they fit (or nothing is held).
    pub(crate) fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        let taken = self.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held == 0 || held.saturating_add(bytes) <= self.limit).then(|| held.saturating_add(bytes))
        });
        // (Built only once taken: a dropped charge gives back what it holds.)
        taken.is_ok().then(|| Charge { budget: self.clone(), bytes })
    }
}

/// One body's share of the budget, given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<ByteBudget>,
    bytes: usize,
}

impl Charge {
    /// Grow by `n` bytes if they fit, or if this charge is all that is held (one body is
    /// always taken).
    pub(crate) fn grow(&mut self, n: usize) -> bool {
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

/// The budget is spent: a charged body's read fails with this (its limit); each server answers
/// it in its own way (`503`, `Retry-After: 1`).
#[derive(Debug)]
pub(crate) struct OverBudget(pub(crate) usize);

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the server holds as many request bytes as it may ({} bytes); try again shortly", self.0)
    }
}

impl std::error::Error for OverBudget {}

/// A body of unknown length whose bytes are charged as they arrive.
pub(crate) struct Charged<'a, B> {
    pub(crate) body: Pin<Box<B>>,
    pub(crate) charge: &'a mut Charge,
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
