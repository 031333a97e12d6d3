//! Limits on inbound requests: a timeout per method, and how many may run at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{BoxFuture, Call, Kind, Middleware, Next, Outcome, refuse};
use crate::message::ErrorObject;

/// A time limit on the handlers of inbound requests, per method or for all. A handler still
/// running when its time is up is dropped (like a cancelled one) and its request answered
/// `-32001` ([`codes::REQUEST_TIMEOUT`](crate::codes::REQUEST_TIMEOUT)). Notifications and
/// outbound calls are not limited (an outbound call has [`CallOptions::timeout`](crate::CallOptions)).
///
/// ```
/// use std::time::Duration;
/// use jsonrpc_duplex_core::{Connection, middleware::limit::Timeout};
/// let layer = Timeout::new(Duration::from_secs(30)).method("index/rebuild", Duration::from_secs(600));
/// let builder = Connection::builder().layer(layer);
/// # drop(builder);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Timeout {
    default: Option<Duration>,
    methods: Arc<HashMap<String, Duration>>,
}

impl Timeout {
    /// Every method at most `limit` (unless it has a limit of its own).
    pub fn new(limit: Duration) -> Self {
        Timeout { default: Some(limit), methods: Default::default() }
    }

    /// Only the methods given a limit with [`Timeout::method`].
    pub fn per_method() -> Self {
        Timeout::default()
    }

    /// `method` at most `limit`.
    pub fn method(mut self, method: &str, limit: Duration) -> Self {
        Arc::make_mut(&mut self.methods).insert(method.to_owned(), limit);
        self
    }

    fn limit(&self, method: &str) -> Option<Duration> {
        self.methods.get(method).copied().or(self.default)
    }
}

impl Middleware for Timeout {
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        let limit = match (call.is_inbound(), call.kind()) {
            (true, Kind::Request) => self.limit(call.method()),
            _ => None,
        };
        let Some(limit) = limit else { return next.run(call) };
        let running = next.run(call);
        Box::pin(async move {
            match tokio::time::timeout(limit, running).await {
                Ok(outcome) => outcome,
                Err(_) => refuse(ErrorObject::request_timeout(format_args!("the handler took longer than {limit:?}"))),
            }
        })
    }
}

/// How many handlers of inbound requests may run at once, per method or for all of them
/// together: a request over the limit waits (first come, first served) until one finishes.
/// Use it for a method that is expensive or holds a scarce resource; the connection's own
/// [`Builder::max_concurrent_requests`](crate::Builder::max_concurrent_requests) bounds all of
/// them. Shared by every connection given the same layer (clones share their counts).
///
/// ```
/// use jsonrpc_duplex_core::{Connection, middleware::limit::ConcurrencyLimit};
/// // At most 2 `build` at once across every connection of this builder, 64 requests overall.
/// let layer = ConcurrencyLimit::new(64).method("build", 2);
/// let builder = Connection::builder().layer(layer);
/// # drop(builder);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConcurrencyLimit {
    all: Option<Arc<Semaphore>>,
    methods: Arc<HashMap<String, Arc<Semaphore>>>,
}

impl ConcurrencyLimit {
    /// At most `max` at once in all (at least one).
    pub fn new(max: usize) -> Self {
        ConcurrencyLimit { all: Some(Arc::new(Semaphore::new(max.max(1)))), methods: Default::default() }
    }

    /// Only the methods given a limit with [`ConcurrencyLimit::method`].
    pub fn per_method() -> Self {
        ConcurrencyLimit::default()
    }

    /// At most `max` of `method` at once (at least one).
    pub fn method(mut self, method: &str, max: usize) -> Self {
        Arc::make_mut(&mut self.methods).insert(method.to_owned(), Arc::new(Semaphore::new(max.max(1))));
        self
    }
}

impl Middleware for ConcurrencyLimit {
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        if !(call.is_inbound() && call.kind() == Kind::Request) {
            return next.run(call);
        }
        let own = self.methods.get(call.method()).cloned();
        let all = self.all.clone();
        if own.is_none() && all.is_none() {
            return next.run(call);
        }
        Box::pin(async move {
            // The method's own permit first, then one of all: a method at its limit does not
            // hold a permit of all while it waits.
            let _own = match &own {
                Some(s) => s.clone().acquire_owned().await.ok(),
                None => None,
            };
            let _all = match &all {
                Some(s) => s.clone().acquire_owned().await.ok(),
                None => None,
            };
            next.run(call).await
        })
    }
}
