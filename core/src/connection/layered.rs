//! What the connection asks of the middleware installed on it, and nothing more: wrap the
//! router it serves, and take the calls and notifications its handles send. The layers
//! themselves live above the connection (`crate::middleware`), which it does not know.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::handle::{CallOptions, EncodedCall, Handle};
use super::{Error, PeerInfo, TraceContextPlacement};
use crate::handler::Router;

pub(crate) type LayeredFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The middleware of a connection (`None` in its config: none, and nothing is paid).
pub(crate) trait Layered: Send + Sync + 'static {
    /// For the builder that adds a layer to those installed.
    fn as_any(&self) -> &dyn std::any::Any;
    /// Wrap every request and notification handler of the router a connection serves (whose
    /// profile carries trace context at `placement`).
    fn wrap(&self, router: Router, peer: Arc<PeerInfo>, placement: TraceContextPlacement) -> Router;
    /// Whether a layer reads top-level `traceparent` / `tracestate` members under a profile
    /// that carries them at `placement` (the reader keeps them only then).
    fn reads_top_level(&self, placement: TraceContextPlacement) -> bool;
    /// An outbound call, encoded: through the layers, then sent (`Handle::send_call`). `None`:
    /// a layer answered without a result (`null`).
    fn call<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        call: EncodedCall,
        options: &'a CallOptions,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>>;
    /// An outbound notification, encoded: through the layers, then queued (what the layers
    /// give besides an error is dropped).
    fn notify<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        body: Vec<u8>,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>>;
}
