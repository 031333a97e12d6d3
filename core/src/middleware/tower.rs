//! tower's layers around calls (feature `tower`): a stack of `tower::Layer`s over [`RunNext`]
//! becomes one [`Middleware`] layer.
//!
//! The service at the bottom of the stack, [`RunNext`], runs the rest of the chain; a
//! [`TowerCall`] carries the call and that rest together. tower's timeout, concurrency limit
//! and load shedding work as they do anywhere: the stack is built once and cloned per call
//! (clones share a concurrency limit's permits), `poll_ready` is awaited before `call`. An
//! error from the stack answers the call: this crate's own [`Error`] passes as it is; any other
//! becomes `-32000` with its text (tower's timeout: "request timed out"; load shedding:
//! "service overloaded"), or what [`TowerLayer::map_err`] makes of it.
//!
//! ```
//! # #[cfg(any())] {
//! use std::time::Duration;
//! use jsonrpc_duplex::{Connection, middleware::tower::{RunNext, TowerLayer}};
//!
//! let stack = tower::ServiceBuilder::new()
//!     .load_shed()
//!     .concurrency_limit(64)
//!     .timeout(Duration::from_secs(30))
//!     .service(RunNext);
//! let builder = Connection::builder().layer(TowerLayer::new(stack));
//! # }
//! ```
//!
//! (The example is compiled by `tests/middleware_tower.rs`, which has `tower` itself.)

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::value::RawValue;
use tower_service::Service;

use super::{BoxFuture, Call, Middleware, Next, Outcome};
use crate::connection::Error;
use crate::message::{ErrorObject, codes};

/// What a tower service in the chain receives: the call, and the rest of the chain to run it.
#[derive(Debug)]
pub struct TowerCall {
    call: Call,
    next: Next,
}

impl TowerCall {
    /// The call (its method, params, id, direction, peer, extensions).
    pub fn call(&self) -> &Call {
        &self.call
    }

    /// The call, to attach extensions.
    pub fn call_mut(&mut self) -> &mut Call {
        &mut self.call
    }

    /// Run the rest of the chain.
    pub fn run(self) -> BoxFuture<Outcome> {
        self.next.run(self.call)
    }
}

/// The service at the bottom of a tower stack: runs the rest of the chain. Always ready.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunNext;

impl Service<TowerCall> for RunNext {
    type Response = Option<Box<RawValue>>;
    type Error = Error;
    type Future = BoxFuture<Outcome>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: TowerCall) -> Self::Future {
        request.run()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tower service stack over [`RunNext`], as a [`Middleware`] layer.
pub struct TowerLayer<S> {
    service: Mutex<S>,
    map_err: Arc<dyn Fn(BoxError) -> ErrorObject + Send + Sync>,
}

impl<S> std::fmt::Debug for TowerLayer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TowerLayer").finish_non_exhaustive()
    }
}

impl<S> TowerLayer<S>
where
    S: Service<TowerCall, Response = Option<Box<RawValue>>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    /// The layer of a service stack (built once; cloned for each call).
    pub fn new(service: S) -> Self {
        TowerLayer {
            service: Mutex::new(service),
            map_err: Arc::new(|error| ErrorObject::new(codes::SERVER_ERROR, error.to_string())),
        }
    }

    /// The layer of a `tower::Layer` applied to [`RunNext`].
    pub fn from_layer<L>(layer: L) -> Self
    where
        L: tower_layer::Layer<RunNext, Service = S>,
    {
        TowerLayer::new(layer.layer(RunNext))
    }

    /// What the call is answered when the stack fails with an error other than this crate's
    /// own [`Error`] (by default `-32000` with the error's text).
    pub fn map_err(mut self, map: impl Fn(BoxError) -> ErrorObject + Send + Sync + 'static) -> Self {
        self.map_err = Arc::new(map);
        self
    }
}

impl<S> Middleware for TowerLayer<S>
where
    S: Service<TowerCall, Response = Option<Box<RawValue>>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        let mut service = self.service.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let map_err = self.map_err.clone();
        let fail = move |error: S::Error| -> Error {
            let error: BoxError = error.into();
            match error.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Remote(map_err(other)),
            }
        };
        Box::pin(async move {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await.map_err(&fail)?;
            service.call(TowerCall { call, next }).await.map_err(&fail)
        })
    }
}
